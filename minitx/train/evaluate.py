"""The loss of a language model over data it does not train on: the one way the package
scores a model, used by the Trainer's evaluations, the CLI and the notebooks.

    estimate_loss   mean loss over fixed random blocks of a token tensor (quick, seeded)
    split_loss      mean loss over a whole split, in non-overlapping windows (exact)
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from minitx.data.batches import random_blocks, sequential_blocks
from minitx.nn.modes import evaluating, model_device


@torch.no_grad()
def estimate_loss(
    model: nn.Module,
    data: Tensor,
    block_size: int,
    batch_size: int = 32,
    n_batches: int = 10,
    seed: int = 0,
) -> float:
    """Mean cross-entropy of ``model`` over ``n_batches`` random blocks of ``data``.

    ``data`` (N,) token ids; ``model(x, y)`` returns ``(logits, loss)``. The block offsets
    come from a ``torch.Generator`` seeded with ``seed``, so the same call always scores
    the same ``n_batches * batch_size`` windows of ``block_size`` tokens. Runs in eval
    mode without gradients; the model's mode is restored.
    """
    if not isinstance(n_batches, int) or isinstance(n_batches, bool) or n_batches < 1:
        raise ValueError(f"n_batches must be an int >= 1, got {n_batches!r}")
    generator = torch.Generator().manual_seed(seed)
    device = model_device(model)
    with evaluating(model):
        total = 0.0
        for _ in range(n_batches):
            x, y = random_blocks(data, block_size, batch_size, generator)  # (B, T) each
            _, loss = model(x.to(device), y.to(device))
            total += float(loss)
    return total / n_batches


def split_loss(
    model: nn.Module,
    data: Tensor,
    block_size: int,
    batch_size: int = 64,
    max_tokens: int | None = None,
) -> float:
    """Mean cross-entropy (nats per token) of ``model`` over the whole of ``data``.

    Where :func:`estimate_loss` samples windows (quick, and noisy from one seed to the
    next), this walks ``data`` (N,) once in non-overlapping windows of ``block_size``
    tokens, so two models, or two machines, scoring one split get comparable numbers.
    Each window's first prediction has no context. ``max_tokens`` scores only the first
    that many tokens (a fixed subset, for a quick check). Eval mode, no gradients.
    """
    if not isinstance(data, Tensor) or data.dim() != 1:
        got = tuple(data.shape) if isinstance(data, Tensor) else type(data).__name__
        raise ValueError(f"data must be a 1-D tensor of token ids (N,), got {got}")
    if max_tokens is not None:
        if max_tokens <= block_size:
            raise ValueError(f"max_tokens must exceed block_size={block_size}, got {max_tokens}")
        data = data[: max_tokens + 1]  # +1: the last window's shifted target
    device = model_device(model)
    total, count = 0.0, 0
    with evaluating(model):
        for x, y in sequential_blocks(data, block_size, batch_size):  # (b, T) each
            _, loss = model(x.to(device), y.to(device))
            total += float(loss) * y.numel()
            count += y.numel()
    return total / count

