"""The optimiser and its learning-rate schedule, as the trainer uses them.

    lr_at            linear warmup, then cosine decay to a floor
    param_groups     weight decay on matrices only
    make_optimizer   AdamW over those groups
"""

from __future__ import annotations

import math

import torch
from torch import nn


def lr_at(
    step: int, *, learning_rate: float, min_lr: float, warmup_steps: int, decay_steps: int
) -> float:
    """Learning rate for optimisation step ``step`` (0-based): linear warmup, then cosine.

    - ``step < warmup_steps``: rises linearly, ``learning_rate * (step + 1) / warmup_steps``;
    - ``warmup_steps <= step < decay_steps``: cosine from ``learning_rate`` down to ``min_lr``;
    - ``step >= decay_steps``: ``min_lr``.

    With ``min_lr == learning_rate`` and ``warmup_steps == 0`` the rate is constant.
    """
    if step < 0:
        raise ValueError(f"step must be >= 0, got {step}")
    if warmup_steps < 0 or decay_steps < warmup_steps:
        raise ValueError(
            f"need 0 <= warmup_steps <= decay_steps, got warmup_steps={warmup_steps}, "
            f"decay_steps={decay_steps}"
        )
    if step < warmup_steps:
        return learning_rate * (step + 1) / warmup_steps
    if step >= decay_steps:
        return min_lr
    ratio = (step - warmup_steps) / max(1, decay_steps - warmup_steps)  # in [0, 1)
    coeff = 0.5 * (1.0 + math.cos(math.pi * ratio))  # 1 -> 0
    return min_lr + coeff * (learning_rate - min_lr)


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Split trainable parameters for AdamW: decay on matrices (dim >= 2), none on the rest.

    Decayed: Linear weights and embedding tables (with a tied output head the token
    embedding *is* the output matrix, so it is treated like one). Not decayed: biases and
    LayerNorm gains/shifts (dim 1), whose scale has nothing to do with overfitting.
    Tied parameters are counted once.
    """
    decay, no_decay = [], []
    for _, p in model.named_parameters():  # named_parameters() yields a tied tensor once
        if not p.requires_grad:
            continue
        (decay if p.dim() >= 2 else no_decay).append(p)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def make_optimizer(
    model: nn.Module,
    *,
    learning_rate: float,
    weight_decay: float,
    betas: tuple[float, float],
    fused: bool = False,
) -> torch.optim.AdamW:
    """AdamW over ``param_groups(model, weight_decay)``."""
    groups = param_groups(model, weight_decay)
    kwargs = {"fused": True} if fused else {}
    return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, **kwargs)


__all__ = ["lr_at", "make_optimizer", "param_groups"]
