"""Exercise cases of notebook 02: see tests/test_exercise_answers.py."""

from __future__ import annotations

import math

from exercise_cases import Case

CASES: dict[str, Case] = {
    "02.rnn_step": Case(
        # W_xh x = [0.5, 0.5], W_hh h_0 = [0.5, -0.25], + b -> [1.0, 0.35]
        right=([math.tanh(1.0), math.tanh(0.35)],),
        wrong=(([1.0, 0.35], "tanh"), ([0.5, 0.5], None), ([0.76, -0.34], None)),
    ),
    "02.lstm_params": Case(
        right=(4 * (20 * 10 + 20 * 20 + 20 + 20),),
        wrong=((640, "four gate"), (2400, "bias"), (1920, None), (2520, None)),
    ),
    "02.vanish_steps": Case(
        right=(18,),  # 0.45^17 = 1.3e-6, 0.45^18 = 5.9e-7
        wrong=((17, "off by one"), (19, None), (10, None)),
    ),
    "02.forget_gate": Case(
        right=(0.9**20,),
        wrong=((0.9 * 20, "multiplies"), (1 - 0.1 * 20, None), (0.5, None)),
    ),
    "02.gru_shapes": Case(
        right=(((3, 11, 7), (1, 3, 7)),),
        wrong=(
            (((3, 7), (1, 3, 7)), None),
            (((3, 11, 7), (3, 7)), None),
            (((11, 3, 7), (1, 3, 7)), None),
        ),
    ),
}


VALUE_CHECKS = []
