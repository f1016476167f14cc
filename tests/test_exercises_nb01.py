"""Exercises of notebook 01: right answers pass, wrong ones get a hint, nothing leaks."""

from __future__ import annotations

import pytest
from exercise_asserts import assert_correct, assert_hint

from minitx.exercises import check, names, prompt

# Worked out by hand, independently of the package the checkers use.
RIGHT = {
    "01.padding_waste": 12 / 28,  # 4 x 7 slots, 3 + 7 + 5 + 1 = 16 real
    "01.truncation": (6, 2),  # kept 3,5,5,1 of 4 x 5 slots; 7 loses 2
    "01.bag_of_words": ("the dog bites the man", "the man bites the dog"),
    "01.window": 19,  # 'cat' at 1, 'woke' at 20 (the commas count)
    "01.encode": [5, 7, 4],  # ' dehlorw': o=5, w=7, l=4
    "01.embedding": [[5, 6], [1, 2], [5, 6]],
}

WRONG = {
    "01.padding_waste": [12, 16 / 28, 0.5, 3.0],
    "01.truncation": [(2, 6), (4, 2), (6, 3)],
    "01.bag_of_words": [("dog bites man", "dog bites man"), ("dog bites man", "dogs bite man")],
    "01.window": [18, 5, 23],
    "01.encode": [[6, 8, 5], [7, 5, 4], [5, 7]],
    "01.embedding": [[[1, 2], [3, 4], [5, 6]], [[5, 6], [1, 2]], [[6, 5], [2, 1], [6, 5]]],
}


def test_all_nb01_exercises_are_registered_and_tested():
    nb01 = {n for n in names() if n.startswith("01.")}
    assert nb01 == set(RIGHT) == set(WRONG)
    assert 3 <= len(nb01) <= 6
    for name in nb01:
        assert len(prompt(name)) > 20


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_right_answer_passes(name, capsys):
    assert_correct(name, RIGHT[name], capsys)


@pytest.mark.parametrize(("name", "answer"), [(n, a) for n in sorted(WRONG) for a in WRONG[n]])
def test_wrong_answer_fails_with_a_hint(name, answer, capsys):
    hint = assert_hint(name, answer, capsys)
    assert len(hint) > 10
    assert str(RIGHT[name]) not in hint


def test_unreadable_answers_get_a_message_not_a_crash():
    assert "could not read" in check("01.embedding", "rows", quiet=True).message
    assert not check("01.window", "19", quiet=True).ok
    assert not check("01.padding_waste", True, quiet=True).ok


def test_specific_hints():
    assert "wrong order" in check("01.truncation", (2, 6), quiet=True).message
    assert "count" in check("01.padding_waste", 12, quiet=True).message
    assert "same sequence" in check(
        "01.bag_of_words", ("dog bites man", "dog bites man"), quiet=True
    ).message
    assert "that is W itself" in check(
        "01.embedding", [[1, 2], [3, 4], [5, 6]], quiet=True
    ).message
