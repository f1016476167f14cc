"""Exercise cases of notebook 03: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import datetime
import importlib
import math

import numpy as np
import torch

from exercise_cases import Case, prediction, solution, wrong, wrong_answers
from minitx.course.exercises import answers, nb03
from minitx.nn.attention import AdditiveAttention, _score_softmax_sum

RIGHT_ISO = ["2005-04-03", "1951-11-30", "2049-02-01", "1987-07-14"]


# ---- learner functions for "03.additive", worked out from the equations by hand ---------


def by_loops(s, h, W, U, v, mask):
    """One batch element, one position at a time, in plain Python floats."""
    B, T, d_h = h.shape
    contexts, rows = [], []
    for b in range(B):
        scores = []
        for j in range(T):
            if not mask[b, j]:
                scores.append(None)
                continue
            hidden = [
                math.tanh(
                    sum(float(W[a, i]) * float(s[b, i]) for i in range(W.shape[1]))
                    + sum(float(U[a, i]) * float(h[b, j, i]) for i in range(d_h))
                )
                for a in range(W.shape[0])
            ]
            scores.append(sum(float(v[a]) * hidden[a] for a in range(len(hidden))))
        top = max(x for x in scores if x is not None)
        exps = [0.0 if x is None else math.exp(x - top) for x in scores]
        total = sum(exps)
        weights = [e / total for e in exps]
        rows.append(weights)
        contexts.append([sum(weights[j] * float(h[b, j, i]) for j in range(T)) for i in range(d_h)])
    return torch.tensor(contexts, dtype=torch.float64), torch.tensor(rows, dtype=torch.float64)


def vectorised(s, h, W, U, v, mask):
    hidden = torch.tanh(torch.einsum("ad,bd->ba", W, s)[:, None] + h @ U.T)  # (B, T, A)
    scores = torch.einsum("a,bta->bt", v, hidden)
    weights = torch.where(mask, scores, torch.tensor(-1e30, dtype=scores.dtype)).softmax(dim=1)
    return torch.bmm(weights[:, None, :], h)[:, 0], weights


def in_numpy(s, h, W, U, v, mask):
    """In NumPy, float64, returning arrays."""
    s, h, W, U, v, mask = (t.numpy() for t in (s, h, W, U, v, mask))
    scores = np.tanh((s @ W.T)[:, None, :] + h @ U.T) @ v  # (B, T)
    scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights = e / e.sum(axis=1, keepdims=True)
    return np.einsum("bt,btd->bd", weights, h), weights


def in_float32(s, h, W, U, v, mask):
    """The same steps in float32."""
    s, h, W, U, v = (t.float() for t in (s, h, W, U, v))
    scores = torch.tanh(s[:, None, :] @ W.T + h @ U.T) @ v
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=1)
    return (weights[:, :, None] * h).sum(1), weights


# ---- cheats: the package's additive attention, in every wrapping ---------------------------


def _package(s, h, W, U, v, cls=AdditiveAttention):
    att = cls(W.size(1), U.size(1), W.size(0)).double()
    with torch.no_grad():
        att.W_q.weight.copy_(W)
        att.W_k.weight.copy_(U)
        att.v.weight.copy_(v[None, :])
    return att


def cheat_module(s, h, W, U, v, mask):
    context, weights = _package(s, h, W, U, v)(s, h, mask=mask)
    return context, weights


def cheat_module_plus_zero(s, h, W, U, v, mask):
    with torch.no_grad():
        result = _package(s, h, W, U, v)(s, h, h.clone(), mask.bool())
    return tuple(r.clone() + 0 for r in result)


def cheat_score(s, h, W, U, v, mask):
    """The package's score, the softmax and the sum by hand."""
    with torch.no_grad():
        scores = _package(s, h, W, U, v).score(s[:, None, :], h)[:, 0]
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=1)
    return (weights[:, :, None] * h).sum(1), weights


def cheat_helper(s, h, W, U, v, mask):
    with torch.no_grad():
        context, weights = _score_softmax_sum(_package(s, h, W, U, v), s[:, None], h, h, mask)
    return context[:, 0].double(), weights[:, 0].double()


def cheat_by_getattr(s, h, W, U, v, mask):
    cls = getattr(importlib.import_module("minitx.nn.attention"), "Additive" + "Attention")
    with torch.no_grad():
        return _package(s, h, W, U, v, cls)(s, h, mask=mask)


CHEATS = {
    "03.additive": (
        cheat_module,
        cheat_module_plus_zero,
        cheat_score,
        cheat_helper,
        cheat_by_getattr,
    ),
}


@wrong("03.additive", "which is padding")
def no_mask(s, h, W, U, v, mask):
    return vectorised(s, h, W, U, v, torch.ones_like(mask))


@wrong("03.additive", "which is padding")
def mask_as_zero_score(s, h, W, U, v, mask):
    """Sets padded scores to 0 instead of -inf: padding keeps some weight."""
    scores = torch.tanh((s @ W.T)[:, None, :] + h @ U.T) @ v
    weights = torch.softmax(scores * mask, dim=1)
    return (weights[:, :, None] * h).sum(1), weights


@wrong("03.additive", "add up to 1")
def softmax_over_batch(s, h, W, U, v, mask):
    scores = (torch.tanh((s @ W.T)[:, None, :] + h @ U.T) @ v).masked_fill(~mask, -1e30)
    weights = torch.softmax(scores, dim=0)
    return (weights[:, :, None] * h).sum(1), weights


@wrong("03.additive", "first wrong weight")
def no_tanh(s, h, W, U, v, mask):
    scores = (((s @ W.T)[:, None, :] + h @ U.T) @ v).masked_fill(~mask, -1e30)
    weights = torch.softmax(scores, dim=1)
    return (weights[:, :, None] * h).sum(1), weights


@wrong("03.additive", "the context is not")
def mean_context(s, h, W, U, v, mask):
    """Right weights, but the context is the plain mean of the real states."""
    _, weights = vectorised(s, h, W, U, v, mask)
    return (h * mask[:, :, None]).sum(1) / mask.sum(1, keepdim=True), weights


@wrong("03.additive", "NaN")
def nan_on_padding(s, h, W, U, v, mask):
    context, weights = vectorised(s, h, W, U, v, mask)
    return context, weights.masked_fill(~mask, float("nan"))


@wrong("03.additive", "weights should have shape")
def weights_transposed(s, h, W, U, v, mask):
    context, weights = vectorised(s, h, W, U, v, mask)
    return context, weights.T


CASES: dict[str, Case] = {
    "03.iso": Case(
        right=(RIGHT_ISO, tuple(f" {s} " for s in RIGHT_ISO),
               [datetime.date(2005, 4, 3).isoformat(), "1951-11-30", "2049-02-01", "1987-07-14"]),
        wrong=(
            ("2005-04-03", "list of 4 strings"),
            (RIGHT_ISO[:2], "give 4 dates"),
            (["2005-03-04", *RIGHT_ISO[1:]], "#0: month and day are swapped"),
            ([RIGHT_ISO[0], "2051-11-30", *RIGHT_ISO[2:]], "#1: check the century rule"),
            ([*RIGHT_ISO[:2], "2049-2-1", RIGHT_ISO[3]], "#2: ISO is yyyy-mm-dd"),
            ([*RIGHT_ISO[:3], "1987-07-15"], "#3 is not right yet"),
            (["2005-03-04", "2051-11-30", "x", "y"], None),
            (np.array(RIGHT_ISO), "list of 4 strings"),
            ([1, 2, 3, 4], "4 strings"),
        ),
        never=tuple(RIGHT_ISO),
    ),
    "03.additive": Case(
        right=(by_loops, vectorised, in_numpy, in_float32, solution("03.additive")),
        wrong=wrong_answers(
            "03.additive",
            (lambda *args: args[0], "tuple (context, weights)"),
            (lambda *args: 1 / 0, "ZeroDivisionError"),
            ("softmax", "a function"),
        ),
        never=("tanh(", "masked_fill", "-inf"),
    ),
    "03.duplicate": prediction(
        ("B", " (b) "),  # a letter in any case, with or without brackets
        {"a": "denominator", "c": "two copies of h_3", "d": "which part of that depends"},
        no_letter=("e", 2),
        never=("toward", "closer"),
    ),
}


def check_nb03_expected_values_are_what_the_prompts_describe():
    sources = ["3/4/05", "nov 30 51", "01.02.2049", "tuesday the 14th of july 1987"]
    key = answers.key("03")
    assert nb03.iso_sources() == sources == key.iso_sources()  # the package's format_date
    assert [datetime.date.fromisoformat(s) for s in solution("03.iso")] == [
        d for d, _ in key.ISO_CASES
    ]
    assert solution("03.iso") == RIGHT_ISO
    # The checker's reference and the instructor's solution of "03.additive" agree with
    # the loops above on every case.
    for case in nb03._additive_cases():
        for fn in (nb03._package_additive, solution("03.additive")):
            for mine, ref in zip(by_loops(*case), fn(*case), strict=True):
                torch.testing.assert_close(mine, ref)


def check_nb03_duplicate_by_algebra():
    # With a copy of h_3 the weights become exp(e_j) / (Z + exp(e_3)): the new context is
    # (Z c + exp(e_3) h_3) / (Z + exp(e_3)), a point strictly between c and h_3.
    e = [0.3, -1.2, 0.5]
    h = [[1.0, 2.0], [-1.0, 0.0], [3.0, -2.0]]
    Z = sum(math.exp(x) for x in e)
    c = [sum(math.exp(e[j]) * h[j][i] for j in range(3)) / Z for i in range(2)]
    w3 = math.exp(e[2])
    c2 = [(Z * c[i] + w3 * h[2][i]) / (Z + w3) for i in range(2)]
    assert math.dist(c2, h[2]) < math.dist(c, h[2])
    assert solution("03.duplicate") == "b"


def check_nb03_expected_values_leave_the_random_state_alone():
    torch.manual_seed(123)
    a = torch.rand(3)
    torch.manual_seed(123)
    answers.key("03").duplicate_truth(5)
    nb03._additive_cases()
    assert torch.equal(torch.rand(3), a)


VALUE_CHECKS = [
    check_nb03_expected_values_are_what_the_prompts_describe,
    check_nb03_duplicate_by_algebra,
    check_nb03_expected_values_leave_the_random_state_alone,
]
