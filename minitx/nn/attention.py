"""Attention, written from its equations.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Three flavours are used in the course: scaled dot-product attention (the function
below), Bahdanau's additive attention (``AdditiveAttention``), and multi-head attention
(``MultiHeadAttention``). Masks are boolean with True = may attend (see ``minitx.nn.masks``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from minitx.nn.masks import causal_mask, check_mask
from minitx.nn.weights import copy_weights


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """(B, T, C) -> (B, n_heads, T, C // n_heads): head h gets features h*hs to (h+1)*hs - 1.

    A view, no copy: ``view`` cuts each position's C features into n_heads groups of hs,
    ``transpose`` brings the head dimension forward so that every head attends on its own.
    """
    B, T, C = x.size()
    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)  # (B, nh, T, hs)


def merge_heads(y: Tensor) -> Tensor:
    """(B, nh, T, hs) -> (B, T, nh * hs): the heads side by side again (undoes split_heads).

    ``contiguous`` is needed because ``transpose`` only changes the strides.
    """
    B, nh, T, hs = y.size()
    return y.transpose(1, 2).contiguous().view(B, T, nh * hs)  # (B, T, C)


def masked_softmax(scores: Tensor, mask: Tensor | None = None, dim: int = -1) -> Tensor:
    """Softmax over ``dim`` that ignores blocked entries.

    Blocked entries get weight exactly 0. A row where everything is blocked gets all
    zeros (not NaN, which is what softmax over a row of -inf gives), and its gradient is
    zero too. ``mask`` must broadcast to ``scores``.
    """
    if mask is None:
        return torch.softmax(scores, dim=dim)
    check_mask(mask, scores.shape)
    # A huge finite number instead of -inf keeps fully blocked rows free of NaN.
    filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(filled, dim=dim) * mask


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    *,
    scale: float | None = None,
    temperature: float = 1.0,
) -> tuple[Tensor, Tensor]:
    """softmax(query key^T * scale / temperature) value, computed explicitly.

    Shapes: ``query`` (..., T_q, d_k), ``key`` (..., T_k, d_k), ``value`` (..., T_k, d_v);
    ``mask`` bool, broadcastable to (..., T_q, T_k), True = may attend.
    ``scale`` defaults to 1/sqrt(d_k). ``temperature`` > 1 flattens, < 1 sharpens.

    Returns ``(out, weights)``: ``out`` (..., T_q, d_v), ``weights`` (..., T_q, T_k).
    """
    _check_attention_inputs(query, key, value, dropout_p, temperature)
    if scale is None:
        scale = 1.0 / math.sqrt(query.size(-1))
    scores = query @ key.transpose(-2, -1) * (scale / temperature)  # (..., T_q, T_k)
    weights = masked_softmax(scores, mask)  # each row sums to 1
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ value, weights  # (..., T_q, d_v), (..., T_q, T_k)


def _check_attention_inputs(q: Tensor, k: Tensor, v: Tensor, dropout_p: float,
                            temperature: float) -> None:
    if q.dim() < 2 or k.dim() < 2 or v.dim() < 2:
        raise ValueError(
            f"query, key, value need at least 2 dims (..., T, d); got {tuple(q.shape)}, "
            f"{tuple(k.shape)}, {tuple(v.shape)}"
        )
    if q.size(-1) != k.size(-1):
        raise ValueError(
            f"query and key feature sizes differ: query has d_k={q.size(-1)} "
            f"{tuple(q.shape)}, key has {k.size(-1)} {tuple(k.shape)}"
        )
    if k.size(-2) != v.size(-2):
        raise ValueError(
            f"key and value must have the same length T_k: key {tuple(k.shape)}, "
            f"value {tuple(v.shape)}"
        )
    try:
        torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"the batch dimensions of query, key, value (all but the last two) must "
            f"broadcast; got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        ) from None
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p must be in [0, 1), got {dropout_p}")


class AdditiveAttention(nn.Module):
    """Bahdanau's additive attention: score(q, k_j) = v^T tanh(W_q q + W_k k_j).

    ``forward(query, key, value=None, mask=None)``:
    query (B, d_q) for one decoder step or (B, T_q, d_q); key (B, T_k, d_k);
    value (B, T_k, d_v), defaulting to ``key``; mask bool (B, T_k) or broadcastable
    to (B, T_q, T_k), True = may attend.

    Returns ``(context, weights)``: (B, d_v) and (B, T_k) for a single query,
    else (B, T_q, d_v) and (B, T_q, T_k).
    """

    def __init__(self, query_size: int, key_size: int, hidden_size: int) -> None:
        super().__init__()
        self.query_size, self.key_size = query_size, key_size
        self.W_q = nn.Linear(query_size, hidden_size, bias=False)
        self.W_k = nn.Linear(key_size, hidden_size, bias=False)
        self.v = nn.Linear(hidden_size, 1, bias=False)

    def score(self, query: Tensor, key: Tensor) -> Tensor:
        """Scores (B, T_q, T_k) for queries (B, T_q, d_q) and keys (B, T_k, d_k)."""
        hidden = torch.tanh(self.W_q(query)[:, :, None, :] + self.W_k(key)[:, None, :, :])
        return self.v(hidden).squeeze(-1)  # (B, T_q, T_k)

    def forward(
        self, query: Tensor, key: Tensor, value: Tensor | None = None, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        return _attend(self, query, key, value, mask, self.query_size, self.key_size)


class DotProductAttention(nn.Module):
    """The simpler score: score(q, k_j) = q . k_j (divided by sqrt(d) when ``scaled``).

    Same interface and shapes as :class:`AdditiveAttention`; needs d_q == d_k.
    """

    def __init__(self, size: int, scaled: bool = True) -> None:
        super().__init__()
        self.query_size = self.key_size = size
        self.scaled = scaled

    def score(self, query: Tensor, key: Tensor) -> Tensor:
        """Scores (B, T_q, T_k) for queries (B, T_q, d) and keys (B, T_k, d)."""
        scores = query @ key.transpose(-2, -1)
        return scores / math.sqrt(query.size(-1)) if self.scaled else scores

    def forward(
        self, query: Tensor, key: Tensor, value: Tensor | None = None, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        return _attend(self, query, key, value, mask, self.query_size, self.key_size)


def _attend(
    scorer: AdditiveAttention | DotProductAttention,
    query: Tensor,
    key: Tensor,
    value: Tensor | None,
    mask: Tensor | None,
    query_size: int,
    key_size: int,
) -> tuple[Tensor, Tensor]:
    value = key if value is None else value
    single = query.dim() == 2
    if single:
        query = query[:, None, :]  # (B, 1, d_q)
    if query.dim() != 3 or key.dim() != 3 or value.dim() != 3:
        raise ValueError(
            f"expected query (B, d_q) or (B, T_q, d_q), key (B, T_k, d_k), value (B, T_k, "
            f"d_v); got {tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}"
        )
    if query.size(-1) != query_size or key.size(-1) != key_size:
        raise ValueError(
            f"expected query features {query_size} and key features {key_size}; got "
            f"query {tuple(query.shape)}, key {tuple(key.shape)}"
        )
    if key.shape[:2] != value.shape[:2] or query.size(0) != key.size(0):
        raise ValueError(
            f"batch and length must agree: query {tuple(query.shape)}, key "
            f"{tuple(key.shape)}, value {tuple(value.shape)}"
        )
    if mask is not None:
        check_mask(mask)
    context, weights = _score_softmax_sum(scorer, query, key, value, mask)
    if single:
        return context.squeeze(1), weights.squeeze(1)
    return context, weights


def _score_softmax_sum(
    scorer: AdditiveAttention | DotProductAttention,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None,
) -> tuple[Tensor, Tensor]:
    """The three steps of attention, on checked inputs: query (B, T_q, d_q), key (B, T_k,
    d_k), value (B, T_k, d_v), mask (B, T_k) or (B, T_q, T_k) -> context, weights."""
    scores = scorer.score(query, key)  # (B, T_q, T_k)
    if mask is not None and mask.dim() == 2:
        mask = mask[:, None, :]  # (B, 1, T_k): the same keys hidden from every query
    weights = masked_softmax(scores, mask)  # (B, T_q, T_k), each row sums to 1
    context = weights @ value  # (B, T_q, d_v)
    return context, weights


class MultiHeadAttention(nn.Module):
    """Multi-head attention: h heads of size d_model / h, concatenated, projected by W_O.

    ``forward(query, key=None, value=None, mask=None, need_weights=False, is_causal=False,
    key_padding_mask=None)`` with query (B, T_q, d_model) and key/value (B, T_k, d_model);
    self-attention when key/value are omitted, cross-attention otherwise. ``mask`` is bool,
    broadcastable to (B, h, T_q, T_k), True = may attend (a 2-D mask is (T_q, T_k));
    ``key_padding_mask`` is bool (B, T_k), True on real tokens (PyTorch's is the opposite:
    True on pads); ``is_causal`` adds the causal mask.

    Returns ``(out, weights)``: out (B, T_q, d_model); weights (B, h, T_q, T_k) when
    ``need_weights`` else None. Without weights it takes PyTorch's fused kernel
    (``F.scaled_dot_product_attention``), which computes the same thing faster.

    ``forward_cached(x, past)`` is causal self-attention for generation with a KV cache:
    the new positions attend to the keys and values kept from earlier steps.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        if n_heads < 1 or d_model % n_heads != 0:
            raise ValueError(
                f"d_model must be divisible by n_heads: got d_model={d_model}, n_heads={n_heads}"
            )
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.dropout = dropout
        # W_Q, W_K, W_V stacked in one matrix, as in PyTorch: one matmul for self-attention.
        self.in_proj = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def project(self, x: Tensor, part: str) -> Tensor:
        """x (B, T, d_model) times one of W_Q, W_K, W_V (``part`` 'q', 'k' or 'v'), split
        into heads: (B, h, T, d_head). Cross-attention projects its two sequences so."""
        if part not in ("q", "k", "v"):
            raise ValueError(f"part must be 'q', 'k' or 'v', got {part!r}")
        rows = slice("qkv".index(part) * self.d_model, ("qkv".index(part) + 1) * self.d_model)
        bias = None if self.in_proj.bias is None else self.in_proj.bias[rows]
        return split_heads(F.linear(x, self.in_proj.weight[rows], bias), self.n_heads)

    def _project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """q, k, v, each (B, h, T, d_head): one matmul for self-attention, three otherwise."""
        if key is query and value is query:
            qkv = self.in_proj(query).split(self.d_model, dim=-1)  # 3 x (B, T, d_model)
            return tuple(split_heads(t, self.n_heads) for t in qkv)
        return self.project(query, "q"), self.project(key, "k"), self.project(value, "v")

    def forward(self, query: Tensor, key: Tensor | None = None, value: Tensor | None = None,
                mask: Tensor | None = None, need_weights: bool = False, is_causal: bool = False,
                key_padding_mask: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        key = query if key is None else key
        value = key if value is None else value
        mask, is_causal = self._combined_mask(query, key, value, mask, key_padding_mask, is_causal)
        q, k, v = self._project(query, key, value)  # (B, h, T_q or T_k, d_head)
        dropout_p = self.dropout if self.training else 0.0

        if need_weights:
            # Explicit path: the fused kernel does not return the weights. (On a row with
            # nothing to attend to both give zeros; nn.MultiheadAttention gives NaN.)
            if is_causal:
                mask = causal_mask(q.size(2), device=query.device)
            y, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
        else:
            y = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=is_causal
            )
            weights = None
        y = merge_heads(y)  # (B, T_q, d_model)
        return self.out_proj(y), (weights if need_weights else None)

    def _combined_mask(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None,
                       key_padding_mask: Tensor | None, is_causal: bool,
                       ) -> tuple[Tensor | None, bool]:
        """Check the inputs; return one boolean mask (B or 1, h or 1, T_q, T_k) or None,
        and whether the causal mask is still to be applied by the kernel."""
        for name, t in (("query", query), ("key", key), ("value", value)):
            if t.dim() != 3 or t.size(-1) != self.d_model:
                raise ValueError(
                    f"{name} must be (B, T, d_model={self.d_model}), got {tuple(t.shape)}"
                )
        B, T_q, _ = query.size()
        T_k = key.size(1)
        if key.size(0) != B or value.size(0) != B or value.size(1) != T_k:
            raise ValueError(
                f"batch/length mismatch: query {tuple(query.shape)}, key {tuple(key.shape)}, "
                f"value {tuple(value.shape)}"
            )
        if mask is not None:
            if mask.dim() == 2 and tuple(mask.shape) != (T_q, T_k):
                hint = (" (a (B, T_k) padding mask goes in key_padding_mask)"
                        if tuple(mask.shape) == (B, T_k) else "")
                raise ValueError(
                    f"a 2-D mask is (T_q, T_k) = ({T_q}, {T_k}), got {tuple(mask.shape)}{hint}"
                )
            check_mask(mask, (B, self.n_heads, T_q, T_k))
        if key_padding_mask is not None:
            if key_padding_mask.dtype != torch.bool or tuple(key_padding_mask.shape) != (B, T_k):
                raise ValueError(
                    f"key_padding_mask must be a bool (B, T_k) = ({B}, {T_k}) tensor, True on "
                    f"real tokens, got {key_padding_mask.dtype} {tuple(key_padding_mask.shape)}"
                )
            keys = key_padding_mask[:, None, None, :]  # (B, 1, 1, T_k): padded keys blocked
            mask = keys if mask is None else mask & keys
        if is_causal and T_q != T_k:
            raise ValueError(f"is_causal needs T_q == T_k, got {T_q} and {T_k}")
        if is_causal and mask is not None:
            return mask & causal_mask(T_q, device=query.device), False
        return mask, is_causal

    def forward_cached(self, x: Tensor, past: tuple[Tensor, Tensor] | None = None,
                       ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """Causal self-attention of new positions over cached keys/values (a KV cache).

        ``x`` (B, T, d_model) holds the T new positions; ``past`` is ``(k, v)``, each
        (B, h, P, d_head), the keys and values of the P positions before them, or None
        when there are none. Each new query attends to all P past keys and, causally,
        to the new ones. Returns ``(out, (k, v))``: out (B, T, d_model) and the keys and
        values of all P + T positions, each (B, h, P + T, d_head), to pass as ``past``
        next time. With ``past=None`` this computes ``forward(x, is_causal=True)``.
        """
        if not isinstance(x, Tensor) or x.dim() != 3 or x.size(-1) != self.d_model:
            got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"x must be (B, T, d_model={self.d_model}), got {got}")
        B, T, _ = x.size()
        q, k, v = self._project(x, x, x)  # (B, h, T, d_head) each
        if past is not None:
            check_past(past, B, self.n_heads, self.d_head, x)
            k = torch.cat([past[0], k], dim=2)  # (B, h, P + T, d_head)
            v = torch.cat([past[1], v], dim=2)  # (B, h, P + T, d_head)
        P = k.size(2) - T
        dropout_p = self.dropout if self.training else 0.0
        if P == 0:  # nothing cached: exactly the causal forward
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True)
        elif T == 1:  # the newest position may attend to every cached one: no mask
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)
        else:
            # New query i sits at position P + i: it sees keys 0 .. P + i.
            mask = torch.ones(T, P + T, dtype=torch.bool, device=x.device).tril(diagonal=P)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
        return self.out_proj(merge_heads(y)), (k, v)  # (B, T, d_model)

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy the weights of a ``batch_first`` ``nn.MultiheadAttention``."""
        if not isinstance(module, nn.MultiheadAttention):
            raise TypeError(f"expected nn.MultiheadAttention, got {type(module).__name__}")
        if not module.batch_first:
            raise ValueError("expected nn.MultiheadAttention(batch_first=True)")
        if not module._qkv_same_embed_dim or module.bias_k is not None:
            raise ValueError("only nn.MultiheadAttention with kdim = vdim = embed_dim is supported")
        bias = module.in_proj_bias is not None
        ours = cls(module.embed_dim, module.num_heads, dropout=module.dropout, bias=bias)
        names = {"in_proj.weight": "in_proj_weight", "in_proj.bias": "in_proj_bias",
                 "out_proj.weight": "out_proj.weight", "out_proj.bias": "out_proj.bias"}
        return copy_weights(ours, module, names)


def check_past(past: tuple[Tensor, Tensor], B: int, n_heads: int, d_head: int,
               x: Tensor) -> int:
    """P, the cached length, after checking that ``past`` is a KV cache for ``x``: keys and
    values, each (B, n_heads, P, d_head), with x's dtype and device."""
    ok = isinstance(past, (tuple, list)) and len(past) == 2
    if not ok or not all(isinstance(t, Tensor) for t in past):
        raise ValueError(f"past must be a (k, v) pair of tensors, got {type(past).__name__}")
    k, v = past
    expected = (B, n_heads, k.size(2) if k.dim() == 4 else "P", d_head)
    if k.dim() != 4 or tuple(k.shape) != expected or v.shape != k.shape:
        raise ValueError(f"past keys and values must both be (B, heads, P, head size) = "
                         f"{expected}, got k {tuple(k.shape)} and v {tuple(v.shape)}")
    if k.dtype != x.dtype or k.device != x.device:
        raise ValueError(f"past must have the dtype and device of x ({x.dtype}, {x.device}), "
                         f"got {k.dtype} on {k.device}")
    return k.size(2)


__all__ = [
    "AdditiveAttention", "DotProductAttention", "MultiHeadAttention", "check_past",
    "masked_softmax", "merge_heads", "scaled_dot_product_attention", "split_heads",
]
