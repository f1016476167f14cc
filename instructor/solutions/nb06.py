"""The instructor's answers to notebook 06's exercises."""

from __future__ import annotations

from torch import Tensor

from minitx.course.exercises.nb06 import swap_truth


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """(B, T, C) -> (B, n_heads, T, C // n_heads): head h gets features h*d_k .. (h+1)*d_k - 1."""
    B, T, C = x.shape
    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)


def merge_heads(z: Tensor) -> Tensor:
    """(B, n_heads, T, d_k) -> (B, T, n_heads * d_k): the heads side by side again."""
    B, n_heads, T, d_k = z.shape
    return z.transpose(1, 2).contiguous().view(B, T, n_heads * d_k)


def to_torch(mask: Tensor) -> Tensor:
    """A minitx mask (True = may attend) as nn.MultiheadAttention's attn_mask (True = blocked)."""
    return ~mask


SOLUTIONS = {
    "06.split_heads": lambda: split_heads,
    "06.merge_heads": lambda: merge_heads,
    "06.torch_mask": lambda: to_torch,
    "06.swap_heads": swap_truth,
}

MODEL_ANSWERS = {
    "06.why_heads": (
        "A head computes one softmax per query, so one weighted average of the values: a single "
        "head must choose one distribution over positions for each query, and to serve both the "
        "previous token and the partner it can only blend their values into one vector. Eight "
        "heads give each query eight separate distributions, so one can look one step back while "
        "another finds the partner, and W_O combines both. The price is that each head compares "
        "queries and keys in only d_k dimensions, so its score matrix has rank at most d_k and "
        "it can express fewer patterns; with too many heads d_k becomes too small to tell keys "
        "apart. (Two layers of one head each could still solve the task, one relation per layer.)"
    ),
}
