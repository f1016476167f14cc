"""What a trained language model's prediction relies on.

    occlusion_importance   how much the prediction changes when one input token is replaced
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from minitx.nn.modes import evaluating, model_device


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


__all__ = ["occlusion_importance"]
