"""Teacher-side grading of notebooks 03, 05, 06, 08, 09, 10 and 11 with their hidden cases: the
instructor's own solutions and answers written differently are credited, and the package's
function or PyTorch's piece, however wrapped, is refused."""

from __future__ import annotations

from pathlib import Path

from exercise_asserts import saved_notebook

from minitx.course.exercises import get
from minitx.course.exercises.grading import hidden
from minitx.course.exercises.review import forbidden_objects
from minitx.course.teacher import progress

_notebook = saved_notebook

# ---- notebooks 03, 06, 08, 09, 10, 11: hidden cases, honest answers, cheats ------------------
# Each test grades three saved notebooks of one course notebook: "key" (the instructor's own
# solutions, their source copied into the cells), "own" (answers written differently, in
# float32, float64 or NumPy) and "cheater" (the package's function or PyTorch's piece).

KEY_IMPORTS = ("import math\nimport numpy as np\nimport torch\nfrom torch import Tensor\n"
               "from minitx.course.exercises import check\n")


def _key_cell(name: str) -> str:
    import inspect

    from minitx.course.exercises.answers import solution

    fn = solution(name)
    return f"{inspect.getsource(fn)}\ncheck({name!r}, {fn.__name__})\n"


def _grade_three(tmp_path: Path, key: list[str], own: list[str], cheats: list[str]) -> dict:
    for who, cells in (("key", key), ("own", own), ("cheater", cheats)):
        _notebook(tmp_path / f"{who}.ipynb", [KEY_IMPORTS, *cells])
    rows = progress([tmp_path], timeout=60)
    graded: dict[str, dict] = {"key": {}, "own": {}, "cheater": {}}
    for r in rows:
        graded[Path(r.path).stem][r.exercise] = r
    return graded


def _assert_graded(graded: dict, names_: list[str], refused: dict[str, str]) -> None:
    for who in ("key", "own"):
        assert {n: r.status for n, r in graded[who].items()} == dict.fromkeys(
            names_, "correct"), (who, graded[who])
    cheats = graded["cheater"]
    assert set(cheats) == set(refused), cheats
    for name, word in refused.items():
        assert cheats[name].status == "refused" and word in cheats[name].detail, cheats[name]


def test_every_implement_and_compute_exercise_has_hidden_cases():
    from minitx.course.exercises import NOTEBOOKS, names

    for nb in NOTEBOOKS:
        graded = {n for n in names(nb) if get(n).kind in ("implement", "compute")}
        specs = hidden(nb)
        assert graded <= set(specs), (nb, graded - set(specs))
        for name in graded:
            paths = specs[name].forbid
            assert len(forbidden_objects(paths)) == len(paths), (name, paths)
            assert specs[name].cases is not None or get(name).kind == "compute", name
    assert hidden("10")["10.kv_cache"].cases(), "10.kv_cache's answer is a function"


def test_notebook_03_hidden_cases(tmp_path):
    iso = ["2005-04-03", "1951-11-30", "2049-02-01", "1987-07-14"]
    own = """
def attend(s, h, W, U, v, mask):
    s, h, W, U, v = (t.double() for t in (s, h, W, U, v))
    e = torch.tanh(torch.einsum("ad,bd->ba", W, s)[:, None] + torch.einsum("ae,bte->bta", U, h))
    e = torch.where(mask, e @ v, torch.full(mask.shape, -math.inf, dtype=torch.float64))
    w = torch.exp(e - e.max(dim=1, keepdim=True).values)
    w = w / w.sum(dim=1, keepdim=True)
    return torch.einsum("bt,bte->be", w, h), w

check("03.additive", attend)
"""
    package = """
from minitx.nn.attention import AdditiveAttention

def additive(s, h, W, U, v, mask):
    att = AdditiveAttention(W.size(1), U.size(1), W.size(0)).to(s.dtype)
    with torch.no_grad():
        att.W_q.weight.copy_(W), att.W_k.weight.copy_(U), att.v.weight.copy_(v[None])
        return att(s, h, mask=mask)

check("03.additive", additive)
"""
    search = """
import datetime
from minitx.data import dates
sources = ["3/4/05", "nov 30 51", "01.02.2049", "tuesday the 14th of july 1987"]
days = [dates.FIRST_DATE + datetime.timedelta(k) for k in range(36524)]
look = {dates.format_date(d, f): d.isoformat() for d in days
        for f in ("d/m/yy", "mon d yy", "dd.mm.yyyy", "weekday the dth of month yyyy")}
check("03.iso", [look[s] for s in sources])
"""
    graded = _grade_three(tmp_path, [_key_cell("03.additive"), f"check('03.iso', {iso})"],
                          [own, f"check('03.iso', {tuple(iso)})"], [package, search])
    _assert_graded(graded, ["03.additive", "03.iso"],
                   {"03.additive": "AdditiveAttention", "03.iso": "format_date"})


def test_notebook_03_the_trained_model_cannot_read_the_dates_for_the_learner(tmp_path):
    """Asking a translator (translate, or the model's greedy decoding) is refused, whatever
    it answers. (The grader replays only imports and definitions, so a model trained in an
    earlier cell is not there: a learner would train one in the exercise's cell.)"""
    model = ("from minitx.data import dates\nfrom minitx.nn.seq2seq import Seq2Seq, translate\n"
             "from minitx.course.exercises.nb03 import iso_sources\n"
             "model = Seq2Seq(len(dates.SOURCE_VOCAB), len(dates.TARGET_VOCAB))\n")
    cheats = {
        "translate": "check('03.iso', [out for out, _ in translate(model, iso_sources())])",
        "greedy": ("src, n = dates.SOURCE_VOCAB.encode_batch(iso_sources())\n"
                   "ids, _ = model.greedy_decode(src, n, 12)\n"
                   "check('03.iso', [dates.TARGET_VOCAB.decode(r.tolist())[:10] for r in ids])"),
    }
    for who, cell in cheats.items():
        _notebook(tmp_path / f"{who}.ipynb", [KEY_IMPORTS, model + cell])
    rows = {Path(r.path).stem: r for r in progress([tmp_path], timeout=60)}
    assert rows["translate"].status == "refused" and "translate" in rows["translate"].detail
    assert rows["greedy"].status == "refused" and "Seq2Seq" in rows["greedy"].detail


def test_notebook_04_the_learner_check_and_the_teacher_agree_on_a_rounded_answer(tmp_path):
    """04.tiny asks for a to two decimals (4.1641): the pencil answers 4.15 to 4.17 are right
    for both the learner's check and the teacher's grading; 4.18 or a list for neither."""
    answers = {"pencil": "4.15", "high": "4.17", "exact": "math.sqrt(2) * math.log(19)",
               "list": "[4.16]", "far": "4.18"}
    for who, answer in answers.items():
        _notebook(tmp_path / f"{who}.ipynb", [KEY_IMPORTS, f"check('04.tiny', {answer})"])
    rows = {Path(r.path).stem: r.status for r in progress([tmp_path], timeout=60)}
    assert rows == {"pencil": "correct", "high": "correct", "exact": "correct",
                    "list": "not yet", "far": "not yet"}, rows
    checker = get("04.tiny").checker
    assert all(checker(a) is None for a in (4.15, 4.17, 4.1641))
    assert checker(4.18) is not None
    assert "not a list" in checker([4.16])


def test_notebook_04_attention_through_aten_is_refused(tmp_path):
    """PyTorch's internal attention ops (torch.ops.aten) do not answer 04.attention."""
    cell = ("def attention(Q, K, V):\n"
            "    return torch.ops.aten._scaled_dot_product_attention_math(Q, K, V)\n"
            "check('04.attention', attention)\n")
    _notebook(tmp_path / "aten.ipynb", [KEY_IMPORTS, cell])
    (row,) = progress([tmp_path], timeout=60)
    assert row.status == "refused" and "aten" in row.detail, row


def test_notebook_01_package_helpers_cannot_do_the_counting(tmp_path):
    """01's calculations by hand are credited in any plain form; padding_stats and the
    character tokenizer doing them are refused."""
    honest = ("lengths = [3, 7, 5, 1]\n"
              "check('01.truncation', (sum(max(5 - n, 0) for n in lengths), "
              "sum(max(n - 5, 0) for n in lengths)))\n"
              "chars = sorted(set('hello world'))\n"
              "check('01.encode', [chars.index(c) for c in 'owl'])\n")
    cheats = ("from minitx.data.sequences import padding_stats\n"
              "from minitx.data.tokenizer import CharTokenizer\n"
              "s = padding_stats([3, 7, 5, 1], max_len=5)\n"
              "check('01.truncation', (s.padding, s.truncated))\n"
              "check('01.encode', CharTokenizer.from_text('hello world').encode('owl'))\n")
    for who, cell in (("honest", honest), ("cheater", cheats)):
        _notebook(tmp_path / f"{who}.ipynb", [KEY_IMPORTS, cell])
    rows: dict[str, dict] = {"honest": {}, "cheater": {}}
    for r in progress([tmp_path], timeout=60):
        rows[Path(r.path).stem][r.exercise] = r
    assert {n: r.status for n, r in rows["honest"].items()} == dict.fromkeys(
        ("01.truncation", "01.encode"), "correct"), rows["honest"]
    cheat = rows["cheater"]
    assert cheat["01.truncation"].status == "refused", cheat
    assert "padding_stats" in cheat["01.truncation"].detail
    assert cheat["01.encode"].status == "refused" and "CharTokenizer" in cheat["01.encode"].detail


def test_notebook_05_causal_zeros_in_any_honest_form(tmp_path):
    """A set, a list in another order or a tensor of (row, column) pairs is credited; the
    package's causal mask or a triangle helper is refused."""
    key = 'check("05.causal_zeros", {(1, 2), (1, 3), (2, 3)})'
    own = 'check("05.causal_zeros", [(2, 3), (1, 3), (np.int64(1), 2.0)])'
    cheats = ("from minitx.nn.masks import causal_mask\n"
              "check('05.causal_zeros', {(i + 1, j + 1) for i, j in "
              "(~causal_mask(3)).nonzero().tolist()})")
    graded = _grade_three(tmp_path, [key], [own], [cheats])
    _assert_graded(graded, ["05.causal_zeros"], {"05.causal_zeros": "causal_mask"})
    tensor = "check('05.causal_zeros', torch.tensor([[2, 3], [1, 2], [1, 3]]))"
    triangle = "check('05.causal_zeros', torch.triu(torch.ones(3, 3), 1).nonzero() + 1)"
    for who, cell in (("tensor", tensor), ("triangle", triangle)):
        _notebook(tmp_path / "more" / f"{who}.ipynb", [KEY_IMPORTS, cell])
    rows = {Path(r.path).stem: r for r in progress([tmp_path / "more"], timeout=60)}
    assert rows["tensor"].status == "correct", rows["tensor"]
    assert rows["triangle"].status == "refused" and "triu" in rows["triangle"].detail


def test_notebook_06_hidden_cases(tmp_path):
    own = """
def split(x, n_heads):
    B, T, C = x.shape
    return x.numpy().reshape(B, T, n_heads, C // n_heads).transpose(0, 2, 1, 3)

def merge(z):
    return torch.cat([z[:, i] for i in range(z.size(1))], dim=-1)

check("06.split_heads", split)
check("06.merge_heads", merge)
"""
    cheats = """
from minitx.nn import attention as A

def split(x, n_heads):
    heads = A.split_heads(x, n_heads)
    return heads + 0

check("06.split_heads", split)
check("06.merge_heads", lambda z: A.merge_heads(z).clone())
"""
    ex = ["06.split_heads", "06.merge_heads"]
    graded = _grade_three(tmp_path, [_key_cell(n) for n in ex], [own], [cheats])
    _assert_graded(graded, ex, {"06.split_heads": "split_heads",
                                "06.merge_heads": "merge_heads"})


def test_notebook_07_a_built_block_cannot_count_its_own_parameters(tmp_path):
    """07.block_params counted by hand is credited; summing the parameters of the package's
    block or PyTorch's encoder layer is refused."""
    key = "check('07.block_params', 4 * (48 * 48 + 48) + 2 * 48 * 160 + 160 + 48 + 4 * 48)"
    count = "check('07.block_params', sum(p.numel() for p in {}(48, 4, 160).parameters()))\n"
    cheats = {"TransformerBlock": "from minitx.nn.transformer import TransformerBlock\n",
              "TransformerEncoderLayer": "from torch.nn import TransformerEncoderLayer\n"}
    _notebook(tmp_path / "key.ipynb", [KEY_IMPORTS, key])
    for who, imports in cheats.items():
        _notebook(tmp_path / f"{who}.ipynb", [KEY_IMPORTS, imports + count.format(who)])
    rows = {Path(r.path).stem: r for r in progress([tmp_path], timeout=60)}
    assert rows["key"].status == "correct", rows["key"]
    for who in cheats:
        assert rows[who].status == "refused" and who in rows[who].detail, rows[who]


def test_notebook_07_parts_and_rope_angles_do_not_answer_for_the_learner(tmp_path):
    """Adding up the parameters of built parts is refused for 07.block_params, and rope's
    angle table is refused for 07.sinusoidal."""
    parts = ("from torch import nn\n"
             "parts = [nn.MultiheadAttention(48, 4), nn.Linear(48, 160), nn.Linear(160, 48),\n"
             "         nn.LayerNorm(48), nn.LayerNorm(48)]\n"
             "check('07.block_params', sum(p.numel() for m in parts for p in m.parameters()))\n")
    rope = ("from minitx.nn.rope import rope_angles\n"
            "def sinusoidal(T, d):\n"
            "    a = rope_angles(T, d)\n"
            "    return torch.stack([a.sin(), a.cos()], -1).flatten(1)\n"
            "check('07.sinusoidal', sinusoidal)\n")
    for who, cell in (("parts", parts), ("rope", rope)):
        _notebook(tmp_path / f"{who}.ipynb", [KEY_IMPORTS, cell])
    rows = {Path(r.path).stem: r for r in progress([tmp_path], timeout=60)}
    assert rows["parts"].status == "refused" and "MultiheadAttention" in rows["parts"].detail
    assert rows["rope"].status == "refused" and "rope_angles" in rows["rope"].detail


def test_notebook_08_hidden_cases(tmp_path):
    own = """
def lr(step, max_steps, peak, warmup_steps, cooldown_steps):
    decay_start = max_steps - cooldown_steps
    if step < warmup_steps:
        return torch.tensor(peak * (step + 1) / warmup_steps, dtype=torch.float32)
    if step < decay_start:
        return np.float64(peak)
    return peak * (max_steps - step) / cooldown_steps

check("08.wsd", lr)
"""
    cheats = """
from minitx.train.optim import lr_at

def lr(step, max_steps, peak, warmup_steps, cooldown_steps):
    rate = lr_at(step, learning_rate=peak, min_lr=0.0, warmup_steps=warmup_steps,
                 decay_steps=max_steps, schedule="wsd", cooldown_steps=cooldown_steps)
    return float(rate) + 0

check("08.wsd", lr)
"""
    graded = _grade_three(tmp_path, [_key_cell("08.wsd")], [own], [cheats])
    _assert_graded(graded, ["08.wsd"], {"08.wsd": "lr_at"})


def test_notebook_09_hidden_cases(tmp_path):
    own = """
def nucleus(logits, p):
    probs = torch.softmax(logits.double(), dim=-1)
    order = probs.argsort(dim=-1, descending=True)
    ranked = probs.gather(-1, order)
    keep = (ranked.cumsum(-1) - ranked < p).scatter(-1, order, ranked.cumsum(-1) - ranked < p)
    return logits.masked_fill(~keep, -math.inf)

check("09.top_p", nucleus)
check("09.temperature", torch.tensor(0.75, dtype=torch.float32))
"""
    cheats = """
from minitx.nn import generation

check("09.top_p", lambda logits, p: generation.top_p_filter(logits, p).clone())
logits = torch.tensor([2 * math.log(6), 0.0, 0.0])
check("09.temperature", float(generation.apply_temperature(logits, 2.0).softmax(-1)[0]))
"""
    ex = ["09.top_p", "09.temperature"]
    graded = _grade_three(tmp_path, [_key_cell(ex[0]), "check('09.temperature', 0.75)"],
                          [own], [cheats])
    _assert_graded(graded, ex, {"09.top_p": "top_p_filter",
                                "09.temperature": "apply_temperature"})


def test_notebook_10_hidden_cases(tmp_path):
    own = """
def shift(tgt, bos_id):
    out = tgt.roll(1, dims=1)
    out[:, 0] = bos_id
    return out

def step(log_probs, beam_scores, beam_width):
    total = (beam_scores.unsqueeze(-1) + log_probs).flatten(1)
    best = total.argsort(dim=-1, descending=True)[:, :beam_width]
    V = log_probs.size(-1)
    return total.gather(1, best), torch.div(best, V, rounding_mode="floor"), best % V

check("10.shift_right", shift)
check("10.beam_step", step)
check("10.kv_cache", lambda steps, n: {"without": np.int64(steps * (steps + 1) // 2),
                                       "with": steps})
"""
    cheats = """
from minitx.nn import generation
from minitx.nn.encoder_decoder import EncoderDecoder, shift_right

def counted(steps, source_length):
    model, n = EncoderDecoder(8, 2, 1, 1, 16).eval(), [0]
    model.decoder[0].self_attn.in_proj.register_forward_hook(
        lambda m, args, out: n.append(n.pop() + args[0].size(1)))
    memory, tgt = torch.zeros(1, source_length, 8), torch.zeros(1, steps, 8)
    with torch.no_grad():
        for t in range(1, steps + 1):
            model.decode(tgt[:, :t], memory)
    return {"without": n[0], "with": steps}

check("10.shift_right", lambda tgt, bos: shift_right(tgt, bos).clone())
check("10.beam_step", lambda lp, s, w: tuple(generation.beam_step(lp, s, w)))
check("10.kv_cache", counted)
"""
    ex = ["10.shift_right", "10.beam_step", "10.kv_cache"]
    graded = _grade_three(tmp_path, [_key_cell(n) for n in ex], [own], [cheats])
    _assert_graded(graded, ex, {"10.shift_right": "shift_right",
                                "10.beam_step": "beam_step", "10.kv_cache": "EncoderDecoder"})


def test_notebook_11_hidden_cases(tmp_path):
    own = """
def rope(x, base):
    T, hs = x.shape[-2:]
    half = hs // 2
    z = torch.complex(x[..., :half].double(), x[..., half:].double())
    angle = torch.arange(T)[:, None] * base ** (-2 * torch.arange(half).double() / hs)
    z = z * torch.polar(torch.ones_like(angle), angle)
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)

check("11.rope_half", rope)
check("11.kv_cache", np.array([9, 72]))
"""
    cheats = """
from minitx.nn.rope import apply_rope
from minitx.nn.gpt import GPTConfig, kv_cache_numel

def rope(x, base):
    h = x.size(-1) // 2
    paired = torch.stack([x[..., :h], x[..., h:]], dim=-1).flatten(-2)
    turned = apply_rope(paired, base)
    return torch.cat([turned[..., 0::2], turned[..., 1::2]], dim=-1)

shape = dict(vocab_size=1, block_size=4096, n_layer=80, n_head=64, n_embd=8192)
sizes = [2 * kv_cache_numel(GPTConfig(**shape, n_kv_heads=k), 4096) for k in (64, 8)]
check("11.rope_half", rope)
check("11.kv_cache", tuple(90 * 2**30 // s for s in sizes))
"""
    graded = _grade_three(tmp_path, [_key_cell("11.rope_half"), "check('11.kv_cache', (9, 72))"],
                          [own], [cheats])
    _assert_graded(graded, ["11.rope_half", "11.kv_cache"],
                   {"11.rope_half": "apply_rope", "11.kv_cache": "kv_cache_numel"})


def test_notebook_11_bytes_per_token_cannot_do_the_cache_sum(tmp_path):
    cell = ("from minitx.course import modern_block as mb\nfrom minitx.nn.gpt import GPTConfig\n"
            "shape = dict(vocab_size=1, block_size=4096, n_layer=80, n_head=64, n_embd=8192)\n"
            "per = [mb.bytes_per_token(GPTConfig(**shape, n_kv_heads=k), 2) for k in (64, 8)]\n"
            "check('11.kv_cache', tuple(90 * 2**30 // (4096 * p) for p in per))\n")
    _notebook(tmp_path / "cheater.ipynb", [KEY_IMPORTS, cell])
    (row,) = progress([tmp_path], timeout=60)
    assert row.status == "refused" and "bytes_per_token" in row.detail, row
