"""The instructor's answers to notebook 11's exercises."""

from __future__ import annotations

import torch
from torch import Tensor

from minitx.course.exercises.nb11 import kv_sequences, shift_truth


def rope_half(x: Tensor, base: float = 10000.0) -> Tensor:
    """Rotary positions, rotate-half convention: feature i and i + hs/2 form pair i, turned
    by m * theta_i at position m, theta_i = base^(-2i/hs)."""
    T, hs = x.shape[-2:]
    h = hs // 2
    theta = base ** (-torch.arange(0, hs, 2, dtype=torch.float64) / hs)  # (hs/2,)
    angle = torch.arange(T, dtype=torch.float64)[:, None] * theta  # (T, hs/2)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    re, im = x[..., :h], x[..., h:]
    # (re + j im) * (cos + j sin)
    return torch.cat([re * cos - im * sin, re * sin + im * cos], dim=-1)


SOLUTIONS = {
    "11.shift": shift_truth,
    "11.rope_half": lambda: rope_half,
    "11.kv_cache": kv_sequences,
}

MODEL_ANSWERS = {
    "11.small_scale": (
        "Depth and width: RMSNorm and pre-norm placement matter most for the stability of deep "
        "stacks trained at high learning rates, which two layers never test; test it by "
        "training 2, 8 and 16 layers at a raised learning rate and counting diverged runs. "
        "Length: RoPE's relative positions matter when contexts are long and documents vary, "
        "while context 64 on one play-sized text barely asks for positions; test it by "
        "evaluating beyond the training length, as section 6 does, or on a task that needs "
        "an exact offset (copy the token 40 back). Scale of data: gains of a few percent "
        "(SwiGLU's) compound over a trillion tokens and are smaller than a seed spread over "
        "150 steps; more seeds and longer runs shrink the spread until such a gap "
        "can show. Memory: GQA buys nothing in loss; its point is the KV cache, which "
        "decides how many long sequences fit on a GPU during generation, a cost that a "
        "training loss never shows."
    ),
}
