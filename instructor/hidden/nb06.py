"""Hidden cases of notebook 06."""

from __future__ import annotations

import torch

from . import Hidden


def _r(g: torch.Generator, *shape: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)


def _split_cases() -> list[tuple]:
    g = torch.Generator().manual_seed(6606)
    return [
        (_r(g, 2, 3, 12), 4),
        (_r(g, 1, 1, 6), 2),  # a batch of one, a single token
        (_r(g, 3, 5, 10), 1),  # one head: (B, 1, T, d_model)
        (_r(g, 2, 2, 9), 9),  # d_k = 1, more heads than positions
        (_r(g, 1, 4, 16, dtype=torch.float32), 4),
    ]


def _merge_cases() -> list[tuple]:
    g = torch.Generator().manual_seed(6616)
    return [
        (_r(g, 2, 3, 5, 4),),
        (_r(g, 1, 1, 1, 6),),  # a batch of one, one head, a single token
        (_r(g, 3, 6, 2, 1),),  # d_k = 1
        (_r(g, 1, 2, 4, 8).transpose(2, 3).contiguous().transpose(2, 3),),  # not contiguous
        (_r(g, 2, 4, 3, 2, dtype=torch.float32),),
    ]


HIDDEN = {
    # by hand: nothing that computes attention may answer it
    "06.two_heads": Hidden(atol=0.006, forbid=(
        "minitx.nn.attention.MultiHeadAttention",
        "minitx.nn.attention.scaled_dot_product_attention",
        "minitx.nn.attention.split_heads",
        "minitx.nn.attention.merge_heads",
        "minitx.nn.grouped_attention.GroupedQueryAttention",
        "torch.nn.MultiheadAttention",
        "torch.nn.functional.scaled_dot_product_attention",
        "torch.nn.functional.multi_head_attention_forward",
    )),
    "06.split_heads": Hidden(_split_cases, atol=1e-6, points=2),
    "06.merge_heads": Hidden(_merge_cases, atol=1e-6, points=2),
}
