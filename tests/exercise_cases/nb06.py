"""Exercise cases of notebook 06: see tests/test_exercise_answers.py."""

from __future__ import annotations

import torch

from exercise_cases import Case
from minitx.exercises.nb06 import _planted_weights, expected_prev_head


def negate(mask):
    return ~mask


def logical_not(mask):
    return mask.logical_not()


def to_float_mask(mask):
    return torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))


def unchanged(mask):
    return mask


def as_float(mask):
    return mask.float()


def negate_transposed(mask):
    return ~mask.T


def negate_first_two_rows(mask):
    return ~mask[:2]


def divide_by_zero(*args):
    return 1 / 0


def find_prev_head(weights):
    _, H, T, _ = weights.shape
    t = torch.arange(1, T)
    score = weights[:, :, t, t - 1].mean(-1)  # (L, H)
    i = int(score.argmax())
    return i // H, i % H


def sharpest_head(weights):
    H = weights.size(1)
    i = int(weights.max(-1).values.mean(-1).argmax())
    return i // H, i % H


def first_head(weights):
    return 0, 0


def a_single_int(weights):
    return 3


CASES: dict[str, Case] = {
    "06.params": Case(
        right=(4 * 64 * 64 + 4 * 64,),
        wrong=(
            (4 * 64 * 64, "biases"),
            (8 * (4 * 64 * 64 + 4 * 64), "full-size"),
            (1234, "number of heads should not matter"),
            ("16640", "int"),
        ),
    ),
    "06.head_shape": Case(
        right=((2, 6, 5, 8), [2, 6, 5, 8]),
        wrong=(
            ((2, 5, 6, 8), "wrong order"),
            ((2, 6, 5, 48), "d_model / n_heads"),
            ((2, 6, 5), "4 dimensions"),
            ("2, 6, 5, 8", "tuple of ints"),
        ),
    ),
    "06.cross": Case(
        right=({"out": (2, 3, 16), "weights": (2, 4, 3, 7)},),
        wrong=(
            ({"out": (2, 7, 16), "weights": (2, 4, 3, 7)}, "one output per query"),
            ({"out": (2, 3, 16), "weights": (2, 4, 7, 3)}, "one row per query"),
            ([(2, 3, 16)], "dict"),
        ),
    ),
    "06.torch_mask": Case(
        right=(negate, logical_not, to_float_mask),
        wrong=(
            (unchanged, "unchanged"),
            (as_float, "same keys"),
            (negate_transposed, "same keys"),
            (divide_by_zero, "ZeroDivisionError"),
            (negate_first_two_rows, "same shape"),
            ("~mask", "function"),
        ),
    ),
    "06.prev_head": Case(
        right=(find_prev_head,),
        wrong=((sharpest_head, "first token"), (first_head, "average"), (a_single_int, "pair")),
    ),
}


def check_nb06_planted_weights_are_attention_and_found_by_the_package():
    w = _planted_weights(3, 4, 16, (0, 3), seed=1)
    assert torch.allclose(w.sum(-1), torch.ones(3, 4, 16))
    assert expected_prev_head(w) == (0, 3)
    assert sharpest_head(w) == (1, 0)  # the sink is sharper: a naive answer fails


VALUE_CHECKS = [check_nb06_planted_weights_are_attention_and_found_by_the_package]
