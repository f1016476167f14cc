"""Exercises of notebook 04 (self-attention): calculator work on shapes and weights.

Expected answers are computed with :mod:`minitx.attention`, never typed in.
"""

from __future__ import annotations

from typing import Any

import torch

from minitx.attention import masked_softmax, scaled_dot_product_attention
from minitx.exercises import close, exercise

SHAPE_NAMES = ("X", "W_Q", "W_K", "W_V", "Q", "K", "V", "S", "A", "Z")
TOKENS = ("not", "guilty", "plea")
SCALED_SCORES = (0.0, 1.0, 2.0)  # "not guilty plea", first row, already divided by sqrt(d_k)
VALUES = ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0))  # V of "not guilty plea"


def expected_shapes(n: int = 4, d_model: int = 6, d_k: int = 3, d_v: int = 3) -> dict:
    """Run self-attention on tensors of these sizes and read off every shape.

    (Ones, not random numbers: only the shapes matter, and the learner's random state
    stays untouched.)"""
    X = torch.ones(n, d_model)
    W_Q, W_K, W_V = torch.ones(d_model, d_k), torch.ones(d_model, d_k), torch.ones(d_model, d_v)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    S = Q @ K.T
    Z, A = scaled_dot_product_attention(Q, K, V)
    tensors = dict(X=X, W_Q=W_Q, W_K=W_K, W_V=W_V, Q=Q, K=K, V=V, S=S, A=A, Z=Z)
    return {name: tuple(t.shape) for name, t in tensors.items()}


def expected_weights() -> torch.Tensor:
    """Softmax of the scaled scores [0, 1, 2]."""
    return masked_softmax(torch.tensor(SCALED_SCORES, dtype=torch.float64))


def expected_z1() -> torch.Tensor:
    """Z_1 = sum_j a_j v_j with the weights of :func:`expected_weights`."""
    return expected_weights() @ torch.tensor(VALUES, dtype=torch.float64)


def expected_tiny() -> torch.Tensor:
    """Weights of q = [2, 0] over k1 = [1, 0], k2 = [0, 1] (d_k = 2)."""
    q = torch.tensor([[2.0, 0.0]], dtype=torch.float64)
    K = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    return scaled_dot_product_attention(q, K, K)[1][0]


@exercise(
    "04.shapes",
    "Self-attention with n = 4 tokens, d_model = 6, d_k = d_v = 3: give the shape of each of "
    "X, W_Q, W_K, W_V, Q, K, V, S, A, Z as a dict of tuples, e.g. {'X': (rows, cols), ...}.",
)
def _shapes(answer: Any) -> str | None:
    if not isinstance(answer, dict):
        return f"answer with a dict name -> shape tuple, got a {type(answer).__name__}"
    missing = [name for name in SHAPE_NAMES if name not in answer]
    if missing:
        return f"missing: {', '.join(missing)}"
    expected = expected_shapes()
    wrong = [name for name in SHAPE_NAMES if tuple(answer[name]) != expected[name]]
    if wrong:
        return (
            f"check {', '.join(wrong)}; a product (a x b)(b x c) is a x c, and a weight "
            "matrix maps d_model features to d_k (or d_v) features"
        )
    return None


@exercise(
    "04.softmax",
    "The scaled scores of 'not' against 'not', 'guilty', 'plea' are [0, 1, 2]. Give the three "
    "attention weights (softmax) to two decimals, as a list.",
)
def _softmax(answer: Any) -> str | None:
    expected = expected_weights()
    if len(answer) != len(expected):
        return f"give {len(expected)} weights, one per token; got {len(answer)}"
    if abs(sum(float(a) for a in answer) - 1.0) > 0.02:
        return "softmax weights add up to 1; yours do not"
    if not close(answer, expected, atol=0.0051):
        return "compute exp(s) for each score, then divide each by their sum"
    return None


@exercise(
    "04.dominant",
    "With those weights, which token does 'not' attend to most? Answer with the word "
    "('not', 'guilty' or 'plea').",
)
def _dominant(answer: Any) -> str | None:
    if not isinstance(answer, str):
        return f"answer with one word as a string, got a {type(answer).__name__}"
    word = answer.strip().strip("'\"").lower()
    if word not in TOKENS:
        return f"answer with one of {', '.join(TOKENS)}"
    if word != TOKENS[int(expected_weights().argmax())]:
        return "look for the largest weight: the largest score wins"
    return None


@exercise(
    "04.z1",
    "The values are v_not = [1, 0], v_guilty = [0, 1], v_plea = [1, 1]. Give Z_1, the output "
    "of 'not', to two decimals, as a list of two numbers.",
)
def _z1(answer: Any) -> str | None:
    expected = expected_z1()
    if len(answer) != len(expected):
        return f"Z_1 has as many entries as a value vector ({len(expected)}); got {len(answer)}"
    if not close(answer, expected, atol=0.011):
        return "Z_1 = a_1 * v_not + a_2 * v_guilty + a_3 * v_plea, entry by entry"
    return None


@exercise(
    "04.tiny",
    "One query q = [2, 0] and two keys k1 = [1, 0], k2 = [0, 1] (d_k = 2). Give the two "
    "attention weights to two decimals, as a list.",
)
def _tiny(answer: Any) -> str | None:
    expected = expected_tiny()
    if len(answer) != len(expected):
        return f"give {len(expected)} weights, one per key; got {len(answer)}"
    raw = torch.softmax(torch.tensor([2.0, 0.0], dtype=torch.float64), -1)
    if close(answer, raw, atol=0.0051):
        return "close: you forgot to divide the scores by sqrt(d_k)"
    if not close(answer, expected, atol=0.0051):
        return "score_j = q . k_j / sqrt(d_k), then a softmax over the two scores"
    return None
