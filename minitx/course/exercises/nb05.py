"""Exercises of notebook 05 (masking).

One prediction (which outputs move when the first token changes under a causal mask), two
implementations (``masked_softmax`` with fully masked rows, tested against
:func:`minitx.nn.attention.masked_softmax`; causal attention without a loop, tested against
:func:`minitx.nn.attention.scaled_dot_product_attention` with :func:`minitx.nn.masks.causal_mask`),
one count by hand and two open questions. The prediction and the count are kept as seals
(:mod:`~minitx.course.exercises.seal`) of the answers the instructor's solutions compute; the
references the implementations are compared with are bound when this module is imported,
and neither the package's functions nor PyTorch's own attention may stand in for an answer.
"""

from __future__ import annotations

from typing import Any

import torch

from minitx.course.exercises import call_learner, exercise, teaching_notes, think
from minitx.course.exercises.checks import (
    compare_attention,
    implement,
    outputs,
    predict,
    shape_hint,
)
from minitx.course.exercises.seal import check_sealed
from minitx.nn.attention import masked_softmax, scaled_dot_product_attention
from minitx.nn.masks import causal_mask

DT = torch.float64

FIRST_CHOICES = {
    "a": "only output 1",
    "b": "outputs 1 and 2",
    "c": "all three outputs",
    "d": "outputs 2 and 3",
}
_CHANGE_FIRST = "a8e56da3e62d04595a347ee54a94578f4e4ce82a"
_COMBINED = "b3021caf929e114dca22fac4d824de7efd9fadb6"
_COMBINED_HINTS = {
    "0f471fe59d27c948d8c499afb71a6dd40792cc9c":
        "that is the causal mask alone; the padding blocks some keys as well",
    "060409b77c7307a2dd2d5001a4e29accf1840d13":
        "that is the padding mask alone; the causal mask blocks the future as well",
}

# What already does the work of the two implement exercises: the package's masked softmax and
# attention (functions and modules) and PyTorch's.
_ATTENTION = (
    "minitx.nn.attention.masked_softmax",
    "minitx.nn.attention.scaled_dot_product_attention",
    "minitx.nn.attention.MultiHeadAttention",
    "minitx.nn.attention.DotProductAttention",
    "minitx.nn.grouped_attention.grouped_query_attention",
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.functional.multi_head_attention_forward",
    "torch.nn.MultiheadAttention",
)
_MASKS = (
    "minitx.nn.masks.causal_mask",
    "minitx.nn.masks.sliding_window_mask",
    "minitx.nn.masks.mask_of_kind",
)


# ---- predict -----------------------------------------------------------------------------


predict(
    "05.change_first",
    "Three tokens go through self-attention with a causal mask. Section 2 changed the last "
    "token and only the last output moved. Now change the FIRST token's embedding instead, "
    "keeping the weights. Which outputs move?",
    FIRST_CHOICES,
    _CHANGE_FIRST,
    "not what happens: for each output i, list the tokens its row of A may look "
    "at, and ask whether token 1 is among them, as a key or as the query",
    ask="Answer with the letter.",
)


# ---- implement: masked_softmax ----------------------------------------------------------


def masked_softmax_inputs(_causal: Any = causal_mask) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(scores, mask) pairs, seeded: random masks with some fully blocked rows, a causal
    mask, large scores, one key, and a single blocked entry."""
    g = torch.Generator().manual_seed(505)
    scores = 3.0 * torch.randn(2, 4, 5, generator=g, dtype=DT)
    mask = torch.rand(2, 4, 5, generator=g) < 0.6
    mask[0, 1] = False  # a fully blocked row
    mask[1, 3] = False
    mask[1, 0] = True  # a row with nothing blocked
    causal_scores = torch.randn(3, 3, generator=g, dtype=DT)
    big = 40.0 * torch.randn(1, 2, 6, generator=g, dtype=DT)
    big_mask = torch.rand(1, 2, 6, generator=g) < 0.5
    big_mask[0, :, 0] = True
    return [
        (scores, mask),
        (causal_scores, _causal(3)),
        (big, big_mask),
        (torch.randn(1, 1, generator=g, dtype=DT), torch.ones(1, 1, dtype=torch.bool)),
        (torch.randn(1, 1, generator=g, dtype=DT), torch.zeros(1, 1, dtype=torch.bool)),
    ]


def _where(index: torch.Tensor) -> str:
    return str(tuple(index.tolist()))


@implement(
    "05.masked_softmax",
    "Write my_masked_softmax(scores, mask): the softmax of scores over the last axis where "
    "mask (booleans of the same shape, True = may attend) is False gets weight exactly 0, "
    "and a row whose keys are all blocked comes out as all zeros, not NaN, with a finite "
    "gradient.",
    forbid=_ATTENTION,
)
def _masked_softmax(fn: Any, _reference: Any = masked_softmax) -> str | None:
    for scores, mask in masked_softmax_inputs():
        where = f"on scores of shape {tuple(scores.shape)}"
        expected = _reference(scores, mask)
        got, hint = outputs(fn, (scores, mask), where, ("your weights",))
        hint = hint or shape_hint(got[0], expected, "your weights", where)
        hint = hint or _weights_hint(got[0].to(DT), expected, mask, where)
        if hint is not None:
            return hint
    return _gradient_hint(fn)


def _weights_hint(
    got: torch.Tensor, expected: torch.Tensor, mask: torch.Tensor, where: str
) -> str | None:
    """What is wrong with masked softmax weights of the right shape, or None."""
    blocked_rows = ~mask.any(-1)
    nan = torch.isnan(got)
    if nan.any():
        row = nan.any(-1).nonzero()[0]
        if blocked_rows[tuple(row)]:
            return (
                f"NaN in row {_where(row)}, where every key is blocked: such a row "
                "must come out as zeros"
            )
        return f"NaN in row {_where(row)} of your weights"
    leaked = (got != 0) & ~mask
    if leaked.any():
        index = leaked.nonzero()[0]
        if blocked_rows[tuple(index[:-1])]:
            return (
                f"row {_where(index[:-1])} has every key blocked, yet your weights "
                "there are not 0: a fully blocked row must be all zeros"
            )
        return f"weight on a blocked key at {_where(index)}: blocked entries must be exactly 0"
    if not torch.allclose(got, expected, atol=1e-6):
        open_rows = ~blocked_rows
        sums = got.sum(-1)
        if not torch.allclose(sums[open_rows], torch.ones_like(sums[open_rows]), atol=1e-6):
            return (
                "rows with at least one allowed key must sum to 1; yours do not: "
                "check the axis of the softmax"
            )
        index = ((got - expected).abs() > 1e-6).nonzero()[0]
        return f"{where}, your weights differ from the expected ones first at {_where(index)}"
    return None


def _gradient_hint(fn: Any) -> str | None:
    """Whether a finite gradient flows back to the scores, fully blocked rows included."""
    for scores, mask in masked_softmax_inputs():
        leaf = scores.clone().requires_grad_(True)
        result, hint = call_learner(fn, leaf, mask.clone())
        if hint is not None:
            return hint
        try:
            (result * torch.linspace(-1, 1, result.size(-1), dtype=result.dtype)).sum().backward()
        except RuntimeError as err:
            return f"the weights are right, but no gradient flows back to the scores ({err})"
        if leaf.grad is None or not torch.isfinite(leaf.grad).all():
            return (
                "the weights are right, but the gradient reaching the scores of a fully "
                "blocked row is not finite: avoid -inf in the scores"
            )
    return None


# ---- implement: causal attention without a loop ----------------------------------------


def causal_inputs() -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Seeded inputs: one sequence, a batch of heads with d_k != d_v, one token, a batch
    of one."""
    g = torch.Generator().manual_seed(5050)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g, dtype=DT)

    return [
        (randn(5, 4), randn(5, 4), randn(5, 3)),
        (randn(2, 3, 6, 8), randn(2, 3, 6, 8), randn(2, 3, 6, 5)),
        (randn(1, 3), randn(1, 3), randn(1, 2)),
        (randn(1, 4, 2), randn(1, 4, 2), randn(1, 4, 2)),
    ]


def _causal_weights_hint(name: str, got: dict, want: dict, args: tuple,
                         _causal: Any = causal_mask) -> str | None:
    """What is wrong with causal weights A that differ from the expected ones (None: not A,
    or no likely mistake found)."""
    if name != "A":
        return None
    A = got["A"]
    T = A.size(-1)
    future = ~_causal(T)
    if (A[..., future].abs() > 1e-9).any():
        if (A[..., _causal(T) & ~torch.eye(T, dtype=torch.bool)].abs() < 1e-12).all():
            return (
                "your weights look at later keys and ignore earlier ones: the mask is "
                "the wrong triangle"
            )
        first = int((A[..., future].abs() > 1e-9).nonzero()[0][-1])  # among the future cells
        i, j = future.nonzero()[first].tolist()
        return f"query {i} puts weight on key {j}, which comes after it (positions counted from 0)"
    if T > 1 and (A.diagonal(dim1=-2, dim2=-1).abs() < 1e-12).all():
        return "every token may attend to itself: keep the diagonal"
    sums = A.sum(-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-6):
        return "the rows of your A do not sum to 1"
    return None


def _causal_reference(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor,
                      _attention: Any = scaled_dot_product_attention, _causal: Any = causal_mask):
    return _attention(Q, K, V, _causal(Q.size(-2)))


@implement(
    "05.causal_attention",
    "Write my_causal_attention(Q, K, V) that returns (Z, A) for causal self-attention, "
    "without a Python loop over positions: Q and K of shape (..., T, d_k), V (..., T, d_v), "
    "A = softmax of the scaled scores with every key after its query blocked, Z = A V.",
    forbid=_ATTENTION + _MASKS,
)
def _causal_attention(fn: Any, _reference: Any = _causal_reference) -> str | None:
    return compare_attention(
        fn,
        causal_inputs(),
        _reference,
        diagnose=_causal_weights_hint,
        advice="are the scores divided by sqrt(d_k)?",
    )


# ---- compute -----------------------------------------------------------------------------


@exercise(
    "05.combined",
    "A batch holds two sentences of 4 and 11 tokens, right-padded to T = 11. Combine the "
    "causal mask with the padding mask. For the 4-token sentence, how many (query, key) "
    "pairs of its 11 x 11 mask may attend? Count by hand.",
    kind="compute",
)
def _combined(answer: Any) -> str | None:
    return check_sealed(
        "05.combined", answer, _COMBINED, hints=_COMBINED_HINTS,
        advice="a pair is allowed only if both masks allow it: key <= query and key is real",
    )


# ---- think -------------------------------------------------------------------------------

think(
    "05.spot_leak",
    "A classmate's character-level model reaches a validation loss of 0.1 nats per "
    "character on tiny Shakespeare after two minutes on a laptop, and they are delighted. "
    "Describe two checks from this notebook that tell a leaking mask from real skill, and "
    "what each would show if the mask leaks.",
)

think(
    "05.causal_encoder",
    "Suppose you put a causal mask into a BERT-style encoder that classifies whole "
    "sentences (for example, positive or negative review). What could the first token's "
    "output vector know about the sentence, which position would you have to read the "
    "class from, and what would the earlier positions lose?",
)


teaching_notes(
    "05",
    60,
    "change_first masked_softmax combined spot_leak",
    goals=(
        "Build a causal mask, apply it to the scores before the softmax, and say which "
        "weights it forces to zero and which outputs it protects.",
        "Build padding masks, combine them with a causal mask, and handle a fully masked "
        "row without NaN.",
        "Tell encoder-only, decoder-only and encoder-decoder models apart by their masks.",
        "Recognise a leaking mask from its symptoms (a loss too good to be true, garbage "
        "generations) and test for it.",
        "Pass a mask to nn.MultiheadAttention and F.scaled_dot_product_attention without "
        "inverting it.",
    ),
    misconceptions=(
        "A causal mask freezes the early tokens (it protects early outputs from later "
        "tokens; every output still depends on the first token).",
        "A held-out validation loss would catch a leaking mask (it collapses too).",
        "Masking with -inf is always safe (a fully blocked row gives NaN, which spreads).",
        "True means the same thing in every PyTorch attention API.",
    ),
)
