"""Exercises of notebook 05 (masking).

The zeros of a causal attention matrix by hand (asked before the notebook shows them), one
prediction (which outputs move when the first token changes under a causal mask), one
implementation (``masked_softmax`` with fully masked rows, tested against
:func:`minitx.nn.attention.masked_softmax`), one count by hand and one open question. The
prediction and the two hand computations are kept as seals
(:mod:`~minitx.course.exercises.seal`) of the answers the instructor's solutions compute; the
reference the implementation is compared with is bound when this module is imported, and
neither the package's functions nor PyTorch's own attention may stand in for an answer.
"""

from __future__ import annotations

from typing import Any

import torch

from minitx.course.exercises import call_learner, exercise, teaching_notes, think
from minitx.course.exercises.checks import implement, outputs, predict, shape_hint
from minitx.course.exercises.plain import plain_number, plain_tensor
from minitx.course.exercises.seal import canonical, check_sealed, seal
from minitx.nn.attention import masked_softmax
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
    "98b66d44f9202cf3b8cb88528082485901933f9a":
        "pad queries are rows too: the padding mask blocks columns (keys), not rows, so "
        "each pad query still counts the real keys it may see",
}
# seal("05.causal_zeros", canonical(sorted (row, column) pairs)), of the answer and of three
# known mistakes.
_CAUSAL_ZEROS = "6ac3e5bf840c52620aeb5a283e51c590969816f9"
_CAUSAL_ZEROS_HINTS = {
    "5d921fea7fdcf2a5b111b1a9c1711fbf9c02600b":
        "rows and columns are swapped: row i is the query, token i, and column j the key it "
        "looks at, so a row's zeros are the tokens that query may not see",
    "8140bcbababcc2cb0436f005cc8f7c6bc0df2c43":
        "a token may look at itself: the diagonal keeps its weights",
    "f64eb5ee154538508a09f7ec097cbac17251a217":
        "those are the entries a token may look at; the question asks for the ones that "
        "must become zero",
}
_PAIRS = "answer with a set or list of (row, column) pairs of whole numbers, e.g. {(r, c), ...}"

# What already does the work of the implement exercise: the package's masked softmax and
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


# ---- compute: the zeros of a causal A ---------------------------------------------------


def _positions(answer: Any) -> list[tuple[int, int]] | str:
    """A set, list, tuple, array or tensor of (row, column) pairs of whole numbers as sorted
    pairs without repeats, or a hint."""
    if isinstance(answer, str | bytes | dict) or plain_number(answer) is not None:
        return _PAIRS
    table = plain_tensor(list(answer) if type(answer) in (set, frozenset) else answer)
    if table is None or table.is_complex() or table.dim() != 2 or table.size(-1) != 2:
        return "no entry at all? a token must not see the tokens after it" if (
            table is not None and table.numel() == 0) else _PAIRS
    if not (table.isfinite().all() and (table == table.round()).all()):
        return _PAIRS
    return sorted({(int(r), int(c)) for r, c in table.tolist()})


@exercise(
    "05.causal_zeros",
    "Three tokens are read left to right, as a language model reads them: a token may look "
    "at itself and at the tokens before it, not at those after it. Which entries of their "
    "3 x 3 attention matrix A (row = query, column = key) must become zero? Give their "
    "(row, column) positions, counting from 1, as a set or list of pairs.",
    kind="compute",
)
def _causal_zeros(answer: Any) -> str | None:
    pairs = _positions(answer)
    if isinstance(pairs, str):
        return pairs
    values = {v for pair in pairs for v in pair}
    if 0 in values and values <= {0, 1, 2, 3}:
        return "count rows and columns from 1, as the text does: row 1 is the first token"
    if not values <= {1, 2, 3}:
        return "A is 3 x 3: rows and columns run from 1 to 3"
    text = canonical(pairs)
    if seal("05.causal_zeros", text) == _CAUSAL_ZEROS:
        return None
    return _CAUSAL_ZEROS_HINTS.get(seal("05.causal_zeros", text), (
        "row i is token i as the query: list, row by row, the columns of the tokens that "
        "come after it"))


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


teaching_notes(
    "05",
    60,
    "causal_zeros change_first masked_softmax combined spot_leak",
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
