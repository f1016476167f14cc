"""Exercises of notebook 06 (multi-head attention): sizes, shapes, masks, and finding a head.

Expected answers are computed with :mod:`minitx.attention` and :mod:`minitx.tasks.relations`,
never typed in. Modules are built under ``torch.random.fork_rng`` so that checking an
answer does not move the learner's random numbers.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from minitx.attention import MultiHeadAttention
from minitx.exercises import call_learner, exercise
from minitx.masks import causal_mask, padding_mask
from minitx.tasks.relations import RelationBatch, RelationTask, relation_scores


def _mha(d_model: int, n_heads: int, seed: int = 0) -> MultiHeadAttention:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MultiHeadAttention(d_model, n_heads).double().eval()


def expected_params(d_model: int = 64, n_heads: int = 8) -> int:
    """Number of parameters of ``MultiHeadAttention(d_model, n_heads)``, counted."""
    return sum(p.numel() for p in _mha(d_model, n_heads).parameters())


def expected_head_shape(B: int = 2, T: int = 5, d_model: int = 48, n_heads: int = 6) -> tuple:
    """Shape of the queries after splitting into heads, read off a real projection."""
    mha = _mha(d_model, n_heads)
    x = torch.zeros(B, T, d_model, dtype=torch.float64)
    q = mha.in_proj(x)[..., :d_model]  # (B, T, C): the W_Q rows of in_proj
    return tuple(q.view(B, T, mha.n_heads, mha.d_head).transpose(1, 2).shape)


def expected_cross_shapes(
    B: int = 2, T_q: int = 3, T_k: int = 7, d_model: int = 16, n_heads: int = 4
) -> dict[str, tuple]:
    """Shapes of (out, weights) of a real cross-attention call."""
    mha = _mha(d_model, n_heads)
    dec = torch.zeros(B, T_q, d_model, dtype=torch.float64)
    enc = torch.zeros(B, T_k, d_model, dtype=torch.float64)
    out, weights = mha(dec, enc, enc, need_weights=True)
    return {"out": tuple(out.shape), "weights": tuple(weights.shape)}


def _as_shape(value: Any) -> tuple | None:
    try:
        return tuple(int(v) for v in value)
    except (TypeError, ValueError):
        return None


@exercise(
    "06.params",
    "How many parameters (weights and biases) does MultiHeadAttention(d_model=64, n_heads=8) "
    "have? Count by hand, then compare with one head of size 64. Answer with an int.",
)
def _params(answer: Any) -> str | None:
    if isinstance(answer, bool) or not isinstance(answer, int):
        return f"answer with an int, got {type(answer).__name__}"
    d, h = 64, 8
    if answer == expected_params(d, h):
        return None
    if answer == 4 * d * d:
        return "close: the four projections have biases too"
    if answer in (h * (4 * d * d + 4 * d), h * 4 * d * d, h * (3 * d * d + 3 * d) + d * d + d):
        return "each head does not get full-size matrices: its W_Q, W_K, W_V map 64 features " \
               "to d_k = 64 / 8"
    return "count W_Q, W_K, W_V, W_O and their biases; the number of heads should not matter"


@exercise(
    "06.head_shape",
    "Batched multi-head attention with B=2, T=5, d_model=48, n_heads=6: what is the shape of "
    "q after q.view(B, T, n_heads, d_head).transpose(1, 2)? Answer with a tuple.",
)
def _head_shape(answer: Any) -> str | None:
    shape = _as_shape(answer)
    if shape is None:
        return f"answer with a tuple of ints, got {answer!r:.40}"
    expected = expected_head_shape()
    if shape == expected:
        return None
    if len(shape) != 4:
        return f"q has 4 dimensions (batch, heads, time, features), you gave {len(shape)}"
    if sorted(shape) == sorted(expected):
        return "right sizes, wrong order: transpose(1, 2) swaps the time and head axes"
    if 48 in shape:
        return "each head works on d_model / n_heads features, not d_model"
    return "view splits the last axis into (n_heads, d_head); transpose(1, 2) then swaps axes"


@exercise(
    "06.cross",
    "Cross-attention with MultiHeadAttention(16, 4): decoder states (2, 3, 16) are the queries, "
    "encoder states (2, 7, 16) the keys and values. Give the shapes of the output and of the "
    "weights (need_weights=True) as {'out': (...), 'weights': (...)}.",
)
def _cross(answer: Any) -> str | None:
    if not isinstance(answer, dict) or set(answer) != {"out", "weights"}:
        return "answer with a dict with the keys 'out' and 'weights'"
    expected = expected_cross_shapes()
    out, weights = _as_shape(answer["out"]), _as_shape(answer["weights"])
    wrong = []
    if out != expected["out"]:
        wrong.append("out: one output per query (decoder position), each of size d_model")
    if weights != expected["weights"]:
        wrong.append("weights: one row per query and one column per key, for every head")
    return "; ".join(wrong) or None


@exercise(
    "06.torch_mask",
    "minitx masks say True = may attend; nn.MultiheadAttention's attn_mask says True = "
    "blocked. Write a function to_torch(mask) that turns a minitx (T_q, T_k) boolean mask into "
    "an attn_mask PyTorch reads the same way. Answer with the function.",
)
def _torch_mask(answer: Any) -> str | None:
    if not callable(answer):
        return f"answer with a function, got {type(answer).__name__}"
    d_model, n_heads, T = 8, 2, 6
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(6)
        ref = nn.MultiheadAttention(d_model, n_heads, batch_first=True).double().eval()
        x = torch.randn(2, T, d_model, dtype=torch.float64)
        random_mask = torch.rand(T, T) < 0.6
        ours = MultiHeadAttention.from_torch(ref).eval()  # its init draws numbers too
    random_mask[:, 0] = True  # every query may attend to something
    last_two = padding_mask([T - 2], T)[0, 0].expand(T, T)
    for name, mask in (("a causal mask", causal_mask(T)), ("a padding mask", last_two),
                       ("a random mask", random_mask)):
        converted, error = call_learner(answer, mask.clone())
        if error:
            return error
        if not isinstance(converted, Tensor) or converted.shape != mask.shape:
            return f"for {name} of shape {tuple(mask.shape)}, return a tensor of the same shape"
        if converted.is_floating_point():
            converted = converted.double()
        elif converted.dtype != torch.bool:
            return f"return a bool (or float) tensor, got {converted.dtype}"
        if converted.dtype == torch.bool and torch.equal(converted, mask):
            return "that is the mask unchanged: PyTorch reads True as 'blocked'"
        try:
            want, _ = ours(x, mask=mask)
            got, _ = ref(x, x, x, attn_mask=converted, need_weights=False)
        except RuntimeError as err:
            return f"PyTorch refused your mask: {err}"
        if not torch.allclose(got, want, atol=1e-9, equal_nan=False):
            return f"with {name}, PyTorch does not attend to the same keys as minitx"
    return None


def _planted_weights(L: int, H: int, T: int, where: tuple[int, int], seed: int) -> Tensor:
    """Random attention (L, H, T, T), one head on the previous token, another on token 0."""
    g = torch.Generator().manual_seed(seed)
    weights = torch.softmax(torch.randn(L, H, T, T, generator=g), dim=-1)
    layer, head = where
    prev = torch.zeros(T, T)
    prev[0, 0] = 1.0
    prev[torch.arange(1, T), torch.arange(T - 1)] = 1.0
    weights[layer, head] = 0.3 * weights[layer, head] + 0.7 * prev
    sink = ((layer + 1) % L, (head + 1) % H)  # sharper, but on the first token
    weights[sink] = 0.05 * weights[sink]
    weights[sink][:, 0] += 0.95
    return weights


def expected_prev_head(weights: Tensor) -> tuple[int, int]:
    """(layer, head) with the highest mean weight on the previous token, by
    :func:`minitx.tasks.relations.relation_scores`."""
    _, H, T, _ = weights.shape
    batch = RelationTask(seq_len=T).sample(1, seed=0)  # only its length is used here
    scores = relation_scores(weights[None], RelationBatch(*batch)).previous  # (L, H)
    flat = int(scores.argmax())
    return flat // H, flat % H


@exercise(
    "06.prev_head",
    "Write a function find_prev_head(weights) that takes the attention weights (L, H, T, T) "
    "of one sequence and returns (layer, head) of the head that puts the most weight on the "
    "previous token (position t-1 for query t). Answer with the function.",
)
def _prev_head(answer: Any) -> str | None:
    if not callable(answer):
        return f"answer with a function, got {type(answer).__name__}"
    for L, H, T, where, seed in ((2, 2, 16, (1, 0), 0), (3, 4, 16, (0, 3), 1),
                                 (2, 4, 16, (1, 2), 2)):
        weights = _planted_weights(L, H, T, where, seed)
        expected = expected_prev_head(weights)
        got, error = call_learner(answer, weights.clone())
        if error:
            return error
        got = _as_shape(got)
        if got is None or len(got) != 2:
            return "return a pair (layer, head) of ints"
        if got != expected:
            sink = ((where[0] + 1) % L, (where[1] + 1) % H)
            if got == sink:
                return "that head is the sharpest, but it looks at the first token: measure " \
                       "the weight on position t-1 for each query t"
            return f"for weights of shape {(L, H, T, T)} you picked {got}: average, over " \
                   "queries t >= 1, the weight on key t-1, for each layer and head"
    return None
