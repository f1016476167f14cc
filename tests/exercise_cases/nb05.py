"""Exercise cases of notebook 05: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import importlib

import numpy as np
import torch
import torch.nn.functional as F

from exercise_cases import Case, prediction, solution, wrong, wrong_answers
from minitx.course.exercises import answers
from minitx.course.exercises.seal import canonical, seal
from minitx.nn.attention import masked_softmax, scaled_dot_product_attention

# ---- learner functions for 05.masked_softmax -----------------------------------------------


def softmax_then_zero_nan(scores, mask):
    """-inf on blocked keys, then NaN (fully blocked rows) replaced by 0."""
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return weights.nan_to_num(0.0)


def exp_by_hand(scores, mask):
    """Exponentials of the allowed scores only, divided by their sum (or by 1 if none)."""
    shifted = scores - scores.masked_fill(~mask, -1e300).amax(-1, keepdim=True).clamp_min(-1e300)
    e = torch.where(mask, shifted.clamp_max(0).exp(), torch.zeros_like(scores))
    total = e.sum(-1, keepdim=True)
    return e / torch.where(total > 0, total, torch.ones_like(total))


def masked_softmax_in_float32(scores, mask):
    """Computed in float32 (the usual dtype of a model), from scratch."""
    s = scores.float().masked_fill(~mask, -1e30)
    e = (s - s.amax(-1, keepdim=True)).exp() * mask
    total = e.sum(-1, keepdim=True)
    return e / total.clamp_min(1e-30)


def masked_softmax_by_logsumexp(scores, mask):
    """float64: exp(s - logsumexp(s)) over the allowed keys, zeros elsewhere."""
    s = scores.double().masked_fill(~mask, torch.finfo(torch.float64).min)
    return (s - s.logsumexp(-1, keepdim=True)).exp() * mask


@wrong("05.masked_softmax", "NaN in row (0, 1), where every key is blocked")
def plain_softmax_with_minus_inf(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)


@wrong("05.masked_softmax", "blocked entries must be exactly 0")
def forgets_the_mask(scores, mask):
    return torch.softmax(scores, dim=-1)


@wrong("05.masked_softmax", "must be all zeros")
def big_negative_not_multiplied(scores, mask):
    """A fully blocked row becomes uniform instead of zeros."""
    return torch.softmax(scores.masked_fill(~mask, -1e9), dim=-1)


@wrong("05.masked_softmax", "gradient")
def adds_minus_inf_then_zeroes_nan(scores, mask):
    """Right weights, but the -inf is added, so the gradient of a blocked row is NaN."""
    additive = torch.zeros_like(scores).masked_fill(~mask, float("-inf"))
    return torch.softmax(scores + additive, dim=-1).nan_to_num(0.0)


@wrong("05.masked_softmax", "axis")
def softmax_over_queries(scores, mask):
    weights = torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=-2)
    return weights * mask


@wrong("05.masked_softmax", "return a tensor")
def returns_numpy(scores, mask):
    return softmax_then_zero_nan(scores, mask).detach().numpy()


@wrong("05.masked_softmax", "shape")
def drops_the_last_key(scores, mask):
    return scores[..., :-1]


ZEROS_0_BASED = {(0, 1), (0, 2), (1, 2)}

CASES: dict[str, Case] = {
    "05.causal_zeros": Case(
        right=(
            {(1, 2), (1, 3), (2, 3)},
            [(2, 3), (1, 2), (1, 3)],
            ((1, 2), (1, 3), (2, 3)),
            frozenset({(1, 3), (2, 3), (1, 2)}),
            [[1, 2], [1, 3], [2, 3]],
            [(1.0, 2.0), (np.int64(1), 3), (torch.tensor(2), 3)],
            [(1, 2), (1, 3), (2, 3), (1, 2)],  # a repeat changes nothing
            torch.tensor([[1, 2], [1, 3], [2, 3]]),
            np.array([[2, 3], [1, 3], [1, 2]]),
        ),
        wrong=(
            (ZEROS_0_BASED, "count rows and columns from 1"),
            ({(2, 1), (3, 1), (3, 2)}, "rows and columns are swapped"),
            ({(1, 1), (1, 2), (1, 3), (2, 2), (2, 3), (3, 3)}, "may look at itself"),
            ([(1, 1), (2, 1), (2, 2), (3, 1), (3, 2), (3, 3)], "must become zero"),
            ({(1, 2), (1, 3)}, "row by row"),
            ({(1, 2), (1, 3), (2, 3), (3, 4)}, "run from 1 to 3"),
            (set(), "no entry at all"),
            (3, "set or list of (row, column) pairs"),
            ("(1, 2), (1, 3), (2, 3)", "set or list of (row, column) pairs"),
            ([1, 2, 1, 3, 2, 3], "pairs"),
            ([(1.5, 2), (1, 3), (2, 3)], "whole numbers"),
            ({"row": 1, "column": 2}, "pairs"),
        ),
        never=("(1, 2)", "(1, 3)", "(2, 3)"),
    ),
    "05.change_first": prediction(
        ("(c)", " C ", "all three outputs"),
        {"a": "as a key or as the query", "(b)": "list the tokens", "d": "not what happens"},
        no_letter=("all of them", 3),
        never=("all three",),
    ),
    "05.masked_softmax": Case(
        right=(softmax_then_zero_nan, exp_by_hand, masked_softmax_in_float32,
               masked_softmax_by_logsumexp),
        wrong=wrong_answers("05.masked_softmax"),
    ),
    "05.combined": Case(
        right=(38, 38.0, np.int64(38), torch.tensor(38)),
        wrong=(
            (66, "causal mask alone"),
            (44, "padding mask alone"),
            (38.5, "whole number"),
            (40, "both masks allow it"),
            (10, "pad queries are rows too"),
            ("many", "whole number"),
        ),
        never=("38",),
    ),
}


# ---- answers that only hand the work to the package or to PyTorch: each must be refused ----


def softmax_two_lines(scores, mask):
    weights = masked_softmax(scores, mask)
    return weights


def softmax_plus_zero(scores, mask):
    return masked_softmax(scores, mask) + 0


def softmax_cloned(scores, mask):
    return masked_softmax(scores.clone(), mask.bool()).clone()


def softmax_by_getattr(scores, mask):
    module = importlib.import_module("minitx.nn.attention")
    return getattr(module, "masked_" + "softmax")(scores, mask).double()


def softmax_from_the_packages_attention(scores, mask):
    """Q = scores and K = V = I: the attention weights are the masked softmax of the scores."""
    eye = torch.eye(scores.size(-1), dtype=scores.dtype)
    _, weights = scaled_dot_product_attention(scores, eye, eye, mask, scale=1.0)
    return weights


def softmax_from_torch_attention(scores, mask):
    """PyTorch's fused attention with Q = scores, K = V = I returns the weights as its output."""
    eye = torch.eye(scores.size(-1), dtype=scores.dtype)
    out = F.scaled_dot_product_attention(scores, eye, eye, attn_mask=mask, scale=1.0)
    return out.nan_to_num(0.0) * mask


CHEATS = {
    "05.masked_softmax": (
        masked_softmax,
        lambda scores, mask: masked_softmax(scores, mask),
        softmax_two_lines,
        softmax_plus_zero,
        softmax_cloned,
        softmax_by_getattr,
        softmax_from_the_packages_attention,
        softmax_from_torch_attention,
    ),
}


# ---- the checkers' expected values, computed another way ---------------------------------


def change_first_moves_every_output():
    # Under a causal mask, output i is a blend over keys 1..i, and key 1 is in every row:
    # changing token 1 changes a score (and a value) in every row.
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3, 4))
    Wq, Wk, Wv = (rng.normal(size=(4, 4)) for _ in range(3))

    def outputs(X):
        s = (X @ Wq) @ (X @ Wk).T / 2.0
        s[np.triu_indices(3, 1)] = -np.inf
        a = np.exp(s - s.max(-1, keepdims=True))
        return (a / a.sum(-1, keepdims=True)) @ (X @ Wv)

    changed = X.copy()
    changed[0] = rng.normal(size=4)
    moved = np.abs(outputs(changed) - outputs(X)).max(-1) > 1e-9
    assert moved.tolist() == [True, True, True]
    assert solution("05.change_first") == "c"  # (c) all three outputs


def combined_by_hand():
    # Query i (from 1) may see keys 1..min(i, 4): 1 + 2 + 3 + 4 for the first four queries,
    # then 4 for each of the 7 padding queries.
    from minitx.course.exercises import nb05

    assert 1 + 2 + 3 + 4 + 7 * 4 == 38 == solution("05.combined")
    assert seal("05.combined", canonical(38)) == nb05._COMBINED
    mistakes = answers.key("05").combined_mistakes()
    # causal alone: 1 + ... + 11; padding alone: 11 queries x 4 keys; real queries: 1 + ... + 4
    assert mistakes == {"causal alone": 66, "padding alone": 44, "real queries only": 10}
    assert set(nb05._COMBINED_HINTS) == {
        seal("05.combined", canonical(v)) for v in mistakes.values()}


def causal_zeros_by_hand():
    """Query i may see keys j <= i, so the zeros of a 3 x 3 causal A are the j > i, counted
    from 1; the checker keeps the seal of that and of each known mistake."""
    from minitx.course.exercises import nb05

    zeros = [(i, j) for i in (1, 2, 3) for j in (1, 2, 3) if j > i]
    assert zeros == [(1, 2), (1, 3), (2, 3)] == solution("05.causal_zeros")
    assert seal("05.causal_zeros", canonical(zeros)) == nb05._CAUSAL_ZEROS
    mistakes = answers.key("05").causal_zeros_mistakes()
    assert mistakes == {"transposed": [(2, 1), (3, 1), (3, 2)],
                        "diagonal too": [(1, 1), (1, 2), (1, 3), (2, 2), (2, 3), (3, 3)],
                        "the allowed entries": [(1, 1), (2, 1), (2, 2), (3, 1), (3, 2), (3, 3)]}
    assert set(nb05._CAUSAL_ZEROS_HINTS) == {
        seal("05.causal_zeros", canonical(v)) for v in mistakes.values()}
    assert {(i - 1, j - 1) for i, j in zeros} == ZEROS_0_BASED


VALUE_CHECKS = [change_first_moves_every_output, combined_by_hand, causal_zeros_by_hand]
