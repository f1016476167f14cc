"""A module's state: which device it lives on, and eval mode for a block of code."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn


def model_device(model: nn.Module) -> torch.device:
    """The device a model's parameters live on (the CPU for a model without any)."""
    param = next(iter(model.parameters()), None)
    return param.device if param is not None else torch.device("cpu")


@contextlib.contextmanager
def evaluating(model: nn.Module) -> Iterator[None]:
    """Dropout off (and gradients off) for the duration; the previous mode comes back."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


__all__ = ["evaluating", "model_device"]
