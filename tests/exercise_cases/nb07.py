"""Exercise cases of notebook 07: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from exercise_cases import Case, prediction, solution, wrong, wrong_answers
from minitx.course.exercises.nb07 import (
    expected_block_params,
    expected_initial_loss,
    window_reach,
    window_truth,
)
from minitx.nn.masks import sliding_window_mask
from minitx.nn.transformer import TransformerBlock, sinusoidal_positions

# ---- sinusoidal: right and wrong tables, written by hand ----------------------------------


def table_with_loops(T, d):
    pe = torch.zeros(T, d, dtype=torch.float64)
    for pos in range(T):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            pe[pos, 2 * i] = math.sin(angle)
            pe[pos, 2 * i + 1] = math.cos(angle)
    return pe


def table_in_numpy_float32(T, d):
    pos = np.arange(T)[:, None]
    angle = pos / 10000 ** (np.arange(0, d, 2) / d)
    pe = np.zeros((T, d), dtype=np.float32)
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


@wrong("07.sinusoidal", "PE(0, 0), a sine column: yours is 1.0000")
def sin_and_cos_swapped(T, d):
    return table_with_loops(T, d)[:, [c + 1 if c % 2 == 0 else c - 1 for c in range(d)]]


@wrong("07.sinusoidal", "PE(1, 1), a cosine column")
def exponent_uses_the_column(T, d):
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    col = torch.arange(d, dtype=torch.float64)
    angle = pos / 10000 ** (col / d)  # column 2i+1 gets its own speed: wrong
    return torch.where(col.long() % 2 == 0, torch.sin(angle), torch.cos(angle))


@wrong("07.sinusoidal", "PE(0, 0)")
def positions_from_one(T, d):
    return table_with_loops(T + 1, d)[1:]


@wrong("07.sinusoidal", "that is (T, d)")
def transposed(T, d):
    return table_with_loops(T, d).T


@wrong("07.sinusoidal", "PE(1, 0)")
def degrees(T, d):
    pe = torch.zeros(T, d, dtype=torch.float64)
    for pos in range(T):
        for i in range(d // 2):
            angle = math.radians(pos / 10000 ** (2 * i / d))
            pe[pos, 2 * i], pe[pos, 2 * i + 1] = math.sin(angle), math.cos(angle)
    return pe


@wrong("07.sinusoidal", "NaN")
def log_of_zero(T, d):
    return torch.log(torch.zeros(T, d)) * 0  # NaN everywhere


@wrong("07.sinusoidal", "with T=1, d=2: your function raised IndexError")
def crashes_on_a_single_position(T, d):
    return table_with_loops(T, d)[torch.arange(T) + (T == 1)]  # row 1 when T = 1


CASES: dict[str, Case] = {
    "07.sinusoidal": Case(
        right=(table_with_loops, table_in_numpy_float32),
        wrong=wrong_answers(
            "07.sinusoidal",
            ("sin(pos / 10000 ** (2 * i / d))", "function"),
        ),
        never=("10000 ** (2", "column // 2"),
    ),
    "07.no_positions": prediction(
        ("(c)", "C."), {"a": "not what the experiment shows", "(b)": "t-1"}
    ),
    "07.window_reach": prediction(
        ("(b)", "B."), {"a": "not what the experiment shows", "(c)": "second block"}
    ),
    "07.block_params": Case(
        right=(12 * 48 * 48 + 13 * 48,),
        wrong=(
            (4 * 48 * 48 + 2 * 48 * 192, "bias"),
            (4 * 48 * 48 + 4 * 48 + 2 * 48 * 192 + 192 + 48, "left out the two"),
            (4 * 48 * 48 + 4 * 48 + 2 * 48 * 192 + 192 + 48 + 96, "each of the two"),
            (4 * (4 * 48 * 48 + 4 * 48) + 2 * 48 * 192 + 192 + 48 + 4 * 48, "number of heads"),
            (12345, "two LayerNorms"),
            (28272.0, "int"),
        ),
    ),
    "07.initial_loss": Case(
        right=(math.log(32000), 10.37),
        wrong=(
            (math.log2(32000), "natural logarithm"),
            (math.log10(32000), "natural logarithm"),
            (1 / 32000, "-log"),
            (4.17, "same probability"),
            ("ln 32000", "number"),
        ),
    ),
}


def check_nb07_expected_values_agree_with_independent_computations():
    for T, d in ((4, 6), (1, 2), (30, 8)):
        assert torch.allclose(solution("07.sinusoidal")(T, d), table_with_loops(T, d), atol=1e-12)
        assert torch.allclose(
            sinusoidal_positions(T, d, dtype=torch.float64), table_with_loops(T, d), atol=1e-12
        )
    assert expected_block_params(48, 4, 192) == 12 * 48**2 + 13 * 48
    real = TransformerBlock(16, 2, 40)
    assert expected_block_params(16, 2, 40) == sum(p.numel() for p in real.parameters())
    assert expected_initial_loss(65) == pytest.approx(math.log(65), abs=1e-12)
    assert expected_initial_loss() == pytest.approx(math.log(32000), abs=1e-12)


def check_nb07_sliding_windows_reach_one_window_per_block():
    band = sliding_window_mask(6, 3)
    by_hand = torch.tensor([[i - 3 < j <= i for j in range(6)] for i in range(6)])
    assert torch.equal(band, by_hand)
    assert window_reach(12, 4, 1) == 3  # one block: the window, w - 1 = 3 positions on
    assert window_reach(12, 4, 2) == 6  # two blocks: 2 (w - 1)
    assert window_reach(12, 3, 3) == 6  # three blocks of w = 3: 3 * 2
    assert window_reach(12, 4, 4) == 11  # 4 * 3 = 12 is beyond the last position
    assert window_truth() == "b"


VALUE_CHECKS = [
    check_nb07_expected_values_agree_with_independent_computations,
    check_nb07_sliding_windows_reach_one_window_per_block,
]
