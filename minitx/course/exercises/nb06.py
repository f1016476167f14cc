"""Exercises of notebook 06 (multi-head attention): two heads worked out by hand, heads
split and merged, a prediction about swapping heads, and an open question.

The implementations are compared with :mod:`minitx.nn.attention` (the package's own
multi-head attention), bound when this module is imported; neither it nor PyTorch's
``nn.MultiheadAttention`` may stand in for an answer. The prediction is kept as the seal of the
letter the instructor's solution computes. Every test input is drawn under
``torch.random.fork_rng`` with its own seed, so checking an answer does not move the
learner's random numbers. The hand computation is checked against a seal
(:mod:`~minitx.course.exercises.seal`) made from the instructor's solution, which runs the
package's attention: this module holds neither the answer nor a function that computes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from minitx.course.exercises import call_learner, teaching_notes, think
from minitx.course.exercises.checks import (
    compute,
    first_difference,
    implement,
    outputs,
    predict,
    shape_hint,
)
from minitx.course.exercises.plain import plain_tensor
from minitx.course.exercises.seal import check_sealed
from minitx.nn.attention import (
    MultiHeadAttention,
    merge_heads,
    scaled_dot_product_attention,
    split_heads,
)

# (B, T, d_model, n_heads): several heads and positions first, then batch 1, length 1,
# one head, and more heads than positions.
HEAD_CASES = ((2, 5, 8, 2), (3, 7, 24, 4), (1, 1, 12, 3), (2, 4, 6, 1), (1, 3, 16, 8))
_SWAP = "738a54c7f1c8f5b10f6835469c9a7888c16ed54d"

# What already splits or merges heads: the package's functions and the modules built on them,
# and PyTorch's multi-head attention.
_MODULES = (
    "minitx.nn.attention.MultiHeadAttention",
    "minitx.nn.grouped_attention.GroupedQueryAttention",
    "torch.nn.MultiheadAttention",
    "torch.nn.functional.multi_head_attention_forward",
)
_SPLIT = ("minitx.nn.attention.split_heads", "minitx.nn.attention.MultiHeadAttention.project",
          *_MODULES)
_MERGE = ("minitx.nn.attention.merge_heads", *_MODULES)


def _setup(B: int, T: int, C: int, h: int, seed: int,
           _module: Any = MultiHeadAttention) -> tuple[MultiHeadAttention, Tensor]:
    """A seeded double-precision module and input, drawn without touching the learner's RNG."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        mha = _module(C, h).double().eval()
        x = torch.randn(B, T, C, dtype=torch.float64)
    return mha, x


def _entry(got: Tensor, want: Tensor, axes: str) -> str:
    index = first_difference(got, want, atol=1e-9, rtol=1e-5)
    return f"the first entry that differs is [{', '.join(map(str, index))}] ({axes})"


def _result(answer: Any, args: tuple, want: Tensor, where: str, axes: str) -> tuple:
    """The learner's tensor in float64 and None, or None and a hint: ``answer`` raised, or
    returned something other than a tensor of ``want``'s shape, or NaN."""
    got, hint = outputs(answer, args, where, ("the result",), arrays=True)
    hint = hint or shape_hint(got[0], want, "the result", where, f"that is {axes}")
    if hint is None and torch.isnan(got[0]).any():
        hint = f"{where}, your result holds NaN"
    return (None, hint) if hint else (got[0].double(), None)


def _over_head_cases(hint: Callable[..., str | None]) -> Callable[[Any], str | None]:
    """A checker that asks ``hint(answer, mha, x, n_heads, where)`` on every case of
    HEAD_CASES, with the package's module ``mha`` and its input ``x``."""

    def checker(answer: Any) -> str | None:
        for seed, (B, T, C, h) in enumerate(HEAD_CASES):
            mha, x = _setup(B, T, C, h, seed)
            with torch.no_grad():
                said = hint(answer, mha, x, h, f"with B={B}, T={T}, d_model={C}, n_heads={h}")
            if said is not None:
                return said
        return None

    return checker


@implement(
    "06.split_heads",
    "Write split_heads(x, n_heads): it takes queries (or keys, or values) x of shape "
    "(B, T, d_model) and returns them cut into heads, shape (B, n_heads, T, d_k) with "
    "d_k = d_model // n_heads, head h holding features h*d_k to (h+1)*d_k - 1 of each "
    "position. The checker runs attention on your heads and compares with the package's "
    "MultiHeadAttention. Answer with the function.",
    forbid=_SPLIT,
)
@_over_head_cases
def _split_hint(answer: Any, mha: MultiHeadAttention, x: Tensor, h: int, where: str,
                _split: Any = split_heads, _merge: Any = merge_heads,
                _attention: Any = scaled_dot_product_attention) -> str | None:
    want_out, want_w = mha(x, need_weights=True)  # the package's multi-head attention
    q, k, v = mha.in_proj(x).split(x.size(-1), dim=-1)  # (B, T, C) each
    got, hint = _result(answer, (q, h), _split(q, h), where, "(B, n_heads, T, d_k)")
    if hint is not None:
        return hint
    heads = [plain_tensor(call_learner(answer, t.clone(), h)[0]) for t in (q, k, v)]
    if not all(isinstance(t, Tensor) and t.shape == got.shape for t in heads):
        return "return a tensor for every input"
    z, w = _attention(*heads)
    out = mha.out_proj(_merge(z))
    if torch.allclose(w, want_w, atol=1e-9) and torch.allclose(out, want_out, atol=1e-9):
        return None
    return f"{where}, attention over your heads differs from the package's; " + _entry(
        got, _split(q, h), "batch, head, position, feature"
    )


@implement(
    "06.merge_heads",
    "Write merge_heads(z): it takes the per-head outputs z of shape (B, n_heads, T, d_k) and "
    "puts the heads side by side, shape (B, T, n_heads * d_k), head h in columns h*d_k to "
    "(h+1)*d_k - 1, ready for W_O. The checker applies the package's W_O to your result and "
    "compares with MultiHeadAttention's output. Answer with the function.",
    forbid=_MERGE,
)
@_over_head_cases
def _merge_hint(answer: Any, mha: MultiHeadAttention, x: Tensor, h: int, where: str,
                _split: Any = split_heads, _merge: Any = merge_heads,
                _attention: Any = scaled_dot_product_attention) -> str | None:
    want_out, _ = mha(x, need_weights=True)
    q, k, v = (_split(t, h) for t in mha.in_proj(x).split(x.size(-1), dim=-1))
    z, _ = _attention(q, k, v)  # (B, h, T, d_k)
    got, hint = _result(answer, (z,), _merge(z), where, "(B, T, d_model)")
    if hint is not None:
        return hint
    if torch.allclose(mha.out_proj(got), want_out, atol=1e-9):
        return None
    return f"{where}, W_O applied to your result differs from the package's output; " + _entry(
        got, _merge(z), "batch, position, feature"
    )


# ---- compute: two heads of d_k = 1 by hand -------------------------------------------------

# X of the hand computation: 3 positions, d_model = 2 (W_Q = ln 2 * I, W_K = W_V = I).
TWO_HEADS_X = ((1.0, 0.0), (2.0, 1.0), (0.0, -1.0))
# The seal of the right pair, ``seal("06.two_heads", canonical(answer, 2))``, and of known
# mistakes, made from the instructor's solution (with the package's MultiHeadAttention).
_TWO_HEADS = "f13d9931c4892c4b09bd2384424e55912b4bdf28"
_WIDE = ("that is one wide head: one softmax over both features. Each head has its own "
         "scores, from its own feature only")
_TWO_HEADS_MISTAKES = {
    "71db39f05fb95a34ab91b963c265e39b3fe9c1d1":
        "swapped: head 0 reads feature 0 and fills the first column of the concatenation",
    "479a9f2451dd03c65c4a43d433d108c41ec49e80":
        "each head scales its scores by sqrt(d_k) = sqrt(1), not by sqrt(d_model)",
    "7b86143701e9a62ceee2e7090cdab40f59e94641":
        "the queries are X W_Q with W_Q = ln 2 * I: multiply by ln 2 before the softmax",
    "48d63e37b1ebcec6318a0ea8d7828941f44f40f2": _WIDE,
    "8fae046e038870192331a385cc249e9b82b20689": _WIDE,
    "7bd0064089cc929d0d1fe1b0fc7695503e6da9c4":
        "a query of 0 gives every key the score 0, and a softmax of equal scores is uniform, "
        "not 0",
}
_TWO_HEADS_ADVICE = (
    "for each head alone: its query at the last position times each key (d_k = 1, so divide "
    "by sqrt(1)), a softmax over the three keys, then the weighted sum of that head's values"
)


@compute(
    "06.two_heads",
    "X = [[1, 0], [2, 1], [0, -1]] (3 positions, d_model = 2) goes through 2 heads of d_k = 1, "
    "with W_Q = ln 2 * I and W_K = W_V = I (no biases), so head i reads only feature i. By "
    "hand: at the last position, each head's three attention weights, then its output. Answer "
    "with the last row of the concatenation [head_0; head_1] (before W_O): 2 numbers, 2 "
    "decimals.",
)
def _two_heads(answer: Any) -> str | None:
    return check_sealed("06.two_heads", answer, _TWO_HEADS, count=2, decimals=2,
                        hints=_TWO_HEADS_MISTAKES, advice=_TWO_HEADS_ADVICE)


# ---- predict: swap two heads ------------------------------------------------------------

SWAP_CHOICES = {
    "a": "the outputs and the accuracy stay the same (up to rounding)",
    "b": "the accuracy falls to chance",
    "c": "the accuracy falls somewhat, the model half works",
}


predict(
    "06.swap_heads",
    "Predict before you run it. In the trained relation model, heads 0 and 1 of layer 0 trade "
    "places: their rows of W_Q, W_K, W_V and their columns of W_O are swapped, nothing is "
    "retrained. What happens?",
    SWAP_CHOICES,
    _SWAP,
    "not what the experiment shows: write the layer's output as a sum of one term per head, "
    "and see what the swap does to that sum",
)


think(
    "06.why_heads",
    "In section 7, seed 2's one layer of one head, after 1,000 steps at the recipe's rate, "
    "answered every partner but only 80% of the previous tokens. At which positions of a "
    "sequence would you expect its previous-token mistakes, and why? Which measurement of "
    "section 5 would check your answer, and why would two heads avoid the mistakes?",
)


teaching_notes(
    "06",
    60,
    "two_heads split_heads merge_heads swap_heads why_heads",
    goals=(
        "Split d_model into h heads with view and transpose, attend per head, merge, and "
        "project with W_O; explain why the parameter count does not depend on h.",
        "Work out two small heads by hand: a softmax per head, then the concatenation.",
        "Check a from-scratch module against nn.MultiheadAttention, flipping the mask "
        "convention (PyTorch: True = blocked).",
        "Measure head specialisation on a task with two relations, over six seeds, test it "
        "by ablation, and compare one head per layer with two at equal steps.",
        "Use the same module for cross-attention (queries from one sequence, keys and values "
        "from another).",
    ),
    misconceptions=(
        "More heads means more parameters.",
        "view(B, h, T, d_k) splits into heads (it silently mixes positions and features).",
        "A head's heatmap explains what the model decided.",
        "A head has a fixed role tied to its index.",
    ),
)
