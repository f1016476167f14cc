"""Exercises of notebook 02: right answers pass, wrong ones get a hint."""

from __future__ import annotations

import math

import pytest
from exercise_asserts import assert_correct, assert_hint

from minitx.exercises import check, names, prompt

# Worked out by hand, independently of the package the checkers use.
RIGHT = {
    # W_xh x = [0.5, 0.5], W_hh h_0 = [0.5, -0.25], + b -> [1.0, 0.35]
    "02.rnn_step": [math.tanh(1.0), math.tanh(0.35)],
    "02.lstm_params": 4 * (20 * 10 + 20 * 20 + 20 + 20),
    "02.vanish_steps": 18,  # 0.45^17 = 1.3e-6, 0.45^18 = 5.9e-7
    "02.forget_gate": 0.9**20,
    "02.gru_shapes": ((3, 11, 7), (1, 3, 7)),
}

WRONG = {
    "02.rnn_step": [[1.0, 0.35], [0.5, 0.5], [0.76, -0.34]],
    "02.lstm_params": [640, 2400, 1920, 2520],
    "02.vanish_steps": [17, 19, 10],
    "02.forget_gate": [0.9 * 20, 1 - 0.1 * 20, 0.5],
    "02.gru_shapes": [((3, 7), (1, 3, 7)), ((3, 11, 7), (3, 7)), ((11, 3, 7), (1, 3, 7))],
}


def test_all_nb02_exercises_are_registered_and_tested():
    nb02 = {n for n in names() if n.startswith("02.")}
    assert nb02 == set(RIGHT) == set(WRONG)
    assert 3 <= len(nb02) <= 6
    for name in nb02:
        assert len(prompt(name)) > 20


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_right_answer_passes(name, capsys):
    assert_correct(name, RIGHT[name], capsys)


@pytest.mark.parametrize(("name", "answer"), [(n, a) for n in sorted(WRONG) for a in WRONG[n]])
def test_wrong_answer_fails_with_a_hint(name, answer, capsys):
    hint = assert_hint(name, answer, capsys)
    assert len(hint) > 10


def test_hints_point_at_the_mistake():
    assert "tanh" in check("02.rnn_step", [1.0, 0.35], quiet=True).message
    assert "four gate" in check("02.lstm_params", 640, quiet=True).message
    assert "bias" in check("02.lstm_params", 2400, quiet=True).message
    assert "off by one" in check("02.vanish_steps", 17, quiet=True).message
    assert "multiplies" in check("02.forget_gate", 18.0, quiet=True).message
