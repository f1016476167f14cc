"""The pieces of a transformer block, and the blocks themselves.

    LayerNorm      (x - mean) / sqrt(var + eps) * weight + bias, over the last dim
    FeedForward    fc2(activation(fc1(x))), applied to each position separately
    TransformerBlock  attention + feed-forward, each inside a residual connection,
                   with the norm after (post-LN, the 2017 paper) or before (pre-LN, GPT-2)
    DecoderBlock   causal self-attention + cross-attention + feed-forward

Every module has a ``from_torch`` that copies the weights of PyTorch's counterpart (with
:func:`minitx.nn.weights.copy_weights`), so the tests and the notebooks can check that both
compute the same thing. The positional encodings live in :mod:`minitx.nn.positions` and are
re-exported here with the other pieces of a block. ``TransformerBlock`` takes the modern
block's pieces (RMSNorm, SwiGLU, grouped-query attention, RoPE) from their own modules.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from minitx.nn.activations import ACTIVATIONS, check_activation
from minitx.nn.attention import MultiHeadAttention
from minitx.nn.grouped_attention import self_attention
from minitx.nn.positions import LearnedPositions, _check_positive_int, sinusoidal_positions
from minitx.nn.rmsnorm import RMSNorm
from minitx.nn.swiglu import SwiGLU
from minitx.nn.weights import copy_weights

NORMS = ("layer", "rms")  # LayerNorm, RMSNorm
MLPS = ("gelu", "swiglu")  # the GPT-2 MLP (with its ``activation``), the gated SwiGLU


def _check_dropout(dropout: float) -> None:
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")


def _check_block(d_model: int, n_heads: int, dropout: float) -> None:
    _check_positive_int("d_model", d_model)
    _check_positive_int("n_heads", n_heads)
    _check_dropout(dropout)


def check_block_options(norm: str, mlp: str, activation: str) -> None:
    """ValueErrors naming the choices for a block's ``norm``, ``mlp`` and ``activation``
    (the GPT-2 MLP's; SwiGLU's gate is always SiLU, so it takes only the default 'gelu')."""
    for name, value, choices in (("norm", norm, NORMS), ("mlp", mlp, MLPS)):
        if value not in choices:
            raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    check_activation(activation)
    if mlp == "swiglu" and activation != "gelu":
        raise ValueError(f"activation={activation!r} applies to mlp='gelu' only; SwiGLU's "
                         "gate is SiLU: leave activation at its default 'gelu'")


def make_norm(norm: str, d_model: int, eps: float = 1e-5, bias: bool = True,
              fused: bool = False) -> LayerNorm | RMSNorm:
    """A LayerNorm (``norm="layer"``) or an RMSNorm (``"rms"``, which has no bias)."""
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {list(NORMS)}, got {norm!r}")
    return (RMSNorm(d_model, eps=eps, fused=fused) if norm == "rms" else
            LayerNorm(d_model, eps=eps, bias=bias, fused=fused))


def _check_input(x: Tensor, d_model: int, name: str = "x") -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() != 3 or x.size(-1) != d_model:
        raise ValueError(f"{name} must be (B, T, d_model={d_model}), got {tuple(x.shape)}")


# ----------------------------------------------------------------------------- LayerNorm


class LayerNorm(nn.Module):
    """Layer normalisation over the last dimension, written out.

        y = (x - mean) / sqrt(var + eps) * weight + bias

    ``mean`` and ``var`` are taken over the last dimension (``d_model``) of each
    position separately; ``var`` is the biased variance (divide by d_model), as in
    PyTorch. ``bias=False`` drops the bias. Input (..., d_model) -> output same shape.

    ``fused=True`` computes the same thing with ``F.layer_norm`` (one kernel instead
    of five elementwise passes; the tests check both agree). The GPT uses it on its
    training path; the notebooks read the explicit version.
    """

    def __init__(
        self, d_model: int, eps: float = 1e-5, bias: bool = True, fused: bool = False
    ) -> None:
        super().__init__()
        _check_positive_int("d_model", d_model)
        if not eps > 0:
            raise ValueError(f"eps must be > 0, got {eps!r}")
        self.d_model, self.eps, self.fused = d_model, eps, fused
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        if x.size(-1) != self.d_model:
            raise ValueError(
                f"LayerNorm expects (..., d_model={self.d_model}), got {tuple(x.shape)}"
            )
        if self.fused:
            return F.layer_norm(x, (self.d_model,), self.weight, self.bias, self.eps)
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
        var = (x - mean).pow(2).mean(dim=-1, keepdim=True)  # (..., 1), biased
        y = (x - mean) / torch.sqrt(var + self.eps) * self.weight
        return y + self.bias if self.bias is not None else y

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}, bias={self.bias is not None}, fused={self.fused}"

    @classmethod
    def from_torch(cls, module: nn.LayerNorm, fused: bool = False) -> LayerNorm:
        """Copy an ``nn.LayerNorm`` over one (last) dimension, with its affine parameters."""
        if not isinstance(module, nn.LayerNorm):
            raise TypeError(f"expected nn.LayerNorm, got {type(module).__name__}")
        if len(module.normalized_shape) != 1 or not module.elementwise_affine:
            raise ValueError(
                "expected nn.LayerNorm over one dimension with elementwise_affine=True, got "
                f"normalized_shape={tuple(module.normalized_shape)}, "
                f"elementwise_affine={module.elementwise_affine}"
            )
        ours = cls(module.normalized_shape[0], eps=module.eps, bias=module.bias is not None,
                   fused=fused)
        return copy_weights(ours, module, {"weight": "weight", "bias": "bias"})


# ----------------------------------------------------------------------------- feed-forward


class FeedForward(nn.Module):
    """Position-wise feed-forward network: fc2(dropout(activation(fc1(x)))).

    Expands each position from ``d_model`` to ``d_ff`` (usually 4x), applies ReLU,
    GELU (exact, erf-based, as PyTorch's ``"gelu"``) or ReLU² (``"relu2"``, see
    :mod:`minitx.nn.activations`), projects back. The same weights
    act on every position independently: (B, T, d_model) -> (B, T, d_model).
    ``fc1``/``fc2`` correspond to ``linear1``/``linear2`` of ``nn.TransformerEncoderLayer``.
    """

    def __init__(self, d_model: int, d_ff: int, activation: str = "gelu", dropout: float = 0.0,
                 bias: bool = True) -> None:
        super().__init__()
        _check_positive_int("d_model", d_model)
        _check_positive_int("d_ff", d_ff)
        check_activation(activation)
        _check_dropout(dropout)
        self.activation = activation
        self.fc1 = nn.Linear(d_model, d_ff, bias=bias)
        self.fc2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        h = ACTIVATIONS[self.activation](self.fc1(x))  # (..., d_ff)
        return self.fc2(self.dropout(h))  # (..., d_model)

    @classmethod
    def from_torch(
        cls, module: nn.TransformerEncoderLayer | nn.TransformerDecoderLayer
    ) -> FeedForward:
        """Copy the feed-forward part (``linear1``, activation, ``linear2``) of a PyTorch
        transformer layer, which has no separate feed-forward module."""
        if not isinstance(module, nn.TransformerEncoderLayer | nn.TransformerDecoderLayer):
            raise TypeError(
                "expected nn.TransformerEncoderLayer or nn.TransformerDecoderLayer, got "
                f"{type(module).__name__}"
            )
        ours = cls(module.linear1.in_features, module.linear1.out_features,
                   activation=_torch_activation_name(module.activation),
                   dropout=module.dropout.p, bias=module.linear1.bias is not None)
        names = {f"fc{i}.{p}": f"linear{i}.{p}" for i in (1, 2) for p in ("weight", "bias")}
        return copy_weights(ours, module, names)


# ----------------------------------------------------------------------------- blocks


def _block_args(module: nn.Module, kind: type, causal: bool) -> dict[str, Any]:
    """Our block's constructor arguments for a ``batch_first`` PyTorch layer of ``kind``."""
    if not isinstance(module, kind):
        raise TypeError(f"expected nn.{kind.__name__}, got {type(module).__name__}")
    if not module.self_attn.batch_first:
        raise ValueError(f"expected nn.{kind.__name__}(batch_first=True)")
    eps = {m.eps for name, m in module.named_children() if name.startswith("norm")}
    if len(eps) != 1:
        raise ValueError(f"the layer's norms must share one eps, got {sorted(eps)}")
    return dict(
        d_model=module.self_attn.embed_dim, n_heads=module.self_attn.num_heads,
        d_ff=module.linear1.out_features, dropout=module.dropout.p,
        activation=_torch_activation_name(module.activation), norm_first=module.norm_first,
        causal=causal, bias=module.linear1.bias is not None, eps=eps.pop(),
    )


def _torch_activation_name(activation: object) -> str:
    """'relu' or 'gelu' for the activation of a PyTorch transformer layer."""
    if activation is F.relu or isinstance(activation, nn.ReLU):
        return "relu"
    exact_gelu = isinstance(activation, nn.GELU) and activation.approximate == "none"
    if activation is F.gelu or exact_gelu:
        return "gelu"
    raise ValueError(f"only relu or (exact) gelu activations are supported, got {activation!r}")


class TransformerBlock(nn.Module):
    """One transformer (encoder) block: self-attention then feed-forward, with residuals.

    Post-LN (``norm_first=False``, the 2017 paper)::

        x = norm1(x + attention(x))
        x = norm2(x + ffn(x))

    Pre-LN (``norm_first=True``, GPT-2 and most models since)::

        x = x + attention(norm1(x))
        x = x + ffn(norm2(x))

    ``causal=True`` lets position i attend only to positions <= i (decoder-only
    models such as GPT). ``forward(x, mask=None, need_weights=False)``: x (B, T, d_model);
    ``mask`` bool broadcastable to (B, n_heads, T, T), True = may attend (combined with
    the causal mask when ``causal``). Returns ``(x, weights)``: x (B, T, d_model), and
    weights (B, n_heads, T, T) when ``need_weights=True``, else None.

    Dropout (``dropout``) acts where ``nn.TransformerEncoderLayer`` puts it: on the
    attention weights, inside the feed-forward, and on both residual branches.

    ``forward_cached(x, past)`` is the same computation for generation with a KV cache
    (causal blocks only): it takes and returns the keys and values of earlier positions.

    The modern block (Llama): ``norm="rms"`` (RMSNorm), ``mlp="swiglu"`` (SwiGLU of hidden
    width ``d_ff``), ``n_kv_heads`` < n_heads (grouped-query attention), ``rope=True``
    (rotary positions on queries and keys). The defaults give the GPT-2 block.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0,
                 activation: str = "gelu", norm_first: bool = True, causal: bool = False,
                 bias: bool = True, eps: float = 1e-5, fused_norm: bool = False,
                 norm: str = "layer", mlp: str = "gelu", n_kv_heads: int | None = None,
                 rope: bool = False) -> None:
        super().__init__()
        _check_block(d_model, n_heads, dropout)
        check_block_options(norm, mlp, activation)
        self.d_model, self.norm_first, self.causal = d_model, norm_first, causal
        self.attn = self_attention(d_model, n_heads, n_kv_heads, dropout, bias, rope)
        self.ffn = (SwiGLU(d_model, d_ff, bias=bias, dropout=dropout) if mlp == "swiglu" else
                    FeedForward(d_model, d_ff, activation=activation, dropout=dropout, bias=bias))
        self.norm1, self.norm2 = (make_norm(norm, d_model, eps, bias, fused_norm) for _ in range(2))
        self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)

    def _sa(self, x: Tensor, mask: Tensor | None, need_weights: bool):
        y, w = self.attn(x, mask=mask, need_weights=need_weights, is_causal=self.causal)
        return self.dropout1(y), w

    def forward(
        self, x: Tensor, mask: Tensor | None = None, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        _check_input(x, self.d_model)
        if self.norm_first:
            a, w = self._sa(self.norm1(x), mask, need_weights)
            x = x + a
            x = x + self.dropout2(self.ffn(self.norm2(x)))
        else:
            a, w = self._sa(x, mask, need_weights)
            x = self.norm1(x + a)
            x = self.norm2(x + self.dropout2(self.ffn(x)))
        return x, w

    def forward_cached(
        self, x: Tensor, past: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """The causal forward of new positions, with the keys/values of earlier ones cached.

        ``x`` (B, T, d_model) holds the T new positions; ``past`` is ``(k, v)``, each
        (B, n_kv_heads, P, d_head), returned by the previous call (None at the start).
        Returns ``(x, (k, v))``: x (B, T, d_model), and k, v (B, n_kv_heads, P + T, d_head)
        for the next call. Feeding a sequence in pieces gives the same x as ``forward``
        on the whole of it. Needs ``causal=True``: without the mask, earlier positions
        would change with every new token and could not be cached.
        """
        _check_input(x, self.d_model)
        if not self.causal:
            raise ValueError(
                "forward_cached needs a causal block (causal=True), got causal=False: "
                "without the causal mask earlier positions depend on later tokens"
            )
        if self.norm_first:
            a, present = self.attn.forward_cached(self.norm1(x), past)
            x = x + self.dropout1(a)
            x = x + self.dropout2(self.ffn(self.norm2(x)))
        else:
            a, present = self.attn.forward_cached(x, past)
            x = self.norm1(x + self.dropout1(a))
            x = self.norm2(x + self.dropout2(self.ffn(x)))
        return x, present

    @classmethod
    def from_torch(
        cls, module: nn.TransformerEncoderLayer, causal: bool = False
    ) -> TransformerBlock:
        """Copy a ``batch_first`` ``nn.TransformerEncoderLayer`` (relu or gelu).

        PyTorch's layer is not causal by itself (it takes the mask at call time), so
        ``causal`` is a choice made here; compare it with ``is_causal=True`` /
        a causal ``src_mask`` on the PyTorch side.
        """
        ours = cls(**_block_args(module, nn.TransformerEncoderLayer, causal))
        ours.attn = MultiHeadAttention.from_torch(module.self_attn)
        ours.ffn = FeedForward.from_torch(module)
        ours.norm1 = LayerNorm.from_torch(module.norm1)
        ours.norm2 = LayerNorm.from_torch(module.norm2)
        return ours.to(dtype=module.linear1.weight.dtype)


class DecoderBlock(nn.Module):
    """Decoder block of an encoder-decoder transformer (the 2017 paper, T5).

    Three sublayers, each in a residual connection: causal self-attention over the
    target, cross-attention (queries from the target, keys and values from the
    encoder's output ``memory``), feed-forward. Post-LN (``norm_first=False``)::

        x = norm1(x + self_attention(x))
        x = norm2(x + cross_attention(x, memory))
        x = norm3(x + ffn(x))

    or pre-LN (``norm_first=True``): ``x = x + sublayer(norm(x))``.

    ``forward(x, memory, mask=None, memory_mask=None, need_weights=False)``:
    x (B, T, d_model), memory (B, S, d_model); ``mask`` bool broadcastable to
    (B, n_heads, T, T) (combined with the causal mask when ``causal``), ``memory_mask``
    bool broadcastable to (B, n_heads, T, S), e.g. the encoder's padding mask.
    Returns ``(x, weights)``: x (B, T, d_model), and with ``need_weights=True`` the pair
    ``(self_weights (B, h, T, T), cross_weights (B, h, T, S))``, else None.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0,
                 activation: str = "gelu", norm_first: bool = True, causal: bool = True,
                 bias: bool = True, eps: float = 1e-5) -> None:
        super().__init__()
        _check_block(d_model, n_heads, dropout)
        self.d_model, self.norm_first, self.causal = d_model, norm_first, causal
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout, bias=bias)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout, bias=bias)
        self.ffn = FeedForward(d_model, d_ff, activation=activation, dropout=dropout, bias=bias)
        norms = (LayerNorm(d_model, eps=eps, bias=bias) for _ in range(3))
        self.norm1, self.norm2, self.norm3 = norms
        self.dropout1, self.dropout2, self.dropout3 = (nn.Dropout(dropout) for _ in range(3))

    def _sa(self, x: Tensor, mask: Tensor | None, need_weights: bool):
        y, w = self.self_attn(x, mask=mask, need_weights=need_weights, is_causal=self.causal)
        return self.dropout1(y), w

    def _ca(self, x: Tensor, memory: Tensor, mask: Tensor | None, need_weights: bool):
        y, w = self.cross_attn(x, memory, memory, mask=mask, need_weights=need_weights)
        return self.dropout2(y), w

    def forward(self, x: Tensor, memory: Tensor, mask: Tensor | None = None,
                memory_mask: Tensor | None = None, need_weights: bool = False,
                ) -> tuple[Tensor, tuple[Tensor, Tensor] | None]:
        _check_input(x, self.d_model)
        _check_input(memory, self.d_model, "memory")
        if self.norm_first:
            a, w_self = self._sa(self.norm1(x), mask, need_weights)
            x = x + a
            c, w_cross = self._ca(self.norm2(x), memory, memory_mask, need_weights)
            x = x + c
            x = x + self.dropout3(self.ffn(self.norm3(x)))
        else:
            a, w_self = self._sa(x, mask, need_weights)
            x = self.norm1(x + a)
            c, w_cross = self._ca(x, memory, memory_mask, need_weights)
            x = self.norm2(x + c)
            x = self.norm3(x + self.dropout3(self.ffn(x)))
        return x, ((w_self, w_cross) if need_weights else None)

    @classmethod
    def from_torch(cls, module: nn.TransformerDecoderLayer, causal: bool = True) -> DecoderBlock:
        """Copy a ``batch_first`` ``nn.TransformerDecoderLayer`` (relu or gelu).

        PyTorch's layer is causal only when called with ``tgt_is_causal=True`` and a
        causal ``tgt_mask``; ``causal`` here should match how it is called.
        """
        ours = cls(**_block_args(module, nn.TransformerDecoderLayer, causal))
        ours.self_attn = MultiHeadAttention.from_torch(module.self_attn)
        ours.cross_attn = MultiHeadAttention.from_torch(module.multihead_attn)
        ours.ffn = FeedForward.from_torch(module)
        ours.norm1 = LayerNorm.from_torch(module.norm1)
        ours.norm2 = LayerNorm.from_torch(module.norm2)
        ours.norm3 = LayerNorm.from_torch(module.norm3)
        return ours.to(dtype=module.linear1.weight.dtype)


__all__ = ["MLPS", "NORMS", "DecoderBlock", "FeedForward", "LayerNorm", "LearnedPositions",
           "TransformerBlock", "check_block_options", "make_norm", "sinusoidal_positions"]
