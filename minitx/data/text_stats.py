"""Statistics of generated text: how much it repeats itself, and how much of it is copied
verbatim from the corpus.

The verbatim search needs no index: ``match_lengths`` slides a window over the sample
and asks Python's substring search (``str.__contains__``, a fast C routine) whether the
window occurs in the corpus. Because a substring of a match is also a match, the window
only ever moves forward, so a sample of n characters costs at most 2n searches.
"""

from __future__ import annotations

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
    that occurs somewhere in ``corpus``. Returns an int64 array of ``len(sample)`` entries.

    If ``sample[i:j]`` occurs in the corpus, so does ``sample[i+1:j]``: the end of the
    window never moves back, so at most ``2 * len(sample)`` substring searches are run.
    """
    _check_str(sample, "sample")
    _check_str(corpus, "corpus")
    n = len(sample)
    out = np.zeros(n, dtype=np.int64)
    j = 0  # sample[i:j] occurs in the corpus
    for i in range(n):
        j = max(j, i)
        while j < n and sample[i : j + 1] in corpus:
            j += 1
        out[i] = j - i
    return out


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

