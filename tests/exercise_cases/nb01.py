"""Exercise cases of notebook 01: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import random

import torch

from exercise_cases import Case, prediction, solution, wrong, wrong_answers
from minitx.course.exercises import nb01

# ---- learner functions for 01.pad_and_mask, written by hand ---------------------------------


def pad_right(seqs, pad_id):
    T = max(len(s) for s in seqs)
    ids = torch.tensor([list(s) + [pad_id] * (T - len(s)) for s in seqs], dtype=torch.long)
    mask = torch.tensor([[t < len(s) for t in range(T)] for s in seqs], dtype=torch.bool)
    return ids, mask


def pad_right_loops(seqs, pad_id):
    T = max(map(len, seqs))
    ids = torch.full((len(seqs), T), pad_id)
    mask = torch.zeros(len(seqs), T, dtype=torch.bool)
    for b, s in enumerate(seqs):
        for t, token in enumerate(s):
            ids[b, t] = token
            mask[b, t] = True
    return ids, mask


@wrong("01.pad_and_mask", "same id as the padding")
def mask_from_ids(seqs, pad_id):  # wrong when a real token has the padding's id
    ids, _ = pad_right(seqs, pad_id)
    return ids, ids != pad_id


@wrong("01.pad_and_mask", "the mask calls row 0, position 0 padding")
def mask_inverted(seqs, pad_id):  # True on padding
    ids, mask = pad_right(seqs, pad_id)
    return ids, ~mask


@wrong("01.pad_and_mask", "bool")
def mask_as_ints(seqs, pad_id):
    ids, mask = pad_right(seqs, pad_id)
    return ids, mask.long()


@wrong("01.pad_and_mask", "ids differs from the padded batch first at row 0, position 0")
def pad_on_the_left(seqs, pad_id):
    T = max(len(s) for s in seqs)
    ids = torch.tensor([[pad_id] * (T - len(s)) + list(s) for s in seqs], dtype=torch.long)
    mask = torch.tensor([[t >= T - len(s) for t in range(T)] for s in seqs])
    return ids, mask


@wrong("01.pad_and_mask", "shape")
def one_slot_too_many(seqs, pad_id):
    T = max(len(s) for s in seqs) + 1
    ids = torch.tensor([list(s) + [pad_id] * (T - len(s)) for s in seqs], dtype=torch.long)
    return ids, ids != pad_id


@wrong("01.pad_and_mask", "tuple (ids, mask)")
def only_ids(seqs, pad_id):
    return pad_right(seqs, pad_id)[0]


@wrong("01.pad_and_mask", "raised IndexError")
def crashes_on_empty(seqs, pad_id):
    if min(len(s) for s in seqs) == 0:
        raise IndexError("list index out of range")
    return pad_right(seqs, pad_id)


CASES: dict[str, Case] = {
    # 16 speeches padded to the longest were 78% padding (section 3); batches of 64 random
    # speeches have longer longest speeches: more padding.
    "01.batch_size": prediction(
        ("(c)", "C"), {"(a)": "longest", "(b)": "longest"}, no_letter=("d", 3)
    ),
    # mean over the same three vectors, in any order, is the same mean
    "01.average_order": prediction(("(a)", "A)"), {"(b)": "mean"}, no_letter=("c", ["a"])),
    "01.pad_and_mask": Case(
        right=(pad_right, pad_right_loops),
        wrong=wrong_answers("01.pad_and_mask"),
    ),
    "01.truncation": Case(
        right=((6, 2),),  # kept 3,5,5,1 of 4 x 5 slots; 7 loses 2
        wrong=(((2, 6), "wrong order"), ((4, 2), "padding"), ((6, 3), "cut")),
        unreadable=("6, 2",),
    ),
    "01.encode": Case(
        right=([5, 7, 4],),  # ' dehlorw': o=5, w=7, l=4
        wrong=(([6, 8, 5], "start at 0"), ([7, 5, 4], None), ([5, 7], "3 ids")),
    ),
}


def check_batch_size_waste():
    """Padding of random batches of 16 and 64 speeches, counted by hand."""
    from minitx import data

    text = data.load_text("tinyshakespeare")
    lengths = [len(s) for s in text.split("\n\n") if s.strip()]
    random.Random(0).shuffle(lengths)
    for b, want in nb01.batch_size_waste().items():
        batches = [lengths[i : i + b] for i in range(0, len(lengths), b)]
        padding = sum(max(x) * len(x) - sum(x) for x in batches)
        slots = sum(max(x) * len(x) for x in batches)
        assert abs(padding / slots - want) < 1e-12
    assert nb01.batch_size_truth() == "c"


def check_average_order():
    """Both 'dog' vectors mix the same embedding with the mean of the same three rows."""
    a, b = nb01.average_order_vectors()
    assert torch.allclose(a, b, atol=1e-12) and nb01.average_order_truth() == "a"


def check_pad_and_mask_cases():
    """The checker's reference and the instructor's solution agree with a hand-written
    padding on every case the checker uses."""
    for seqs, pad_id, _ in nb01._pad_cases():
        want_ids, want_mask = pad_right(seqs, pad_id)
        for reference in (nb01._padded_batch, solution("01.pad_and_mask")):
            ids, mask = reference(seqs, pad_id)
            assert torch.equal(ids, want_ids) and torch.equal(mask, want_mask)


VALUE_CHECKS = [check_batch_size_waste, check_average_order, check_pad_and_mask_cases]
