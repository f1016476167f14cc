"""Exercise cases of notebook 01: see tests/test_exercise_answers.py."""

from __future__ import annotations

from exercise_cases import Case

CASES: dict[str, Case] = {
    "01.padding_waste": Case(
        right=(12 / 28,),  # 4 x 7 slots, 3 + 7 + 5 + 1 = 16 real
        wrong=((12, "count"), (16 / 28, None), (0.5, None), (3.0, None)),
        unreadable=(True,),
    ),
    "01.truncation": Case(
        right=((6, 2),),  # kept 3,5,5,1 of 4 x 5 slots; 7 loses 2
        wrong=(((2, 6), "wrong order"), ((4, 2), None), ((6, 3), None)),
    ),
    "01.bag_of_words": Case(
        right=(("the dog bites the man", "the man bites the dog"),),
        wrong=(
            (("dog bites man", "dog bites man"), "same sequence"),
            (("dog bites man", "dogs bite man"), None),
        ),
    ),
    "01.window": Case(
        right=(19,),  # 'cat' at 1, 'woke' at 20 (the commas count)
        wrong=((18, None), (5, None), (23, None)),
        unreadable=("19",),
    ),
    "01.encode": Case(
        right=([5, 7, 4],),  # ' dehlorw': o=5, w=7, l=4
        wrong=(([6, 8, 5], None), ([7, 5, 4], None), ([5, 7], None)),
    ),
    "01.embedding": Case(
        right=([[5, 6], [1, 2], [5, 6]],),
        wrong=(
            ([[1, 2], [3, 4], [5, 6]], "that is W itself"),
            ([[5, 6], [1, 2]], None),
            ([[6, 5], [2, 1], [6, 5]], None),
        ),
        unreadable=("rows",),
    ),
}


VALUE_CHECKS = []
