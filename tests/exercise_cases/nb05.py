"""Exercise cases of notebook 05: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import math

import numpy as np
import torch

from exercise_cases import Case, prediction, wrong, wrong_answers
from minitx.course.exercises import nb05

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


# ---- learner functions for 05.causal_attention ---------------------------------------------


def causal_by_hand(Q, K, V):
    T = Q.shape[-2]
    rows = torch.arange(T)[:, None]
    cols = torch.arange(T)[None, :]
    s = Q @ K.transpose(-1, -2) / Q.shape[-1] ** 0.5
    s = torch.where(cols <= rows, s, torch.tensor(float("-inf"), dtype=s.dtype))
    A = torch.softmax(s, -1)
    return A @ V, A


def causal_with_triu_offset(Q, K, V):
    T = Q.size(-2)
    blocked = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    A = (Q @ K.mT / math.sqrt(Q.size(-1))).masked_fill(blocked, -1e30).softmax(-1)
    return A @ V, A


@wrong("05.causal_attention", "query 0 puts weight on key 1")
def no_mask(Q, K, V):
    A = torch.softmax(Q @ K.mT / math.sqrt(Q.size(-1)), -1)
    return A @ V, A


@wrong("05.causal_attention", "wrong triangle")
def wrong_triangle(Q, K, V):
    T = Q.size(-2)
    allowed = torch.ones(T, T, dtype=torch.bool).triu()
    A = (Q @ K.mT / math.sqrt(Q.size(-1))).masked_fill(~allowed, float("-inf")).softmax(-1)
    return A @ V, A


@wrong("05.causal_attention", "attend to itself")
def blocks_the_diagonal(Q, K, V):
    T = Q.size(-2)
    allowed = torch.ones(T, T, dtype=torch.bool).tril(-1)
    A = (Q @ K.mT / math.sqrt(Q.size(-1))).masked_fill(~allowed, -1e30).softmax(-1) * allowed
    return A @ V, A


@wrong("05.causal_attention", "sqrt(d_k)")
def unscaled_causal(Q, K, V):
    T = Q.size(-2)
    allowed = torch.ones(T, T, dtype=torch.bool).tril()
    A = (Q @ K.mT).masked_fill(~allowed, float("-inf")).softmax(-1)
    return A @ V, A


@wrong("05.causal_attention", "do not sum to 1")
def zeroes_after_softmax(Q, K, V):
    """Masks the weights after the softmax: rows no longer sum to 1."""
    A = torch.softmax(Q @ K.mT / math.sqrt(Q.size(-1)), -1).tril()
    return A @ V, A


@wrong("05.causal_attention", "weighted sum of the values")
def outputs_from_queries(Q, K, V):
    """Right weights, but blends the queries instead of the values."""
    _, A = causal_by_hand(Q, K, V)
    return A @ Q[..., : V.size(-1)], A


@wrong("05.causal_attention", "two tensors")
def only_weights(Q, K, V):
    return causal_by_hand(Q, K, V)[1]


def loop_over_positions(Q, K, V):
    """A loop is slow but right; the checker accepts it (the prompt asks for no loop)."""
    rows_Z, rows_A = [], []
    T = Q.size(-2)
    for i in range(T):
        s = Q[..., i : i + 1, :] @ K[..., : i + 1, :].mT / math.sqrt(Q.size(-1))
        a = s.softmax(-1)
        rows_Z.append(a @ V[..., : i + 1, :])
        rows_A.append(torch.nn.functional.pad(a, (0, T - i - 1)))
    return torch.cat(rows_Z, -2), torch.cat(rows_A, -2)


CASES: dict[str, Case] = {
    "05.change_first": prediction(
        ("(c)", " C ", "all three outputs"),
        {"a": "as a key or as the query", "(b)": "list the tokens", "d": "not what happens"},
        no_letter=("all of them", 3),
        never=("all three",),
    ),
    "05.masked_softmax": Case(
        right=(softmax_then_zero_nan, exp_by_hand),
        wrong=wrong_answers("05.masked_softmax"),
    ),
    "05.causal_attention": Case(
        right=(causal_by_hand, causal_with_triu_offset, loop_over_positions),
        wrong=wrong_answers("05.causal_attention"),
    ),
    "05.combined": Case(
        right=(38, 38.0),
        wrong=(
            (66, "causal mask alone"),
            (44, "padding mask alone"),
            (38.5, "whole number"),
            (40, "both masks allow it"),
        ),
        never=("38",),
        unreadable=("many",),
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
    assert nb05.change_first_outcome() == "all three outputs"


def combined_by_hand():
    # Query i (from 1) may see keys 1..min(i, 4): 1 + 2 + 3 + 4 for the first four queries,
    # then 4 for each of the 7 padding queries.
    assert 1 + 2 + 3 + 4 + 7 * 4 == 38 == nb05.expected_combined()


VALUE_CHECKS = [change_first_moves_every_output, combined_by_hand]
