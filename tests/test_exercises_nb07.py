"""The exercises of notebook 07: right answers pass, wrong ones get a hint."""

from __future__ import annotations

import math

import pytest
import torch
from exercise_asserts import assert_correct, assert_hint

from minitx.exercises import check, names, prompt
from minitx.exercises.nb07 import (
    expected_block_params,
    expected_initial_loss,
    expected_memory_bytes,
    expected_pe,
    expected_window,
)
from minitx.transformer import TransformerBlock

NB07 = ["07.attn_memory", "07.block_params", "07.initial_loss", "07.pe_value", "07.window"]


def test_registered():
    assert [n for n in names() if n.startswith("07.")] == NB07
    for name in NB07:
        assert len(prompt(name)) > 20


def test_expected_values_agree_with_independent_computations():
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


@pytest.mark.parametrize(
    "name, answer",
    [
        ("07.pe_value", math.cos(0.5)),
        ("07.pe_value", 0.878),
        ("07.pe_value", torch.tensor(0.8776)),
        ("07.block_params", 12 * 48 * 48 + 13 * 48),
        ("07.initial_loss", math.log(50257)),
        ("07.initial_loss", 10.82),
        ("07.attn_memory", 8 * 6 * 256 * 256 * 4),
        ("07.window", list(range(4, 12))),
        ("07.window", range(4, 12)),
        ("07.window", [11, 10, 9, 8, 7, 6, 5, 4]),
    ],
)
def test_right_answers_pass(name, answer, capsys):
    assert_correct(name, answer, capsys)


@pytest.mark.parametrize(
    "name, answer, hint",
    [
        ("07.pe_value", math.sin(0.5), "odd columns hold cosines"),
        ("07.pe_value", math.cos(50 / 10000 ** (3 / 4)), "column // 2"),
        ("07.pe_value", math.cos(math.radians(0.5)), "radians"),
        ("07.pe_value", 0.1, "find i for column 3"),
        ("07.pe_value", "cos(0.5)", "number"),
        ("07.pe_value", True, "number"),
        ("07.block_params", 4 * 48 * 48 + 2 * 48 * 192, "bias"),
        ("07.block_params", 4 * 48 * 48 + 4 * 48 + 2 * 48 * 192 + 192 + 48, "left out the two"),
        ("07.block_params", 4 * 48 * 48 + 4 * 48 + 2 * 48 * 192 + 192 + 48 + 96, "each of the two"),
        ("07.block_params", 4 * (4 * 48 * 48 + 4 * 48) + 2 * 48 * 192 + 192 + 48 + 4 * 48,
         "number of heads"),
        ("07.block_params", 12345, "two LayerNorms"),
        ("07.block_params", 28272.0, "int"),
        ("07.initial_loss", math.log2(50257), "natural logarithm"),
        ("07.initial_loss", math.log10(50257), "natural logarithm"),
        ("07.initial_loss", 1 / 50257, "-log"),
        ("07.initial_loss", 4.17, "same probability"),
        ("07.attn_memory", 8 * 6 * 256 * 256, "4 bytes"),
        ("07.attn_memory", 8 * 6 * 256 * 4, "T x T"),
        ("07.attn_memory", 6 * 256 * 256 * 4, "every sequence"),
        ("07.attn_memory", 8 * 6 * 256 * 256 * 8, "not 8"),
        ("07.attn_memory", 1, "entries"),
        ("07.attn_memory", "12582912", "int"),
        ("07.window", list(range(12)), "at most block_size"),
        ("07.window", list(range(8)), "most recent"),
        ("07.window", [10, 11], "exactly block_size"),
        ("07.window", list(range(3, 11)), "idx[:, -block_size:]"),
        ("07.window", "4..11", "list"),
        ("07.window", ["a"], "int positions"),
    ],
)
def test_wrong_answers_get_a_hint(name, answer, hint, capsys):
    assert_hint(name, answer, capsys, hint)


def test_unanswered_and_rng_untouched(capsys):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    for name in NB07:
        assert not check(name, None).ok
    check("07.window", list(range(4, 12)))
    check("07.block_params", 1)
    assert torch.equal(torch.rand(3), expected)  # checking does not move the learner's RNG
    assert "not answered yet" in capsys.readouterr().out
