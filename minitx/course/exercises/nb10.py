"""Exercises of notebook 10 (the encoder-decoder transformer): a prediction (what a change
in the source reaches), the decoder's input, one beam-search step, what the KV cache saves,
and an open question.

The module holds no answer and no function that computes one: the prediction and the key
counts are checked against seals (:mod:`~minitx.course.exercises.seal`) made from the
instructor's solutions, which measure them with :mod:`minitx.nn.encoder_decoder`. A function
the learner writes is compared with the package's own (:mod:`minitx.nn.generation`,
:mod:`minitx.nn.encoder_decoder`), bound when this module is imported, and may not call it
nor the decoders built on it. Random inputs are made under ``torch.random.fork_rng`` so
that checking an answer does not move the learner's random numbers.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from minitx.course.exercises import teaching_notes, think
from minitx.course.exercises.checks import (
    compare,
    compute,
    first_hint,
    implement,
    outputs,
    predict,
    shape_hint,
)
from minitx.course.exercises.plain import plain_int
from minitx.course.exercises.seal import canonical, seal
from minitx.nn import encoder_decoder, generation

# What every implement exercise of this notebook forbids: the package's decoders, which do
# both exercises' work.
_DECODERS = (
    "minitx.nn.generation.beam_search",
    "minitx.nn.gpt.GPT.beam_search",
    "minitx.nn.encoder_decoder.DateTransformer.beam_search",
    "minitx.nn.encoder_decoder.DateTransformer.greedy_decode",
)


def _shift_cases() -> list[tuple[Tensor, int]]:
    cases = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(9)
        for B, T, bos in ((1, 1, 1), (2, 1, 3), (1, 2, 1), (3, 7, 1), (4, 11, 5), (2, 22, 1)):
            cases.append((torch.randint(0, 15, (B, T)), bos))
    return cases


def _shift_hint(name: str, got: dict, want: dict, args: tuple) -> str:
    """The first position where the learner's decoder input differs, and both ids there."""
    b, t = (got[name] != want[name]).nonzero()[0].tolist()
    return (
        f"the first difference is at row {b}, column {t}: you have {int(got[name][b, t])}, "
        f"the decoder should read {int(want[name][b, t])}"
    )


@implement(
    "10.shift_right",
    "Write shift_right(tgt, bos_id): tgt is a (B, T) tensor of target ids; return the "
    "decoder's input under teacher forcing, a new (B, T) tensor: the start id, then the "
    "target one step late (its last token dropped). Answer with the function.",
    forbid=("minitx.nn.encoder_decoder.shift_right", *_DECODERS),
)
def _shift_right(answer: Any, _reference: Any = encoder_decoder.shift_right) -> str | None:
    return compare(
        answer,
        (
            (f"for tgt of shape {tuple(tgt.shape)} and bos_id={bos}", (tgt, bos))
            for tgt, bos in _shift_cases()
        ),
        _reference,
        names=("your decoder input",),
        inputs=("tgt",),
        dtype=True,
        about={"your decoder input": "the decoder reads one token per target position"},
        diagnose=_shift_hint,
    )


def _beam_cases() -> list[tuple[Tensor, Tensor, int]]:
    cases = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(19)
        for B, W, V, width, first in ((1, 1, 5, 1, False), (2, 3, 7, 3, False),
                                      (2, 3, 7, 2, False), (1, 4, 6, 4, True),
                                      (3, 2, 4, 5, False), (2, 4, 15, 4, True)):  # fmt: skip
            log_probs = torch.log_softmax(torch.randn(B, W, V, dtype=torch.float64), dim=-1)
            scores = -5 * torch.rand(B, W, dtype=torch.float64)
            if first:  # the first step: only beam 0 exists
                scores[:, 1:] = float("-inf")
            cases.append((log_probs, scores, width))
    return cases


BEAM_OUTPUTS = ("scores", "parent", "token")


@implement(
    "10.beam_step",
    "Write beam_step(log_probs, beam_scores, beam_width): log_probs (B, W, V) are the "
    "next-token log-probabilities of W beams, beam_scores (B, W) their summed "
    "log-probabilities so far (-inf for beams that do not exist yet). Return (scores, parent, "
    "token), each (B, beam_width), best first: the beam_width best extensions of any beam "
    "by any token, the beam each extends, and the token it appends. Answer with the function.",
    forbid=("minitx.nn.generation.beam_step", *_DECODERS),
)
def _beam_step(answer: Any, _reference: Any = generation.beam_step) -> str | None:
    for log_probs, beam_scores, width in _beam_cases():
        B, W, V = log_probs.shape
        case = f"with log_probs {(B, W, V)}, beam_width={width}"
        got, hint = outputs(answer, (log_probs, beam_scores, width), case, BEAM_OUTPUTS)
        if got is not None:
            each = torch.empty(B, width)
            about = "each of the three is (B, beam_width)"
            named = zip(BEAM_OUTPUTS, got, strict=True)
            hints = (shape_hint(t, each, n, case, about) for n, t in named)
            hint = next((h for h in hints if h), None)
        if hint is not None:
            return hint
        scores, parent, token = (t.double() for t in got)
        e_scores = _reference(log_probs, beam_scores, width)[0]
        if not torch.allclose(scores, e_scores, atol=1e-9):
            alone = torch.topk(log_probs.view(B, W * V), width, dim=-1).values
            if torch.allclose(scores, alone, atol=1e-9):
                return (
                    "a candidate's score is the whole beam's log-probability: add the "
                    "score of the beam it extends"
                )
            if torch.allclose(scores.sort(dim=-1, descending=True).values, e_scores, atol=1e-9):
                return f"{case}, the right candidates, but keep them best first"
            b, k = (~torch.isclose(scores, e_scores, atol=1e-9)).nonzero()[0].tolist()
            return (
                f"{case}, the first wrong score is at row {b}, position {k}: "
                "compare every beam extended by every token, all W * V of them"
            )
        picked = (
            beam_scores.gather(1, parent.long().clamp(0, W - 1))
            + log_probs[
                torch.arange(B)[:, None],
                parent.long().clamp(0, W - 1),
                token.long().clamp(0, V - 1),
            ]
        )
        bad = ~torch.isclose(picked, e_scores, atol=1e-9)
        bad |= (parent < 0) | (parent >= W) | (token < 0) | (token >= V)
        if bad.any():
            b, k = bad.nonzero()[0].tolist()
            return (
                f"{case}, the scores are right, but parent[{b}, {k}] and "
                f"token[{b}, {k}] do not name the candidate that has that score"
            )
    return None


# ---- predict: one source character changes -----------------------------------------------

SOURCE_EXAMPLE = "sat 14 march 1998"
SOURCE_CHANGE = (8, "u")  # 'march' becomes 'murch': position 8 of the source
SOURCE_CHOICES = {
    "a": "none of them",
    "b": "only the positions from 8 on",
    "c": "all 11 of them",
    "d": "only the two that write the month",
}


# The seal of the right letter, measured on an untrained DateTransformer by the instructor's
# solution.
_SOURCE_CHANGE = "1e717258808e2ce96a580e4784dcab5dd0a3fcea"


predict(
    "10.source_change",
    f"Feed the untrained date transformer the source {SOURCE_EXAMPLE!r} and the shifted "
    "target of '1998-03-14' (11 decoder positions, teacher forcing). Now change source "
    f"character {SOURCE_CHANGE[0]} (the 'a' of 'march') to {SOURCE_CHANGE[1]!r} and feed "
    "the same target again. Which decoder positions get different logits? (a) none; "
    "(b) only the positions from 8 on; (c) all 11; (d) only the two that write the month. "
    "Answer with a letter.",
    SOURCE_CHOICES,
    _SOURCE_CHANGE,
    "look at which mask applies between the decoder and the memory",
    whole=True,
    hints={
        "a": "the decoder reads the memory through cross-attention: does the memory change?",
        "b": "the causal mask works along the target, between decoder positions; which mask, "
        "if any, limits the source characters a decoder position may read?",
        "d": "the model is untrained: it has not learned which field lives where; what may "
        "each decoder position's cross-attention read?",
    },
)


# ---- compute: what the KV cache saves ----------------------------------------------------


KV_CASES = ((1, 5), (2, 3), (5, 9), (9, 4), (16, 30))
# For each case of KV_CASES, the seals of the two counts, ``seal("10.kv_cache",
# canonical([steps, source_length, "without", count]))`` and the same with "with", made from
# the instructor's count (a hook on one decoder layer's key projection).
_KV_SEALS = {
    (1, 5): ("2e82cdeaf3e0a7e2c069db677c4fab54f5146ff3",
             "f0dd5831a71ac74f570e17c26de6bef2f087393d"),
    (2, 3): ("72d88af27be5fcb32c894715c2fee32d3e0e1379",
             "bb90daa3a798257f46ebc0f1ddac96981f818dd5"),
    (5, 9): ("e5feb73ee7a50b76abaf4fb1bea45d36df697894",
             "789a1a80e06a0c050e560fe13fa33645d802d1f7"),
    (9, 4): ("6234103a93e17b88af8a6f7a2422cd2e20a94956",
             "0d094f8f9e46db9713bd4f82985c8e7a1f5df8bd"),
    (16, 30): ("ecb7f81cbf5c5f9873d690b6b5f47496f390ec51",
               "d3a80dd6b7f293adedca23b73df9187cf8ddb294"),
}


def _kv_right(steps: int, S: int, key: str, count: int) -> bool:
    """Whether ``count`` is the number of keys ``key`` ('without', 'with') for this case."""
    wanted = _KV_SEALS[steps, S][key == "with"]
    return seal("10.kv_cache", canonical([steps, S, key, count])) == wanted


def _kv_hint(got: Any, steps: int, S: int) -> str | None:
    """What is wrong with ``got``, a learner's key counts for ``steps`` steps from a source
    of ``S`` characters."""
    if type(got) is not dict or set(got) != {"without", "with"}:
        return "return a dict with the keys 'without' and 'with'"
    counts = {key: plain_int(value) for key, value in got.items()}
    if any(count is None for count in counts.values()):
        return "return whole numbers of keys (ints)"
    got = counts
    where = f"for steps={steps}, source_length={S}"
    if not _kv_right(steps, S, "without", got["without"]):
        if got["without"] in (steps * steps, steps * S):
            return f"{where}, without: at step t the prefix holds t tokens, not all of them"
        return (
            f"{where}, without: step t computes a key for each of the t tokens "
            "written so far; add them up"
        )
    if not _kv_right(steps, S, "with", got["with"]):
        if got["with"] == S:
            return f"{where}, with: the self-attention's keys come from the target, not the source"
        return f"{where}, with: the cache keeps every earlier key; how many are new per step?"
    return None


@compute(
    "10.kv_cache",
    "A decoder writes greedily for `steps` steps, one token per step, from a source of "
    "`source_length` characters. Write key_vectors(steps, source_length) that returns how "
    "many key vectors the self-attention of ONE decoder layer computes over all the steps: "
    "{'without': ..., 'with': ...}, (a) without a cache, when every step runs the decoder "
    "again on everything written so far, and (b) with the KV cache. Work the count out by "
    "hand, then answer with the function.",
)
def _kv_cache(answer: Any) -> str | None:
    return first_hint(answer, KV_CASES, _kv_hint)


# ---- open question -----------------------------------------------------------------------

think(
    "10.fair_budget",
    "Section 5's first run gave both models the same number of steps and the same batches. Would "
    "equal seconds of training on your laptop, or equal floating-point operations, be "
    "fairer? Which model would each choice favour, and why? What would you measure to run "
    "that comparison properly?",
)

teaching_notes(
    "10",
    60,
    "source_change shift_right beam_step fair_budget",
    goals=(
        "Name the parts of the encoder-decoder transformer and the order of the three "
        "sublayers of a decoder block.",
        "Check a model built from the course's blocks against nn.Transformer, translating "
        "the masks between the two conventions.",
        "Explain teacher forcing, the shifted-right decoder input and why the decoder keeps "
        "its causal mask while training.",
        "Decode greedily and with beam search, and count the work the KV cache saves.",
        "State the conditions (budget, learning rates, seeds) under which a comparison of "
        "two models holds, and what it leaves open.",
    ),
    misconceptions=(
        "A transformer beats an RNN on any task and any budget.",
        "The causal mask is only needed at inference.",
        "Beam search finds the correct output; it finds outputs the model rates more likely.",
        "Cross-attention weights are a complete account of how an output was computed.",
    ),
)
