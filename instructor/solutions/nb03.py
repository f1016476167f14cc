"""The instructor's answers to notebook 03's exercises."""

from __future__ import annotations

import torch
from torch import Tensor

from minitx.course.exercises.nb03 import duplicate_truth, expected_iso


def additive_attention(
    s: Tensor, h: Tensor, W: Tensor, U: Tensor, v: Tensor, mask: Tensor
) -> tuple[Tensor, Tensor]:
    """One decoder step of Bahdanau attention: context (B, d_h) and weights (B, T)."""
    scores = torch.tanh((s @ W.T)[:, None, :] + h @ U.T) @ v  # (B, T)
    scores = scores.masked_fill(~mask, float("-inf"))  # padding: weight exactly 0
    weights = torch.softmax(scores, dim=-1)  # over the source positions
    return (weights[:, :, None] * h).sum(dim=1), weights  # sum_j a_j h_j


SOLUTIONS = {
    "03.iso": expected_iso,
    "03.additive": lambda: additive_attention,
    "03.duplicate": duplicate_truth,
}

MODEL_ANSWERS = {
    "03.bottleneck": (
        "Section 5 compared the models at 300 steps, with the model without attention still "
        "learning, so it cannot say; more training would likely raise its accuracy, and the "
        "experiment to run is to train it until its loss stops falling. A larger h_T carries "
        "more, so it could help too, but it stays a fixed budget: the same vector must hold one "
        "date or ten, and the encoder must learn to pack every field into it and the decoder "
        "to unpack them in order, which is slow to learn. With "
        "attention the memory the decoder reads grows with the input (one H-sized state per "
        "character, T x H numbers) and each step reads only what it needs, so the number of "
        "dates changes what it must find, not how much it must squeeze. For ten dates, "
        "attention is the change to make; a larger H alone postpones the problem."
    ),
}
