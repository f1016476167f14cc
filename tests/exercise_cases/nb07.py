"""Exercise cases of notebook 07: see tests/test_exercise_answers.py."""

from __future__ import annotations

import math

import pytest
import torch

from exercise_cases import Case
from minitx.exercises.nb07 import (
    expected_block_params,
    expected_initial_loss,
    expected_memory_bytes,
    expected_pe,
    expected_window,
)
from minitx.transformer import TransformerBlock


def by_formula(V, T, L, C):
    """GPT parameters with bias=False and a tied head: embeddings, blocks, final norm."""
    return V * C + T * C + L * (4 * C * C + 8 * C * C + 2 * C) + C


BLOCK_NO_NORMS = 4 * 48 * 48 + 4 * 48 + 2 * 48 * 192 + 192 + 48

CASES: dict[str, Case] = {
    "07.pe_value": Case(
        right=(math.cos(0.5), 0.878, torch.tensor(0.8776)),
        wrong=(
            (math.sin(0.5), "odd columns hold cosines"),
            (math.cos(50 / 10000 ** (3 / 4)), "column // 2"),
            (math.cos(math.radians(0.5)), "radians"),
            (0.1, "find i for column 3"),
            ("cos(0.5)", "number"),
            (True, "number"),
        ),
    ),
    "07.block_params": Case(
        right=(12 * 48 * 48 + 13 * 48,),
        wrong=(
            (4 * 48 * 48 + 2 * 48 * 192, "bias"),
            (BLOCK_NO_NORMS, "left out the two"),
            (BLOCK_NO_NORMS + 96, "each of the two"),
            (4 * (4 * 48 * 48 + 4 * 48) + 2 * 48 * 192 + 192 + 48 + 4 * 48, "number of heads"),
            (12345, "two LayerNorms"),
            (28272.0, "int"),
            (1, None),
        ),
    ),
    "07.initial_loss": Case(
        right=(math.log(50257), 10.82),
        wrong=(
            (math.log2(50257), "natural logarithm"),
            (math.log10(50257), "natural logarithm"),
            (1 / 50257, "-log"),
            (4.17, "same probability"),
        ),
    ),
    "07.attn_memory": Case(
        right=(8 * 6 * 256 * 256 * 4,),
        wrong=(
            (8 * 6 * 256 * 256, "4 bytes"),
            (8 * 6 * 256 * 4, "T x T"),
            (6 * 256 * 256 * 4, "every sequence"),
            (8 * 6 * 256 * 256 * 8, "not 8"),
            (1, "entries"),
            ("12582912", "int"),
        ),
    ),
    "07.window": Case(
        right=(list(range(4, 12)), range(4, 12), [11, 10, 9, 8, 7, 6, 5, 4]),
        wrong=(
            (list(range(12)), "at most block_size"),
            (list(range(8)), "most recent"),
            ([10, 11], "exactly block_size"),
            (list(range(3, 11)), "idx[:, -block_size:]"),
            ("4..11", "list"),
            (["a"], "int positions"),
        ),
    ),
}


def check_nb07_expected_values_agree_with_independent_computations():
    assert expected_pe(50, 3, 4) == pytest.approx(math.cos(50 / 10000 ** (2 / 4)), abs=1e-12)
    assert expected_pe(3, 0, 8) == pytest.approx(math.sin(3), abs=1e-12)
    assert expected_block_params(48, 4, 192) == 12 * 48**2 + 13 * 48
    real = TransformerBlock(16, 2, 40)
    assert expected_block_params(16, 2, 40) == sum(p.numel() for p in real.parameters())
    assert expected_initial_loss(65) == pytest.approx(math.log(65), abs=1e-12)
    assert expected_memory_bytes(2, 3, 5) == 2 * 3 * 5 * 5 * 4
    assert expected_window(8, 12, 11) == list(range(4, 12))
    assert expected_window(4, 6, 11) == [2, 3, 4, 5]
    assert expected_window(8, 5, 11) == [0, 1, 2, 3, 4]  # a short prompt is seen whole


VALUE_CHECKS = [check_nb07_expected_values_agree_with_independent_computations]
