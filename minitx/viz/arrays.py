"""Turning whatever a learner passes (a tensor, an array, a nested list) into a checked
numpy array: the one conversion every plot and explorer uses."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


def as_numpy(x: Any, name: str = "array") -> np.ndarray:
    """A numpy copy of a torch tensor (detached, on the CPU, float64 unless boolean), a
    numpy array or a nested list; ``TypeError`` naming ``name`` for anything else."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.dtype == torch.bool:
            return x.numpy().copy()
        return x.to(torch.float64).numpy().copy()
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"{name} must be a torch tensor or numpy array, got {type(x).__name__}"
        ) from e
    if arr.dtype != bool and not np.issubdtype(arr.dtype, np.number):
        raise TypeError(
            f"{name} must be numeric (a tensor or array), got dtype {arr.dtype} from "
            f"{type(x).__name__}"
        )
    return arr


def squeeze_to(arr: np.ndarray, ndim: int, name: str, expected: str) -> np.ndarray:
    """Drop leading size-1 dims (a batch of one) until ``arr`` has ``ndim`` dims;
    ``ValueError`` naming ``expected`` (e.g. "(T_q, T_k)") if it cannot."""
    shape = arr.shape
    while arr.ndim > ndim and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D {expected}, got shape {shape}")
    return arr
