"""Exercises of notebook 09 (what each piece of a GPT buys): decoding, a change of case, and
what a small model shows of the harms of large ones.

The module holds no answer and no function that computes one: a prediction or a hand
computation is checked against the seal of its answer (:mod:`~minitx.course.exercises.seal`),
made from the instructor's solutions (which measure with :mod:`minitx.nn.generation` and the
shipped checkpoint). A function the learner writes is compared with the package's own,
bound when this module is imported, and may not call it nor its siblings. Random inputs are
made under ``torch.random.fork_rng`` so that checking an answer does not move the learner's
random numbers.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from minitx.course.exercises import exercise, teaching_notes, think
from minitx.course.exercises.checks import compare, compute, implement, keyed_letters
from minitx.course.exercises.plain import numbers
from minitx.course.exercises.seal import check_sealed
from minitx.nn.generation import top_p_filter

TEMPERATURE_LOGITS = (2 * math.log(6), 0.0, 0.0)  # [2 ln 6, 0, 0]
TEMPERATURE = 2.0
CASE_CHOICES = {
    "a": "within 0.1 of its loss on the text as written",
    "b": "worse than that, but still better than the counted bigram model",
    "c": "worse than the bigram model, but better than guessing uniformly among the 65 "
    "characters (ln 65)",
    "d": "worse than guessing uniformly",
}


# ---- implement: top-p (nucleus) filtering -------------------------------------------------


def _top_p_cases() -> list[tuple[Tensor, float]]:
    """Random logits of several shapes, and the edge cases: one token, a peaked row,
    p = 1 (keep everything) and a tiny p (keep only the most likely token)."""
    cases = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(8)
        for shape, p in (((6,), 0.5), ((1, 1), 0.3), ((4, 10), 0.9), ((2, 3, 8), 0.6),
                         ((3, 12), 1.0), ((2, 9), 0.01), ((1, 65), 0.75)):  # fmt: skip
            cases.append((2 * torch.randn(*shape, dtype=torch.float64), p))
        peaked = torch.randn(2, 7, dtype=torch.float64)
        peaked[:, 3] += 30.0  # almost all the probability on token 3
        cases.append((peaked, 0.95))
    return cases


def _tokens(n: int) -> str:
    return f"{n} token" if n == 1 else f"{n} tokens"


def _row(index: int, shape: tuple[int, ...]) -> str:
    """Where row ``index`` of the flattened leading dimensions of ``shape`` is."""
    if len(shape) == 1:
        return ""
    position = []
    for size in reversed(shape[:-1]):
        index, i = divmod(index, size)
        position.append(i)
    return f"in row {tuple(reversed(position))}, "


def _top_p_hint(name: str, got: dict, want: dict, args: tuple) -> str:
    """What a learner's filtered logits that differ from the package's likely come from:
    the first row that keeps the wrong tokens, else kept logits changed, else +inf."""
    logits = args[0]
    shape = tuple(logits.shape)
    keep = torch.isfinite(want[name])
    mine = torch.isfinite(got[name])
    for r, (row_mine, row_keep) in enumerate(
        zip(mine.reshape(-1, shape[-1]), keep.reshape(-1, shape[-1]), strict=True)
    ):
        if torch.equal(row_mine, row_keep):
            continue
        where = _row(r, shape)
        n_mine, n_keep = int(row_mine.sum()), int(row_keep.sum())
        if n_mine == shape[-1]:
            return (
                f"{where}every logit is still finite: the tokens outside the smallest set "
                "that reaches p must get -inf (a logit of 0 still has some probability)"
            )
        probs = logits.reshape(-1, shape[-1])[r].softmax(-1)
        if row_mine.any() and (~row_mine).any() and probs[row_mine].min() < probs[~row_mine].max():
            return (
                f"{where}you keep a token that is less likely than one you drop: keep the "
                "most likely tokens, and give the result in the vocabulary's order"
            )
        if n_mine == n_keep:
            return (
                f"{where}you keep the right number of tokens but the wrong ones: keep the "
                "most likely, and give the result in the vocabulary's order"
            )
        if n_mine == n_keep - 1 and not (row_mine & ~row_keep).any():
            return (
                f"{where}you keep {_tokens(n_mine)}, one too few: the token whose "
                "probability makes the sum reach p is kept too"
            )
        return (
            f"{where}you keep {_tokens(n_mine)}, but the smallest set of most likely "
            f"tokens whose probabilities (after a softmax) add up to p has {n_keep}"
        )
    if not torch.equal(got[name][keep], want[name][keep]):
        return "the kept tokens must keep their logits, unchanged: not probabilities, not rescaled"
    return "a dropped token needs the logit -inf, not +inf"


@implement(
    "09.top_p",
    "Write my_top_p_filter(logits, p): logits (..., V) are next-token logits, p a number in "
    "(0, 1]. Keep the smallest set of most likely tokens whose probabilities add up to at "
    "least p, leave their logits as they are, and set every other logit to -inf, so that a "
    "softmax gives those tokens probability 0. Return a new tensor of the same shape. Answer "
    "with the function.",
    forbid=(
        "minitx.nn.generation.top_p_filter",
        "minitx.nn.generation.filter_logits",
        "minitx.nn.generation.sample_next",
        "minitx.nn.generation.next_token_probs",
        "minitx.nn.generation.generate",
        "minitx.nn.generation.stream",
    ),
)
def _top_p(answer: Any, _reference: Any = top_p_filter) -> str | None:
    return compare(
        answer,
        ((f"for logits of shape {tuple(t.shape)} and p={p}", (t, p)) for t, p in _top_p_cases()),
        _reference,
        inputs=("logits",),
        atol=0.0,
        about={"your result": "one logit per token, the same shape as the input"},
        diagnose=_top_p_hint,
    )


# ---- compute: one temperature by hand ------------------------------------------------------


# Seals (:func:`~minitx.course.exercises.seal.seal` of the answer rounded to 3 decimals) of
# the right answer and of known mistakes, made from the instructor's solutions.
_TEMPERATURE = "748430ba47d9a7e7f85f2851875bff69c20fa46e"
_TEMPERATURE_MISTAKES = {
    "fcc2f01a520bdd832e1dbcd996929a1e7b10edfe":
        "that is the probability at temperature 1: divide the logits by T first",
    "95c441c6683771a9bc6faa15af186ad831e8289e":
        "you multiplied the logits by the temperature: divide them by it",
    "881d4037ae0e97abeddb6a0a3bf8e71e81dd8d99":
        "the tokens whose logit is 0 still count in the softmax: exp(0) = 1",
}
_OTHER = "divide every logit by the temperature, then take the softmax over all the tokens"


@compute(
    "09.temperature",
    "Next-token logits are [2 ln 6, 0, 0] (2 ln 6 is about 3.58). With temperature 2, what is "
    "the probability of token 0? Work it out by hand: no calculator is needed. Answer with a "
    "float (3 decimals are enough).",
)
def _temperature(answer: Any) -> str | None:
    hint = check_sealed("09.temperature", answer, _TEMPERATURE, decimals=3, atol=1e-3,
                        hints=_TEMPERATURE_MISTAKES, advice=_OTHER)
    if hint != _OTHER:
        return hint
    # the probability of token 0 at temperature 1: a temperature above 1 gives less
    at_one = math.exp(TEMPERATURE_LOGITS[0]) / sum(math.exp(v) for v in TEMPERATURE_LOGITS)
    if numbers(answer, 1)[0] > at_one:
        return (
            "a temperature above 1 flattens the distribution: the likely token becomes "
            "less likely, not more"
        )
    return _OTHER


# ---- predict: the same text in capitals ----------------------------------------------------


# The seal of the right letters, {'upper': ..., 'lower': ...}, measured on the shipped model by
# the instructor's solution.
_CAPITALS = "4c3e260778bc96703f113d3ad41e98c89da518d5"


@exercise(
    "09.capitals",
    "The shipped model is scored on the validation text twice more: once with every letter "
    "turned into a capital (val_text.upper()), once with every letter in lower case "
    "(val_text.lower()); the same windows, nothing retrained. Predict where each loss lands: "
    + "; ".join(f"({key}) {words}" for key, words in CASE_CHOICES.items())
    + ". Answer {'upper': letter, 'lower': letter}.",
    kind="predict",
)
def _capitals(answer: Any) -> str | None:
    return keyed_letters(answer, CASE_CHOICES, _CAPITALS, {
        "upper": "to this model 'A' and 'a' are two unrelated tokens; where in the "
                 "training text do long runs of capitals occur, and what follows them there?",
        "lower": "which characters of the text does lower-casing change, and how "
                 "many of them are there in a line of verse?",
    }, "09.capitals")


# ---- open question -------------------------------------------------------------------------


think(
    "09.harms",
    "Section 7 measured two things in this small model: its samples reproduce the training "
    "text's skew towards male pronouns, and it writes after a name it has never seen as "
    "confidently as after Romeo's. A company trains a large model on text from the web and "
    "says its outputs 'just reflect the data'. Which harms could measurements like these two "
    "reveal in the large model, which would they miss, and is 'it reflects the data' a "
    "defence?",
)


teaching_notes(
    "09",
    60,
    "top_p capitals harms",
    goals=(
        "Read an ablation ladder fairly: the same batches and budget for every rung, a "
        "counted optimum beside the trained baseline, gaps judged against the seed spread, "
        "and conclusions stated with their order and step count.",
        "Choose a decoding rule knowing what it does to the distribution, and implement "
        "top-p filtering.",
        "Explain why a key-value cache gives the same text for less work while the context "
        "grows, and what it costs in memory.",
        "Test claims about a trained model by changing its input: occlusion rather than "
        "attention maps, verbatim search for memorisation, counts for the corpus's skew.",
    ),
    misconceptions=(
        "The rung that adds the largest drop is the most important piece, whatever the order "
        "in which pieces were added.",
        "An attention heatmap shows what the prediction depends on.",
        "The most likely text is the best text: greedy and beam search give dull loops.",
        "A model that writes fluently and confidently knows something true about what it "
        "writes of.",
        "The model knows that 'A' and 'a' are the same letter; to it they are unrelated ids.",
    ),
)
