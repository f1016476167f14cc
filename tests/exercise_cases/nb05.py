"""Exercise cases of notebook 05: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import importlib
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from exercise_cases import Case, prediction, solution, wrong, wrong_answers
from minitx.nn.attention import masked_softmax, scaled_dot_product_attention
from minitx.nn.masks import causal_mask

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


def causal_in_numpy(Q, K, V):
    """NumPy arrays in and out (the checker reads arrays), float64."""
    q, k, v = np.asarray(Q), np.asarray(K), np.asarray(V)
    T = q.shape[-2]
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    a = e / e.sum(-1, keepdims=True)
    return a @ v, a


def causal_in_float32(Q, K, V):
    Q, K, V = Q.float(), K.float(), V.float()
    T = Q.size(-2)
    future = torch.arange(T)[None, :] > torch.arange(T)[:, None]
    A = (Q @ K.mT * Q.size(-1) ** -0.5).masked_fill(future, float("-inf")).softmax(-1)
    return A @ V, A


CASES: dict[str, Case] = {
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
    "05.causal_attention": Case(
        right=(causal_by_hand, causal_with_triu_offset, loop_over_positions, causal_in_numpy,
               causal_in_float32),
        wrong=wrong_answers("05.causal_attention"),
    ),
    "05.combined": Case(
        right=(38, 38.0, np.int64(38), torch.tensor(38)),
        wrong=(
            (66, "causal mask alone"),
            (44, "padding mask alone"),
            (38.5, "whole number"),
            (40, "both masks allow it"),
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


def causal_two_lines(Q, K, V):
    Z, A = scaled_dot_product_attention(Q, K, V, causal_mask(Q.size(-2)))
    return Z, A


def causal_tuple(Q, K, V):
    return tuple(scaled_dot_product_attention(Q, K, V, causal_mask(Q.size(-2)).bool()))


def causal_plus_zero_cloned(Q, K, V):
    Z, A = scaled_dot_product_attention(Q.clone(), K, V, causal_mask(Q.size(-2)))
    return Z + 0, A.clone().double()


def causal_by_getattr(Q, K, V):
    attention = importlib.import_module("minitx.nn.attention")
    mask = torch.ones(Q.size(-2), Q.size(-2), dtype=torch.bool).tril()
    return getattr(attention, "scaled_dot_product_" + "attention")(Q, K, V, mask)


def causal_mask_with_own_softmax(Q, K, V):
    """The package's causal_mask, reached under another name."""
    allowed = importlib.import_module("minitx.nn.masks").causal_mask(Q.size(-2))
    A = (Q @ K.mT / math.sqrt(Q.size(-1))).masked_fill(~allowed, float("-inf")).softmax(-1)
    return A @ V, A


def causal_from_torch_fused(Q, K, V):
    """F.scaled_dot_product_attention with is_causal: Z from V, and A from V = I."""
    eye = torch.eye(Q.size(-2), dtype=Q.dtype)
    Z = F.scaled_dot_product_attention(Q, K, V, is_causal=True)
    return Z, F.scaled_dot_product_attention(Q, K, eye, is_causal=True)


def causal_from_torch_module(Q, K, V):
    """nn.MultiheadAttention, one head, identity projections (V padded to d_k columns)."""
    *lead, T, d = Q.shape
    d_v = V.size(-1)
    mha = nn.MultiheadAttention(d, 1, bias=False, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.eye(d, dtype=torch.float64).repeat(3, 1))
        mha.out_proj.weight.copy_(torch.eye(d, dtype=torch.float64))
    q, k = Q.reshape(-1, T, d), K.reshape(-1, T, d)
    v = F.pad(V, (0, d - d_v)).reshape(-1, T, d)
    blocked = torch.ones(T, T, dtype=torch.bool).triu(1)
    Z, A = mha(q, k, v, attn_mask=blocked, need_weights=True)
    return Z[..., :d_v].reshape(*lead, T, d_v), A.reshape(*lead, T, T)


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
    "05.causal_attention": (
        scaled_dot_product_attention,
        causal_two_lines,
        causal_tuple,
        causal_plus_zero_cloned,
        causal_by_getattr,
        causal_mask_with_own_softmax,
        causal_from_torch_fused,
        causal_from_torch_module,
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
    assert 1 + 2 + 3 + 4 + 7 * 4 == 38 == solution("05.combined")


VALUE_CHECKS = [change_first_moves_every_output, combined_by_hand]
