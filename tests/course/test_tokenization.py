"""The helpers of notebook 12 (minitx.course.tokenization): the shared recipe, the FLOP count
and matched steps, the validation text scored token by token, bits per character, a text's
tokens on view; and notebook 12's exercises graded with their hidden cases."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from exercise_asserts import saved_notebook

from minitx.course import tokenization as tz
from minitx.data.bpe import BPETokenizer
from minitx.data.tokenizer import CharTokenizer
from minitx.nn.gpt import GPT
from minitx.train.evaluate import split_loss
from minitx.train.runtime import plan_runtime

TEXT = "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer. "


def test_the_recipe_is_the_cpu_preset_cut_down():
    recipe = tz.comparison_recipe(40, seed=3)
    config = recipe.gpt_config(65)
    assert (config.n_layer, config.n_embd, config.n_head, config.block_size) == (2, 64, 4, 64)
    assert recipe.train.max_steps == 40 and recipe.train.seed == 3
    assert recipe.train.batch_size == 16 and recipe.train.optimizer == "muon"
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="max_steps"):
            tz.comparison_recipe(bad)


def test_flops_per_token_and_matched_steps_by_hand():
    chars, bpe = (tz.comparison_recipe().gpt_config(v) for v in (65, 512))
    # 6 (L 12 C^2 + V C) + 12 L T C with L = 2, C = 64, T = 64
    assert tz.flops_per_token(chars) == 6 * (2 * 12 * 64 * 64 + 65 * 64) + 12 * 2 * 64 * 64
    assert tz.flops_per_token(chars) == 713_088 and tz.flops_per_token(bpe) == 884_736
    assert tz.matched_steps(150, chars, bpe) == round(150 * 713_088 / 884_736) == 121
    assert tz.matched_steps(121, bpe, bpe) == 121
    with pytest.raises(ValueError, match="steps"):
        tz.matched_steps(0, chars, bpe)
    other = tz.comparison_recipe().gpt_config(65)
    other.block_size = 32
    with pytest.raises(ValueError, match="context"):
        tz.matched_steps(10, chars, other)


def _model(vocab: int = 11, block_size: int = 8) -> GPT:
    torch.manual_seed(0)
    config = tz.comparison_recipe().gpt_config(vocab)
    config.block_size, config.n_layer, config.n_embd = block_size, 1, 16
    return GPT(config).eval()


def _ids(n: int, vocab: int = 11) -> torch.Tensor:
    return torch.randint(0, vocab, (n,), generator=torch.Generator().manual_seed(n))


def test_total_nats_scores_every_token_but_the_first_once():
    model = _model()
    whole = _ids(8 * 5 + 1)  # 40 targets: five full windows of 8
    assert tz.total_nats(model, whole, batch_size=2) == pytest.approx(
        split_loss(model, whole, 8) * 40, rel=1e-6)
    ids = _ids(8 * 5 + 4)  # 43 targets: five windows, then 3 more from a window moved back
    full = tz.total_nats(model, ids[:41])
    with torch.no_grad():
        logits, _ = model(ids[-9:-1][None])  # the last window: inputs 35..42, targets 36..43
        last = F.cross_entropy(logits[0], ids[-8:], reduction="none")
    assert tz.total_nats(model, ids) == pytest.approx(full + last[-3:].sum().item(), rel=1e-6)
    short = _ids(5)  # fewer targets than the context: one window of 4
    with torch.no_grad():
        logits, _ = model(short[None, :-1])
    assert tz.total_nats(model, short) == pytest.approx(
        F.cross_entropy(logits[0], short[1:], reduction="sum").item(), rel=1e-6)
    assert not model.training
    with pytest.raises(ValueError, match="1-D tensor"):
        tz.total_nats(model, torch.zeros(1, dtype=torch.long))


def test_bigram_nats_by_hand():
    train, val = torch.tensor([0, 1, 0, 1, 1]), torch.tensor([0, 1, 1, 0])
    # counts: 0 -> 1 twice; 1 -> 0 once, 1 -> 1 once; plus 0.5 each on a vocabulary of 2
    p01, p11, p10 = 2.5 / 3, 1.5 / 3, 1.5 / 3
    want = -(math.log(p01) + math.log(p11) + math.log(p10))
    assert tz.bigram_nats(train, val, 2, smoothing=0.5) == pytest.approx(want, rel=1e-12)
    assert tz.bigram_nats(train, val, 3, smoothing=0.5) > want  # a third token takes mass
    with pytest.raises(ValueError, match=r"ids in \[0, 2\)"):
        tz.bigram_nats(train, torch.tensor([0, 2]), 2)
    with pytest.raises(ValueError, match="val_ids must be a 1-D tensor"):
        tz.bigram_nats(train, torch.tensor([1]), 2)
    with pytest.raises(ValueError, match="smoothing"):
        tz.bigram_nats(train, val, 2, smoothing=0)


def _run(kind: str, seed: int, bits: float) -> tz.Run:
    return tz.Run(kind, seed, 10, None, bits * 100 * math.log(2), 100, 1.0 + seed)


def test_bits_per_char_and_the_spread_table():
    assert _run("BPE", 0, 2.5).bits_per_char == pytest.approx(2.5)
    runs = [_run("characters", s, 3.40 + 0.01 * s) for s in range(3)]
    runs += [_run("BPE", s, 2.90 + 0.02 * s) for s in range(3)]
    table = tz.spread_table(runs)
    assert table["characters"]["mean"] == pytest.approx(3.41)
    assert table["BPE"]["spread"] == pytest.approx(0.04)
    assert table["BPE"]["seeds"] == 3 and table["BPE"]["seconds"] == pytest.approx(2.0)


@pytest.mark.slow
def test_train_run_is_reproducible_and_counts_the_characters_it_scores():
    tok = BPETokenizer.train(TEXT * 20, 300)
    ids = torch.tensor(tok.encode(TEXT * 40))
    val = torch.tensor(tok.encode(TEXT * 3))
    runtime = plan_runtime("cpu", threads=1, compile=False)
    a = tz.train_run(tok, ids, val, 3, 1, runtime)
    b = tz.train_run(tok, ids, val, 3, 1, runtime)
    assert a.nats == b.nats and a.kind == "BPE" and a.steps == 3 and not a.model.training
    assert a.chars == len(TEXT * 3) - len(tok.decode(val[:1]))
    chars = CharTokenizer.from_text(TEXT)
    c = tz.train_run(chars, torch.tensor(chars.encode(TEXT * 40)),
                     torch.tensor(chars.encode(TEXT * 3)), 2, 0, runtime)
    assert c.kind == "characters" and c.chars == len(TEXT * 3) - 1
    with pytest.raises(TypeError, match="CharTokenizer or a BPETokenizer"):
        tz.train_run("chars", ids, val, 2, 0, runtime)


def test_token_pieces_spell_the_text_and_show_part_of_a_character_as_bytes():
    tok = BPETokenizer.train(TEXT * 5, 280)
    assert "".join(tz.token_pieces(tok, TEXT)) == TEXT
    pieces = tz.token_pieces(tok, "日")  # three bytes, no merge: three tokens
    assert pieces == ["\\xe6", "\\x97", "\\xa5"]
    with pytest.raises(TypeError, match="str"):
        tz.token_pieces(tok, b"bytes")


def test_tokens_html_escapes_the_text_and_marks_spaces():
    tok = BPETokenizer.train(TEXT * 5, 280)
    text = "a <b> c\n"
    page = tz.tokens_html(tok, text)
    assert "<b>" not in page and "&lt;" in page and "&gt;" in page
    assert "·" in page and "↵" in page
    assert f"{len(text)} characters, {len(text)} bytes, {len(tok.encode(text))} tokens" in page
    assert page.count("<span ") == len(tok.encode(text))


def test_the_viewer_redraws_when_the_text_changes():
    tok = BPETokenizer.train(TEXT * 5, 280)
    viewer = tz.TokenViewer(tok, "to be")
    assert viewer.ids == tok.encode("to be") and "".join(viewer.pieces) == "to be"
    viewer.text.value = "Быть"
    assert viewer.ids == tok.encode("Быть") and len(viewer.ids) == 8
    assert viewer.view.value == tz.tokens_html(tok, "Быть")
    with pytest.raises(TypeError, match="BPETokenizer"):
        tz.TokenViewer(CharTokenizer.from_text("ab"))


# ---- notebook 12's exercises, graded with the hidden cases ----------------------------------


def test_notebook_12_hidden_cases(tmp_path: Path):
    import inspect

    from minitx.course.exercises.answers import solution
    from minitx.course.teacher import progress

    imports = ("import math\nfrom collections import Counter\nfrom itertools import pairwise\n"
               "from minitx.course.exercises import check\n")
    fn = solution("12.merge_step")
    key = (f"{inspect.getsource(fn)}\ncheck('12.merge_step', merge_step)\n"
           "check('12.bits', (2.69, 3.32))\n")
    own = """
def step(chunks, new_id):
    counts = {}
    for chunk in chunks:
        for pair in zip(chunk, chunk[1:]):
            counts[pair] = counts.get(pair, 0) + 1
    best = sorted(counts, key=lambda p: (-counts[p], p))[0]
    out = []
    for chunk in chunks:
        new, i = [], 0
        while i < len(chunk):
            if tuple(chunk[i:i + 2]) == best:
                new.append(new_id)
                i += 2
            else:
                new.append(chunk[i])
                i += 1
        out.append(tuple(new))
    return list(best), out

check("12.merge_step", step)
check("12.bits", [3.5 * 59436 / 111540 / math.log(2), 2.3 / math.log(2)])
"""
    cheats = """
from minitx.data import bpe

def step(chunks, new_id):
    counts = Counter(p for c in chunks for p in zip(c, c[1:]))
    best = min(counts, key=lambda p: (-counts[p], p))
    return best, [bpe._merge(list(c), best, new_id) for c in chunks]

check("12.merge_step", step)
"""
    for who, cells in (("key", [imports, key]), ("own", [imports, own]),
                       ("cheater", [imports, cheats])):
        saved_notebook(tmp_path / f"{who}.ipynb", cells)
    graded: dict[str, dict] = {"key": {}, "own": {}, "cheater": {}}
    for r in progress([tmp_path], timeout=60):
        graded[Path(r.path).stem][r.exercise] = r
    for who in ("key", "own"):
        assert {n: r.status for n, r in graded[who].items()} == {
            "12.merge_step": "correct", "12.bits": "correct"}, (who, graded[who])
    cheat = graded["cheater"]["12.merge_step"]
    assert cheat.status == "refused" and "_merge" in cheat.detail, cheat
