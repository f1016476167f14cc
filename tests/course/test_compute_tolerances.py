"""A compute exercise's answer is judged alike by the learner's check in the notebook and by
the teacher's grading (``minitx progress``): every answer written to the asked decimals near
the key is right for both or for neither."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from minitx.course.exercises import get
from minitx.course.exercises.answers import solution
from minitx.course.exercises.grading import hidden, loosen
from minitx.course.exercises.plain import to_plain
from minitx.course.exercises.review import same

# the numeric compute exercises and the decimals each asks for
DECIMALS = {"02.forget_gate": 3, "04.tiny": 2, "06.two_heads": 2, "09.temperature": 3,
            "12.bits": 2}


@pytest.mark.parametrize("name", list(DECIMALS))
def test_learner_check_and_teacher_grading_agree(name):
    decimals = DECIMALS[name]
    truth = to_plain(loosen(solution(name)))
    atol = hidden(name[:2])[name].atol
    values = np.atleast_1d(np.asarray(truth, dtype=float))
    step = 10.0**-decimals
    near = [[round(round(v, decimals) + k * step, decimals) for k in range(-3, 4)]
            for v in values]
    right = 0
    for combo in itertools.product(*near):
        answer = list(combo) if values.size > 1 else combo[0]
        learner = get(name).checker(answer) is None
        teacher = same(to_plain(loosen(answer)), truth, atol)
        assert learner == teacher, (name, answer, learner, teacher)
        right += learner
    assert right >= 1  # the key itself, written to the asked decimals, is right
