"""Grouped-query attention (GQA; Ainslie et al., 2023), as in Llama 2 70B, Llama 3, Mistral.

Multi-head attention gives every head its own keys and values. GQA lets a group of query
heads share one key/value head: n_head query heads, n_kv_head <= n_head key/value heads,
n_head / n_kv_head query heads per group. n_kv_head = n_head is multi-head attention;
n_kv_head = 1 is multi-query attention (Shazeer, 2019). The KV cache keeps only the
n_kv_head heads, so it shrinks by n_head / n_kv_head, and the K and V projections too.

    grouped_query_attention   the attention itself, from its definition
    GroupedQueryAttention     the self-attention layer of a GPT block: projections,
                              optional rotary positions (RoPE), a KV cache
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from minitx.nn.attention import (
    MultiHeadAttention,
    check_past,
    masked_softmax,
    merge_heads,
    scaled_dot_product_attention,
    split_heads,
)
from minitx.nn.masks import causal_mask, check_mask, combine_masks
from minitx.nn.positions import _check_positive_int
from minitx.nn.rope import apply_rope


def _check_gqa_inputs(q: Tensor, k: Tensor, v: Tensor) -> None:
    shapes = f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(f"expected q (B, n_head, T, hs), k and v (B, n_kv_head, T_k, hs); "
                         f"got {shapes}")
    if k.shape[:3] != v.shape[:3] or q.size(0) != k.size(0) or q.size(-1) != k.size(-1):
        raise ValueError(f"q, k, v must share B, k and v (n_kv_head, T_k), q and k hs; "
                         f"got {shapes}")
    if q.size(1) % k.size(1) != 0:
        raise ValueError(f"n_head={q.size(1)} query heads must split into groups of equal "
                         f"size over n_kv_head={k.size(1)} key/value heads: {shapes}")


def grouped_query_attention(q: Tensor, k: Tensor, v: Tensor, causal: bool = False) -> Tensor:
    """Attention where each group of query heads shares one key/value head.

    ``q`` (B, n_head, T, hs); ``k``, ``v`` (B, n_kv_head, T_k, hs), with n_kv_head dividing
    n_head. Query heads g * G .. g * G + G - 1 (G = n_head / n_kv_head) all attend with
    key/value head g, as if ``k`` and ``v`` were ``repeat_interleave``-d G times over the
    heads (PyTorch's ``enable_gqa=True``), but without copying them. ``causal``: query i
    sees keys j <= i (PyTorch's ``is_causal``). Returns (B, n_head, T, hs).
    """
    _check_gqa_inputs(q, k, v)
    B, nh, T, hs = q.size()
    n_kv, T_k = k.size(1), k.size(2)
    G = nh // n_kv  # query heads per key/value head
    qg = q.view(B, n_kv, G, T, hs)  # (B, n_kv, G, T, hs): the heads of a group together
    # k[:, :, None] broadcasts one key head over the G query heads of its group.
    scores = qg @ k[:, :, None].transpose(-2, -1) / math.sqrt(hs)  # (B, n_kv, G, T, T_k)
    mask = torch.ones(T, T_k, dtype=torch.bool, device=q.device).tril() if causal else None
    weights = masked_softmax(scores, mask)  # (B, n_kv, G, T, T_k), rows sum to 1
    y = weights @ v[:, :, None]  # (B, n_kv, G, T, hs)
    return y.reshape(B, nh, T, v.size(-1))  # (B, n_head, T, hs)


def self_attention(d_model: int, n_heads: int, n_kv_heads: int | None = None,
                   dropout: float = 0.0, bias: bool = True, rope: bool = False,
                   ) -> MultiHeadAttention | GroupedQueryAttention:
    """A block's self-attention layer: ``MultiHeadAttention`` (the GPT-2 layout, that of every
    saved checkpoint) unless key/value heads are grouped or RoPE is on."""
    if rope or n_kv_heads not in (None, n_heads):
        return GroupedQueryAttention(d_model, n_heads, n_kv_heads, dropout, bias, rope)
    return MultiHeadAttention(d_model, n_heads, dropout=dropout, bias=bias)


def repeat_kv(kv: Tensor, n_head: int) -> Tensor:
    """(B, n_kv_head, T, hs) -> (B, n_head, T, hs): each key/value head repeated for the
    n_head / n_kv_head query heads of its group (a copy, for the explicit path)."""
    return kv.repeat_interleave(n_head // kv.size(1), dim=1)


class GroupedQueryAttention(nn.Module):
    """Causal-capable self-attention with n_head query heads over n_kv_heads key/value heads.

    ``forward(x, mask=None, need_weights=False, is_causal=False)``: x (B, T, d_model);
    ``mask`` bool broadcastable to (B, n_head, T, T), True = may attend. Returns ``(out,
    weights)``: out (B, T, d_model), weights (B, n_head, T, T) with ``need_weights`` (the
    explicit path), else None (PyTorch's fused kernel with ``enable_gqa=True``).

    ``in_proj`` maps d_model to d_model queries and 2 * n_kv_heads * hs keys and values;
    with n_kv_heads = n_heads it is ``MultiHeadAttention``'s (3 d_model, d_model). With
    ``rope=True`` queries and keys are rotated by their positions (:func:`apply_rope`).
    ``forward_cached(x, past)`` is the KV-cache step: the cache holds n_kv_heads heads.
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None,
                 dropout: float = 0.0, bias: bool = True, rope: bool = False,
                 rope_base: float = 10000.0) -> None:
        super().__init__()
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        for name, value in (("d_model", d_model), ("n_heads", n_heads),
                            ("n_kv_heads", n_kv_heads)):
            _check_positive_int(name, value)
        if d_model % n_heads != 0 or n_heads % n_kv_heads != 0:
            raise ValueError(f"need d_model % n_heads == 0 and n_heads % n_kv_heads == 0, got "
                             f"d_model={d_model}, n_heads={n_heads}, n_kv_heads={n_kv_heads}")
        self.d_model, self.n_heads, self.n_kv_heads = d_model, n_heads, n_kv_heads
        self.d_head = d_model // n_heads
        if rope and self.d_head % 2 != 0:
            raise ValueError(f"RoPE needs an even head size, got d_model / n_heads = {self.d_head}")
        self.dropout, self.rope, self.rope_base = dropout, rope, rope_base
        self.kv_dim = n_kv_heads * self.d_head
        self.in_proj = nn.Linear(d_model, d_model + 2 * self.kv_dim, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def _qkv(self, x: Tensor, offset: int) -> tuple[Tensor, Tensor, Tensor]:
        """q (B, n_head, T, hs), k and v (B, n_kv, T, hs) of x (B, T, d_model), the T
        positions starting at ``offset`` (for RoPE)."""
        q, k, v = self.in_proj(x).split([self.d_model, self.kv_dim, self.kv_dim], dim=-1)
        q = split_heads(q, self.n_heads)  # (B, nh, T, hs)
        k, v = split_heads(k, self.n_kv_heads), split_heads(v, self.n_kv_heads)  # (B, n_kv, T, hs)
        if self.rope:  # rotate queries and keys, never values: positions enter the scores only
            q, k = apply_rope(q, self.rope_base, offset), apply_rope(k, self.rope_base, offset)
        return q, k, v

    def _check_x(self, x: Tensor) -> None:
        if not isinstance(x, Tensor) or x.dim() != 3 or x.size(-1) != self.d_model:
            got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"x must be (B, T, d_model={self.d_model}), got {got}")

    def forward(self, x: Tensor, mask: Tensor | None = None, need_weights: bool = False,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        self._check_x(x)
        B, T, _ = x.size()
        q, k, v = self._qkv(x, offset=0)
        if mask is not None:
            check_mask(mask, (B, self.n_heads, T, T))
        if is_causal and (mask is not None or need_weights):  # the kernel's flag is not enough
            mask = combine_masks(mask, causal_mask(T, device=x.device))
            is_causal = False
        dropout_p = self.dropout if self.training else 0.0
        if need_weights:  # explicit: the fused kernel does not return the weights
            y, weights = scaled_dot_product_attention(
                q, repeat_kv(k, self.n_heads), repeat_kv(v, self.n_heads), mask, dropout_p)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p,
                                               is_causal=is_causal, enable_gqa=True)
            weights = None
        return self.out_proj(merge_heads(y)), weights  # (B, T, d_model)

    def forward_cached(self, x: Tensor, past: tuple[Tensor, Tensor] | None = None,
                       ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """Causal self-attention of the T new positions ``x`` (B, T, d_model) over the P
        cached ones: ``past`` = (k, v), each (B, n_kv_heads, P, hs), or None. RoPE turns
        the new queries and keys by positions P .. P + T - 1. Returns ``(out, (k, v))``:
        out (B, T, d_model), k and v (B, n_kv_heads, P + T, hs) for the next call."""
        self._check_x(x)
        B, T, _ = x.size()
        P = 0 if past is None else check_past(past, B, self.n_kv_heads, self.d_head, x)
        q, k, v = self._qkv(x, offset=P)
        if past is not None:
            k = torch.cat([past[0], k], dim=2)  # (B, n_kv, P + T, hs)
            v = torch.cat([past[1], v], dim=2)  # (B, n_kv, P + T, hs)
        dropout_p = self.dropout if self.training else 0.0
        # New query i sits at position P + i: it sees keys 0 .. P + i (all of them if T == 1;
        # with nothing cached, exactly the causal forward).
        mask = None if T == 1 or P == 0 else torch.ones(T, P + T, dtype=torch.bool,
                                                        device=x.device).tril(diagonal=P)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p,
                                           is_causal=P == 0 and T > 1, enable_gqa=True)
        return self.out_proj(merge_heads(y)), (k, v)


__all__ = ["GroupedQueryAttention", "grouped_query_attention", "repeat_kv", "self_attention"]
