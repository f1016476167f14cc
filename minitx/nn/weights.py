"""Copying PyTorch's weights into the course's modules: the one helper every ``from_torch``
uses, so that each from-scratch piece can be proven equal to PyTorch's own."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor, nn


def copy_weights(ours: nn.Module, theirs: nn.Module, names: Mapping[str, str]) -> nn.Module:
    """Copy ``theirs``'s tensors into ``ours``: ``names`` maps a parameter name of ``ours``
    to the name of the same tensor in ``theirs`` (dotted paths, e.g. ``"fc1.weight":
    "linear1.weight"``). ``ours`` first takes ``theirs``'s dtype and device.

    A name whose tensor is None on both sides (no bias) is skipped. Returns ``ours``.
    """
    first = next(theirs.parameters(), None)
    if first is not None:
        ours.to(dtype=first.dtype, device=first.device)
    with torch.no_grad():
        for our_name, their_name in names.items():
            dst, src = _tensor(ours, our_name), _tensor(theirs, their_name)
            if dst is None and src is None:
                continue
            if dst is None or src is None or dst.shape != src.shape:
                raise ValueError(
                    f"cannot copy {type(theirs).__name__}.{their_name} "
                    f"{_shape(src)} into {type(ours).__name__}.{our_name} {_shape(dst)}"
                )
            dst.copy_(src)
    return ours


def _tensor(module: nn.Module, dotted: str) -> Tensor | None:
    *path, leaf = dotted.split(".")
    for part in path:
        module = getattr(module, part)
    return getattr(module, leaf)


def _shape(t: Tensor | None) -> str:
    return "(missing)" if t is None else str(tuple(t.shape))


__all__ = ["copy_weights"]
