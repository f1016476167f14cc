"""Hidden cases of notebook 09."""

from __future__ import annotations

import torch

from . import Hidden


def _top_p_cases() -> list[tuple]:
    g = torch.Generator().manual_seed(9909)

    def r(*shape: int, scale: float = 2.0, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        return (scale * torch.randn(*shape, generator=g, dtype=torch.float64)).to(dtype)

    peaked = r(3, 6)
    peaked[1, 4] += 40.0  # one token holds almost all the probability
    return [
        (r(5), 0.7),
        (r(1, 1), 0.9),  # a single token: always kept
        (r(2, 4, 11), 0.45),
        (r(3, 20, scale=8.0), 0.8),  # large logits
        (peaked, 0.5),
        (r(2, 9), 1.0),  # keep everything
        (r(1, 30), 0.001),  # keep only the most likely token
        (r(4, 16, dtype=torch.float32), 0.6),
    ]


HIDDEN = {
    "09.top_p": Hidden(_top_p_cases, atol=0.0, points=3),
    "09.temperature": Hidden(atol=0.002, forbid=(
        "minitx.nn.generation.apply_temperature",
        "minitx.nn.generation.next_token_probs",
        "minitx.nn.generation.sample_next",
    )),
}
