"""Exercises of notebook 07 (the transformer block): sinusoidal encodings written by the
learner, two predictions (a model without positions, stacked sliding windows), two counts,
and an open question on long contexts.

Expected answers are computed with :mod:`minitx.nn.transformer`, :mod:`minitx.nn.masks` and
PyTorch, never typed in, except the outcome of a training run (``07.no_positions``), which
the notebook's experiment asserts and the checker keeps as a hash. Test inputs and modules
are drawn under ``torch.random.fork_rng`` (or built on the meta device), so checking an
answer does not move the learner's random numbers.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from minitx.course.exercises import close, exercise, teaching_notes, think
from minitx.course.exercises.checks import compare, first_difference, implement, predict
from minitx.nn.masks import sliding_window_mask
from minitx.nn.transformer import TransformerBlock, sinusoidal_positions

BLOCK_QUESTION = {"d_model": 48, "n_heads": 4, "d_ff": 192}
LOSS_VOCAB = 32000  # LLaMA's vocabulary
# (T, d): a small table, one position, two columns, longer and wider ones.
PE_CASES = ((4, 6), (1, 2), (50, 16), (9, 64), (3, 2))
WINDOW_QUESTION = {"T": 12, "window": 4, "n_blocks": 2}


def _as_number(answer: Any) -> float | None:
    if isinstance(answer, bool):
        return None
    try:
        value = float(answer)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _as_int(answer: Any) -> int | None:
    if isinstance(answer, bool) or not isinstance(answer, int):
        return None
    return answer


# ---- implement: the sinusoidal table -----------------------------------------------------


def _pe_hint(name: str, got: dict, want: dict, args: tuple) -> str:
    """The first entry of the table that differs, named PE(pos, col), and its value."""
    table = got[name]
    pos, col = first_difference(table, want[name], atol=1e-5)
    kind = "a sine column" if col % 2 == 0 else "a cosine column"
    return (
        f"the first entry that differs is PE({pos}, {col}), {kind}: "
        f"yours is {float(table[pos, col]):.4f}"
    )


@implement(
    "07.sinusoidal",
    "Write sinusoidal(T, d): the (T, d) table of sinusoidal position encodings for positions "
    "0 to T-1 and an even d, PE(pos, 2i) = sin(pos / 10000^(2i/d)) and PE(pos, 2i+1) = "
    "cos(pos / 10000^(2i/d)), as a tensor. The checker compares it with the package's table "
    "for several T and d, including T = 1. Answer with the function.",
)
def _sinusoidal(answer: Any) -> str | None:
    return compare(
        answer,
        ((f"with T={T}, d={d}", (T, d)) for T, d in PE_CASES),
        lambda T, d: sinusoidal_positions(T, d, dtype=torch.float64),
        names=("your table",),
        arrays=True,
        atol=1e-5,
        about={"your table": "that is (T, d)"},
        diagnose=_pe_hint,
    )


# ---- predict: a model without positions --------------------------------------------------

NO_POSITION_CHOICES = {
    "a": "above 90%, as with positions",
    "b": "between 30% and 90%",
    "c": "below 30%",
}
# The outcome of notebook 07's training run (asserted there, over several seeds in the
# course's own checks), kept as a hash: no quick experiment gives it, and the letter itself
# would be the answer (checks.answer_hash).
NO_POSITION_ANSWER_SHA256 = "f6ae84977c38af618d8496adae35e1a5670be4f0da124292f036e89b5d7be407"


predict(
    "07.no_positions",
    "Predict before you run it. Notebook 06's relation model is trained again exactly as "
    "there, but with its position table set to zeros and frozen, so it receives no position "
    "information at all. Its test accuracy on the previous-token question will be:",
    NO_POSITION_CHOICES,
    NO_POSITION_ANSWER_SHA256,
    "not what the experiment shows: without positions, what tells a query at t "
    "which key stands at t-1, rather than anywhere else?",
)


# ---- predict: how far do two sliding windows reach? ----------------------------------------

WINDOW_CHOICES = {"a": "position 3", "b": "position 6", "c": "position 11, every position"}


def window_reach(T: int = 12, window: int = 4, n_blocks: int = 2) -> int:
    """The last output position of ``n_blocks`` stacked sliding-window blocks that moves when
    token 0 changes, found by changing it."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        blocks = [TransformerBlock(16, 2, 32).double().eval() for _ in range(n_blocks)]
        x = torch.randn(1, T, 16, dtype=torch.float64)
        nudged = x.clone()
        nudged[0, 0] += torch.randn(16, dtype=torch.float64)
    mask = sliding_window_mask(T, window)

    def run(h: Tensor) -> Tensor:
        for block in blocks:
            out = block(h, mask=mask)
            h = out[0] if isinstance(out, tuple) else out
        return h

    with torch.no_grad():
        moved = (run(nudged) - run(x)).abs().amax(-1)[0] > 1e-12  # (T,)
    return int(moved.nonzero().max())


def window_truth() -> str:
    q = WINDOW_QUESTION
    reach = window_reach(**q)
    for letter, text in WINDOW_CHOICES.items():
        if text.startswith(f"position {reach}"):
            return letter
    raise AssertionError(f"no choice for a reach of {reach}")


predict(
    "07.window_reach",
    "Predict before you run it. Two blocks are stacked, each attending only within a sliding "
    "window of w = 4 positions (a query sees itself and the 3 positions before it). The input "
    "has 12 tokens, positions 0 to 11. Changing token 0 moves the second block's outputs at "
    "positions 0 up to:",
    WINDOW_CHOICES,
    window_truth,
    "not what the experiment shows: follow token 0 through the first block, then ask "
    "which queries of the second block can see the positions it reached",
)


# ---- compute ------------------------------------------------------------------------------


def expected_block_params(d_model: int = 48, n_heads: int = 4, d_ff: int = 192) -> int:
    """Parameters of a ``TransformerBlock`` with biases, counted on the meta device."""
    with torch.device("meta"):
        block = TransformerBlock(d_model, n_heads, d_ff)
    return sum(p.numel() for p in block.parameters())


def expected_initial_loss(vocab_size: int = LOSS_VOCAB) -> float:
    """Cross-entropy when every one of ``vocab_size`` tokens gets the same logit."""
    logits = torch.zeros(1, vocab_size, dtype=torch.float64)
    target = torch.zeros(1, dtype=torch.long)
    return float(torch.nn.functional.cross_entropy(logits, target))


@exercise(
    "07.block_params",
    "How many parameters (weights and biases) does TransformerBlock(d_model=48, n_heads=4, "
    "d_ff=192) have? Count attention, feed-forward and the two LayerNorms. Answer with an int.",
    kind="compute",
)
def _block_params(answer: Any) -> str | None:
    value = _as_int(answer)
    if value is None:
        return f"answer with an int, got {type(answer).__name__}"
    q = BLOCK_QUESTION
    d, f = q["d_model"], q["d_ff"]
    expected = expected_block_params(**q)
    if value == expected:
        return None
    attn, ffn = 4 * d * d + 4 * d, 2 * d * f + f + d
    if value == 4 * d * d + 2 * d * f:
        return "close: every Linear has a bias, and each LayerNorm a weight and a bias"
    if value == attn + ffn:
        return "you left out the two LayerNorms (a weight and a bias of size d_model each)"
    if value == attn + ffn + 2 * d:
        return "each of the two LayerNorms has d_model weights and d_model biases"
    if value == q["n_heads"] * attn + ffn + 4 * d:
        return "the heads share W_Q, W_K, W_V, W_O: the number of heads does not change the count"
    return (
        "attention: W_Q, W_K, W_V, W_O with biases; feed-forward: d -> d_ff -> d with "
        "biases; plus two LayerNorms"
    )


@exercise(
    "07.initial_loss",
    "A freshly initialised language model with LLaMA's vocabulary of 32000 tokens gives almost "
    "equal logits to every token. What cross-entropy loss do you expect at step 0? Answer with "
    "a float (2 decimals are enough).",
    kind="compute",
)
def _initial_loss(answer: Any) -> str | None:
    value = _as_number(answer)
    if value is None:
        return f"answer with a number, got {answer!r:.40}"
    expected = expected_initial_loss()
    if close(value, expected, atol=0.01):
        return None
    if close(value, math.log2(LOSS_VOCAB), atol=0.01):
        return "cross-entropy in PyTorch uses the natural logarithm, not log base 2"
    if close(value, math.log10(LOSS_VOCAB), atol=0.01):
        return "cross-entropy in PyTorch uses the natural logarithm, not log base 10"
    if close(value, 1 / LOSS_VOCAB, atol=1e-4):
        return "that is the probability of the right token; the loss is -log of it"
    return (
        "with equal logits, softmax gives every token the same probability; the loss is "
        "-log of the probability of the right token"
    )


think(
    "07.long_context",
    "A sliding window of w positions makes attention's cost grow like n times w instead of n "
    "squared, and stacking L such layers lets information travel up to L(w - 1) positions. "
    "Why is that reach weaker than it sounds? Name two other ways a model could use a document "
    "far longer than its window, and what each one gives up.",
)


teaching_notes(
    "07",
    70,
    "sinusoidal no_positions window_reach long_context",
    goals=(
        "Show that attention without positions is permutation-equivariant, and add positions: "
        "sinusoidal (computed by hand), learned, and rotary (named).",
        "Build the position-wise feed-forward network, LayerNorm and residual connections, and "
        "assemble post-LN and pre-LN blocks equal to nn.TransformerEncoderLayer.",
        "Read a block as a residual stream: attention moves information between positions, "
        "the feed-forward network computes on each position.",
        "Count parameters of a block and a GPT, and predict the loss at step 0 (ln V).",
        "Measure attention's quadratic cost, compare honestly with an RNN, and see what a "
        "context window and a sliding window cost and lose.",
    ),
    misconceptions=(
        "Attention knows word order by itself.",
        "LayerNorm, like batch normalisation, mixes the examples of a batch.",
        "An RNN is cheaper because its operation count is O(n d^2).",
        "A model notices, or says, when something falls outside its context window.",
    ),
)
