"""Exercises of notebook 01 (the sequence problem). The answers are kept as seals, never
computed here: the instructor's solutions compute them (instructor/solutions/nb01.py)."""

from __future__ import annotations

import random

import torch

from minitx.course.exercises import exercise, teaching_notes, think
from minitx.course.exercises.checks import compare, implement, predict
from minitx.course.exercises.plain import numbers, plain_int
from minitx.course.exercises.seal import canonical, seal
from minitx.data.sequences import pad_batch
from minitx.nn.masks import padding_mask

TRUNCATION_LENGTHS, TRUNCATION_MAX_LEN = [3, 7, 5, 1], 5

# Seals of the answers (minitx.course.exercises.seal), computed from the instructor's
# solutions (instructor/solutions/nb01.py); the package keeps no answer.
_BATCH_SIZE = "05b3c56c6b3ac8269d31f03dac7fa7752048a7f5"
_AVERAGE_ORDER = "e3daa99597e941dfb9bbbbae70917e886a52a81f"
_TRUNCATION = "16b690dea7ea14593f54e0144a9a22db73f34916"  # (padding, cut)
_TRUNCATION_PADDING = "88eb3888b0cac612e0dcbf7edce196eb1d9fd26d"  # {"padding": ...}
_TRUNCATION_CUT = "be75955a9ef53b347c1b871724368581848dbe05"  # {"cut": ...}
_ENCODE = "f06554762ead045ed334d6ca7f309a392c9c1550"
_ENCODE_SORTED = "9f1be4153a84bdccd97d1d6b387684c6dd31f642"  # the right ids, sorted
_ENCODE_PLUS_ONE = "984598d9c5b4385117e85ba9aaa3c65fbfd04b1e"  # ids counted from 1


# ---- predict: a bigger batch of random speeches -------------------------------------------

predict(
    "01.batch_size",
    "Section 3 cut the speeches, in random order, into batches of 16, each padded to its own "
    "longest speech. Now take batches of 64 random speeches instead. Predict, before running "
    "the experiment:",
    {
        "a": "less of the corpus is padding, because a bigger batch averages out",
        "b": "about the same share is padding (within 3 percentage points)",
        "c": "more of it is padding",
    },
    _BATCH_SIZE,
    "what sets the padded length of a batch is its longest speech; ask whether the "
    "longest of 64 random speeches tends to be longer or shorter than the longest of 16",
)


# ---- predict: averaging a sentence forgets its order ------------------------------------

predict(
    "01.average_order",
    "Section 9 made the crudest contextual vectors: each token's embedding averaged half and "
    "half with its sentence's mean embedding. Apply that to 'dog bites man' and 'man bites "
    "dog'. Predict: does the word 'dog' get (a) the same contextual vector in both sentences, "
    "or (b) different vectors, since 'dog' is the subject in one and the object in the other? "
    "Answer with a letter.",
    {"a": "the same contextual vector in both sentences", "b": "different vectors"},
    _AVERAGE_ORDER,
    "write out what is mixed into the 'dog' vector: its own embedding and the mean of "
    "the sentence's embeddings; which of the two can depend on where the words stand?",
    whole=True,
)


# ---- implement: padding and its mask ------------------------------------------------------


def _pad_cases() -> list[tuple[list[list[int]], int, str]]:
    """Fixed edge cases, then random batches; each is (seqs, pad_id, what it tests)."""
    cases = [
        ([[5, 3, 9], [2], [7, 7, 7, 7, 1]], -1, "three sequences of lengths 3, 1, 5"),
        ([[4]], -1, "a batch of one sequence of length 1"),
        ([[0, 4, 0], [2]], 0, "a batch where some real tokens have the id 0 and pad_id is 0"),
        ([[], [3, 1]], -1, "a batch with an empty sequence"),
    ]
    gen = random.Random(1)
    for _ in range(20):
        seqs = [
            [gen.randrange(10) for _ in range(gen.randint(1, 8))] for _ in range(gen.randint(1, 6))
        ]
        pad_id = gen.choice([0, -1, 99])
        cases.append((seqs, pad_id, f"the random batch {seqs} with pad_id={pad_id}"))
    return cases


def _padded_batch(
    seqs: list[list[int]], pad_id: int, _pad=pad_batch, _mask=padding_mask
) -> tuple[torch.Tensor, torch.Tensor]:
    """The package's padded batch and its key-padding mask, as (B, T): the reference, bound
    when this module was imported (patching the package later changes nothing)."""
    ids, lengths = _pad(seqs, pad_id=pad_id)
    return ids, _mask(lengths, ids.size(1))[:, 0, 0]


def _mask_hint(name: str, got: dict, want: dict, args: tuple) -> str | None:
    """What the mask calls a real token or padding wrongly; the ids' hint is the usual one."""
    if name != "mask":
        return None
    b, t = (int(i) for i in (got["mask"] != want["mask"]).nonzero()[0])
    real = bool(want["mask"][b, t])
    hint = f"the mask calls row {b}, position {t} {'padding' if real else 'a real token'}"
    if real and got["ids"][b, t] == args[1]:  # args: (seqs, pad_id)
        hint += "; a real token can have the same id as the padding"
    return hint


@implement(
    "01.pad_and_mask",
    "Write pad_and_mask(seqs, pad_id): seqs is a list of B lists of token ids of any lengths. "
    "Return (ids, mask): ids a (B, T) long tensor holding the sequences padded with pad_id up "
    "to the longest length T, and mask a (B, T) bool tensor that is True where a real token "
    "stands and False on padding. Later layers use the mask to ignore the padding.",
    forbid=(
        "minitx.data.sequences.pad_batch",
        "minitx.nn.masks.padding_mask",
        "torch.nn.utils.rnn.pad_sequence",
        "torch.nn.utils.rnn.pack_sequence",
        "torch.nn.utils.rnn.pad_packed_sequence",
        "torch.nested.nested_tensor",
        "torch.nested.as_nested_tensor",
        "torch.nested.to_padded_tensor",
    ),
)
def _(fn, _reference=_padded_batch):
    return compare(
        fn,
        ((f"on {what}", (seqs, pad_id)) for seqs, pad_id, what in _pad_cases()),
        _reference,
        names=("ids", "mask"),
        dtype=True,
        atol=0,
        about={"ids": "that is (B, T), T the longest length", "mask": "that is (B, T)"},
        axes=("row", "position"),
        expected="the padded batch",
        diagnose=_mask_hint,
    )


# ---- compute --------------------------------------------------------------------------------


def _whole_numbers(answer, count: int) -> list[int] | str:
    """``count`` whole numbers of any plain type (int, NumPy integer, 0-d tensor, 6.0), or a
    hint."""
    values = numbers(answer, count)
    if isinstance(values, str):
        return values
    whole = [plain_int(v) for v in values]
    if any(w is None for w in whole):
        return "answer with whole numbers: each counts slots or tokens"
    return whole


@exercise(
    "01.truncation",
    f"A batch holds sequences of lengths {TRUNCATION_LENGTHS}. Every sequence is padded or "
    f"cut to max_len = {TRUNCATION_MAX_LEN}. How many slots are padding, and how many tokens "
    "are cut off? Answer a tuple (padding, cut).",
    kind="compute",
)
def _(answer):
    values = _whole_numbers(answer, 2)
    if isinstance(values, str):
        return values
    padding, cut = values
    name = "01.truncation"
    if seal(name, canonical([padding, cut])) == _TRUNCATION:
        return None
    if seal(name, canonical([cut, padding])) == _TRUNCATION:
        return "right numbers, wrong order: (padding, cut)"
    if seal(name, canonical({"padding": padding})) != _TRUNCATION_PADDING:
        return "padding: every row has max_len slots; subtract the tokens each row keeps"
    return "cut: only sequences longer than max_len lose tokens, and they lose what is past it"


@exercise(
    "01.encode",
    "With tok = CharTokenizer.from_text('hello world'), what list of ids does "
    "tok.encode('owl') return? Work it out by hand from the sorted characters.",
    kind="compute",
)
def _(answer):
    values = numbers(answer)
    if isinstance(values, str):
        return values
    if len(values) != 3:
        return "one id per character: 3 ids"
    ids = _whole_numbers(values, 3)
    if isinstance(ids, str):
        return "an id is a whole number, a position in the sorted characters"
    name = "01.encode"
    if seal(name, canonical(ids)) == _ENCODE:
        return None
    if seal(name, canonical(sorted(ids))) == _ENCODE_SORTED:
        return "right ids, wrong order: follow the letters o, w, l"
    if seal(name, canonical(ids)) == _ENCODE_PLUS_ONE:
        return "ids start at 0 (the space is the first, smallest character)"
    return "sort the distinct characters (the space comes first); an id is a position there"


# ---- think ----------------------------------------------------------------------------------

think(
    "01.bucketing",
    "Sorting the speeches by length cut the padding from about three quarters of the corpus "
    "to under 2%. What could go wrong for training if every batch holds speeches of nearly "
    "the same length, and the batches always come in the same order? How would you keep most "
    "of the saving and avoid the problem?",
)


teaching_notes(
    "01",
    40,
    "batch_size pad_and_mask average_order bucketing",
    goals=(
        "Explain why a fixed-size feed-forward network is a poor fit for text: variable "
        "length, position-specific weights, a fixed reach.",
        "Measure what padding wastes and truncation loses on real data, and how sorting by "
        "length changes the waste.",
        "Show that a bag of words (and any plain average) forgets word order.",
        "Turn text into tokens, ids and embedding rows, and show that a lookup equals a "
        "one-hot vector times the embedding matrix.",
    ),
    misconceptions=(
        "Padding is free: the model computes on every padded slot.",
        "A bigger batch averages out the padding; in fact the longest sequence sets its length.",
        "A token id is a quantity (id 40 is 'twice' id 20); it is a row index.",
        "One vector per word is enough for words with several meanings.",
    ),
)
