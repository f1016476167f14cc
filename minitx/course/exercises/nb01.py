"""Exercises of notebook 01 (the sequence problem). Expected values come from the package."""

from __future__ import annotations

import random
from functools import cache

import torch
from torch import nn

from minitx.course.exercises import exercise, teaching_notes, think
from minitx.course.exercises.checks import compare, implement, predict
from minitx.data.sequences import corpus_padding_waste, pad_batch, padding_stats
from minitx.data.tokenizer import CharTokenizer
from minitx.nn.masks import padding_mask

TRUNCATION_LENGTHS, TRUNCATION_MAX_LEN = [3, 7, 5, 1], 5


# ---- predict: a bigger batch of random speeches -------------------------------------------


@cache
def batch_size_waste() -> dict[int, float]:
    """Padding fraction over tiny Shakespeare's speeches, in random order (seed 0), cut into
    batches of 16 and of 64, each padded to its own longest speech."""
    from minitx import data

    text = data.load_text("tinyshakespeare")
    lengths = [len(s) for s in text.split("\n\n") if s.strip()]
    random.Random(0).shuffle(lengths)
    return {b: corpus_padding_waste(lengths, batch_size=b) for b in (16, 64)}


def batch_size_truth() -> str:
    """'a' less padding with 64, 'b' within 3 points of the 16-speech batches, 'c' more."""
    waste = batch_size_waste()
    if abs(waste[64] - waste[16]) < 0.03:
        return "b"
    return "a" if waste[64] < waste[16] else "c"


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
    batch_size_truth,
    "what sets the padded length of a batch is its longest speech; ask whether the "
    "longest of 64 random speeches tends to be longer or shorter than the longest of 16",
)


# ---- predict: averaging a sentence forgets its order ------------------------------------


def average_order_vectors() -> tuple[torch.Tensor, torch.Tensor]:
    """The 'dog' vector of 'dog bites man' and of 'man bites dog' after section 9's mixing
    (half the token's embedding, half the sentence's mean embedding)."""
    words = ["bites", "dog", "man"]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        emb = nn.Embedding(len(words), 8).double()
    out = []
    for sentence in ("dog bites man", "man bites dog"):
        tokens = sentence.split()
        E = emb(torch.tensor([words.index(w) for w in tokens]))  # (3, 8)
        ctx = 0.5 * E + 0.5 * E.mean(0)
        out.append(ctx[tokens.index("dog")].detach())
    return out[0], out[1]


def average_order_truth() -> str:
    """'a' if the two 'dog' vectors agree (up to rounding), 'b' if they differ."""
    a, b = average_order_vectors()
    return "a" if torch.allclose(a, b, rtol=0, atol=1e-12) else "b"


predict(
    "01.average_order",
    "Section 9 made the crudest contextual vectors: each token's embedding averaged half and "
    "half with its sentence's mean embedding. Apply that to 'dog bites man' and 'man bites "
    "dog'. Predict: does the word 'dog' get (a) the same contextual vector in both sentences, "
    "or (b) different vectors, since 'dog' is the subject in one and the object in the other? "
    "Answer with a letter.",
    {"a": "the same contextual vector in both sentences", "b": "different vectors"},
    average_order_truth,
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


def _padded_batch(seqs: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The package's padded batch and its key-padding mask, as (B, T): the reference."""
    ids, lengths = pad_batch(seqs, pad_id=pad_id)
    return ids, padding_mask(lengths, ids.size(1))[:, 0, 0]


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
)
def _(fn):
    return compare(
        fn,
        ((f"on {what}", (seqs, pad_id)) for seqs, pad_id, what in _pad_cases()),
        _padded_batch,
        names=("ids", "mask"),
        dtype=True,
        atol=0,
        about={"ids": "that is (B, T), T the longest length", "mask": "that is (B, T)"},
        axes=("row", "position"),
        expected="the padded batch",
        diagnose=_mask_hint,
    )


# ---- compute --------------------------------------------------------------------------------


def _truncation() -> tuple[int, int]:
    stats = padding_stats(TRUNCATION_LENGTHS, max_len=TRUNCATION_MAX_LEN)
    return stats.padding, stats.truncated


@exercise(
    "01.truncation",
    f"A batch holds sequences of lengths {TRUNCATION_LENGTHS}. Every sequence is padded or "
    f"cut to max_len = {TRUNCATION_MAX_LEN}. How many slots are padding, and how many tokens "
    "are cut off? Answer a tuple (padding, cut).",
    kind="compute",
)
def _(answer):
    padding, cut = (int(x) for x in answer)
    want_padding, want_cut = _truncation()
    if (padding, cut) == (want_padding, want_cut):
        return None
    if (cut, padding) == (want_padding, want_cut):
        return "right numbers, wrong order: (padding, cut)"
    if padding != want_padding:
        return "padding: every row has max_len slots; subtract the tokens each row keeps"
    return "cut: only sequences longer than max_len lose tokens, and they lose what is past it"


@exercise(
    "01.encode",
    "With tok = CharTokenizer.from_text('hello world'), what list of ids does "
    "tok.encode('owl') return? Work it out by hand from the sorted characters.",
    kind="compute",
)
def _(answer):
    ids = [int(i) for i in answer]
    tok = CharTokenizer.from_text("hello world")
    expected = tok.encode("owl")
    if ids == expected:
        return None
    if len(ids) != 3:
        return "one id per character: 3 ids"
    if sorted(ids) == sorted(expected):
        return "right ids, wrong order: follow the letters o, w, l"
    if [i - 1 for i in ids] == expected:
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
