"""Exercise cases of notebook 04: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import importlib
import math

import numpy as np
import torch
import torch.nn.functional as F

from exercise_cases import Case, prediction, solution, wrong, wrong_answers
from minitx.course.exercises import answers, nb04
from minitx.nn.attention import DotProductAttention, scaled_dot_product_attention

RIGHT_SHAPES = {
    "X_q": (3, 6), "X_kv": (5, 6), "W_Q": (6, 4), "W_K": (6, 4), "W_V": (6, 2), "Q": (3, 4),
    "K": (5, 4), "V": (5, 2), "S": (3, 5), "A": (3, 5), "Z": (3, 2),
}  # fmt: skip


# ---- learner functions for 04.attention: right ones, and ones with typical bugs -----------


def attention_by_hand(Q, K, V):
    """Exponentials divided by their row sum, written out."""
    s = Q @ K.transpose(-1, -2) / Q.shape[-1] ** 0.5
    e = (s - s.amax(-1, keepdim=True)).exp()
    A = e / e.sum(-1, keepdim=True)
    return A @ V, A


def _stable_softmax(s):
    """A learner's own softmax over the last axis, the row maximum subtracted first."""
    e = torch.exp(s - s.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


def attention_einsum(Q, K, V):
    A = _stable_softmax(torch.einsum("...qd,...kd->...qk", Q, K).div(math.sqrt(Q.size(-1))))
    return torch.einsum("...qk,...kv->...qv", A, V), A


def attention_numpy(Q, K, V):
    """In NumPy, returning arrays."""
    Q, K, V = (t.numpy() for t in (Q, K, V))
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(s - s.max(-1, keepdims=True))
    A = e / e.sum(-1, keepdims=True)
    return A @ V, A


def attention_float32(Q, K, V):
    Q, K, V = Q.float(), K.float(), V.float()
    A = _stable_softmax(Q @ K.mT * Q.shape[-1] ** -0.5)
    return A @ V, A


# ---- cheats: the package's or PyTorch's attention, in every wrapping ----------------------


def cheat_two_lines(Q, K, V):
    Z, A = scaled_dot_product_attention(Q, K, V)
    return Z, A


def cheat_plus_zero(Q, K, V):
    Z, A = scaled_dot_product_attention(Q, K, V)
    return Z + 0, A.clone().double()


def cheat_tuple(Q, K, V):
    return tuple(scaled_dot_product_attention(Q, K, V))


def cheat_mask(Q, K, V):
    every = torch.ones(Q.shape[-2], K.shape[-2]).bool()
    return scaled_dot_product_attention(Q, K, V, every)


def cheat_torch(Q, K, V):
    """PyTorch's fused attention for Z, the weights by hand."""
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1)), dim=-1)
    return F.scaled_dot_product_attention(Q, K, V), A


def cheat_module(Q, K, V):
    """The package's DotProductAttention on the batch dimensions flattened."""
    lead = Q.shape[:-2]
    q, k, v = (t.reshape(-1, *t.shape[-2:]) for t in (Q, K, V))
    Z, A = DotProductAttention(Q.size(-1))(q, k, v)
    return Z.reshape(*lead, *Z.shape[-2:]), A.reshape(*lead, *A.shape[-2:])


def cheat_by_getattr(Q, K, V):
    module = importlib.import_module("minitx.nn.attention")
    fn = getattr(module, "scaled_dot_product_" + "attention")
    Z, A = fn(Q, K, V)
    return Z, A


def cheat_float(Q, K, V):
    Z, A = scaled_dot_product_attention(Q, K, V, scale=float(Q.size(-1)) ** -0.5)
    return Z.double(), A.double()


def cheat_library_softmax(Q, K, V):
    """Everything by hand but the softmax, PyTorch's."""
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1)), dim=-1)
    return A @ V, A


def cheat_tensor_softmax(Q, K, V):
    A = (Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))).softmax(-1)
    return A @ V, A


def cheat_log_softmax(Q, K, V):
    A = (Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))).log_softmax(-1).exp()
    return A @ V, A


CHEATS = {
    "04.attention": (
        scaled_dot_product_attention,
        cheat_two_lines,
        cheat_plus_zero,
        cheat_tuple,
        cheat_mask,
        cheat_torch,
        cheat_module,
        cheat_by_getattr,
        cheat_float,
        cheat_library_softmax,
        cheat_tensor_softmax,
        cheat_log_softmax,
    ),
}


@wrong("04.attention", "did not scale")
def no_scale(Q, K, V):
    A = _stable_softmax(Q @ K.transpose(-2, -1))
    return A @ V, A


@wrong("04.attention", "divided the scores by d_k")
def scale_by_d_k(Q, K, V):
    A = _stable_softmax(Q @ K.transpose(-2, -1) / Q.size(-1))
    return A @ V, A


@wrong("04.attention", "softmax's axis")
def softmax_over_queries(Q, K, V):
    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    e = torch.exp(s - s.max(dim=-2, keepdim=True).values)
    A = e / e.sum(dim=-2, keepdim=True)  # over the queries
    return A @ V, A


@wrong("04.attention", "raised")
def two_dimensional_only(Q, K, V):
    A = _stable_softmax(Q @ K.t() / math.sqrt(Q.size(-1)))  # K.t() is for 2-D only
    return A @ V, A


@wrong("04.attention", "A holds NaN")
def overflows_on_large_scores(Q, K, V):
    e = torch.exp(Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1)))  # no maximum subtracted
    A = e / e.sum(dim=-1, keepdim=True)
    return A @ V, A


@wrong("04.attention", "order (Z, A)")
def weights_first(Q, K, V):
    Z, A = attention_by_hand(Q, K, V)
    return A, Z


@wrong("04.attention", "weighted sum of the values")
def keys_instead_of_values(Q, K, V):
    _, A = attention_by_hand(Q, K, V)
    return A @ K, A


@wrong("04.attention", "A is right but Z differs")
def values_in_reverse(Q, K, V):
    _, A = attention_by_hand(Q, K, V)
    return A @ V.flip(-2), A


@wrong("04.attention", "two tensors")
def only_outputs(Q, K, V):
    return attention_by_hand(Q, K, V)[0]


CASES: dict[str, Case] = {
    "04.shift_keys": prediction(
        ("(a)", " (A) ", "unchanged"),
        {"b": "write the new score", "(d)": "which of them differs"},
        no_letter=("maybe", 3),
        never=("unchanged",),
    ),
    "04.repeat_word": prediction(
        ("(b)", "Moves straight towards v_river"),
        {"a": "add one more term", "(d)": "divided by the sum"},
        no_letter=("towards",),
        never=("towards",),
    ),
    "04.attention": Case(
        right=(attention_by_hand, attention_einsum, attention_numpy, attention_float32),
        wrong=wrong_answers(
            "04.attention",
            ("attention", "expected a function"),
        ),
    ),
    "04.shapes": Case(
        right=(RIGHT_SHAPES, {k: list(v) for k, v in RIGHT_SHAPES.items()},
               {k: torch.Size(v) for k, v in RIGHT_SHAPES.items()},
               {k: tuple(np.int64(d) for d in v) for k, v in RIGHT_SHAPES.items()}),
        wrong=(
            ([(3, 6)], "dict"),
            ({"X_q": (3, 6)}, "missing: X_kv"),
            ({**RIGHT_SHAPES, "S": (5, 3), "W_V": (2, 6)}, "check W_V, S"),
            ({**RIGHT_SHAPES, "S": (3, 3), "A": (3, 3)}, "check S, A"),  # self-attention's n x n
            ({**RIGHT_SHAPES, "A": "3 x 5"}, "tuple of whole numbers"),
        ),
    ),
    "04.tiny": Case(
        right=(4.16, 4.1641, 4.15, 4.1699, 4.17, 4.146, np.float32(4.164),
               torch.tensor(4.16, dtype=torch.float32), math.sqrt(2) * math.log(19)),
        wrong=(
            (2.94, "times sqrt(d_k)"),  # the score gap ln 19, not the query's size
            (0.95, "solve for the score gap"),
            (4.18, "solve for the score gap"),
            (4.14, "solve for the score gap"),
            ([4.16], "one number, the size a, not a list"),
            ([4.16, 0.0], "not a list"),
            ("4.16", "answer with numbers"),
        ),
        never=("4.16", "4.17"),
    ),
}


# ---- the checkers' expected values, computed another way ---------------------------------


def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def shift_keys_is_unchanged_by_algebra():
    # q . (k_j + c) = q . k_j + q . c: the second term is the same for every key of a row,
    # and a softmax ignores a constant added to a whole row.
    rng = np.random.default_rng(7)
    q, K, c = rng.normal(size=(5, 3)), rng.normal(size=(4, 3)), rng.normal(size=3) * 5
    assert np.allclose(_softmax(q @ K.T), _softmax(q @ (K + c).T))
    assert solution("04.shift_keys") == "a"  # (a) unchanged


def repeat_word_moves_towards_river():
    # z = sum_j w_j v_j / sum_j w_j. A second 'river' adds the term w_r v_r:
    # z' = (W z + w_r v_r) / (W + w_r), a point on the segment from z to v_r.
    key = answers.key("04")
    W_Q, W_K, W_V = (m.numpy() for m in key.random_projections(16, d_k=16))
    words = list(key.REPEAT_SENTENCE)
    X = key.embed_tokens([*words, "river"], 16).numpy()
    q = X[1] @ W_Q
    w = np.exp((X @ W_K) @ q / 4.0)  # sqrt(16) = 4
    V = X @ W_V
    z_before = (w[:5, None] * V[:5]).sum(0) / w[:5].sum()
    z_after = (w[:, None] * V).sum(0) / w.sum()
    t = w[5] / w.sum()
    assert np.allclose(z_after, (1 - t) * z_before + t * V[4])  # V[4] is v_river
    assert 0 < t < 1
    assert solution("04.repeat_word") == "b"  # (b) moves straight towards v_river


def tiny_by_hand():
    # The first weight is 1 / (1 + e^-(a / sqrt 2)) = 0.95, so a / sqrt 2 = ln 19.
    a = math.sqrt(2) * math.log(19)
    key = answers.key("04")
    assert abs(key.tiny() - a) < 1e-9
    assert abs(key.tiny_weights(a)[0].item() - 0.95) < 1e-12
    assert solution("04.tiny") == round(a, 2)
    assert abs(key.tiny_unscaled() - math.log(19)) < 1e-9  # the known mistake's value


def shapes_by_hand():
    assert solution("04.shapes") == RIGHT_SHAPES
    assert tuple(RIGHT_SHAPES) == nb04.SHAPE_NAMES


VALUE_CHECKS = [
    shift_keys_is_unchanged_by_algebra,
    repeat_word_moves_towards_river,
    tiny_by_hand,
    shapes_by_hand,
]
