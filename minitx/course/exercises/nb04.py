"""Exercises of notebook 04 (self-attention).

Two predictions (a shifted key, a repeated word), one implementation (attention itself,
tested against :func:`minitx.nn.attention.scaled_dot_product_attention`), two pieces of
calculator work (the shapes when queries and keys come from different sequences; a weight
run backwards to the query that gives it) and one open question. The answers are kept as
seals (:mod:`minitx.course.exercises.seal`), computed from the instructor's solutions
(instructor/solutions/nb04.py); the package computes none of them.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from minitx.course.exercises import exercise, teaching_notes, think
from minitx.course.exercises.checks import compare_attention, implement, predict
from minitx.course.exercises.plain import numbers, plain_int, plain_number
from minitx.course.exercises.seal import canonical, check_sealed, seal
from minitx.nn.attention import scaled_dot_product_attention

DT = torch.float64
SHAPE_NAMES = ("X_q", "X_kv", "W_Q", "W_K", "W_V", "Q", "K", "V", "S", "A", "Z")

SHIFT_CHOICES = {
    "a": "unchanged",
    "b": "every row sharper",
    "c": "every row flatter",
    "d": "changed, not in one direction",
}
REPEAT_CHOICES = {
    "a": "unchanged",
    "b": "moves straight towards v_river",
    "c": "moves straight away from v_river",
    "d": "moves in some other direction",
}

# Seals of the answers, computed from the instructor's solutions, and of a known mistake.
_SHIFT_KEYS = "f61227f3a99d469bcce6f9f158353ca3711587c6"
_REPEAT_WORD = "5db342e19a66982c398f450a03459acbffd440d7"
_SHAPES = "8994daeb8dab8c2abfb5f9d536eae13aa648ac61"  # canonical({name: [rows, cols]})
_SHAPE = {  # seal(f"04.shapes.{name}", canonical([rows, cols]))
    "X_q": "f7508f785bb0611415ea6a053bfc3a069bcae5ad",
    "X_kv": "b098526a12b7b789a1fbb76396ce02d19e9699aa",
    "W_Q": "662e2086c01a55778b2bad4d0d5ac935cfba3090",
    "W_K": "fbb225d92ff5ec80a9329418fa33c66fbe1f6e3f",
    "W_V": "05ffbb28d125300e8703723f88752dc59326e236",
    "Q": "d94d24a649704cc4cdb57974aa57f9b408856903",
    "K": "851e65e5d12432b4008071323d14fc2961c93f58",
    "V": "3344627e0e69b0eae8b9399ca8c3ec543fb90b8e",
    "S": "07749544f06f499aba12c304d15346f1b41cb21b",
    "A": "f2bac3661da5366526496d10ac2c49cf052dba5b",
    "Z": "22c1406472ae8a95e517f08e3030b38dcd7fd6a0",
}
_TINY = "9d9f3a5161882ed90b0fc4bbff83498a37b24a09"  # the query's size a, 2 decimals
# a pencil's rounding either way is right too: the seals of the answer -0.01 and +0.01, the
# band the teacher's grading accepts (instructor/hidden/nb04.py)
_TINY_BAND = {_TINY, "60aaa6c662143168b17a3613a88cc636071a9995",
              "e175a23009fac4dbee6286bd0005d08d354d23dc"}
_TINY_MISTAKES = {
    "eac0de0aea31aa440586ca68fd6937c726b8d0ef": "close: that is the size of the score; the "
    "query's size is the score times sqrt(d_k)",
}


# ---- predict -----------------------------------------------------------------------------


predict(
    "04.shift_keys",
    "Take any self-attention and add the same vector c to every key (queries and values "
    "stay as they are). What happens to the attention weights A? (a) unchanged; (b) every "
    "row gets sharper; (c) every row gets flatter; (d) they change, but not in one "
    "direction. Answer with the letter.",
    SHIFT_CHOICES,
    _SHIFT_KEYS,
    "not what happens: write the new score q . (k_j + c) as two terms, and ask "
    "which of them differs from key to key",
    whole=True,
)

predict(
    "04.repeat_word",
    "In 'the bank of the river' (no positions), 'bank' leaves attention with a vector z. "
    "Append a second 'river': 'the bank of the river river'. What happens to z? "
    "(a) unchanged, since the same words surround 'bank'; (b) it moves straight towards "
    "v_river, the value vector of 'river'; (c) it moves straight away from v_river; (d) it "
    "moves in some other direction. Answer with the letter.",
    REPEAT_CHOICES,
    _REPEAT_WORD,
    "not what happens: write z as a sum of e^(score) * value over the keys, divided "
    "by the sum of e^(score); then add one more term for the new key",
    whole=True,
)


# ---- implement ---------------------------------------------------------------------------


def attention_inputs() -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Random test inputs (seeded): one sentence, a batch of heads with n_q != n_k and
    d_k != d_v, large scores, a single token, a batch of one, and scores near 1,000 (where
    exp overflows unless each row's maximum is subtracted first)."""
    g = torch.Generator().manual_seed(404)

    def randn(*shape: int, scale: float = 1.0) -> torch.Tensor:
        return scale * torch.randn(*shape, generator=g, dtype=DT)

    return [
        (randn(5, 4), randn(5, 4), randn(5, 3)),
        (randn(2, 3, 6, 8), randn(2, 3, 7, 8), randn(2, 3, 7, 5)),
        (randn(4, 16, scale=2.0), randn(4, 16, scale=2.0), randn(4, 2)),
        (randn(1, 3), randn(1, 3), randn(1, 2)),
        (randn(1, 3, 2), randn(1, 3, 2), randn(1, 3, 2)),
        (randn(3, 4, scale=40.0), randn(5, 4, scale=40.0), randn(5, 2)),  # scores near 1e3
    ]


def _diagnose_weights(name: str, got: dict, want: dict, args: tuple) -> str | None:
    """What is wrong with weights A that differ from the expected ones (None: not A, or no
    likely mistake found)."""
    if name != "A":
        return None
    A, (Q, K, _) = got["A"], args
    if not torch.allclose(A.sum(-1), torch.ones(A.shape[:-1], dtype=DT), atol=1e-6):
        if torch.allclose(A.sum(-2), torch.ones(A.shape[:-2] + A.shape[-1:], dtype=DT), atol=1e-6):
            return "your columns of A sum to 1, not its rows: check the softmax's axis"
        return "the rows of your A do not sum to 1"
    raw = Q @ K.transpose(-2, -1)
    for wrong_scale, what in (
        (1.0, "you did not scale the scores"),
        (Q.size(-1), "you divided the scores by d_k"),
    ):
        if torch.allclose(A, torch.softmax(raw / wrong_scale, -1), atol=1e-6):
            return f"{what}: the scale is 1 / sqrt(d_k)"
    return None


@implement(
    "04.attention",
    "Write attention(Q, K, V) that returns (Z, A): A = softmax(Q K^T / sqrt(d_k)) and "
    "Z = A V, for Q of shape (..., n_q, d_k), K (..., n_k, d_k), V (..., n_k, d_v), where "
    "'...' is any number of batch dimensions (none, or batch and heads). Write the softmax "
    "yourself, stable for large scores (subtract each row's maximum before exp); the "
    "library's softmax is not allowed.",
    forbid=(
        "minitx.nn.attention.masked_softmax",
        "torch.softmax",
        "torch.Tensor.softmax",
        "torch.nn.functional.softmax",
        "torch.special.softmax",
        "torch.log_softmax",
        "torch.Tensor.log_softmax",
        "torch.nn.functional.log_softmax",
        "minitx.nn.attention.scaled_dot_product_attention",
        "minitx.nn.attention._score_softmax_sum",
        "minitx.nn.attention.DotProductAttention",
        "minitx.nn.attention.MultiHeadAttention",
        "torch.nn.functional.scaled_dot_product_attention",
        "torch.nn.functional.multi_head_attention_forward",
        "torch.nn.MultiheadAttention",
        "minitx.nn.grouped_attention.grouped_query_attention",
    ),
)
def _attention(fn: Any, _reference=scaled_dot_product_attention) -> str | None:
    return compare_attention(fn, attention_inputs(), _reference, diagnose=_diagnose_weights)


# ---- compute -----------------------------------------------------------------------------


def _shape(value: Any) -> list[int] | None:
    """A shape given as a tuple, a list or a torch.Size of whole numbers, as a list."""
    if not isinstance(value, tuple | list):
        return None
    dims = [plain_int(d) for d in value]
    return None if any(d is None for d in dims) else dims


@exercise(
    "04.shapes",
    "Attention from one sequence to another: the queries come from n_q = 3 tokens (rows of "
    "X_q), the keys and values from n_k = 5 other tokens (rows of X_kv); d_model = 6, "
    "d_k = 4, d_v = 2. Give the shape of each of X_q, X_kv, W_Q, W_K, W_V, Q, K, V, S, A, Z "
    "as a dict of tuples, e.g. {'X_q': (rows, cols), ...}.",
    kind="compute",
)
def _shapes(answer: Any) -> str | None:
    if not isinstance(answer, dict):
        return f"answer with a dict name -> shape tuple, got a {type(answer).__name__}"
    missing = [name for name in SHAPE_NAMES if name not in answer]
    if missing:
        return f"missing: {', '.join(missing)}"
    shapes = {name: _shape(answer[name]) for name in SHAPE_NAMES}
    unread = [name for name, shape in shapes.items() if shape is None]
    if unread:
        return f"give each shape as a tuple of whole numbers, e.g. (3, 6); see {', '.join(unread)}"
    if seal("04.shapes", canonical(shapes)) == _SHAPES:
        return None
    wrong = [n for n in SHAPE_NAMES if seal(f"04.shapes.{n}", canonical(shapes[n])) != _SHAPE[n]]
    return (
        f"check {', '.join(wrong)}; a product (a x b)(b x c) is a x c, a weight matrix "
        "maps d_model features to d_k (or d_v) features, and a score pairs one query with "
        "one key"
    )


@exercise(
    "04.tiny",
    "A query q = [a, 0] with a > 0 and two keys k1 = [1, 0], k2 = [0, 1] (d_k = 2). What "
    "size a makes the weight on k1 exactly 0.95? Give a to two decimals.",
    kind="compute",
)
def _tiny(answer: Any) -> str | None:
    if not isinstance(answer, str) and plain_number(answer) is None:
        return f"answer with one number, the size a, not a {type(answer).__name__}"
    values = numbers(answer, 1)
    if not isinstance(values, str) and math.isfinite(values[0]) and \
            seal("04.tiny", canonical([round(values[0], 2)], 2)) in _TINY_BAND:
        return None
    return check_sealed(
        "04.tiny",
        answer,
        _TINY,
        decimals=2,
        atol=0.005,
        hints=_TINY_MISTAKES,
        advice="with two keys the first weight is 1 / (1 + e^-(s1 - s2)); set it to 0.95 "
        "and solve for the score gap, then undo the division by sqrt(d_k)",
    )


# ---- think -------------------------------------------------------------------------------

think(
    "04.why_scale",
    "The factor 1/sqrt(d_k) was derived for queries and keys whose entries have mean 0 and "
    "variance 1, which is roughly true when training starts. Training then changes W_Q and "
    "W_K freely. After training, does the scale still keep the scores at variance 1? If "
    "not, why is it still worth having?",
)


teaching_notes(
    "04",
    50,
    "shift_keys attention tiny why_scale",
    goals=(
        "Compute Q = XW_Q, K = XW_K, V = XW_V and softmax(QK^T / sqrt(d_k)) V by hand on "
        "small cases, and give the shape of every matrix.",
        "Explain with measurements why the scores are divided by sqrt(d_k): the softmax "
        "saturates and its gradient vanishes without it.",
        "Show that self-attention ignores word order (permutation equivariance) yet makes "
        "the same word's vector depend on its context.",
        "Use the temperature to sharpen or flatten the weights, and catch a softmax taken "
        "over the wrong axis.",
    ),
    misconceptions=(
        "Attention weights change whenever the keys change (adding one vector to every "
        "key changes nothing).",
        "Without positions only the set of surrounding words matters (how often a word "
        "occurs matters too).",
        "The sqrt(d_k) keeps trained scores at variance 1 (it only does so at the start).",
        "A softmax over the wrong axis would raise an error (it runs silently on a square S).",
    ),
)
