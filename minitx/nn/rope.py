"""Rotary position embeddings (RoPE; Su et al., 2021, "RoFormer"), as in Llama.

Instead of adding a position vector to the token embedding, RoPE rotates each query and
key by an angle proportional to its position. Read the hs features of a head as hs/2
pairs, each pair a complex number z_i = x[2i] + j x[2i+1]; at position m, pair i turns by
m * theta_i, with theta_i = base^(-2i/hs):

    z_i  ->  z_i * e^{j m theta_i}

A rotation keeps lengths, and the dot product of two rotated vectors depends only on the
difference of their angles: q_m . k_n is a function of q, k and m - n alone. Attention
scores thus see relative positions, and no position table limits the length.
"""

from __future__ import annotations

import torch
from torch import Tensor


def rope_angles(T: int, hs: int, base: float = 10000.0, offset: int = 0,
                device: torch.device | str | None = None,
                dtype: torch.dtype | None = None) -> Tensor:
    """The rotation angles m * theta_i, (T, hs/2): row t is position offset + t, column i
    the pair (2i, 2i+1), theta_i = base^(-2i/hs) (from 1 down to about 1/base). float64 by
    default (float32 on Apple's mps, which has no float64): at position 1000, float32 would
    put the angle off by about 1e-4."""
    if dtype is None:
        on_mps = torch.device(device or "cpu").type == "mps"
        dtype = torch.float32 if on_mps else torch.float64
    theta = base ** (-torch.arange(0, hs, 2, dtype=dtype, device=device) / hs)
    m = torch.arange(offset, offset + T, dtype=dtype, device=device)  # (T,)
    return m[:, None] * theta[None, :]  # (T, hs/2)


def apply_rope(x: Tensor, base: float = 10000.0, offset: int = 0) -> Tensor:
    """Rotate queries or keys ``x`` (B, nh, T, hs) by their positions; same shape out.

    Interleaved-pair convention (RoFormer, Meta's Llama code): features (2i, 2i+1) are
    the real and imaginary parts of one complex number, multiplied by e^{j m theta_i},
    with theta_i = base^(-2i/hs). (GPT-NeoX and Hugging Face's Llama pair feature i with
    i + hs/2 instead, "rotate-half": the same rotations on permuted features.)

    The T positions are ``offset`` .. ``offset + T - 1``: with a KV cache, the new tokens
    come after the ``offset`` cached ones. ``hs`` must be even. Any leading dims work.
    """
    if not isinstance(x, Tensor) or x.dim() < 2 or not x.is_floating_point():
        got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
        raise ValueError(f"x must be a floating-point (B, nh, T, hs) tensor, got {got}")
    T, hs = x.shape[-2:]
    if hs % 2 != 0:
        raise ValueError(f"RoPE rotates pairs of features: head size hs must be even, got {hs}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"offset must be an int >= 0, got {offset!r}")
    if not base > 0:
        raise ValueError(f"base must be > 0, got {base!r}")
    angle = rope_angles(T, hs, base, offset, device=x.device)  # (T, hs/2), float64
    h = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x  # as Llama does
    cos, sin = angle.cos().to(h.dtype), angle.sin().to(h.dtype)
    re, im = h[..., 0::2], h[..., 1::2]  # (B, nh, T, hs/2) each: the pairs' two parts
    # (re + j im) * (cos + j sin) = (re cos - im sin) + j (re sin + im cos)
    out = torch.stack([re * cos - im * sin, re * sin + im * cos], dim=-1)  # (B, nh, T, hs/2, 2)
    return out.flatten(-2).to(x.dtype)  # (B, nh, T, hs): pairs interleaved again


__all__ = ["apply_rope", "rope_angles"]
