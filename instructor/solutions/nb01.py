"""The instructor's answers to notebook 01's exercises, computed with the package."""

from __future__ import annotations

import random

import torch
from torch import nn

from minitx.data.sequences import corpus_padding_waste, padding_stats
from minitx.data.tokenizer import CharTokenizer

TRUNCATION_LENGTHS, TRUNCATION_MAX_LEN = [3, 7, 5, 1], 5


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


def truncation() -> tuple[int, int]:
    """(padding, cut) of TRUNCATION_LENGTHS padded or cut to TRUNCATION_MAX_LEN."""
    stats = padding_stats(TRUNCATION_LENGTHS, max_len=TRUNCATION_MAX_LEN)
    return stats.padding, stats.truncated


def encode() -> list[int]:
    return CharTokenizer.from_text("hello world").encode("owl")


def pad_and_mask(seqs, pad_id):
    """Pad ``seqs`` (lists of token ids) to the longest: ids (B, T) long and a bool mask
    (B, T), True where a real token stands and False on padding."""
    T = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), T), pad_id, dtype=torch.long)  # (B, T), all padding
    mask = torch.zeros(len(seqs), T, dtype=torch.bool)
    for b, s in enumerate(seqs):
        ids[b, : len(s)] = torch.tensor(s, dtype=torch.long)
        mask[b, : len(s)] = True  # the real tokens
    return ids, mask


SOLUTIONS = {
    "01.batch_size": batch_size_truth,
    "01.average_order": average_order_truth,
    "01.pad_and_mask": lambda: pad_and_mask,
    "01.truncation": truncation,
    "01.encode": encode,
}

MODEL_ANSWERS = {
    "01.bucketing": (
        "Sorted batches are no longer random samples of the data: each batch holds only short "
        "or only long speeches, and length goes with content (short exclamations, long "
        "soliloquies), so consecutive gradient steps are biased in the same direction and the "
        "model drifts towards whatever the current stretch of lengths looks like. A fixed order "
        "also makes every epoch identical. The usual fix is bucketing: group sequences of "
        "similar length into buckets, draw the batches from random buckets in a fresh random "
        "order every epoch (and shuffle inside each bucket), which keeps the padding low while "
        "the sequence of batches stays random."
    ),
}
