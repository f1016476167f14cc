"""Exercise cases of notebook 01: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import importlib
import random

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence

from exercise_cases import Case, prediction, solution, wrong, wrong_answers
from minitx.course.exercises import answers, nb01
from minitx.data.sequences import pad_batch
from minitx.nn.masks import padding_mask

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


def pad_numpy(seqs, pad_id):
    """In NumPy, then handed back as tensors."""
    T = max(len(s) for s in seqs)
    ids = np.full((len(seqs), T), pad_id, dtype=np.int64)
    lengths = np.array([len(s) for s in seqs])
    for b, s in enumerate(seqs):
        ids[b, : len(s)] = s
    mask = np.arange(T)[None, :] < lengths[:, None]
    return torch.from_numpy(ids), torch.from_numpy(mask)


def pad_by_cat(seqs, pad_id):
    """Each row: its tokens, then a run of pad_id, joined with torch.cat."""
    T = max(len(s) for s in seqs)
    rows = [torch.cat([torch.tensor(s, dtype=torch.long), torch.full((T - len(s),), pad_id)])
            for s in seqs]
    lengths = torch.tensor([len(s) for s in seqs])
    return torch.stack(rows), torch.arange(T).expand(len(seqs), T) < lengths[:, None]


# ---- cheats: the package's or PyTorch's padding, in every wrapping ------------------------


def cheat_pad_batch_two_lines(seqs, pad_id):
    ids, lengths = pad_batch(seqs, pad_id=pad_id)
    return ids, torch.arange(ids.size(1)) < lengths[:, None]


def cheat_pad_batch_clone(seqs, pad_id):
    ids, lengths = pad_batch(seqs, pad_id)
    return ids.clone() + 0, padding_mask(lengths, ids.size(1))[:, 0, 0].clone()


def cheat_tuple(seqs, pad_id):
    ids, lengths = pad_batch(list(seqs), pad_id=int(pad_id))
    return tuple([ids, padding_mask(lengths.tolist(), ids.size(1))[:, 0, 0]])


def cheat_pad_sequence(seqs, pad_id):
    rows = [torch.tensor(s, dtype=torch.long) for s in seqs]
    ids = pad_sequence(rows, batch_first=True, padding_value=pad_id)
    lengths = torch.tensor([len(s) for s in seqs])
    return ids, torch.arange(ids.size(1)) < lengths[:, None]


def cheat_by_getattr(seqs, pad_id):
    pad = getattr(importlib.import_module("minitx.data.sequences"), "pad" + "_batch")
    ids, lengths = pad(seqs, pad_id=pad_id)
    return ids, torch.arange(ids.size(1)) < lengths[:, None]


def cheat_instructor_of_old(seqs, pad_id):
    """The answer key's old solution: the package's pad_batch, then the mask."""
    ids, lengths = pad_batch(seqs, pad_id=pad_id)
    mask = torch.arange(ids.size(1)) < lengths[:, None]  # (B, T)
    return ids, mask


CHEATS = {
    "01.pad_and_mask": (
        pad_batch,
        cheat_pad_batch_two_lines,
        cheat_pad_batch_clone,
        cheat_tuple,
        cheat_pad_sequence,
        cheat_by_getattr,
        cheat_instructor_of_old,
    ),
}


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
        right=(pad_right, pad_right_loops, pad_numpy, pad_by_cat),
        wrong=wrong_answers("01.pad_and_mask"),
    ),
    "01.truncation": Case(
        # kept 3,5,5,1 of 4 x 5 slots; 7 loses 2; in any plain type
        right=((6, 2), [6.0, 2.0], (np.int64(6), np.int64(2)), np.array([6, 2]),
               torch.tensor([6, 2]), (torch.tensor(6), torch.tensor(2.0))),
        wrong=(((2, 6), "wrong order"), ((4, 2), "padding"), ((6, 3), "cut"),
               ("6, 2", "answer with numbers"), ((6.5, 2), "whole numbers"),
               ((6, 2, 0), "give 2 numbers")),
    ),
    "01.encode": Case(
        # ' dehlorw': o=5, w=7, l=4
        right=([5, 7, 4], np.array([5, 7, 4]), torch.tensor([5, 7, 4]), (5.0, 7.0, 4.0)),
        wrong=(([6, 8, 5], "start at 0"), ([7, 5, 4], None), ([5, 7], "3 ids"),
               ("5, 7, 4", "answer with numbers")),
    ),
}


def check_batch_size_waste():
    """Padding of random batches of 16 and 64 speeches, counted by hand."""
    from minitx import data

    text = data.load_text("tinyshakespeare")
    lengths = [len(s) for s in text.split("\n\n") if s.strip()]
    random.Random(0).shuffle(lengths)
    key = answers.key("01")
    for b, want in key.batch_size_waste().items():
        batches = [lengths[i : i + b] for i in range(0, len(lengths), b)]
        padding = sum(max(x) * len(x) - sum(x) for x in batches)
        slots = sum(max(x) * len(x) for x in batches)
        assert abs(padding / slots - want) < 1e-12
    assert solution("01.batch_size") == "c"


def check_average_order():
    """Both 'dog' vectors mix the same embedding with the mean of the same three rows."""
    a, b = answers.key("01").average_order_vectors()
    assert torch.allclose(a, b, atol=1e-12) and solution("01.average_order") == "a"


def check_counts():
    assert tuple(solution("01.truncation")) == (6, 2)
    assert solution("01.encode") == [5, 7, 4]
    assert answers.key("01").TRUNCATION_LENGTHS == nb01.TRUNCATION_LENGTHS
    assert answers.key("01").TRUNCATION_MAX_LEN == nb01.TRUNCATION_MAX_LEN


def check_pad_and_mask_cases():
    """The checker's reference and the instructor's solution agree with a hand-written
    padding on every case the checker uses."""
    for seqs, pad_id, _ in nb01._pad_cases():
        want_ids, want_mask = pad_right(seqs, pad_id)
        for reference in (nb01._padded_batch, solution("01.pad_and_mask")):
            ids, mask = reference(seqs, pad_id)
            assert torch.equal(ids, want_ids) and torch.equal(mask, want_mask)


VALUE_CHECKS = [check_batch_size_waste, check_average_order, check_counts,
                check_pad_and_mask_cases]
