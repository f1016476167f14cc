"""Exercise cases of notebook 05: see tests/test_exercise_answers.py."""

from __future__ import annotations

import torch

from exercise_cases import Case


def logical_not(mask):
    return mask.logical_not()


INF = float("-inf")

CASES: dict[str, Case] = {
    "05.zeros": Case(
        right=([(1, 2), (1, 3), (2, 3)], [[2, 3], [1, 3], [1, 2]]),  # any order, lists as pairs
        wrong=(
            ([(0, 1), (0, 2), (1, 2)], "count rows and columns from 1"),
            ([(1, 1), (1, 2), (1, 3), (2, 3)], "diagonal is never blocked"),
            ([(2, 1), (3, 1), (3, 2)], "transpose"),
            ([(1, 2)], "blocks every key that comes after"),
            ([(1, 2, 3)], "pair"),
        ),
        never=("(1, 3)", "(2, 3)"),
        unreadable=(3,),
    ),
    "05.mask_row": Case(
        right=(
            [0, 0, 0, INF, INF],
            torch.tensor([0.0, 0.0, 0.0, INF, INF]),
            ["0", "0", "0", "-inf", "-inf"],
        ),
        wrong=(
            ([1, 1, 1, 0, 0], "boolean mask"),
            ([0, 0, 0, -1e9, -1e9], "either 0"),
            ([0, 0, INF, INF, INF], "positions 1, 2 and 3"),
            ([0, 0, 0, INF], "5"),
        ),
        unreadable=(["x"],),
    ),
    "05.z2": Case(
        right=([0.5, 1.0], (0.50, 1.00)),
        wrong=(
            ([1.0, 1.0], "that is Z_1"),
            ([0.67, 1.0], "without a mask"),
            ([0.5], "2 entries"),
            ([0.0, 0.0], None),
        ),
        never=("0.5",),
    ),
    "05.combined": Case(
        right=(12, 12.0),
        wrong=((15, "causal mask alone"), (15.5, "whole number"), (9, "both masks allow it")),
        never=("12",),
        unreadable=("many",),
    ),
    "05.convention": Case(
        right=("~mask", " mask.logical_not() "),
        wrong=(
            ("mask", "opposite"),
            ("not sure", "'mask' or '~mask'"),
            (True, "a string, 'mask' or '~mask'"),
        ),
        never=("~mask",),
    ),
    "05.leak": Case(
        right=(7,),
        wrong=(
            (8, "last position"),
            (1, "t + 1"),
            (4, "position by position"),
            (True, "whole number"),
        ),
        never=("7",),
    ),
}


VALUE_CHECKS = []
