"""The teacher's grading (``minitx progress``): hidden cases, a fresh process, plain data.

Saved notebooks written here use the routes a learner may try instead of the work: the
package's function, a multi-line wrapper, ``+ 0``/``.clone()``/``.double()``, PyTorch's own
piece, an object whose ``__eq__`` is always True, a lying tensor subclass, a patched module,
the exercise module itself; the report credits none of them. From-scratch answers in
float32, float64 and NumPy are credited, and predictions come out as answered or not.
Three notebooks, graded together: three fresh processes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from exercise_asserts import saved_notebook

from minitx.course.exercises.grading import code_cells, grade_notebook, hidden
from minitx.course.exercises.review import answer_refusal, forbidden_objects, same, tampering
from minitx.course.teacher import main, progress, summary

IMPORTS = """\
import math
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from minitx.course.exercises import check
from minitx.nn.attention import scaled_dot_product_attention as sdpa
from minitx.nn import positions as P
from minitx.nn.rnn import LSTM
"""

CHEATS = {
    # a multi-line wrapper of the package's function, with + 0 and .clone()
    "04.attention": """
def attention(Q, K, V):
    Z, A = sdpa(Q, K, V)
    Z = Z + 0
    return Z, A.clone()

check("04.attention", attention)
""",
    # PyTorch's own attention with Q = scores, K = V = I: the weights come out as its output
    "05.masked_softmax": """
def masked(scores, mask):
    eye = torch.eye(scores.size(-1), dtype=scores.dtype)
    out = F.scaled_dot_product_attention(scores, eye, eye, attn_mask=mask, scale=1.0)
    return out.nan_to_num(0.0) * mask

check("05.masked_softmax", masked)
""",
    # PyTorch's LSTM cell through an alias, in a tuple(...)
    "02.lstm_step": """
cell = torch.lstm_cell

def lstm_step(x, h, c, w_ih, w_hh, b_ih, b_hh):
    return tuple(cell(x, (h, c), w_ih, w_hh, b_ih, b_hh))

check("02.lstm_step", lstm_step)
""",
    # the package's function through a module alias, .double()
    "07.sinusoidal": """
def table(T, d):
    return P.sinusoidal_positions(T, d).double()

check("07.sinusoidal", table)
""",
    # a lying tensor subclass over zeros
    "01.pad_and_mask": """
class Liar(torch.Tensor):
    def allclose(self, *args, **kwargs):
        return True
    def __eq__(self, other):
        return True

def pad(seqs, pad_id):
    n, T = len(seqs), max(map(len, seqs))
    return torch.zeros(n, T, dtype=torch.long).as_subclass(Liar), \\
        torch.zeros(n, T, dtype=torch.bool).as_subclass(Liar)

check("01.pad_and_mask", pad)
""",
    # an object whose __eq__ is always True
    "04.shapes": """
class Yes(dict):
    def __eq__(self, other):
        return True

check("04.shapes", Yes())
""",
    # the package computing a compute answer
    "04.tiny": """
K = torch.eye(2)
def weight(a):
    return sdpa(torch.tensor([[a, 0.0]]), K, K)[1][0, 0]
check("04.tiny", min([k / 1000 for k in range(1, 10_000)], key=lambda a: abs(weight(a) - 0.95)))
""",
}

TAMPERED = """
import importlib
import minitx.nn.attention as attn
from minitx.course.exercises import nb07

def unscaled(Q, K, V):
    A = torch.softmax(Q @ K.transpose(-2, -1), -1)
    return A @ V, A

attn.scaled_dot_product_attention = unscaled
real = getattr(importlib.import_module("minitx.nn.attention"), "scaled_dot_product_attention")

def attention(Q, K, V):
    return real(Q, K, V)

check("04.attention", attention)
check("07.block_params", 25168)
check("04.tiny", 4.16)
"""

HONEST = {
    # float32 inside, from scratch
    "04.attention": """
def attention(Q, K, V):
    scores = Q.float() @ K.float().transpose(-2, -1) / math.sqrt(Q.size(-1))
    e = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)
    A = e / e.sum(dim=-1, keepdim=True)
    return (A @ V.float()).double(), A.double()

check("04.attention", attention)
""",
    # float64, from scratch
    "05.masked_softmax": """
def masked(scores, mask):
    S = scores.double().masked_fill(~mask, -1e300)
    return S.softmax(-1) * mask

check("05.masked_softmax", masked)
""",
    # NumPy, from scratch
    "02.lstm_step": """
def lstm_step(x, h, c, w_ih, w_hh, b_ih, b_hh):
    x, h, c, w_ih, w_hh, b_ih, b_hh = (t.numpy() for t in (x, h, c, w_ih, w_hh, b_ih, b_hh))
    a = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
    i, f, g, o = np.split(a, 4, axis=1)
    sig = lambda z: 1 / (1 + np.exp(-z))
    c_new = sig(f) * c + sig(i) * np.tanh(g)
    return sig(o) * np.tanh(c_new), c_new

check("02.lstm_step", lstm_step)
""",
    "04.tiny": 'check("04.tiny", np.float32(math.sqrt(2) * math.log(19)))',
    "07.block_params": 'check("07.block_params", 25168.0)',
    "04.shapes": """
X, W = torch.ones(3, 6), torch.ones(6, 4)
answer = {"X_q": X.shape, "X_kv": (5, 6), "W_Q": W.shape, "W_K": (6, 4), "W_V": (6, 2),
          "Q": (3, 4), "K": np.array([5, 4]).tolist(), "V": (5, 2), "S": (np.int64(3), 5),
          "A": (3, 5), "Z": (3, 2)}
check("04.shapes", answer)
""",
    "04.shift_keys": 'check("04.shift_keys", "d")',  # a wrong letter: answered all the same
    "04.repeat_word": 'check("04.repeat_word", None)',
}


_notebook = saved_notebook


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    _notebook(folder / "cheater.ipynb", [IMPORTS, *CHEATS.values()])
    _notebook(folder / "tamperer.ipynb", [IMPORTS, TAMPERED])
    _notebook(folder / "honest.ipynb", [IMPORTS, *HONEST.values()])
    rows = progress([folder], timeout=30)
    return folder, {(Path(r.path).stem, r.exercise): r for r in rows}


def test_no_cheat_is_credited_and_each_refusal_says_why(graded):
    _, rows = graded
    cheats = {n: rows["cheater", n] for n in CHEATS}
    assert not [r for r in cheats.values() if r.status == "correct"], cheats
    assert cheats["01.pad_and_mask"].status == "not yet"  # the liar's zeros, read plainly
    refused = {n: r.detail for n, r in cheats.items() if r.status == "refused"}
    assert set(refused) == set(CHEATS) - {"01.pad_and_mask"}, cheats
    assert "scaled_dot_product_attention" in refused["04.attention"]
    assert "PyTorch" in refused["05.masked_softmax"]
    assert "lstm_cell" in refused["02.lstm_step"]
    assert "sinusoidal_positions" in refused["07.sinusoidal"]
    assert "not plain data (Yes)" in refused["04.shapes"]


def test_a_tampered_notebook_gets_nothing(graded):
    _, rows = graded
    for name in ("04.attention", "07.block_params", "04.tiny"):
        row = rows["tamperer", name]
        assert row.status == "refused", row
    assert "patches a module" in rows["tamperer", "04.attention"].detail


def test_honest_answers_in_any_type_are_credited_and_predictions_only_answered(graded):
    _, rows = graded
    status = {n: rows["honest", n].status for n in HONEST}
    assert status == {**dict.fromkeys(HONEST, "correct"), "04.shift_keys": "answered",
                      "04.repeat_word": "unanswered"}, {n: rows["honest", n] for n in HONEST}


def test_the_summary(graded):
    _, rows = graded
    line = summary([r for (who, _), r in rows.items() if who == "honest"])
    assert line.endswith(f"honest.ipynb: 6/6 correct ({', '.join(list(HONEST)[:6])}); "
                         "1/2 predictions answered")
    line = summary([r for (who, _), r in rows.items() if who == "cheater"])
    assert ": 0/7 correct; 6 refused (see --csv)" in line


def test_honest_answers_in_a_wrong_shape_or_value_are_not_yet(tmp_path):
    wrong = """
def attention(Q, K, V):
    s = Q @ K.transpose(-2, -1)  # no scale
    e = torch.exp(s - s.max(dim=-1, keepdim=True).values)
    A = e / e.sum(dim=-1, keepdim=True)
    return A @ V, A

check("04.attention", attention)
check("04.tiny", "4.16")
check("07.block_params", 28273)
"""
    rows = {g.exercise: g for g in grade_notebook(_notebook(tmp_path / "w.ipynb",
                                                             [IMPORTS, wrong]), timeout=30)}
    assert {n: g.status for n, g in rows.items()} == dict.fromkeys(
        ("04.attention", "04.tiny", "07.block_params"), "not yet")
    assert "hidden case 1 of 6" in rows["04.attention"].detail


# ---- no process: the code read, plain data compared ---------------------------------------

ROUTES = {
    "the package function itself": "answer = sdpa",
    "a one-line wrapper": "answer = lambda Q, K, V: sdpa(Q, K, V)",
    ".double()": "def answer(Q, K, V):\n    Z, A = sdpa(Q, K, V)\n"
                 "    return Z.double(), A.double()",
    "imported inside": "def answer(Q, K, V):\n    from minitx.nn.attention import "
                       "scaled_dot_product_attention as f\n    return f(Q, K, V)",
    "torch's module": "def answer(Q, K, V):\n    m = nn.MultiheadAttention(4, 1)\n"
                      "    return m(Q, K, V)",
    "getattr": "def answer(Q, K, V):\n    return getattr(torch.nn.functional, 'scaled_dot_' "
               "'product_attention')(Q, K, V), None",
    "a helper two steps away": "def helper(Q, K, V):\n    return sdpa(Q, K, V)\n\n"
                               "def answer(Q, K, V):\n    return helper(Q, K, V)",
}


@pytest.mark.parametrize("route", ROUTES)
def test_each_route_is_refused_from_the_code_alone(route):
    forbid = forbidden_objects(("minitx.nn.attention.scaled_dot_product_attention",
                                "torch.nn.functional.scaled_dot_product_attention",
                                "torch.nn.MultiheadAttention"))
    cells = [IMPORTS, ROUTES[route] + "\n\ncheck('04.attention', answer)\n"]
    assert answer_refusal(cells, 1, "04.attention", forbid), route


def test_an_own_function_of_the_same_name_is_not_refused():
    forbid = forbidden_objects(("minitx.nn.attention.scaled_dot_product_attention",))
    own = ("import torch\nfrom minitx.course.exercises import check\n",
           "def scaled_dot_product_attention(Q, K, V):\n    A = torch.softmax(Q @ K.T, -1)\n"
           "    return A @ V, A\n\ncheck('04.attention', scaled_dot_product_attention)\n")
    assert answer_refusal(list(own), 1, "04.attention", forbid) is None


@pytest.mark.parametrize("code", [
    "import minitx.nn.attention as a\nb = a\nb.scaled_dot_product_attention = None",
    "from minitx.nn import attention\nsetattr(attention, 'x', 1)",
    "import sys\nsys.setprofile(None)",
    "import sys\nsys.modules['minitx.nn.attention'] = None",
    "import torch\ntorch.nn.functional.softmax = lambda *a, **k: None",
    "from minitx.course.exercises import nb04",
    "exec('x = 1')",
])
def test_tampering_anywhere_in_the_notebook_is_refused(code):
    assert tampering(["import torch", code])


def test_the_course_notebooks_do_not_trip_the_tampering_rules():
    """Notebooks 01-11 (00 imports modules by name to check the install: it grades nothing)."""
    root = Path(__file__).resolve().parents[2] / "notebooks"
    for nb in sorted(root.glob("[0-9][0-9]_*.ipynb"))[1:]:
        assert tampering(code_cells(nb)) is None, nb.name


def test_plain_data_is_compared_by_value_and_shape():
    tensor = {"shape": [2], "dtype": "float32", "data": [0.8, 0.2]}
    assert same(tensor, [0.8044, 0.1956], 0.005) and same(0.5, 0.5, 0)
    assert not same([0.8, 0.2, 0.0], [0.8, 0.2], 1) and not same("0.8", 0.8, 1)
    assert not same({"unreadable": "Yes"}, {"X": [4, 6]}, 0)
    assert same({"X": [4, 6]}, {"X": [4, 6]}, 0) and not same({"X": [4, 6]}, {"X": [6, 4]}, 0)


def test_hidden_cases_live_outside_the_package():
    import minitx

    assert hidden("04")["04.attention"].cases()
    package = Path(minitx.__file__).parent
    assert not list(package.rglob("hidden*")), "hidden cases belong to instructor/hidden"


def test_progress_through_the_command_line(graded, capsys):
    folder, _ = graded
    assert main(["progress", str(folder / "honest.ipynb"), "--csv", "-"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("path,exercise,kind,status,detail") and ",answered," in out
