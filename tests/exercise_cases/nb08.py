"""Exercise cases of notebook 08: see tests/test_exercise_answers.py."""

from __future__ import annotations

from exercise_cases import Case


def divide_by_zero(*args):
    return 1 / 0


def longest_match(sample, corpus):
    best = 0
    for i in range(len(sample)):
        for j in range(i + best + 1, len(sample) + 1):
            if sample[i:j] not in corpus:
                break
            best = j - i
    return best


def prefix_only(sample, corpus):
    n = 0
    while n < len(sample) and sample[: n + 1] in corpus:
        n += 1
    return n


def a_float(sample, corpus):
    return 1.0


def by_formula(V, T, L, C):
    """GPT parameters with bias=False and a tied head: embeddings, blocks, final norm."""
    return V * C + T * C + L * (4 * C * C + 8 * C * C + 2 * C) + C


GPT_PARAMS = by_formula(65, 64, 4, 128)

CASES: dict[str, Case] = {
    "08.params": Case(
        right=(GPT_PARAMS,),
        wrong=(
            (GPT_PARAMS + 65 * 128, "count it once"),
            (GPT_PARAMS - 64 * 128, "position embedding"),
            (123, "too few"),
            ("804096", "answer with an int"),
            (1, None),
        ),
    ),
    "08.top_p": Case(
        right=({0, 1, 2}, [2, 1, 0]),
        wrong=(({0, 1}, "crosses the line"), ({0, 1, 2, 3}, "too many"), (3, "set of ints")),
    ),
    "08.temperature": Case(
        right=(0.982,),
        wrong=((0.881, "temperature 1"), (0.6, "more likely, not less")),
    ),
    "08.context": Case(
        right=(list(range(4, 12)), range(4, 12)),
        wrong=((list(range(12)), "last block_size"), (list(range(8)), "which end"), ([1], None)),
    ),
    "08.longest_match": Case(
        right=(longest_match,),
        wrong=(
            (prefix_only, "start anywhere"),
            (divide_by_zero, "ZeroDivisionError"),
            (a_float, "return an int"),
            (5, "a function"),
        ),
    ),
}


VALUE_CHECKS = []
