"""Exercises of notebook 04 (self-attention).

Two predictions (a shifted key, a repeated word), one implementation (attention itself,
tested against :func:`minitx.nn.attention.scaled_dot_product_attention`), two pieces of
calculator work and one open question. The answers are kept as seals
(:mod:`minitx.course.exercises.seal`), computed from the instructor's solutions
(instructor/solutions/nb04.py); the package computes none of them.
"""

from __future__ import annotations

from typing import Any

import torch

from minitx.course.exercises import exercise, teaching_notes, think
from minitx.course.exercises.checks import compare_attention, implement, predict
from minitx.course.exercises.plain import plain_int
from minitx.course.exercises.seal import canonical, check_sealed, seal
from minitx.nn.attention import scaled_dot_product_attention

DT = torch.float64
SHAPE_NAMES = ("X", "W_Q", "W_K", "W_V", "Q", "K", "V", "S", "A", "Z")

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
_SHAPES = "b9241ec55ad9f705bced5ccca343ca8ea643e4ef"  # canonical({name: [rows, cols]})
_SHAPE = {  # seal(f"04.shapes.{name}", canonical([rows, cols]))
    "X": "94c6f8e51a1f99b2f4fc3673d9caea7def803cce",
    "W_Q": "b2e7a4f4224411fb032d2c405fd2b497dbb2a210",
    "W_K": "acf7c51589336abde3626f949799a2e6429278bf",
    "W_V": "63e928ba7e952de22fa308bcb9b4ce264f1df511",
    "Q": "875c1d863b385ac738622635fac6083d211abd6b",
    "K": "9acc6dbd639f85ba866a77feb58eeb853a1990b3",
    "V": "70c67e8196c1301cc2e200143fa8056015af8ffa",
    "S": "b850937255ac56e77f595628c40b92400e38f6c6",
    "A": "c1647249028e63d26c4b175460122dff2ddcd05e",
    "Z": "9c24d4acf73146bf7e0294d7d755a730c1405a97",
}
_TINY = "10b56b70485daab33df3c752a926bebeacd2112b"  # two weights, 2 decimals
_TINY_MISTAKES = {
    "7ccd0ca5453ae7fdf14731c4c9ee574cdba562ff": "close: you forgot to divide the scores by "
    "sqrt(d_k)",
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
    d_k != d_v, large scores, a single token and a batch of one."""
    g = torch.Generator().manual_seed(404)

    def randn(*shape: int, scale: float = 1.0) -> torch.Tensor:
        return scale * torch.randn(*shape, generator=g, dtype=DT)

    return [
        (randn(5, 4), randn(5, 4), randn(5, 3)),
        (randn(2, 3, 6, 8), randn(2, 3, 7, 8), randn(2, 3, 7, 5)),
        (randn(4, 16, scale=2.0), randn(4, 16, scale=2.0), randn(4, 2)),
        (randn(1, 3), randn(1, 3), randn(1, 2)),
        (randn(1, 3, 2), randn(1, 3, 2), randn(1, 3, 2)),
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
    "'...' is any number of batch dimensions (none, or batch and heads).",
    forbid=(
        "minitx.nn.attention.scaled_dot_product_attention",
        "minitx.nn.attention._score_softmax_sum",
        "minitx.nn.attention.DotProductAttention",
        "minitx.nn.attention.MultiHeadAttention",
        "torch.nn.functional.scaled_dot_product_attention",
        "torch.nn.functional.multi_head_attention_forward",
        "torch.nn.MultiheadAttention",
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
    "Self-attention with n = 4 tokens, d_model = 6, d_k = d_v = 3: give the shape of each of "
    "X, W_Q, W_K, W_V, Q, K, V, S, A, Z as a dict of tuples, e.g. {'X': (rows, cols), ...}.",
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
        return f"give each shape as a tuple of whole numbers, e.g. (4, 6); see {', '.join(unread)}"
    if seal("04.shapes", canonical(shapes)) == _SHAPES:
        return None
    wrong = [n for n in SHAPE_NAMES if seal(f"04.shapes.{n}", canonical(shapes[n])) != _SHAPE[n]]
    return (
        f"check {', '.join(wrong)}; a product (a x b)(b x c) is a x c, and a weight "
        "matrix maps d_model features to d_k (or d_v) features"
    )


@exercise(
    "04.tiny",
    "One query q = [2, 0] and two keys k1 = [1, 0], k2 = [0, 1] (d_k = 2). Give the two "
    "attention weights to two decimals, as a list.",
    kind="compute",
)
def _tiny(answer: Any) -> str | None:
    return check_sealed(
        "04.tiny",
        answer,
        _TINY,
        count=2,
        decimals=2,
        atol=0.005,
        hints=_TINY_MISTAKES,
        advice="score_j = q . k_j / sqrt(d_k), then a softmax over the two scores",
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
