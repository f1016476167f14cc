"""Answers turned into plain data before anything compares them.

A checker never asks a learner's object whether it equals the answer: an object may say
yes to anything (an ``__eq__`` that is always True, a tensor subclass whose ``allclose``
lies). Everything is first copied into plain data that cannot lie:

    base_tensor     a base-class CPU copy of a tensor of any subclass, of its dtype
    plain_tensor    a base-class float64 CPU ``torch.Tensor`` (from a tensor of any subclass
                    or dtype, a NumPy array, a number or a nested list of numbers), or None
    plain_number    a Python ``int`` or ``float`` (from an int, a float, a NumPy scalar, a
                    0-d tensor or array; never a bool or a string), or None
    plain_int       the same, for a whole number (``28272.0`` is 28272)
    numbers         a list of floats from a sequence of numbers, or a hint
    to_plain        any answer as JSON-able data (a tensor as ``{"shape", "dtype", "data"}``),
                    the form answers leave a grading process in
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor

MAX_DEPTH = 6


def base_tensor(value: Tensor) -> Tensor:
    """A base-class CPU copy of ``value``, of its dtype, made without the subclass's
    ``__torch_function__`` or methods."""
    # Tensor.as_subclass is one of the methods __torch_function__ never sees, and called on
    # the class it cannot be overridden either.
    return torch.Tensor.as_subclass(value, torch.Tensor).detach().to("cpu", copy=True)


def plain_tensor(value: Any) -> Tensor | None:
    """``value`` as a base-class float64 CPU tensor (complex stays complex), or None if it is
    not a tensor, an array, a number or a (nested) list or tuple of numbers."""
    if isinstance(value, bool | str | bytes):
        return None
    if isinstance(value, Tensor):
        out = base_tensor(value)
        return out if out.is_complex() else out.double()
    if isinstance(value, np.ndarray | np.generic):
        array = np.array(value, subok=False)
        if array.dtype.kind not in "iufcb":
            return None
        return torch.from_numpy(array.astype(np.float64 if array.dtype.kind != "c" else complex))
    if type(value) in (int, float):
        return torch.tensor(float(value), dtype=torch.float64)
    if isinstance(value, list | tuple):
        parts = [plain_tensor(v) for v in value]
        if not parts or any(p is None for p in parts):
            return torch.zeros(0, dtype=torch.float64) if not parts else None
        if len({p.shape for p in parts}) != 1:
            return None
        return torch.stack(parts)
    return None


def plain_number(value: Any) -> int | float | None:
    """``value`` as a Python int or float: an int, a float, a NumPy scalar, or a 0-d tensor
    or array. None for anything else (a bool, a string, a list, an object of another type)."""
    if isinstance(value, bool | np.bool_ | str | bytes):
        return None
    if type(value) in (int, float):
        return value
    if isinstance(value, np.integer):
        return int(np.array(value, subok=False).astype(np.int64))
    if isinstance(value, np.floating):
        return float(np.array(value, subok=False).astype(np.float64))
    if isinstance(value, Tensor | np.ndarray):
        t = plain_tensor(value)
        if t is None or t.dim() != 0 or t.is_complex():
            return None
        if isinstance(value, Tensor) and not value.is_floating_point():
            return int(t.item())
        if isinstance(value, np.ndarray) and value.dtype.kind in "iu":
            return int(t.item())
        return float(t.item())
    return None


def plain_int(value: Any) -> int | None:
    """``value`` as a Python int if it is a whole number of any plain type, else None."""
    number = plain_number(value)
    if number is None or not math.isfinite(number) or float(number) != int(number):
        return None
    return int(number)


def numbers(answer: Any, count: int | None = None) -> list[float] | str:
    """``answer`` (a list, tuple, array or 1-d tensor of numbers) as a list of floats, or a
    hint: "answer with numbers" for a string, the count when ``count`` numbers are asked."""
    if isinstance(answer, str | bytes):
        example = {None: "e.g. [0.5, 0.5]", 1: "here one number, e.g. 0.5"}.get(
            count, f"here a list of {count}")
        return f"answer with numbers, not a string: {example}"
    if isinstance(answer, dict) or (plain_number(answer) is not None and count not in (None, 1)):
        return f"answer with a list of {count} numbers, got a {type(answer).__name__}"
    single = plain_number(answer)
    values = plain_tensor([single] if single is not None else answer)
    if values is None or values.dim() != 1 or values.is_complex():
        return f"answer with a list of numbers, got a {type(answer).__name__}"
    if count is not None and len(values) != count:
        return f"give {'one number' if count == 1 else f'{count} numbers'}, got {len(values)}"
    return [float(v) for v in values.tolist()]


def to_plain(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-able plain data: None, bool, int, float, str, lists, dicts with
    string keys, and tensors or arrays as ``{"shape": [...], "dtype": str, "data": [...]}``.
    Anything else becomes ``{"unreadable": type name}``: its own methods are never called."""
    if depth > MAX_DEPTH:
        return {"unreadable": "too deeply nested"}
    if value is None or type(value) in (bool, str):
        return value
    number = plain_number(value)
    if number is not None:
        return number if math.isfinite(number) else repr(float(number))
    if isinstance(value, Tensor | np.ndarray):
        t = plain_tensor(value)
        if t is None or t.is_complex():
            return {"unreadable": type(value).__name__}
        dtype = str(value.dtype).removeprefix("torch.")
        return {"shape": list(t.shape), "dtype": dtype, "data": t.flatten().tolist()}
    if type(value) in (list, tuple):
        return [to_plain(v, depth + 1) for v in value]
    if type(value) is dict and all(type(k) in (str, int) for k in value):
        return {str(k): to_plain(v, depth + 1) for k, v in value.items()}
    return {"unreadable": type(value).__name__}


__all__ = ["base_tensor", "numbers", "plain_int", "plain_number", "plain_tensor", "to_plain"]
