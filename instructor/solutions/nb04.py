"""The instructor's answers to notebook 04's exercises, computed with the package."""

from __future__ import annotations

import math

import torch

from minitx.nn.attention import scaled_dot_product_attention
from minitx.nn.word_attention import embed_tokens, random_projections

DT = torch.float64
REPEAT_SENTENCE = ("the", "bank", "of", "the", "river")


def _entropy(weights: torch.Tensor) -> torch.Tensor:
    return -(weights * weights.clamp_min(1e-300).log()).sum(-1)


def shift_keys_truth() -> str:
    """Add one vector c to every key, on random Q, K, V: how do the rows of A change?
    ('a' unchanged, 'b' every row sharper, 'c' every row flatter, 'd' no one direction)."""
    g = torch.Generator().manual_seed(4)
    Q, K, V = (torch.randn(6, 4, generator=g, dtype=DT) for _ in range(3))
    c = 3.0 * torch.randn(4, generator=g, dtype=DT)
    _, A = scaled_dot_product_attention(Q, K, V)
    _, A_shifted = scaled_dot_product_attention(Q, K + c, V)
    if torch.allclose(A, A_shifted, rtol=0, atol=1e-12):
        return "a"
    change = _entropy(A_shifted) - _entropy(A)
    return "b" if (change < 0).all() else "c" if (change > 0).all() else "d"


def repeat_word_truth(d_model: int = 16) -> str:
    """Append a second 'river' to 'the bank of the river': where does the output of 'bank'
    go, relative to the value vector of 'river'? ('a' nowhere, 'b' straight towards it, 'c'
    straight away, 'd' elsewhere; notebook 04's fixed embeddings and projections.)"""
    W_Q, W_K, W_V = random_projections(d_model, d_k=16)

    def bank_output(words: tuple[str, ...]) -> torch.Tensor:
        X = embed_tokens(list(words), d_model)
        return scaled_dot_product_attention(X @ W_Q, X @ W_K, X @ W_V)[0][words.index("bank")]

    before = bank_output(REPEAT_SENTENCE)
    after = bank_output((*REPEAT_SENTENCE, "river"))
    v_river = (embed_tokens(["river"], d_model) @ W_V)[0]
    step, towards = after - before, v_river - before
    if step.norm() < 1e-9:
        return "a"
    cos = torch.cosine_similarity(step, towards, dim=0).item()
    return "b" if cos > 1 - 1e-9 else "c" if cos < -1 + 1e-9 else "d"


def shapes(n_q: int = 3, n_k: int = 5, d_model: int = 6, d_k: int = 4, d_v: int = 2) -> dict:
    """Run attention from n_q query tokens to n_k other tokens and read off every shape."""
    X_q, X_kv = torch.ones(n_q, d_model), torch.ones(n_k, d_model)
    W_Q, W_K, W_V = torch.ones(d_model, d_k), torch.ones(d_model, d_k), torch.ones(d_model, d_v)
    Q, K, V = X_q @ W_Q, X_kv @ W_K, X_kv @ W_V
    S = Q @ K.T
    Z, A = scaled_dot_product_attention(Q, K, V)
    tensors = dict(X_q=X_q, X_kv=X_kv, W_Q=W_Q, W_K=W_K, W_V=W_V, Q=Q, K=K, V=V, S=S, A=A, Z=Z)
    return {name: tuple(t.shape) for name, t in tensors.items()}


def tiny_weights(a: float, scale: float | None = None) -> torch.Tensor:
    """Weights of q = [a, 0] over k1 = [1, 0], k2 = [0, 1] (d_k = 2)."""
    q = torch.tensor([[a, 0.0]], dtype=DT)
    K = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=DT)
    return scaled_dot_product_attention(q, K, K, scale=scale)[1][0]


def tiny(target: float = 0.95) -> float:
    """The size a of q = [a, 0] that gives k1 the weight ``target``: bisection on the
    package's weights, which grow with a."""
    low, high = 0.0, 100.0
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if tiny_weights(mid)[0] < target else (low, mid)
    return (low + high) / 2


def tiny_unscaled(target: float = 0.95) -> float:
    """The known mistake: the same size without the 1 / sqrt(d_k)."""
    low, high = 0.0, 100.0
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if tiny_weights(mid, scale=1.0)[0] < target else (low, mid)
    return (low + high) / 2


def attention(
    Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(Q K^T / sqrt(d_k)) V and the weights, for Q (..., n_q, d_k), K (..., n_k,
    d_k), V (..., n_k, d_v)."""
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))  # (..., n_q, n_k)
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))  # largest entry exp(0) = 1
    A = e / e.sum(dim=-1, keepdim=True)  # each row sums to 1
    return A @ V, A


SOLUTIONS = {
    "04.shift_keys": shift_keys_truth,
    "04.repeat_word": repeat_word_truth,
    "04.attention": lambda: attention,
    "04.shapes": shapes,
    "04.tiny": lambda: round(tiny(), 2),  # asked to two decimals
}

MODEL_ANSWERS = {
    "04.why_scale": (
        "No: once W_Q and W_K are trained, the queries and keys have whatever size the model "
        "found useful, and the scores can be much larger or smaller than 1 (a head that must "
        "pick one token learns large scores on purpose). The scale matters most at the start: "
        "it makes the initial softmax unsaturated for any head size, so gradients reach W_Q and "
        "W_K and learning can begin. Without it, a large d_k starts training with near one-hot "
        "rows and vanishing gradients, and the model would first have to learn to shrink W_Q "
        "and W_K. It also lets the same learning rate and initialisation work across head sizes."
    ),
}
