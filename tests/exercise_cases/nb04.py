"""Exercise cases of notebook 04: see tests/test_exercise_answers.py."""

from __future__ import annotations

from exercise_cases import Case

RIGHT_SHAPES = {
    "X": (4, 6), "W_Q": (6, 3), "W_K": (6, 3), "W_V": (6, 3), "Q": (4, 3), "K": (4, 3),
    "V": (4, 3), "S": (4, 4), "A": (4, 4), "Z": (4, 3),
}  # fmt: skip

CASES: dict[str, Case] = {
    "04.shapes": Case(
        right=(RIGHT_SHAPES, {k: list(v) for k, v in RIGHT_SHAPES.items()}),
        wrong=(
            ([(4, 6)], "dict"),
            ({"X": (4, 6)}, "missing: W_Q"),
            ({**RIGHT_SHAPES, "S": (4, 3), "W_V": (3, 6)}, "check W_V, S"),
        ),
    ),
    "04.softmax": Case(
        right=([0.09, 0.24, 0.67], (0.0900, 0.2447, 0.6652)),
        wrong=(
            ([0.33, 0.33, 0.34], "exp(s)"),
            ([0.1, 0.2, 0.3], "add up to 1"),
            ([0.09, 0.91], "give 3 weights"),
            ("0.09", "give 3 weights"),
        ),
        never=("0.09", "0.67", "0.24"),
    ),
    "04.dominant": Case(
        right=("plea", " Plea "),
        wrong=(("not", "largest weight"), ("court", "one of not, guilty, plea"), (2, "string")),
    ),
    "04.z1": Case(
        right=([0.76, 0.91],),
        wrong=(([0.67, 0.91], "a_1 * v_not"), ([0.76], "2"), ([0.0, 0.0], None)),
        never=("0.76", "0.91"),
        unreadable=([None, "x"],),
    ),
    "04.tiny": Case(
        right=([0.80, 0.20],),
        wrong=(([0.88, 0.12], "sqrt(d_k)"), ([0.5, 0.5], "softmax over the two")),
    ),
}


VALUE_CHECKS = []
