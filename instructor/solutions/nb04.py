"""The instructor's answers to notebook 04's exercises."""

from __future__ import annotations

import math

import torch

from minitx.course.exercises.nb04 import (
    expected_shapes,
    expected_tiny,
    repeat_word_outcome,
    shift_keys_outcome,
)


def attention(
    Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(Q K^T / sqrt(d_k)) V and the weights, for Q (..., n_q, d_k), K (..., n_k,
    d_k), V (..., n_k, d_v)."""
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))  # (..., n_q, n_k)
    A = torch.softmax(scores, dim=-1)  # each row sums to 1
    return A @ V, A


SOLUTIONS = {
    "04.shift_keys": shift_keys_outcome,
    "04.repeat_word": repeat_word_outcome,
    "04.attention": lambda: attention,
    "04.shapes": expected_shapes,
    "04.tiny": lambda: [round(w, 4) for w in expected_tiny().tolist()],
}

MODEL_ANSWERS = {
    "04.why_scale": (
        "No: once W_Q and W_K are trained, the queries and keys have whatever size the model "
        "found useful, and the scores can be much larger or smaller than 1 (a head that must "
        "pick one token learns large scores on purpose). The scale matters most at the start: "
        "it makes the initial softmax unsaturated for any head size, so gradients reach W_Q and "
        "W_K and learning can begin. Without it, a large d_k starts training with near one-hot "
        "rows and vanishing gradients, and the model would first have to learn to shrink W_Q "
        "and W_K. It also lets the same learning rate and initialisation work across head sizes."
    ),
}
