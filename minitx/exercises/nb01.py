"""Exercises of notebook 01 (the sequence problem). Expected values come from the package."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from minitx.exercises import close, exercise
from minitx.sequences import (
    CAT_SENTENCE,
    bag_of_words,
    build_vocab,
    padding_stats,
    token_distance,
)
from minitx.tokenizer import CharTokenizer, word_tokenize

BATCH_LENGTHS = [3, 7, 5, 1]
EMBEDDING_TABLE = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
EMBEDDING_IDS = [2, 0, 2]


def _number(answer: Any) -> float:
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        raise TypeError(f"expected a number, got {type(answer).__name__}")
    return float(answer)


@exercise(
    "01.padding_waste",
    f"A batch holds sequences of lengths {BATCH_LENGTHS}, padded to the longest. What "
    "fraction of the batch's slots is padding? Give a float between 0 and 1.",
)
def _(answer):
    value = _number(answer)
    stats = padding_stats(BATCH_LENGTHS)
    if close(value, stats.waste):
        return None
    if close(value, stats.padding, atol=0.5):
        return "that is a count of padding slots; divide it by the number of slots in the batch"
    if close(value, 1 - stats.waste):
        return "that is the fraction of real tokens; the question asks for the padding"
    if not 0 <= value <= 1:
        return "a fraction lies between 0 and 1"
    return "count the slots (batch size x longest length) and the padding slots among them"


@exercise(
    "01.truncation",
    f"The same batch (lengths {BATCH_LENGTHS}) is padded or cut to max_len = 5. How many "
    "slots are padding, and how many tokens are cut off? Answer a tuple (padding, cut).",
)
def _(answer):
    padding, cut = (int(x) for x in answer)
    stats = padding_stats(BATCH_LENGTHS, max_len=5)
    if (padding, cut) == (stats.padding, stats.truncated):
        return None
    if (cut, padding) == (stats.padding, stats.truncated):
        return "right numbers, wrong order: (padding, cut)"
    if padding != stats.padding:
        return "padding: every row has 5 slots; subtract the tokens each row keeps"
    return "cut: only sequences longer than 5 lose tokens, and they lose what is past 5"


@exercise(
    "01.bag_of_words",
    "Give two sentences, as a tuple of two strings, that use the same words in a different "
    "order, so that a bag-of-words model cannot tell them apart.",
)
def _(answer):
    first, second = answer
    if not isinstance(first, str) or not isinstance(second, str):
        raise TypeError("give two strings")
    a, b = word_tokenize(first, lower=True), word_tokenize(second, lower=True)
    if not a or not b:
        return "both sentences need at least one word"
    if a == b:
        return "these are the same sequence of words; change the order"
    vocab = build_vocab(a + b)
    if not torch.equal(bag_of_words(a, vocab), bag_of_words(b, vocab)):
        return "their word counts differ; use exactly the same words, each as often"
    return None


@exercise(
    "01.window",
    f'In "{CAT_SENTENCE}", split with minitx.tokenizer.word_tokenize, a model predicts the '
    "token 'woke' from the k tokens just before it. What is the smallest k for which 'cat' "
    "is inside that window? Give an int.",
)
def _(answer):
    k = _number(answer)
    expected = token_distance(word_tokenize(CAT_SENTENCE), "cat", "woke")
    if k == expected:
        return None
    if k == expected - 1:
        return "one short: the window must reach back to 'cat' itself (punctuation counts)"
    if k < expected:
        return "too small: 'cat' is still outside the window (commas are tokens too)"
    return "too large: a smaller window already contains 'cat'"


@exercise(
    "01.encode",
    "With tok = CharTokenizer.from_text('hello world'), what list of ids does "
    "tok.encode('owl') return? Work it out by hand from the sorted characters.",
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


@exercise(
    "01.embedding",
    f"W = {EMBEDDING_TABLE} is an embedding table (3 tokens, 2 dimensions). What does the "
    f"lookup of ids {EMBEDDING_IDS} return? Give a list of rows (a 3 x 2 nested list).",
)
def _(answer):
    W = torch.tensor(EMBEDDING_TABLE)
    expected = F.embedding(torch.tensor(EMBEDDING_IDS), W)  # (3, 2)
    if close(answer, expected.tolist()):
        return None
    if close(answer, W.tolist()):
        return "that is W itself; the lookup picks one row of W per id"
    return "row i of the result is row ids[i] of W (ids count from 0)"
