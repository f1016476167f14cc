"""Statistics of generated text: how much it repeats itself, and how much of it is copied
verbatim from the corpus.

The verbatim search indexes the corpus once by its 3-character stretches (a sorted array,
kept for the last two corpora searched). For each start in the sample, the index gives
every place its first three characters occur, and each further character keeps only the
places where the corpus goes on with it: when none is left, the match has ended.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np


def _check_str(value: Any, name: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")


def repeated_ngram_fraction(text: str, n: int = 10) -> float:
    """Fraction of the n-grams (runs of ``n`` characters) of ``text`` that already
    occurred earlier in it: ``1 - distinct / total``.

    0 means no stretch of ``n`` characters comes twice; a text stuck in a loop scores
    close to 1. A text shorter than ``n`` has no n-grams and scores 0.
    """
    _check_str(text, "text")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    total = len(text) - n + 1
    if total <= 0:
        return 0.0
    distinct = len({text[i : i + n] for i in range(total)})
    return 1.0 - distinct / total


@dataclass(frozen=True)
class VerbatimMatch:
    """A passage of a sample that occurs verbatim in a corpus."""

    length: int  # characters
    sample_start: int  # where it starts in the sample
    corpus_start: int  # where it first occurs in the corpus (-1 when length is 0)
    text: str


def match_lengths(sample: str, corpus: str) -> np.ndarray:
    """Matching statistics: entry i is the length of the longest prefix of ``sample[i:]``
    that occurs somewhere in ``corpus``. Returns an int64 array of ``len(sample)`` entries."""
    _check_str(sample, "sample")
    _check_str(corpus, "corpus")
    n = len(sample)
    out = np.zeros(n, dtype=np.int64)
    codes, sorted_keys, order = _trigram_index(corpus)
    chars = _code_points(sample)
    for i in range(n):
        if i + 3 > n or (places := _places(chars[i : i + 3], sorted_keys, order)).size == 0:
            # shorter than 3 characters: a direct search is quick
            out[i] = next(k for k in range(min(2, n - i), -1, -1)
                          if k == 0 or sample[i : i + k] in corpus)
            continue
        length = 3  # places: every start of sample[i : i + length] in the corpus
        while i + length < n:
            places = places[places + length < codes.size]
            places = places[codes[places + length] == chars[i + length]]
            if places.size == 0:
                break
            length += 1
        out[i] = length
    return out


def _code_points(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)


def _trigram_keys(codes: np.ndarray) -> np.ndarray:
    # a code point fits in 21 bits, so three fit in one uint64
    return (codes[:-2] << np.uint64(42)) | (codes[1:-1] << np.uint64(21)) | codes[2:]


@functools.lru_cache(maxsize=2)
def _trigram_index(corpus: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(code points of the corpus, its 3-character keys sorted, where each sorted key starts)."""
    codes = _code_points(corpus)
    keys = _trigram_keys(codes) if codes.size >= 3 else np.zeros(0, dtype=np.uint64)
    order = np.argsort(keys, kind="stable")
    return codes, keys[order], order


def _places(three: np.ndarray, sorted_keys: np.ndarray, order: np.ndarray) -> np.ndarray:
    key = _trigram_keys(three)  # (1,)
    lo = np.searchsorted(sorted_keys, key, side="left")[0]
    hi = np.searchsorted(sorted_keys, key, side="right")[0]
    return order[lo:hi]


def longest_verbatim_match(sample: str, corpus: str) -> VerbatimMatch:
    """The longest passage of ``sample`` that occurs verbatim in ``corpus`` (the first one
    when several are as long), with where it sits in both texts."""
    lengths = match_lengths(sample, corpus)
    if lengths.size == 0 or lengths.max() == 0:
        return VerbatimMatch(0, 0, -1, "")
    start = int(lengths.argmax())
    length = int(lengths[start])
    text = sample[start : start + length]
    return VerbatimMatch(length, start, corpus.find(text), text)

