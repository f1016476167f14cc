"""Hidden cases of notebook 04."""

from __future__ import annotations

import torch

from . import Hidden


def _attention_cases() -> list[tuple]:
    g = torch.Generator().manual_seed(4404)

    def r(*shape: int, scale: float = 1.0, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        return (scale * torch.randn(*shape, generator=g, dtype=torch.float64)).to(dtype)

    return [
        (r(3, 5), r(3, 5), r(3, 2)),
        (r(2, 2, 4, 6), r(2, 2, 5, 6), r(2, 2, 5, 3)),  # n_q != n_k, d_k != d_v, heads
        (r(2, 7, scale=3.0), r(6, 7, scale=3.0), r(6, 4)),  # large scores
        (r(5, 3, dtype=torch.float32), r(5, 3, dtype=torch.float32), r(5, 3, dtype=torch.float32)),
        (r(1, 1), r(1, 1), r(1, 1)),
        (r(2, 6, scale=50.0), r(4, 6, scale=50.0), r(4, 3)),  # scores in the thousands
    ]


HIDDEN = {
    "04.attention": Hidden(_attention_cases, atol=1e-5, points=3,
                           forbid=("minitx.nn.attention.scaled_dot_product_attention",
                                   "minitx.nn.attention.masked_softmax", "torch.softmax",
                                   "torch.Tensor.softmax", "torch.nn.functional.softmax",
                                   "torch.special.softmax", "torch.log_softmax",
                                   "torch.Tensor.log_softmax",
                                   "torch.nn.functional.log_softmax",
                                   "minitx.nn.grouped_attention.grouped_query_attention",
                                   "torch.ops.aten")),
    "04.shapes": Hidden(atol=0.0),
    "04.tiny": Hidden(atol=0.015, forbid=(  # a to 2 decimals, 4.16: 4.145 to 4.175
        "minitx.nn.attention.scaled_dot_product_attention",
        "torch.nn.functional.scaled_dot_product_attention")),
}
