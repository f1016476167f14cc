"""Hidden cases of notebook 11."""

from __future__ import annotations

import torch

from . import Hidden


def _rope_cases() -> list[tuple]:
    g = torch.Generator().manual_seed(1111)

    def r(*shape: int, scale: float = 1.0, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        return (scale * torch.randn(*shape, generator=g, dtype=torch.float64)).to(dtype)

    return [
        (r(2, 5, 6), 10000.0),
        (r(1, 1, 1, 2), 10000.0),  # a single token, one pair: position 0 is unchanged
        (r(1, 3, 12, 10), 50.0),  # a small base: fast angles
        (r(2, 2, 32, 8, scale=5.0), 1000000.0),  # large values, a longer sequence
        (r(3, 4, 16, dtype=torch.float32), 10000.0),
    ]


HIDDEN = {
    "11.rope_half": Hidden(_rope_cases, atol=1e-4, points=3),
    "11.kv_cache": Hidden(atol=0.0, points=2, forbid=(
        "minitx.nn.gpt_config.kv_cache_numel",
        "minitx.nn.generation.KVCache",
        "minitx.course.modern_block.bytes_per_token",  # shown in section 7
    )),
}
