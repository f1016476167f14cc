"""Hidden cases of notebook 05."""

from __future__ import annotations

from typing import Any

import torch

from . import Hidden

# A one-call answer to 05.causal_zeros: the package's causal mask, or a triangle helper.
_TRIANGLES = ("minitx.nn.masks.causal_mask", "torch.tril", "torch.triu", "torch.tril_indices",
              "torch.triu_indices", "numpy.tril", "numpy.triu", "numpy.tril_indices",
              "numpy.triu_indices")


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


def _pairs(plain: Any) -> Any:
    """A set, list or (k, 2) tensor of (row, column) pairs, as plain data, in one order:
    sorted, without repeats (any order is right). Anything else is left as it is."""
    if type(plain) is dict and set(plain) == {"shape", "dtype", "data"} and type(
            plain["data"]) is list and plain["shape"] == [len(plain["data"]) // 2, 2]:
        data = plain["data"]  # a (k, 2) tensor or array
        plain = [data[i:i + 2] for i in range(0, len(data), 2)]
    if type(plain) is not list or not all(
            type(p) is list and len(p) == 2 and all(type(v) in (int, float) for v in p)
            for p in plain):
        return plain
    return [list(p) for p in sorted({(float(r), float(c)) for r, c in plain})]


HIDDEN = {
    "05.causal_zeros": Hidden(atol=0.0, forbid=_TRIANGLES, normalize=_pairs),
    "05.masked_softmax": Hidden(_masked_softmax_cases, atol=1e-6, points=2),
    "05.combined": Hidden(atol=0.0),
}
