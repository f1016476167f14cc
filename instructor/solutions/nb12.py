"""The instructor's answers to notebook 12's exercises, computed with the package."""

from __future__ import annotations

import math
from collections import Counter
from functools import cache
from itertools import pairwise

from minitx.course.exercises.nb12 import (
    BITS_BPE_LOSS,
    BITS_CHAR_LOSS,
    BITS_CHARS,
    BITS_TOKENS,
    LINE,
)


@cache
def line_tokens() -> tuple[int, int]:
    """Tokens of LINE and of LINE in capitals, with the notebook's tokenizer: vocabulary 512
    (255 merges and <|endoftext|>), trained on the first 90% of tiny Shakespeare."""
    from minitx.data import BPETokenizer, load_text, train_val_split

    train_text, _ = train_val_split(load_text("tinyshakespeare"), 0.9)
    tok = BPETokenizer.train(train_text, 512)
    return len(tok.encode(LINE)), len(tok.encode(LINE.upper()))


def capitals_letter(ratio: float) -> str:
    """The letter of 12.capitals' choices for a ratio of token counts (capitals / as written)."""
    if abs(ratio - 1) <= 0.1:
        return "a"
    if ratio < 1.5:
        return "b"
    return "c" if ratio <= 3 else "d"


def capitals_truth() -> str:
    lower, upper = line_tokens()
    return capitals_letter(upper / lower)


def merge_step(chunks, new_id):
    """One step of BPE training: the most frequent adjacent pair inside the chunks (ties to
    the smallest pair), and the chunks with it merged left to right into ``new_id``."""
    counts = Counter()
    for chunk in chunks:
        for a, b in pairwise(chunk):
            counts[a, b] += 1
    pair = min(counts, key=lambda p: (-counts[p], p))
    merged = []
    for chunk in chunks:
        out, i = [], 0
        while i < len(chunk):
            if i + 1 < len(chunk) and (chunk[i], chunk[i + 1]) == pair:
                out.append(new_id)
                i += 2
            else:
                out.append(chunk[i])
                i += 1
        merged.append(out)
    return pair, merged


def bits_per_char() -> tuple[float, float]:
    """(BPE, characters): the BPE loss per token made a loss per character (times tokens /
    characters), then both from nats to bits (divided by ln 2)."""
    bpe = BITS_BPE_LOSS * BITS_TOKENS / BITS_CHARS / math.log(2)
    return bpe, BITS_CHAR_LOSS / math.log(2)


def bits_mistakes() -> dict[str, tuple[float, float]]:
    """The known wrong answers of 12.bits, each with the key of its hint."""
    bpe, char = bits_per_char()
    ln2 = math.log(2)
    return {
        "nats": (bpe * ln2, char * ln2),
        "inverted": (BITS_BPE_LOSS * BITS_CHARS / BITS_TOKENS / ln2, char),
        "times ln 2": (bpe * ln2 * ln2, char * ln2 * ln2),
        "per token": (BITS_BPE_LOSS / ln2, char),
        "ln 10": (bpe * ln2 / math.log(10), char * ln2 / math.log(10)),
        "swapped": (char, bpe),
    }


SOLUTIONS = {
    "12.capitals": capitals_truth,
    "12.merge_step": lambda: merge_step,
    "12.bits": bits_per_char,
}

MODEL_ANSWERS = {
    "12.budget": (
        "Wall time answers 'which is better on this machine in the time I have'; it depends "
        "on the machine, the kernels and the implementation (a softmax over 512 tokens may "
        "run fast or slow), so it is a poor basis for a claim others must reproduce; here "
        "the two runs took about the same time. FLOPs answer 'which is better for the same "
        "arithmetic'; they are fixed by the configuration, and they favour the tokenizer "
        "whose tokens carry more text per unit of work: here BPE, which read about 1.6 "
        "times the characters for the same FLOPs. Characters read answer 'which learns more "
        "from the same data'; they favour characters, whose model then spends about 1.5 "
        "times the FLOPs (713,088 FLOPs a character against 884,736 / 1.88 for BPE), and "
        "they matter when data, not compute, is scarce (several passes over a small "
        "corpus). Report FLOPs as the budget, because it is what a compute-limited run "
        "spends, state the characters each model read and the wall time each took, and say "
        "that the answer can change when data is the limit."
    ),
}
