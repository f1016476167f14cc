"""Self-attention over a sentence you type, with nothing trained (notebook 04).

Each word gets a fixed random vector (:func:`embed_tokens`), and one head gets fixed
random projections W_Q, W_K, W_V (:func:`random_projections`); :func:`self_attention_weights`
then computes softmax(Q K^T / sqrt(d_k)) with the package's attention. Every number depends
only on the words, the sizes and a seed, so it is the same on every run and machine: the
explorer of notebook 04 and its exercises can show exactly what the prose computes.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from minitx.nn.attention import scaled_dot_product_attention

__all__ = ["embed_tokens", "random_projections", "self_attention_weights"]



def _generator(*key: Any) -> torch.Generator:
    seed = zlib.crc32(repr(key).encode("utf-8"))
    return torch.Generator().manual_seed(seed)


def embed_tokens(tokens: Sequence[str], d_model: int = 16, seed: int = 0) -> Tensor:
    """A fixed random embedding per word: (T, d_model) float64, entries ~ N(0, 1).

    The vector depends only on the lower-cased word, ``d_model`` and ``seed`` (not on the
    position or the rest of the sentence), so "bank" enters attention with the same
    vector in every sentence. Deterministic across runs and machines.
    """
    if not tokens:
        raise ValueError("need at least one token, got an empty sentence")
    if d_model < 1:
        raise ValueError(f"d_model must be >= 1, got {d_model}")
    rows = [
        torch.randn(d_model, generator=_generator("embed", tok.lower(), d_model, seed),
                    dtype=torch.float64)
        for tok in tokens
    ]
    return torch.stack(rows)  # (T, d_model)


def random_projections(
    d_model: int, d_k: int, head: int = 0, seed: int = 0
) -> tuple[Tensor, Tensor, Tensor]:
    """Fixed random W_Q, W_K, W_V, each (d_model, d_k) float64, entries ~ N(0, 1/d_model).

    With unit-variance embeddings the queries and keys then have unit-variance entries,
    so q . k has variance d_k: exactly the growth that dividing by sqrt(d_k) undoes.
    Each (d_model, d_k, head, seed) gives its own matrices, the same on every call.
    """
    if d_model < 1 or d_k < 1:
        raise ValueError(f"d_model and d_k must be >= 1, got d_model={d_model}, d_k={d_k}")
    g = _generator("proj", d_model, d_k, head, seed)
    W = torch.randn(3, d_model, d_k, generator=g, dtype=torch.float64) / math.sqrt(d_model)
    return W[0], W[1], W[2]


def self_attention_weights(
    X: Tensor,
    d_k: int,
    temperature: float = 1.0,
    head: int = 0,
    seed: int = 0,
    *,
    scaled: bool = True,
    mask: Tensor | None = None,
) -> Tensor:
    """Attention weights A (T, T) of one head with :func:`random_projections`.

    ``X`` (T, d_model). A = softmax(X W_Q (X W_K)^T * s / temperature), s = 1/sqrt(d_k)
    when ``scaled`` else 1, computed by ``minitx.nn.attention.scaled_dot_product_attention``.
    ``mask`` bool broadcastable to (T, T), True = may attend.
    """
    if X.dim() != 2:
        raise ValueError(f"X must be (T, d_model), got shape {tuple(X.shape)}")
    W_Q, W_K, W_V = random_projections(X.size(1), d_k, head, seed)
    X = X.to(torch.float64)
    _, A = scaled_dot_product_attention(
        X @ W_Q, X @ W_K, X @ W_V, mask, scale=None if scaled else 1.0, temperature=temperature
    )
    return A  # (T, T)
