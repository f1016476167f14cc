"""Exercises of notebook 03 (Bahdanau attention): the task's rules, additive attention
written by the learner, a prediction about a repeated encoder state, and an open question
on the bottleneck.

Expected answers are computed with :mod:`minitx.data.dates` and :mod:`minitx.nn.attention`,
never typed in. Random inputs are drawn under ``torch.random.fork_rng`` so that checking an
answer does not move the learner's random numbers.
"""

from __future__ import annotations

import datetime
from typing import Any

import torch
from torch import Tensor

from minitx.course.exercises import teaching_notes, think
from minitx.course.exercises.checks import compare, compute, implement, predict
from minitx.data import dates
from minitx.nn.attention import AdditiveAttention

# The four sources of "03.iso": (date, format); the prompt shows format_date of each.
ISO_CASES = (
    (datetime.date(2005, 4, 3), "d/m/yy"),
    (datetime.date(1951, 11, 30), "mon d yy"),
    (datetime.date(2049, 2, 1), "dd.mm.yyyy"),
    (datetime.date(1987, 7, 14), "weekday the dth of month yyyy"),
)


def iso_sources() -> list[str]:
    """The sources of exercise "03.iso", as the task writes them."""
    return [dates.format_date(d, fmt) for d, fmt in ISO_CASES]


def expected_iso() -> list[str]:
    return [d.isoformat() for d, _ in ISO_CASES]


@compute(
    "03.iso",
    "Following the task's rules (numeric dates are day first; two-digit years 50-99 are "
    "19xx, 00-49 are 20xx), write the ISO date of each source in "
    "minitx.course.exercises.nb03.iso_sources() as a list of 4 strings 'yyyy-mm-dd'.",
)
def _iso(answer: Any) -> str | None:
    if isinstance(answer, str) or not hasattr(answer, "__len__"):
        return f"answer with a list of 4 strings, got a {type(answer).__name__}"
    expected = expected_iso()
    if len(answer) != len(expected):
        return f"give {len(expected)} dates, one per source; got {len(answer)}"
    hints = []
    for i, e in enumerate(expected):
        a = str(answer[i]).strip()
        if a == e:
            continue
        if len(a) != 10 or a[4] != "-" or a[7] != "-":
            hints.append(f"#{i}: ISO is yyyy-mm-dd, 10 characters with zero-padded month and day")
        elif a[:4] != e[:4] and a[2:4] == e[2:4]:
            hints.append(f"#{i}: check the century rule for two-digit years")
        elif a[5:7] == e[8:10] and a[8:10] == e[5:7]:
            hints.append(f"#{i}: month and day are swapped; numeric dates are day first")
        else:
            hints.append(f"#{i} is not right yet")
    return "; ".join(hints) or None


# ---- implement: one step of additive attention ------------------------------------------


def _additive_cases() -> list[tuple[Tensor, ...]]:
    """(s, h, W, U, v, mask) in float64: batch 1, length 1, padding, sizes that differ."""
    cases = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        for B, T, d_s, d_h, A, lengths in (
            (1, 1, 2, 2, 2, (1,)),
            (1, 4, 3, 2, 5, (4,)),
            (2, 5, 4, 6, 3, (5, 5)),
            (3, 6, 4, 6, 3, (6, 2, 1)),
            (4, 9, 8, 10, 4, (9, 3, 7, 1)),
        ):
            s = torch.randn(B, d_s, dtype=torch.float64)
            h = torch.randn(B, T, d_h, dtype=torch.float64)
            W = torch.randn(A, d_s, dtype=torch.float64)
            U = torch.randn(A, d_h, dtype=torch.float64)
            v = 2 * torch.randn(A, dtype=torch.float64)
            mask = torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]
            cases.append((s, h, W, U, v, mask))
    return cases


def _package_additive(s, h, W, U, v, mask) -> tuple[Tensor, Tensor]:
    att = AdditiveAttention(W.size(1), U.size(1), W.size(0)).double()
    with torch.no_grad():
        att.W_q.weight.copy_(W)
        att.W_k.weight.copy_(U)
        att.v.weight.copy_(v[None, :])
        return att(s, h, mask=mask)


def _additive_hint(name: str, got: dict, want: dict, args: tuple) -> str:
    """What a wrong ``weights`` (B, T) or ``context`` (B, d_h) likely comes from."""
    mask = args[5]
    weights = got["weights"]
    if name == "context":
        b, k = (~torch.isclose(got[name], want[name], atol=1e-6)).nonzero()[0].tolist()
        return f"the weights are right, the context is not (row {b}, entry {k})"
    if not torch.allclose(
        weights.sum(dim=1), torch.ones(len(weights), dtype=weights.dtype), atol=1e-6
    ):
        return (
            "each row of weights must add up to 1 (a softmax over the source positions, one "
            "row per batch element)"
        )
    if (weights[~mask].abs() > 1e-9).any():
        b, j = (~mask & (weights.abs() > 1e-9)).nonzero()[0].tolist()
        return f"row {b} gives weight to position {j}, which is padding"
    b, j = (~torch.isclose(weights, want[name], atol=1e-6)).nonzero()[0].tolist()
    return f"the first wrong weight is at row {b}, position {j}; check the score of each position"


def _lengths(mask: Tensor) -> str:
    B, T = mask.shape
    return f"for a batch of {B}, T = {T}, real lengths {mask.sum(dim=1).tolist()}"


@implement(
    "03.additive",
    "Write additive_attention(s, h, W, U, v, mask) for one decoder step: s (B, d_s) is the "
    "decoder state, h (B, T, d_h) the encoder states, W (A, d_s), U (A, d_h) and v (A,) the "
    "score's weights, mask (B, T) bool, True on real source characters. Return (context, "
    "weights): weights (B, T) the softmax over the source positions of "
    "v . tanh(W s + U h_j), zero on padding; context (B, d_h) = sum_j a_j h_j. Answer with "
    "the function.",
)
def _additive(answer: Any) -> str | None:
    return compare(
        answer,
        ((_lengths(case[5]), case) for case in _additive_cases()),
        _package_additive,
        names=("context", "weights"),
        order=("weights", "context"),
        arrays=True,
        rtol=1e-5,
        about={"weights": "(B, T)", "context": "(B, d_h)"},
        diagnose=_additive_hint,
    )


# ---- predict: an encoder state that appears twice ---------------------------------------

DUPLICATE_CHOICES = {
    "a": "the context stays exactly c",
    "b": "the context moves toward h_3",
    "c": "the context moves away from h_3",
    "d": "it depends on the weights W, U and v",
}


def duplicate_truth(n_trials: int = 200) -> str:
    """The letter of :data:`DUPLICATE_CHOICES` that holds on ``n_trials`` random additive
    attentions: the context with h_3 appended a second time, against the context without."""
    moved = []
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(0)
        for _ in range(n_trials):
            att = AdditiveAttention(4, 4, 4).double()
            s = torch.randn(1, 4, dtype=torch.float64)
            h = torch.randn(1, 3, 4, dtype=torch.float64)
            c, _ = att(s, h)
            c2, _ = att(s, torch.cat([h, h[:, 2:]], dim=1))
            before, after = (c - h[:, 2]).norm(), (c2 - h[:, 2]).norm()
            moved.append("a" if torch.isclose(before, after) else "b" if after < before else "c")
    return moved[0] if len(set(moved)) == 1 else "d"


predict(
    "03.duplicate",
    "A decoder state s attends with additive attention over three encoder states h_1, h_2, "
    "h_3 and gets the context c. The same source now has a fourth encoder state, an exact "
    "copy of h_3, and s attends over all four. Predict the new context: (a) exactly c; "
    "(b) it moves toward h_3; (c) it moves away from h_3; (d) that depends on W, U and v. "
    "Answer with a letter.",
    DUPLICATE_CHOICES,
    duplicate_truth,
    "compare the new context with the old one and h_3",
    whole=True,
    hints={
        "a": "the copy gets a score of its own: what happens to the softmax's denominator, "
        "and so to the weights of h_1 and h_2?",
        "c": "add up the weight that the two copies of h_3 get together, before and after",
        "d": "write the new weights with the old ones: exp(e_j) / (Z + exp(e_3)); which "
        "part of that depends on W, U or v?",
    },
)


# ---- open question ------------------------------------------------------------------------

think(
    "03.bottleneck",
    "Without attention the decoder learns about the source only through h_T, 64 numbers. "
    "Would doubling the hidden size to 128 close the gap measured in section 5 on two-date "
    "inputs? Would training ten times longer? What grows with the length of the source when "
    "the decoder attends, and what stays fixed without attention? Which would you change "
    "first if the inputs held ten dates?",
)

teaching_notes(
    "03",
    60,
    "additive duplicate bottleneck",
    goals=(
        "Describe an RNN encoder-decoder and why one context vector limits what the decoder "
        "can read.",
        "Compute additive attention: scores v . tanh(W s + U h_j), a softmax over source "
        "positions with padding masked, and the context as a weighted sum.",
        "Design a fair comparison: one budget for both models, the number of dates held "
        "fixed, spread over seeds; and say what it leaves open.",
        "Read an alignment heatmap, and say what it does not show.",
    ),
    misconceptions=(
        "Accuracy against input length measures the effect of length, even where length "
        "goes with the number of dates and with the format.",
        "Attention weights are an explanation of how the output was computed.",
        "A model still learning when training stopped shows the best it can do.",
    ),
)
