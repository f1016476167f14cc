"""Exercise cases of notebook 07: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import importlib
import math

import numpy as np
import torch

from exercise_cases import Case, prediction, solution, wrong, wrong_answers
from minitx.course.exercises import answers
from minitx.nn.encoder_decoder import DateTransformer
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


def table_in_numpy_float64(T, d):
    angle = np.arange(T)[:, None] * np.exp(-np.log(10000.0) * np.arange(0, d, 2) / d)
    return np.stack([np.sin(angle), np.cos(angle)], axis=-1).reshape(T, d)


def table_in_float32(T, d):
    pos = torch.arange(T, dtype=torch.float32)[:, None]
    angle = pos / torch.pow(10000.0, torch.arange(0, d, 2, dtype=torch.float32) / d)
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)


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
        right=(table_with_loops, table_in_numpy_float32, table_in_numpy_float64,
               table_in_float32),
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
        right=(25168, 25168.0, np.int64(25168), torch.tensor(25168)),
        wrong=(
            (4 * 48 * 48 + 2 * 48 * 160, "bias"),
            (4 * 48 * 48 + 4 * 48 + 2 * 48 * 160 + 160 + 48, "left out the two"),
            (4 * 48 * 48 + 4 * 48 + 2 * 48 * 160 + 160 + 48 + 96, "each of the two"),
            (4 * (4 * 48 * 48 + 4 * 48) + 2 * 48 * 160 + 160 + 48 + 4 * 48, "number of heads"),
            (12 * 48 * 48 + 13 * 48, "d_ff = 160"),  # the d_ff = 4 d formula
            (12345, "two LayerNorms"),
            (25168.5, "whole number"),
            ("25168", "whole number"),
        ),
        never=("25168",),
    ),
}


# ---- answers that only hand the work to the package: each must be refused -----------------


def table_two_lines(T, d):
    table = sinusoidal_positions(T, d)
    return table


def table_double_plus_zero(T, d):
    return sinusoidal_positions(int(T), int(d)).double() + 0


def table_by_getattr(T, d):
    positions = importlib.import_module("minitx.nn.positions")
    return getattr(positions, "sinusoidal_" + "positions")(T, d, dtype=torch.float64).clone()


def table_from_a_model(T, d):
    """The table DateTransformer builds for its positions."""
    return DateTransformer(d_model=d, n_heads=1, max_len=T).pe[:T].clone()


CHEATS = {
    "07.sinusoidal": (
        sinusoidal_positions,
        lambda T, d: sinusoidal_positions(T, d),
        table_two_lines,
        table_double_plus_zero,
        table_by_getattr,
        table_from_a_model,
    ),
}


def check_nb07_expected_values_agree_with_independent_computations():
    key = answers.key("07")  # the instructor's computations
    expected_block_params = key.block_params
    for T, d in ((4, 6), (1, 2), (30, 8)):
        assert torch.allclose(solution("07.sinusoidal")(T, d), table_with_loops(T, d), atol=1e-12)
        assert torch.allclose(
            sinusoidal_positions(T, d, dtype=torch.float64), table_with_loops(T, d), atol=1e-12
        )
    assert expected_block_params(48, 4, 192) == 12 * 48**2 + 13 * 48  # d_ff = 4 d
    attention, ffn, norms = 4 * 48 * 48 + 4 * 48, 48 * 160 + 160 + 160 * 48 + 48, 4 * 48
    assert expected_block_params() == attention + ffn + norms == 25168  # the exercise's block
    real = TransformerBlock(16, 2, 40)
    assert expected_block_params(16, 2, 40) == sum(p.numel() for p in real.parameters())


def check_nb07_sliding_windows_reach_one_window_per_block():
    window_reach = answers.key("07").window_reach
    band = sliding_window_mask(6, 3)
    by_hand = torch.tensor([[i - 3 < j <= i for j in range(6)] for i in range(6)])
    assert torch.equal(band, by_hand)
    assert window_reach(12, 4, 1) == 3  # one block: the window, w - 1 = 3 positions on
    assert window_reach(12, 4, 2) == 6  # two blocks: 2 (w - 1)
    assert window_reach(12, 3, 3) == 6  # three blocks of w = 3: 3 * 2
    assert window_reach(12, 4, 4) == 11  # 4 * 3 = 12 is beyond the last position
    assert solution("07.window_reach") == "b"


VALUE_CHECKS = [
    check_nb07_expected_values_agree_with_independent_computations,
    check_nb07_sliding_windows_reach_one_window_per_block,
]
