"""What a trained language model's prediction relies on, and what its generation costs.

    occlusion_importance    how much the prediction changes when one input token is replaced
    generation_ms_per_token how long ``generate`` takes per new token, with and without its cache
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from minitx.nn.modes import evaluating, model_device
from minitx.train.runtime import threads


def occlusion_importance(model: nn.Module, idx: Tensor, replacement: int) -> Tensor:
    """How much each input token matters to the next-token prediction after ``idx`` (1, T).

    For every position j, token j is replaced by ``replacement`` and the drop in the
    log-probability of the token the model predicts from the intact input is measured.
    Returns (T,) float: entry j is ``log p(top | idx) - log p(top | idx with j replaced)``
    (large = the prediction relied on token j; positions already equal to ``replacement``
    score 0).
    """
    if not isinstance(idx, Tensor) or idx.dim() != 2 or idx.size(0) != 1:
        got = tuple(idx.shape) if isinstance(idx, Tensor) else type(idx).__name__
        raise ValueError(f"idx must be a (1, T) tensor of token ids, got {got}")
    T = idx.size(1)
    with evaluating(model):
        variants = idx.repeat(T + 1, 1)  # (T+1, T): row 0 intact, row j+1 has j replaced
        variants[torch.arange(1, T + 1), torch.arange(T)] = replacement
        logits, _ = model(variants.to(model_device(model)))
    logp = torch.log_softmax(logits[:, -1].float(), dim=-1).cpu()  # (T+1, V)
    top = int(logp[0].argmax())
    return logp[0, top] - logp[1:, top]  # (T,)


def generation_ms_per_token(
    model: nn.Module, idx: Tensor, lengths: Sequence[int], repeats: int = 2
) -> dict[str, list[float]]:
    """Milliseconds per new token of ``model.generate(idx, n)`` for each ``n`` in ``lengths``,
    with and without its key-value cache, on one CPU thread (``idx`` (1, T) is moved to the
    CPU; ``model`` must be there). Each time is the best of ``repeats`` runs, the two versions
    alternated so that neither always runs first. Returns ``{"without cache": [...],
    "with cache": [...]}``, one entry per length."""
    if model_device(model).type != "cpu":
        raise ValueError(f"time generation on the CPU, got a model on {model_device(model)}")
    if not lengths or any(isinstance(n, bool) or not isinstance(n, int) or n < 1
                          for n in lengths):  # fmt: skip
        raise ValueError(f"lengths must be ints >= 1, got {lengths!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
    idx = idx.cpu()
    out: dict[str, list[float]] = {"without cache": [], "with cache": []}
    with threads(1):
        for n in lengths:
            best = {True: math.inf, False: math.inf}
            for r in range(repeats):
                for use_cache in (True, False) if r % 2 == 0 else (False, True):
                    generator = torch.Generator().manual_seed(0)
                    start = time.perf_counter()
                    model.generate(idx, n, generator=generator, use_cache=use_cache)
                    best[use_cache] = min(best[use_cache], time.perf_counter() - start)
            out["without cache"].append(1e3 * best[False] / n)
            out["with cache"].append(1e3 * best[True] / n)
    return out


__all__ = ["generation_ms_per_token", "occlusion_importance"]
