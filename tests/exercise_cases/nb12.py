"""Exercise cases of notebook 12: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import importlib
import math
from collections import Counter, defaultdict
from itertools import pairwise

import numpy as np
import torch

from exercise_cases import Case, prediction, solution, wrong, wrong_answers
from minitx.course.exercises import answers
from minitx.course.exercises.seal import canonical, seal
from minitx.data import bpe
from minitx.data.bpe import BPETokenizer

# ---- 12.merge_step: learner functions, right and wrong -------------------------------------


def merge_step_dict(chunks, new_id):
    """Right, with a plain dict and a sort: the most frequent, then the smallest pair."""
    counts = {}
    for chunk in chunks:
        for i in range(len(chunk) - 1):
            pair = (chunk[i], chunk[i + 1])
            counts[pair] = counts.get(pair, 0) + 1
    pair = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[0][0]
    merged = []
    for chunk in chunks:
        out = list(chunk)
        i = 0
        while i < len(out) - 1:
            if (out[i], out[i + 1]) == pair:
                out[i : i + 2] = [new_id]
            i += 1
        merged.append(out)
    return pair, merged


def merge_step_tuples(chunks, new_id):
    """Right, returning tuples: a list pair, chunks as tuples, a defaultdict to count."""
    counts = defaultdict(int)
    for chunk in chunks:
        for i in range(1, len(chunk)):
            counts[chunk[i - 1], chunk[i]] += 1
    top = max(counts.values())
    pair = min(p for p, n in counts.items() if n == top)

    def merge(chunk):
        out, skip = [], False
        for i, x in enumerate(chunk):
            if skip:
                skip = False
            elif i + 1 < len(chunk) and (x, chunk[i + 1]) == pair:
                out.append(new_id)
                skip = True
            else:
                out.append(x)
        return tuple(out)

    return list(pair), tuple(merge(c) for c in chunks)


def merge_step_numpy(chunks, new_id):
    """Right, counting with NumPy (pairs as a * base + b) and returning NumPy integers."""
    base = max(max(c) for c in chunks) + 1
    codes = np.concatenate([np.array(c[:-1]) * base + np.array(c[1:]) for c in chunks
                            if len(c) > 1])
    values, counts = np.unique(codes, return_counts=True)  # values sorted: ties go smallest
    a, b = divmod(values[np.argmax(counts)], base)
    merged = []
    for chunk in chunks:
        out, i = [], 0
        while i < len(chunk):
            if i + 1 < len(chunk) and chunk[i] == a and chunk[i + 1] == b:
                out.append(new_id)
                i += 2
            else:
                out.append(chunk[i])
                i += 1
        merged.append(np.array(out))
    return (np.int64(a), np.int64(b)), [list(m) for m in merged]


def merge_step_most_common(chunks, new_id):
    """Right, with Counter.most_common and the ties sorted out after."""
    counts = Counter(p for c in chunks for p in pairwise(c))
    top = counts.most_common(1)[0][1]
    pair = sorted(p for p, n in counts.items() if n == top)[0]
    return pair, [_merge_left(c, pair, new_id) for c in chunks]


def _merge_left(chunk, pair, new_id):
    out, i = [], 0
    while i < len(chunk):
        if tuple(chunk[i : i + 2]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(chunk[i])
            i += 1
    return out


def _count(chunks):
    return Counter(p for c in chunks for p in pairwise(c))


@wrong("12.merge_step", "across the boundary")
def counts_across_chunks(chunks, new_id):
    """Flattens the chunks first, so pairs cross chunk boundaries."""
    flat = [i for c in chunks for i in c]
    counts = Counter(pairwise(flat))
    pair = min(counts, key=lambda p: (-counts[p], p))
    return pair, [_merge_left(c, pair, new_id) for c in chunks]


@wrong("12.merge_step", "ties go to the smallest pair")
def breaks_ties_to_the_largest(chunks, new_id):
    counts = _count(chunks)
    pair = max(counts, key=lambda p: (counts[p], p))
    return pair, [_merge_left(c, pair, new_id) for c in chunks]


@wrong("12.merge_step", "counts every time it appears")
def counts_each_chunk_once(chunks, new_id):
    counts = _count({tuple(c) for c in chunks})
    pair = min(counts, key=lambda p: (-counts[p], p))
    return pair, [_merge_left(c, pair, new_id) for c in chunks]


@wrong("12.merge_step", "from the right")
def merges_from_the_right(chunks, new_id):
    counts = _count(chunks)
    pair = min(counts, key=lambda p: (-counts[p], p))
    return pair, [_merge_left(c[::-1], pair[::-1], new_id)[::-1] for c in chunks]


@wrong("12.merge_step", "replace every occurrence")
def merges_the_first_only(chunks, new_id):
    counts = _count(chunks)
    pair = min(counts, key=lambda p: (-counts[p], p))
    merged = []
    for c in chunks:
        c = list(c)
        for i in range(len(c) - 1):
            if (c[i], c[i + 1]) == pair:
                c[i : i + 2] = [new_id]
                break
        merged.append(c)
    return pair, merged


@wrong("12.merge_step", "return a pair (pair, merged)")
def returns_the_chunks_only(chunks, new_id):
    return merge_step_most_common(chunks, new_id)[1]


@wrong("12.merge_step", "one chunk for each")
def drops_the_single_ids(chunks, new_id):
    pair, merged = merge_step_most_common(chunks, new_id)
    return pair, [m for m in merged if len(m) > 1]


# ---- cheats: the package's own pieces and tiktoken's, however reached ------------------------


def by_package_merge(chunks, new_id):
    counts = _count(chunks)
    pair = min(counts, key=lambda p: (-counts[p], p))
    return pair, [bpe._merge(list(c), pair, new_id) for c in chunks]


def by_getattr(chunks, new_id):
    module = importlib.import_module("minitx.data." + "bpe")
    counts = _count(chunks)
    pair = min(counts, key=lambda p: (-counts[p], p))
    return pair, [getattr(module, "_mer" + "ge")(list(c), pair, new_id) for c in chunks]


def by_training(chunks, new_id):
    """Trains the package's tokenizer on the chunks (as text) for one merge."""
    text = "".join(bytes(c).decode("latin-1") for c in chunks if max(c) < 256)
    tok = BPETokenizer.train(text, 257, special_tokens=())
    pair = tok.merges[0]
    return pair, [_merge_left(c, pair, new_id) for c in chunks]


def by_the_checkers_reference(chunks, new_id):
    from minitx.course.exercises import nb12

    return nb12._merge_step_reference(chunks, new_id)


def by_tiktoken(chunks, new_id):
    """tiktoken's educational trainer on the chunks as text."""
    from tiktoken import _educational

    text = " ".join(bytes(c).decode("latin-1") for c in chunks if max(c) < 256)
    ranks = _educational.bpe_train(text, 257, r"\S+")
    joined = max(ranks, key=ranks.get)
    return (joined[0], joined[1]), chunks


CHEATS = {
    "12.merge_step": (by_package_merge, by_getattr, by_training, by_the_checkers_reference,
                      by_tiktoken),
}


CASES = {
    "12.capitals": prediction(
        ("C", " (c) ", "between 1.5 and 3 times as many tokens"),
        {"a": "capital pairs", "b": "more than that", "d": "fewer than that"},
    ),
    "12.merge_step": Case(
        right=(solution("12.merge_step"), merge_step_dict, merge_step_tuples,
               merge_step_numpy, merge_step_most_common),
        wrong=wrong_answers("12.merge_step", (5, "a function")),
    ),
    "12.bits": Case(
        right=((2.69, 3.32), [2.69, 3.32], (2.6907, 3.3182), np.array([2.69, 3.32]),
               torch.tensor([2.69, 3.32]), (np.float64(2.69), 3.32), (2.694, 3.316)),
        wrong=(
            ((1.87, 2.30), "divide by ln 2"),
            ((9.48, 3.32), "multiply by tokens / characters"),
            ((1.29, 1.59), "do not multiply"),
            ((5.05, 3.32), "loss per character first"),
            ((0.81, 1.00), "not ln 10"),
            ((3.32, 2.69), "the order (BPE, characters)"),
            ((2.60, 3.32), "first the nats of the whole text"),
            ("2.69, 3.32", "answer with numbers"),
            (("2.69", "3.32"), "numbers, not strings"),
            (2.69, "a list of 2 numbers"),
            ((2.69, 3.32, 0.0), "give 2 numbers"),
        ),
    ),
}


def capitals_by_hand():
    """The line takes 18 tokens as written and 38 in capitals: 2.1 times as many, (c)."""
    from minitx.course.exercises import nb12

    key = answers.key("12")
    assert key.line_tokens() == (18, 38)
    assert 1.5 < 38 / 18 <= 3 and solution("12.capitals") == "c"
    assert seal("12.capitals", "c") == nb12._CAPITALS


def bits_by_hand():
    """3.50 nats x 59,436 tokens = 208,026 nats over 111,540 characters, 1.865 nats and
    2.69 bits a character; 2.30 nats a character is 3.32 bits."""
    from minitx.course.exercises import nb12

    nats = 3.50 * 59_436
    assert nats == 208_026
    assert math.isclose(nats / 111_540 / math.log(2), 2.6907, abs_tol=1e-4)
    assert math.isclose(2.30 / math.log(2), 3.3182, abs_tol=1e-4)
    got = solution("12.bits")
    assert [round(v, 2) for v in got] == [2.69, 3.32]
    assert seal("12.bits", canonical([2.69, 3.32], 2)) == nb12._BITS
    mistakes = answers.key("12").bits_mistakes()
    assert set(nb12._BITS_MISTAKES) == {
        seal("12.bits", canonical([round(v, 2) for v in m], 2)) for m in mistakes.values()}


def merge_reference_by_hand():
    """Sennrich et al.'s words: 'es' and 'st' both occur 9 times, and 'es' (101, 115) is
    the smaller pair; every 'e' 's' of ' newest' and ' widest' becomes 256."""
    from minitx.course.exercises import nb12

    chunks, new_id = nb12._merge_cases()[0]
    counts = _count(chunks)
    assert counts[101, 115] == counts[115, 116] == 9 == max(counts.values())
    pair, merged = nb12._merge_step_reference(chunks, new_id)
    assert pair == (101, 115)
    assert merged[-1] == [32, 119, 105, 100, 256, 116]  # ' wid' + 'es' + 't'
    assert solution("12.merge_step")(chunks, new_id) == (pair, merged)
    assert nb12._merge_step_reference([[5, 5, 5, 5, 5]], 9) == ((5, 5), [[9, 9, 5]])


VALUE_CHECKS = [capitals_by_hand, bits_by_hand, merge_reference_by_hand]
