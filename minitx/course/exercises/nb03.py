"""Exercises of notebook 03 (Bahdanau attention): the task's rules, additive attention
written by the learner, a prediction about a repeated encoder state, and an open question
on the bottleneck.

The answers are kept as seals (:mod:`minitx.course.exercises.seal`), computed from the
instructor's solutions (instructor/solutions/nb03.py); the package computes none of them.
Random inputs are drawn under ``torch.random.fork_rng`` so that checking an answer does not
move the learner's random numbers.
"""

from __future__ import annotations

import re
from typing import Any

import torch
from torch import Tensor

from minitx.course.exercises import teaching_notes, think
from minitx.course.exercises.checks import _guarded, compare, implement, predict
from minitx.course.exercises.seal import seal
from minitx.nn.attention import AdditiveAttention

# The four sources of "03.iso", as the task writes them (dates.format_date of four dates).
ISO_SOURCES = ("3/4/05", "nov 30 51", "01.02.2049", "tuesday the 14th of july 1987")
# Seals of each source's ISO date, seal(f"03.iso#{i}", date), and of 03.duplicate's letter.
_ISO = (
    "f0c494f8e6934904bc7478307de1d939f2776926",
    "6e47474053544659935b5183e2d3a647e6257661",
    "2182ef7a75119ac22208d2a1c7bcf545d60bcebc",
    "f0fb49eba47404b979169e495c9bc997fdabf485",
)
_DUPLICATE = "d248659ecafdd156d7f6e08ff50c763c58bd6055"
_ISO_FORM = re.compile(r"\d{4}-\d{2}-\d{2}")


def iso_sources() -> list[str]:
    """The sources of exercise "03.iso", as the task writes them."""
    return list(ISO_SOURCES)


def _iso_hint(i: int, date: str) -> str | None:
    """None if ``date`` is the ISO date of source ``i``, else what to look at."""
    if _ISO_FORM.fullmatch(date) is None:
        return f"#{i}: ISO is yyyy-mm-dd, 10 characters with zero-padded month and day"
    if seal(f"03.iso#{i}", date) == _ISO[i]:
        return None
    year, month, day = date.split("-")
    other_century = {"19": "20", "20": "19"}.get(year[:2], year[:2]) + year[2:]
    if seal(f"03.iso#{i}", f"{other_century}-{month}-{day}") == _ISO[i]:
        return f"#{i}: check the century rule for two-digit years"
    if seal(f"03.iso#{i}", f"{year}-{day}-{month}") == _ISO[i]:
        return f"#{i}: month and day are swapped; numeric dates are day first"
    return f"#{i} is not right yet"


# A trained model reads the dates for the learner: the answer may not come from one.
ISO_FORBID = ("minitx.nn.seq2seq.translate", "minitx.nn.seq2seq.Seq2Seq")


def _iso_made_by_model(answer: Any) -> str | None:
    """Why the cell now running computes its answer to "03.iso" with one of
    :data:`ISO_FORBID`, read from the kernel's input history; None if it does not, or
    outside a kernel (the teacher's grading reads the saved notebook the same way)."""
    from minitx.course.exercises import _CHECK_CALL
    from minitx.course.exercises.review import answer_refusal, forbidden_objects
    from minitx.course.nbgrader_export import _kernel_sources

    sources = _kernel_sources() or []
    cells = [i for i, src in enumerate(sources) if "03.iso" in _CHECK_CALL.findall(src)]
    if not cells:
        return None
    why = answer_refusal(sources, cells[-1], "03.iso", forbidden_objects(ISO_FORBID))
    if why is None or not why.startswith("the answer uses"):
        return None  # other refusals are the teacher's grading's to make
    return f"{why}: a trained model reads the dates for you; apply the rules yourself"


@_guarded(
    "03.iso",
    "Following the task's rules (numeric dates are day first; two-digit years 50-99 are "
    "19xx, 00-49 are 20xx), write the ISO date of each source in "
    "minitx.course.exercises.nb03.iso_sources() as a list of 4 strings 'yyyy-mm-dd'.",
    "compute",
    _iso_made_by_model,
    ISO_FORBID,
)
def _iso(answer: Any) -> str | None:
    if type(answer) not in (list, tuple):
        return f"answer with a list of 4 strings, got a {type(answer).__name__}"
    if len(answer) != len(_ISO):
        return f"give {len(_ISO)} dates, one per source; got {len(answer)}"
    if not all(isinstance(a, str) for a in answer):
        return "answer with 4 strings 'yyyy-mm-dd', one per source"
    hints = [_iso_hint(i, str.strip(a)) for i, a in enumerate(answer)]
    return "; ".join(h for h in hints if h) or None


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


def _package_additive(s, h, W, U, v, mask, _cls=AdditiveAttention) -> tuple[Tensor, Tensor]:
    """The package's additive attention with these weights: the reference, bound when this
    module was imported (patching the package later changes nothing)."""
    att = _cls(W.size(1), U.size(1), W.size(0)).double()
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
    forbid=(
        "minitx.nn.attention.AdditiveAttention",
        "minitx.nn.attention.AdditiveAttention.score",
        "minitx.nn.attention._attend",
        "minitx.nn.attention._score_softmax_sum",
        "minitx.nn.attention.masked_softmax",  # the zeros on padding are part of the task
    ),
)
def _additive(answer: Any, _reference=_package_additive) -> str | None:
    return compare(
        answer,
        ((_lengths(case[5]), case) for case in _additive_cases()),
        _reference,
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


predict(
    "03.duplicate",
    "A decoder state s attends with additive attention over three encoder states h_1, h_2, "
    "h_3 and gets the context c. The same source now has a fourth encoder state, an exact "
    "copy of h_3, and s attends over all four. Predict the new context: (a) exactly c; "
    "(b) it moves toward h_3; (c) it moves away from h_3; (d) that depends on W, U and v. "
    "Answer with a letter.",
    DUPLICATE_CHOICES,
    _DUPLICATE,
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
    "Without attention the decoder learns about the source only through h_last, 64 numbers. "
    "Ten times the training left about half of the two-date inputs wrong (section 5). Would "
    "doubling the hidden size to 128 close that gap? What grows with the length of the "
    "source when the decoder attends, and what stays fixed without attention? Which would "
    "you change first if the inputs held ten dates?",
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
