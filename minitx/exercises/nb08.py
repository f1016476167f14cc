"""Exercises of notebook 08 (Mini-GPT on Shakespeare): size, decoding, context, memorisation.

Expected answers are computed with :mod:`minitx.gpt`, :mod:`minitx.sampling` and
:mod:`minitx.analysis`, never typed in. Models are built under ``torch.random.fork_rng``
so that checking an answer does not move the learner's random numbers.
"""

from __future__ import annotations

import math
import random
from typing import Any

import torch

from minitx.analysis import longest_verbatim_match, next_token_probs
from minitx.exercises import call_learner, exercise
from minitx.gpt import GPT, GPTConfig
from minitx.sampling import apply_temperature, top_p_filter

PARAMS_CONFIG = {"vocab_size": 65, "block_size": 64, "n_layer": 4, "n_head": 4, "n_embd": 128,
                 "bias": False}
TOP_P_LOGITS = (2.0, 1.0, 0.5, 0.0, -1.0)
TOP_P = 0.8
TEMPERATURE_LOGITS = (2.0, 0.0)
TEMPERATURE = 0.5
CONTEXT = {"block_size": 8, "prompt_length": 12}


def _gpt(seed: int = 0, **sizes: Any) -> GPT:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return GPT(GPTConfig(**sizes)).eval()


def expected_params() -> int:
    """Parameters of the GPT of ``PARAMS_CONFIG``, counted on a real model."""
    return _gpt(**PARAMS_CONFIG).num_parameters()


def expected_top_p() -> set[int]:
    """Token ids that ``top_p_filter`` keeps for ``TOP_P_LOGITS`` and ``TOP_P``."""
    kept = torch.isfinite(top_p_filter(torch.tensor(TOP_P_LOGITS), TOP_P))
    return set(kept.nonzero().flatten().tolist())


def expected_temperature() -> float:
    """Probability of token 0 for ``TEMPERATURE_LOGITS`` at ``TEMPERATURE``."""
    logits = apply_temperature(torch.tensor(TEMPERATURE_LOGITS, dtype=torch.float64), TEMPERATURE)
    return float(torch.softmax(logits, -1)[0])


def expected_context() -> list[int]:
    """Prompt positions whose token changes the next-token distribution, found by changing
    each position of a prompt of ``CONTEXT['prompt_length']`` tokens in a real GPT."""
    V, T = 10, CONTEXT["prompt_length"]
    model = _gpt(seed=1, vocab_size=V, block_size=CONTEXT["block_size"], n_layer=2, n_head=2,
                 n_embd=16)
    idx = (torch.arange(T) % V)[None]  # (1, T)
    base = next_token_probs(model, idx)
    matters = []
    for j in range(T):
        changed = idx.clone()
        changed[0, j] = (changed[0, j] + 1) % V
        if not torch.equal(next_token_probs(model, changed), base):
            matters.append(j)
    return matters


@exercise(
    "08.params",
    "How many parameters does GPT(GPTConfig(vocab_size=65, block_size=64, n_layer=4, n_head=4, "
    "n_embd=128, bias=False)) have (the output head is tied to the token embedding)? Count "
    "by hand; answer with an int.",
)
def _params(answer: Any) -> str | None:
    if isinstance(answer, bool) or not isinstance(answer, int):
        return f"answer with an int, got {type(answer).__name__}"
    expected = expected_params()
    if answer == expected:
        return None
    V, T, C = PARAMS_CONFIG["vocab_size"], PARAMS_CONFIG["block_size"], PARAMS_CONFIG["n_embd"]
    if answer == expected + V * C:
        return "the output head shares its matrix with the token embedding: count it once"
    if answer == expected - T * C:
        return "the position embedding is a parameter too"
    if answer > expected:
        return "too many: with bias=False there are no biases, and LayerNorms have only a gain"
    return ("too few: per block, attention has 4 C x C matrices, the feed-forward two of "
            "C x 4C, and there are two LayerNorms; then the embeddings and the final LayerNorm")


@exercise(
    "08.top_p",
    f"Next-token logits are {list(TOP_P_LOGITS)} (token ids 0 to 4). Which token ids survive "
    f"top-p (nucleus) filtering with p = {TOP_P}? Answer with a set of ints.",
)
def _top_p(answer: Any) -> str | None:
    try:
        got = {int(a) for a in answer}
    except (TypeError, ValueError):
        return f"answer with a set of ints, got {answer!r:.40}"
    expected = expected_top_p()
    if got == expected:
        return None
    if got < expected:
        return ("keep adding tokens, most likely first, until their probabilities add up to "
                "at least p: the token that crosses the line is kept")
    if got > expected:
        return "too many: stop as soon as the kept probabilities reach p"
    return "top-p keeps the most likely tokens first; compute the softmax and add up"


@exercise(
    "08.temperature",
    f"Next-token logits are {list(TEMPERATURE_LOGITS)}. With temperature {TEMPERATURE}, what "
    "is the probability of token 0? Answer with a float (3 decimals are enough).",
)
def _temperature(answer: Any) -> str | None:
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        return f"answer with a float, got {type(answer).__name__}"
    expected = expected_temperature()
    if abs(answer - expected) < 1e-3:
        return None
    plain = 1 / (1 + math.exp(-(TEMPERATURE_LOGITS[0] - TEMPERATURE_LOGITS[1])))
    if abs(answer - plain) < 1e-3:
        return "that is the probability at temperature 1: divide the logits by T first"
    if answer < plain:
        return "a temperature below 1 makes the likely token more likely, not less"
    return "divide the logits by the temperature, then take the softmax"


@exercise(
    "08.context",
    f"A GPT with block_size={CONTEXT['block_size']} reads a prompt of "
    f"{CONTEXT['prompt_length']} tokens (positions 0 to {CONTEXT['prompt_length'] - 1}) and "
    "predicts the next token with generate(). Changing which prompt positions can change "
    "that prediction? Answer with a list of ints.",
)
def _context(answer: Any) -> str | None:
    try:
        got = sorted({int(a) for a in answer})
    except (TypeError, ValueError):
        return f"answer with a list of ints, got {answer!r:.40}"
    expected = expected_context()
    if got == expected:
        return None
    if got == list(range(CONTEXT["prompt_length"])):
        return "not all of them: generate() feeds only the last block_size tokens to the model"
    if len(got) == len(expected):
        return "right number of positions, wrong ones: which end of the prompt is kept?"
    return "the model sees exactly block_size tokens of the prompt; which ones?"


def _cases() -> list[tuple[str, str]]:
    rng = random.Random(8)
    cases = [
        ("the cat sat on the mat", "a cat on a mat, the dog sat"),
        ("abc", "xyz"),
        ("", "abc"),
        ("to be or not", "to be or not"),
        ("aaaa", "aaab"),
    ]
    for _ in range(20):
        corpus = "".join(rng.choice("ab c") for _ in range(rng.randint(1, 80)))
        sample = "".join(rng.choice("abc d") for _ in range(rng.randint(1, 40)))
        cases.append((corpus, sample))
    return cases


@exercise(
    "08.longest_match",
    "Write longest_match(sample, corpus) that returns the length (an int) of the longest "
    "substring of sample that occurs verbatim in corpus. Answer with the function.",
)
def _longest_match(answer: Any) -> str | None:
    if not callable(answer):
        return f"answer with a function, got {type(answer).__name__}"
    for corpus, sample in _cases():
        got, error = call_learner(answer, sample, corpus)
        if error:
            return error
        if isinstance(got, bool) or not isinstance(got, int):
            return f"return an int, got {type(got).__name__}"
        expected = longest_verbatim_match(sample, corpus).length
        if got != expected:
            return (f"for sample={sample!r} and corpus={corpus!r} you return {got}; "
                    "check substrings that start anywhere in the sample, not only at 0")
    return None
