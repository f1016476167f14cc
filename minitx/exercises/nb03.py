"""Exercises of notebook 03 (Bahdanau attention): the task's rules, scores by hand, context.

Expected answers are computed with :mod:`minitx.tasks.dates`, :mod:`minitx.attention` and
:mod:`minitx.seq2seq`, never typed in.
"""

from __future__ import annotations

import datetime
from typing import Any

import torch

from minitx.attention import AdditiveAttention, DotProductAttention
from minitx.exercises import close, exercise
from minitx.tasks import dates

# The four sources of "03.iso": (date, format); the prompt shows format_date of each.
ISO_CASES = (
    (datetime.date(2005, 4, 3), "d/m/yy"),
    (datetime.date(1951, 11, 30), "mon d yy"),
    (datetime.date(2049, 2, 1), "dd.mm.yyyy"),
    (datetime.date(1987, 7, 14), "weekday the dth of month yyyy"),
)

# The tiny additive-attention problem: decoder state s, three encoder states h_j,
# W = U = identity, v = [1, 1].
S = (1.0, 0.0)
H = ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0))
V = (1.0, 1.0)


def iso_sources() -> list[str]:
    """The sources of exercise "03.iso", as the task writes them."""
    return [dates.format_date(d, fmt) for d, fmt in ISO_CASES]


def expected_iso() -> list[str]:
    return [d.isoformat() for d, _ in ISO_CASES]


def tiny_additive() -> AdditiveAttention:
    """AdditiveAttention(2, 2, 2) with W = U = I and v = [1, 1], in float64."""
    att = AdditiveAttention(2, 2, 2).double()
    with torch.no_grad():
        att.W_q.weight.copy_(torch.eye(2))
        att.W_k.weight.copy_(torch.eye(2))
        att.v.weight.copy_(torch.tensor([V], dtype=torch.float64))
    return att


def _tiny_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.tensor([S], dtype=torch.float64), torch.tensor([H], dtype=torch.float64)


def expected_additive() -> tuple[torch.Tensor, torch.Tensor]:
    """(weights (3,), context (2,)) of the tiny problem with additive scores.

    (Building the module draws random initial weights; fork_rng keeps the learner's
    random state untouched.)"""
    s, h = _tiny_inputs()
    with torch.random.fork_rng(), torch.no_grad():
        context, weights = tiny_additive()(s, h)
    return weights[0], context[0]


def expected_dot() -> torch.Tensor:
    """Weights (3,) of the tiny problem with the unscaled dot-product score s . h_j."""
    s, h = _tiny_inputs()
    return DotProductAttention(2, scaled=False)(s, h)[1][0]


def expected_memory(T: int = 40, hidden_size: int = 64) -> dict[str, int]:
    """How many numbers the decoder can read about a T-character source, with and
    without attention, measured on the encoder of a real model."""
    from minitx.seq2seq import Seq2Seq

    src = torch.full((1, T), dates.SOURCE_VOCAB.id("a"))
    with torch.random.fork_rng(), torch.no_grad():
        model = Seq2Seq.for_dates(attention=None, hidden_size=hidden_size)
        states, last, _ = model.encode(src, torch.tensor([T]))
    return {"without": last.numel(), "with": states.numel()}


def _weights_hint(answer: Any, expected: torch.Tensor, how: str) -> str | None:
    if len(answer) != len(expected):
        return f"give {len(expected)} weights, one per encoder state; got {len(answer)}"
    if abs(sum(float(a) for a in answer) - 1.0) > 0.02:
        return "attention weights are a softmax over the source positions: they add up to 1"
    if not close(answer, expected, atol=0.0051):
        return how
    return None


@exercise(
    "03.iso",
    "Following the task's rules (numeric dates are day first; two-digit years 50-99 are "
    "19xx, 00-49 are 20xx), write the ISO date of each source in "
    "minitx.exercises.nb03.iso_sources() as a list of 4 strings 'yyyy-mm-dd'.",
)
def _iso(answer: Any) -> str | None:
    if isinstance(answer, str) or not hasattr(answer, "__len__"):
        return f"answer with a list of 4 strings, got a {type(answer).__name__}"
    expected = expected_iso()
    if len(answer) != len(expected):
        return f"give {len(expected)} dates, one per source; got {len(answer)}"
    wrong = []
    for i, (a, e) in enumerate(zip(answer, expected, strict=True)):
        a = str(a).strip()
        if a != e:
            wrong.append(i)
    if not wrong:
        return None
    hints = []
    for i in wrong:
        a = str(answer[i]).strip()
        e = expected[i]
        if len(a) != 10 or a[4] != "-" or a[7] != "-":
            hints.append(f"#{i}: ISO is yyyy-mm-dd, 10 characters with zero-padded month and day")
        elif a[:4] != e[:4] and a[2:4] == e[2:4]:
            hints.append(f"#{i}: check the century rule for two-digit years")
        elif a[5:7] == e[8:10] and a[8:10] == e[5:7]:
            hints.append(f"#{i}: month and day are swapped; numeric dates are day first")
        else:
            hints.append(f"#{i} is not right yet")
    return "; ".join(hints)


@exercise(
    "03.additive",
    "Additive attention by hand: s = [1, 0], h_1 = [1, 0], h_2 = [0, 1], h_3 = [1, 1], "
    "W = U = identity, v = [1, 1]. score_j = v . tanh(W s + U h_j). Give the three weights "
    "a_1, a_2, a_3 (softmax of the scores) to two decimals, as a list.",
)
def _additive(answer: Any) -> str | None:
    weights, _ = expected_additive()
    s, h = _tiny_inputs()
    plain_dot = torch.softmax((h[0] @ s[0]), dim=-1)
    if len(answer) == 3 and close(answer, plain_dot, atol=0.0051):
        return "those are dot-product weights; the additive score goes through tanh first"
    return _weights_hint(
        answer, weights, "add s and h_j, take tanh of each entry, sum the entries (v = [1, 1]), "
        "then softmax over j",
    )


@exercise(
    "03.context",
    "With the weights of '03.additive', give the context vector c = a_1 h_1 + a_2 h_2 + "
    "a_3 h_3 to two decimals, as a list of two numbers.",
)
def _context(answer: Any) -> str | None:
    _, context = expected_additive()
    if len(answer) != len(context):
        return f"c has as many entries as an encoder state ({len(context)}); got {len(answer)}"
    if not close(answer, context, atol=0.011):
        return "c is a weighted sum of the h_j: multiply each h_j by its weight, add entrywise"
    return None


@exercise(
    "03.dot",
    "Same s and h_j, now with the plain dot-product score score_j = s . h_j (not scaled). "
    "Give the three weights to two decimals, as a list.",
)
def _dot(answer: Any) -> str | None:
    expected = expected_dot()
    weights, _ = expected_additive()
    if len(answer) == 3 and close(answer, weights, atol=0.0051):
        return "those are the additive weights; here the score is just s . h_j"
    return _weights_hint(answer, expected, "score_j = s . h_j, then softmax over the three scores")


@exercise(
    "03.memory",
    "An encoder with hidden_size 64 reads a 40-character source. How many numbers can the "
    "decoder consult about the source without attention (the single context vector), and "
    "with attention (every encoder state)? Answer {'without': ..., 'with': ...}.",
)
def _memory(answer: Any) -> str | None:
    if not isinstance(answer, dict) or set(answer) != {"without", "with"}:
        return "answer with a dict {'without': number, 'with': number}"
    expected = expected_memory()
    if int(answer["without"]) != expected["without"]:
        return "without attention the decoder sees one vector of hidden_size numbers"
    if int(answer["with"]) != expected["with"]:
        return "with attention it can look at one state of hidden_size numbers per character"
    return None
