"""Exercises of notebook 12 (tokenization): a line in capitals, one step of byte-pair
training, bits per character from a loss per token, and what a fair budget is.

The module holds no answer and no function that computes one: the prediction and the
computation are checked against seals (:mod:`~minitx.course.exercises.seal`) made from the
instructor's solutions, which measure with :mod:`minitx.data.bpe`. The learner's merge step
is compared with a reference built on the package's own merge (:func:`minitx.data.bpe._merge`),
bound when this module is imported; the answer may not call it, nor the tokenizer's training
or encoding, nor tiktoken's (where tiktoken is installed). Answers in plain Python (tuples,
lists) are read as they are.
"""

from __future__ import annotations

import importlib.util
import random
from collections import Counter
from itertools import pairwise
from typing import Any

from minitx.course.exercises import exercise, teaching_notes, think
from minitx.course.exercises.checks import first_hint, implement, predict
from minitx.course.exercises.plain import plain_int
from minitx.course.exercises.seal import check_sealed
from minitx.data.bpe import _merge

LINE = "To be, or not to be, that is the question:"
CAPITALS_CHOICES = {
    "a": "about as many tokens, within 10%",
    "b": "more tokens, but fewer than 1.5 times as many",
    "c": "between 1.5 and 3 times as many tokens",
    "d": "more than 3 times as many tokens",
}
# The numbers of the compute exercise: a BPE model's loss per token on a validation text of
# BITS_CHARS characters and BITS_TOKENS tokens, and a character model's on the same text.
BITS_BPE_LOSS, BITS_TOKENS, BITS_CHARS, BITS_CHAR_LOSS = 3.50, 59_436, 111_540, 2.30

# ---- predict: the same line in capitals ----------------------------------------------------

# The seal of the right letter, measured with the notebook's tokenizer by the instructor's
# solution.
_CAPITALS = "3ccdcfec84da0f7f4b6970eec22e87b7a969a20a"

predict(
    "12.capitals",
    f"The notebook's tokenizer (vocabulary 512, trained on the training part of tiny "
    f"Shakespeare) encodes the line {LINE!r}. Predict how many tokens the same line takes "
    f"in capital letters, {LINE.upper()!r}, compared with the line as written:",
    CAPITALS_CHOICES,
    _CAPITALS,
    "the merges come from the training text: how often does it write a word in capitals, "
    "and where?",
    hints={
        "a": "a merge joins bytes, and 'T' 'O' are other bytes than 't' 'o': are the "
             "capital pairs as frequent in Shakespeare's text as the lower-case ones?",
        "b": "more than that: where in the training text do whole words in capitals occur, "
             "and how many different ones are there?",
        "d": "fewer than that: even with no merge at all a letter is one byte, one token; "
             "count the tokens of the line as written first",
    },
)


# ---- implement: one step of BPE training ---------------------------------------------------


def _merge_step_reference(chunks: list[list[int]], new_id: int,
                          _merge: Any = _merge) -> tuple[tuple[int, int], list[list[int]]]:
    """Count the pairs inside each chunk, take the most frequent (ties: the smallest pair),
    and merge it in every chunk with the package's merge (bound when this module is
    imported)."""
    counts = Counter(p for chunk in chunks for p in pairwise(chunk))
    best = min(counts, key=lambda p: (-counts[p], p))
    return best, [_merge(list(chunk), best, new_id) for chunk in chunks]


def _chunks(words: dict[str, int]) -> list[list[int]]:
    """Each word's UTF-8 bytes, repeated as often as it occurs."""
    return [list(w.encode("utf-8")) for w, n in words.items() for _ in range(n)]


def _merge_cases() -> list[tuple[list[list[int]], int]]:
    rng = random.Random(12)
    cases = [
        (_chunks({"low": 1, " low": 4, " lower": 2, " newest": 6, " widest": 3}), 256),
        ([[256, 116], [32, 256, 116], [32, 108, 111, 119], [256, 116]], 257),  # ids > 255
        ([[5, 5, 5, 5, 5], [5, 5], [3, 5]], 300),  # overlapping occurrences of (5, 5)
        ([[7], [8], [7], [8], [1, 2]], 9),  # (7, 8) only across two chunks
        ([[4, 2, 4, 2], [2, 4], [9, 9]], 10),  # a tie: (2, 4) and (4, 2), 2 each
    ]
    for n, top, new in ((30, 6, 20), (60, 300, 301), (12, 3, 40)):
        cases.append(([[rng.randrange(top) for _ in range(rng.randint(1, 7))] for _ in range(n)],
                      new))
    return cases


def _ids(value: Any) -> list[int] | None:
    """A list or tuple of whole numbers as a list of ints, else None."""
    if type(value) not in (list, tuple):
        return None
    ints = [plain_int(v) for v in value]
    return None if any(i is None for i in ints) else ints


def _pair_hint(pair: tuple[int, ...], chunks: list[list[int]]) -> str:
    counts = Counter(p for chunk in chunks for p in pairwise(chunk))
    flat = [i for chunk in chunks for i in chunk]
    across = Counter(pairwise(flat))
    best = max(counts.values())
    if pair not in counts and across.get(pair):
        return ("your pair only occurs across the boundary between two chunks: count the "
                "pairs inside each chunk, never across two")
    if counts.get(pair) == best:
        return "several pairs are the most frequent here: ties go to the smallest pair " \
               "(the smallest a, then the smallest b)"
    once = Counter(p for chunk in {tuple(c) for c in chunks} for p in pairwise(chunk))
    if once and counts.get(pair, 0) < best and pair == min(once, key=lambda p: (-once[p], p)):
        return "a chunk that appears several times in the list counts every time it appears"
    return "count every adjacent pair (a, b) inside each chunk, and take the most frequent"


def _merged_hint(chunk: list[int], pair: tuple[int, ...], new_id: int, got: list[int]) -> str:
    a, b = pair
    if a == b and got == _merge(chunk[::-1], pair, new_id)[::-1]:
        return "you merged from the right: go left to right, so [a, a, a] becomes [new_id, a]"
    return ("replace every occurrence of the pair, left to right and without overlap, by "
            "new_id, and keep every other id in its place")


def _judge(got: Any, chunks: list[list[int]], new_id: int,
           _reference: Any = _merge_step_reference) -> str | None:
    want_pair, want = _reference(chunks, new_id)
    shape = "return a pair (pair, merged): the pair (a, b) you merged, and the chunks after it"
    if type(got) not in (tuple, list) or len(got) != 2:
        return shape
    pair, merged = _ids(got[0]), got[1]
    if pair is None or len(pair) != 2:
        return f"the pair you merged must be two ids (a, b), got {type(got[0]).__name__} " \
               f"{got[0]!r}"[:160]
    if tuple(pair) != want_pair:
        return _pair_hint(tuple(pair), chunks)
    if type(merged) not in (tuple, list) or len(merged) != len(want):
        return (f"merged must hold one chunk for each of the {len(chunks)} chunks, in "
                "their order")
    for k, (chunk, g) in enumerate(zip(chunks, merged, strict=True)):
        ids = _ids(g)
        if ids is None:
            return f"chunk {k} of merged must be a list of ids, got {type(g).__name__}"
        if ids != want[k]:
            return f"the pair is right; chunk {k} is not: " + _merged_hint(chunk, want_pair,
                                                                           new_id, ids)
    return None


# The package's merge; the cut into chunks that its training and encoding start with (a
# classmethod such as BPETokenizer.train cannot be watched by its path); its encoding.
_FORBID = (
    "minitx.data.bpe._merge",
    "minitx.data.bpe._split_on",
    "minitx.data.bpe.BPETokenizer._encode_chunk",
)
_TIKTOKEN = (  # tiktoken's own trainer and encoder, where it is installed
    "tiktoken._educational.bpe_train",
    "tiktoken._educational.bpe_encode",
    "tiktoken.core.Encoding.__init__",
)


@implement(
    "12.merge_step",
    "Write merge_step(chunks, new_id), one step of training a byte-pair encoding. chunks is "
    "a list of chunks, each a list of token ids (a chunk that occurs several times in the "
    "text is in the list that many times). Count every adjacent pair of ids inside each "
    "chunk (never across two chunks), pick the most frequent pair (a, b), ties to the "
    "smallest pair (the smallest a, then the smallest b), and return (pair, merged): the "
    "pair, and a new list of chunks in which every occurrence of the pair, left to right "
    "and without overlap, is replaced by new_id ([7, 7, 7] with the pair (7, 7) becomes "
    "[new_id, 7]). Use plain Python; not the package's tokenizer nor tiktoken. Answer with "
    "the function.",
    forbid=_FORBID + (_TIKTOKEN if importlib.util.find_spec("tiktoken") else ()),
)
def _merge_step(answer: Any) -> str | None:
    return first_hint(answer, _merge_cases(), _judge)


# ---- compute: bits per character ------------------------------------------------------------

# The seal of the right pair to 2 decimals, and of known mistakes, made from the instructor's
# solution.
_BITS = "c8eefb1730ccb80504ae6932ec801f6f0e032d1f"
_BITS_MISTAKES = {
    "2f7b6fa85c2931ba444913cd4b1cea903014f4f5": "those are nats per character: a bit is ln 2 "
                                                "nats, so divide by ln 2",
    "604e940de5fa26cd0ddb03d6d3e711b7a8a8b5ac": "a token holds more than one character, so "
                                                "per character the loss is smaller than per "
                                                "token: multiply by tokens / characters",
    "7b93feddd41b79474804e95864b815ce13dafb96": "from nats to bits divide by ln 2 (a bit is "
                                                "ln 2 nats), do not multiply",
    "455b41f503147c3d61f71959527a1e55844048a1": "the BPE loss is per token: turn it into a "
                                                "loss per character first",
    "524200ab6bc0dba084f39da739619221f0d4dcef": "bits are base-2 logarithms: divide by ln 2, "
                                                "not ln 10",
    "673225472f3f6dfeb45195574cd2087eab332842": "give the pair in the order (BPE, characters)",
}


@exercise(
    "12.bits",
    f"A model trained on BPE tokens has a validation loss of {BITS_BPE_LOSS:.2f} nats per "
    f"token; its validation text is {BITS_CHARS:,} characters long and takes {BITS_TOKENS:,} "
    f"tokens. A character model has a loss of {BITS_CHAR_LOSS:.2f} nats per character on the "
    "same text. Give both in bits per character, to two decimals, as a pair (BPE, characters).",
    kind="compute",
)
def _bits(answer: Any) -> str | None:
    if type(answer) in (tuple, list) and any(isinstance(v, str) for v in answer):
        return "answer with numbers, not strings: a pair such as (1.23, 4.56)"
    return check_sealed(
        "12.bits", answer, _BITS, count=2, decimals=2, hints=_BITS_MISTAKES,
        advice="first the nats of the whole text (the loss per token times the tokens), then "
        "per character, then from nats to bits (1 bit = ln 2 nats)",
    )


# ---- open question -------------------------------------------------------------------------


think(
    "12.budget",
    "Section 5 gave both models the same training FLOPs, so the BPE model read more "
    "characters of Shakespeare than the character model. Would you rather match wall time, "
    "FLOPs, or the characters of text read? Say which question each choice answers, which "
    "tokenizer each one favours, and which you would report.",
)


teaching_notes(
    "12",
    69,
    "capitals merge_step bits budget",
    goals=(
        "Explain why a language model reads neither characters nor whole words, and how "
        "bytes (UTF-8) let a byte-level tokenizer encode any text.",
        "Train a byte-pair encoding by hand and with the package (count pairs inside "
        "chunks, merge the most frequent, repeat), and encode a new text with its merges.",
        "Measure what a tokenizer trained on one text does to others: words in pieces, "
        "letters hidden inside tokens, digits, leading spaces, capitals, other scripts.",
        "Compare models on different tokens fairly: the same blocks, the same FLOPs, "
        "several seeds, scored in bits per character of the same validation text.",
    ),
    misconceptions=(
        "A lower loss per token means a better model: a BPE token holds about two "
        "characters, so its loss per token is higher even where it is better per character.",
        "A tokenizer is neutral: it is trained on a text, and text unlike that text (another "
        "script, capitals, digits) costs more tokens.",
        "The model sees letters: it sees token ids, and the spelling inside a token is "
        "something it must learn.",
    ),
)
