"""Hidden cases of notebook 12."""

from __future__ import annotations

import random

from . import Hidden


def _merge_cases() -> list[tuple]:
    rng = random.Random(1212)
    cases = [
        ([[104, 101, 108, 108, 111], [32, 104, 101, 108, 108, 111], [104, 105]], 256),
        ([[1, 1, 1, 1, 1, 1, 1]], 2),  # one chunk, one pair overlapping itself
        ([[3], [3, 4], [4, 3], [9]], 5),  # every pair once: the smallest wins
        ([[600, 601], [601, 600], [600, 601, 600]], 602),  # ids of earlier merges
        ([[0, 1], [2], [0, 1], [1, 0], [2, 0, 1, 2]], 3),
    ]
    for n, top, new in ((80, 10, 10), (25, 2, 2), (40, 500, 1000)):
        cases.append(([[rng.randrange(top) for _ in range(rng.randint(1, 9))]
                       for _ in range(n)] + [[0, 0]], new))
    return cases


HIDDEN = {
    "12.merge_step": Hidden(_merge_cases, atol=0.0, points=3),
    "12.bits": Hidden(atol=0.006, points=2),
}
