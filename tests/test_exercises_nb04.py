"""The exercises of notebook 04: right answers pass, wrong ones get a hint."""

from __future__ import annotations

import pytest
from exercise_asserts import assert_correct, assert_hint

from minitx.exercises import check, names, prompt

RIGHT_SHAPES = {
    "X": (4, 6), "W_Q": (6, 3), "W_K": (6, 3), "W_V": (6, 3), "Q": (4, 3), "K": (4, 3),
    "V": (4, 3), "S": (4, 4), "A": (4, 4), "Z": (4, 3),
}
NB04 = ["04.dominant", "04.shapes", "04.softmax", "04.tiny", "04.z1"]


def test_registered():
    assert [n for n in names() if n.startswith("04.")] == NB04
    for name in NB04:
        assert len(prompt(name)) > 20


@pytest.mark.parametrize(
    "name, answer",
    [
        ("04.shapes", RIGHT_SHAPES),
        ("04.shapes", {k: list(v) for k, v in RIGHT_SHAPES.items()}),
        ("04.softmax", [0.09, 0.24, 0.67]),
        ("04.softmax", (0.0900, 0.2447, 0.6652)),
        ("04.dominant", "plea"),
        ("04.dominant", " Plea "),
        ("04.z1", [0.76, 0.91]),
        ("04.tiny", [0.80, 0.20]),
    ],
)
def test_right_answers_pass(name, answer, capsys):
    assert_correct(name, answer, capsys)


@pytest.mark.parametrize(
    "name, answer, hint",
    [
        ("04.shapes", [(4, 6)], "dict"),
        ("04.shapes", {"X": (4, 6)}, "missing: W_Q"),
        ("04.shapes", {**RIGHT_SHAPES, "S": (4, 3), "W_V": (3, 6)}, "check W_V, S"),
        ("04.softmax", [0.33, 0.33, 0.34], "exp(s)"),
        ("04.softmax", [0.1, 0.2, 0.3], "add up to 1"),
        ("04.softmax", [0.09, 0.91], "give 3 weights"),
        ("04.softmax", "0.09", "give 3 weights"),
        ("04.dominant", "not", "largest weight"),
        ("04.dominant", "court", "one of not, guilty, plea"),
        ("04.dominant", 2, "string"),
        ("04.z1", [0.67, 0.91], "a_1 * v_not"),
        ("04.z1", [0.76], "2"),
        ("04.tiny", [0.88, 0.12], "sqrt(d_k)"),
        ("04.tiny", [0.5, 0.5], "softmax over the two"),
    ],
)
def test_wrong_answers_get_a_hint(name, answer, hint, capsys):
    assert_hint(name, answer, capsys, hint)


def test_unreadable_answer_is_reported_not_raised():
    result = check("04.z1", [None, "x"], quiet=True)
    assert not result.ok and "could not read your answer" in result.message


def test_hints_do_not_reveal_the_solution():
    for answer in ([0.33, 0.33, 0.34], [0.1, 0.2, 0.3]):
        msg = check("04.softmax", answer, quiet=True).message
        assert "0.09" not in msg and "0.67" not in msg and "0.24" not in msg
    msg = check("04.z1", [0.0, 0.0], quiet=True).message
    assert "0.76" not in msg and "0.91" not in msg
    msg = check("04.tiny", [0.5, 0.5], quiet=True).message
    assert "0.80" not in msg and "0.20" not in msg
    msg = check("04.dominant", "not", quiet=True).message
    assert "plea" not in msg
