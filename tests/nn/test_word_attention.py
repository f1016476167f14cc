"""minitx.nn.word_attention: fixed random word vectors and projections, and one head's weights."""

from __future__ import annotations

import math

import pytest
import torch

from minitx.data.tokenizer import word_tokenize
from minitx.nn import word_attention as W


def test_embeddings_depend_on_the_word_only():
    a = W.embed_tokens(["the", "bank", "of"], d_model=8)
    b = W.embed_tokens(["Bank", "robbers"], d_model=8)
    assert a.shape == (3, 8) and a.dtype == torch.float64
    torch.testing.assert_close(a[1], b[0])
    torch.testing.assert_close(a, W.embed_tokens(["the", "bank", "of"], d_model=8))
    assert not torch.allclose(a[0], a[1])
    assert not torch.allclose(a, W.embed_tokens(["the", "bank", "of"], d_model=8, seed=1))
    with pytest.raises(ValueError, match="empty"):
        W.embed_tokens([])


def test_random_projections_are_fixed_and_scaled():
    W_Q, W_K, W_V = W.random_projections(16, 4)
    assert W_Q.shape == W_K.shape == W_V.shape == (16, 4)
    torch.testing.assert_close(W_Q, W.random_projections(16, 4)[0])
    assert not torch.allclose(W_Q, W.random_projections(16, 4, head=1)[0])
    big = W.random_projections(256, 64)[0]
    assert abs(big.std().item() - 1 / math.sqrt(256)) < 0.01
    with pytest.raises(ValueError, match="d_k"):
        W.random_projections(16, 0)


def test_self_attention_weights_match_a_manual_softmax():
    X = W.embed_tokens(word_tokenize("a b c d"), 16)
    W_Q, W_K, _ = W.random_projections(16, 8)
    manual = torch.softmax((X @ W_Q) @ (X @ W_K).T / math.sqrt(8) / 0.5, dim=-1)
    torch.testing.assert_close(W.self_attention_weights(X, 8, temperature=0.5), manual)
    with pytest.raises(ValueError, match=r"\(T, d_model\)"):
        W.self_attention_weights(X[None], 8)
