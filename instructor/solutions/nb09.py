"""The instructor's answers to notebook 09's exercises."""

from __future__ import annotations

from torch import Tensor

from minitx.course.exercises.nb09 import case_truth, expected_temperature


def top_p_filter(logits: Tensor, p: float) -> Tensor:
    """Keep the most likely tokens until their probabilities reach p; -inf for the rest."""
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs  # mass of the tokens more likely than this one
    drop_sorted = before >= p  # p is reached without this token
    drop = drop_sorted.scatter(-1, order, drop_sorted)  # back to vocabulary order
    return logits.masked_fill(drop, float("-inf"))


def longest_match(sample: str, corpus: str) -> int:
    """Length of the longest piece of sample that occurs verbatim in corpus."""
    best = 0
    for start in range(len(sample)):
        # only a piece longer than the best so far is worth looking for
        while start + best < len(sample) and sample[start : start + best + 1] in corpus:
            best += 1
    return best


SOLUTIONS = {
    "09.top_p": lambda: top_p_filter,
    "09.temperature": expected_temperature,
    "09.capitals": case_truth,
    "09.longest_match": lambda: longest_match,
}

MODEL_ANSWERS = {
    "09.harms": (
        "Counting who appears and in which roles in the training text and in the samples shows "
        "whether the model reproduces (or amplifies) the corpus's skews, and comparing its "
        "confidence on real and invented entities shows that fluency and confidence are no sign "
        "of truth: the model has no notion of whether a person or a fact exists. Neither "
        "measurement finds harms that counts of words do not see: stereotypes carried by context "
        "(which jobs, adjectives or crimes go with which group), toxic or private text it can "
        "reproduce when prompted (that needs targeted searches of samples against the corpus, "
        "as in section 6, and red-teaming), or how people act on its answers. 'It reflects the "
        "data' describes the mechanism, it does not excuse the result: whoever chooses the "
        "corpus, the filtering and where the model is used is responsible for what it says, and "
        "a skew that was a fact about plays four centuries old becomes a choice when it is "
        "served to users today."
    ),
}
