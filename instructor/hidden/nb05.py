"""Hidden cases of notebook 05."""

from __future__ import annotations

import torch

from . import Hidden


def _r(g: torch.Generator, *shape: int, scale: float = 1.0) -> torch.Tensor:
    return scale * torch.randn(*shape, generator=g, dtype=torch.float64)


def _masked_softmax_cases() -> list[tuple]:
    g = torch.Generator().manual_seed(5505)
    mask = torch.rand(3, 4, 6, generator=g) < 0.5
    mask[0, 1] = False  # a fully blocked row
    return [
        (_r(g, 3, 4, 6, scale=2.0), mask),
        (_r(g, 5, 5), torch.ones(5, 5, dtype=torch.bool).tril()),
        (_r(g, 2, 3, scale=50.0), torch.tensor([[True, False, True], [False, False, True]])),
    ]


def _causal_cases() -> list[tuple]:
    g = torch.Generator().manual_seed(5515)
    return [
        (_r(g, 4, 3), _r(g, 4, 3), _r(g, 4, 2)),
        (_r(g, 2, 3, 6, 5), _r(g, 2, 3, 6, 5), _r(g, 2, 3, 6, 4)),
        (_r(g, 1, 2), _r(g, 1, 2), _r(g, 1, 2)),
    ]


HIDDEN = {
    "05.masked_softmax": Hidden(_masked_softmax_cases, atol=1e-6, points=2),
    "05.causal_attention": Hidden(_causal_cases, atol=1e-6, points=2),
    "05.combined": Hidden(atol=0.0),
}
