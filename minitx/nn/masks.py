"""Attention masks.

The convention everywhere in minitx: a **boolean** mask with ``True`` = *may attend*
(the convention of ``torch.nn.functional.scaled_dot_product_attention``), broadcastable
to ``(B, h, T_q, T_k)``. ``nn.MultiheadAttention`` uses the opposite convention
(``True`` = blocked): pass it ``~mask``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def causal_mask(T: int, *, device: torch.device | str | None = None) -> Tensor:
    """Lower-triangular mask: position i may attend to positions j <= i.

    Returns a bool tensor of shape ``(T, T)``.
    """
    if not isinstance(T, int) or isinstance(T, bool) or T < 1:
        raise ValueError(f"causal_mask expects a sequence length T >= 1, got {T!r}")
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def sliding_window_mask(
    T: int, window: int, *, device: torch.device | str | None = None
) -> Tensor:
    """Causal mask limited to a window: position i may attend to positions
    i - window + 1 .. i, the last ``window`` positions including itself.

    Returns a bool tensor of shape ``(T, T)``: the diagonal of ``causal_mask(T)`` and the
    ``window - 1`` diagonals below it. ``window >= T`` gives ``causal_mask(T)``.
    """
    if not isinstance(window, int) or isinstance(window, bool) or window < 1:
        raise ValueError(f"sliding_window_mask expects a window >= 1, got {window!r}")
    return causal_mask(T, device=device).triu(-(window - 1))


def padding_mask(lengths: Sequence[int] | Tensor, T: int) -> Tensor:
    """Key-padding mask for a batch of sequences padded to length ``T``.

    ``lengths[b]`` real tokens come first, padding after. Returns a bool tensor of shape
    ``(B, 1, 1, T)`` (True on real tokens), which broadcasts over heads and queries.
    """
    lengths = torch.as_tensor(lengths)
    if lengths.dim() != 1 or lengths.dtype.is_floating_point or lengths.dtype == torch.bool:
        raise ValueError(
            f"padding_mask expects a 1-D sequence of integer lengths, got "
            f"{tuple(lengths.shape)} of {lengths.dtype}"
        )
    if not isinstance(T, int) or isinstance(T, bool) or T < 1:
        raise ValueError(f"padding_mask expects T >= 1, got {T!r}")
    if (lengths < 0).any() or (lengths > T).any():
        raise ValueError(f"padding_mask expects lengths in [0, {T}], got {lengths.tolist()}")
    keep = torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]  # (B, T)
    return keep[:, None, None, :]


def combine_masks(*masks: Tensor | None) -> Tensor | None:
    """Logical AND of boolean masks (None entries are skipped); broadcasts their shapes."""
    result = None
    for mask in masks:
        if mask is None:
            continue
        check_mask(mask)
        result = mask if result is None else result & mask
    return result


def check_mask(mask: Tensor, shape: Sequence[int] | None = None) -> None:
    """Raise ``ValueError`` unless ``mask`` is boolean and broadcasts to ``shape``.

    ``shape`` is the shape of the attention scores, e.g. ``(B, h, T_q, T_k)``.
    """
    if not isinstance(mask, Tensor):
        raise TypeError(f"mask must be a torch.Tensor of dtype bool, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise ValueError(
            f"mask must be boolean (True = may attend), got dtype {mask.dtype}; "
            "for an additive float mask use masked_fill yourself"
        )
    if shape is None:
        return
    shape = tuple(shape)
    try:
        broadcast = torch.broadcast_shapes(tuple(mask.shape), shape)
    except RuntimeError:
        broadcast = None
    if broadcast != shape:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to the attention scores' "
            f"shape {shape}"
        )


def additive_mask(mask: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
    """The float form of a boolean mask: 0 where allowed, -inf where blocked.

    This is what gets *added* to the scores before the softmax. Same shape as ``mask``.
    """
    check_mask(mask)
    zeros = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    return zeros.masked_fill(~mask, float("-inf"))


MASK_KINDS = ("none", "causal", "padding", "causal+padding")


def mask_of_kind(kind: str, T: int, n_real: int | None = None) -> Tensor | None:
    """The (T, T) bool mask of a kind in :data:`MASK_KINDS` (None for "none"), for one
    sequence of ``T`` tokens whose first ``n_real`` are real (default: all).

    "padding" blocks keys at positions >= ``n_real``, "causal" blocks keys after the
    query, "causal+padding" both. True = may attend.
    """
    if kind not in MASK_KINDS:
        raise ValueError(f"mask kind must be one of {MASK_KINDS}, got {kind!r}")
    n_real = T if n_real is None else n_real
    pad = padding_mask([n_real], T)[0, 0] if "padding" in kind else None  # (1, T)
    causal = causal_mask(T) if "causal" in kind else None  # (T, T)
    mask = combine_masks(causal, pad)
    return None if mask is None else mask.expand(T, T)
