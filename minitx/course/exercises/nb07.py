"""Exercises of notebook 07 (the transformer block): sinusoidal encodings written by the
learner, two predictions (a model without positions, stacked sliding windows), a count, and
an open question on long contexts.

The predictions and the count are kept as seals (:mod:`~minitx.course.exercises.seal`) of the
answers the instructor's solutions compute with :mod:`minitx.nn.transformer`,
:mod:`minitx.nn.masks` and PyTorch (the outcome of a training run, ``07.no_positions``, is
asserted by the notebook's experiment). The sinusoidal table is compared with the package's,
bound when this module is imported; the package's table may not stand in for an answer.
"""

from __future__ import annotations

from typing import Any

import torch

from minitx.course.exercises import exercise, teaching_notes, think
from minitx.course.exercises.checks import compare, first_difference, implement, predict
from minitx.course.exercises.seal import check_sealed
from minitx.nn.positions import sinusoidal_positions

# (T, d): a small table, one position, two columns, longer and wider ones.
PE_CASES = ((4, 6), (1, 2), (50, 16), (9, 64), (3, 2))
_NO_POSITIONS = "018ee4f07ae742b1cd66782fabf4dff444db8c66"
_WINDOW = "b350043e95f7b80adfcc641656a2ae311147b4ea"
_BLOCK_PARAMS = "0f610094babd1cb74519cd0ecc225b40000d708f"
_BLOCK_HINTS = {
    "8d7474b34c1db6a245ed87d6e38db37fa74d8d07":
        "close: every Linear has a bias, and each LayerNorm a weight and a bias",
    "9e265ab4cad83fca449cfe29d677c6758f23be5d":
        "you left out the two LayerNorms (a weight and a bias of size d_model each)",
    "147e77fd3abaaecebc57ef5b87722ae816643943":
        "each of the two LayerNorms has d_model weights and d_model biases",
    "3fb51a065974a65dbe64bf9c2aaa030e8c6f839c":
        "the heads share W_Q, W_K, W_V, W_O: the number of heads does not change the count",
    "70ad1aeee6311dfecfc770d7313972ce53ff8c33":
        "12 d^2 + 13 d holds only when d_ff = 4 d_model; here d_ff = 160: count the two "
        "feed-forward layers with it",
}
# The package's sinusoidal table, where it is defined and where the notebooks import it from,
# and the model that builds one.
_SINUSOIDAL = (
    "minitx.nn.positions.sinusoidal_positions",
    "minitx.nn.transformer.sinusoidal_positions",
    "minitx.nn.encoder_decoder.DateTransformer",
    "minitx.nn.rope.rope_angles",  # the p * omega table, the whole formula
    "minitx.nn.rope.apply_rope",
)


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
    forbid=_SINUSOIDAL,
)
def _sinusoidal(answer: Any, _table: Any = sinusoidal_positions) -> str | None:
    return compare(
        answer,
        ((f"with T={T}, d={d}", (T, d)) for T, d in PE_CASES),
        lambda T, d: _table(T, d, dtype=torch.float64),
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

predict(
    "07.no_positions",
    "Predict before you run it. Notebook 06's relation model is trained again exactly as "
    "there, but with its position table set to zeros and frozen, so it receives no position "
    "information at all. Its test accuracy on the previous-token question will be:",
    NO_POSITION_CHOICES,
    _NO_POSITIONS,
    "not what the experiment shows: without positions, what tells a query at t "
    "which key stands at t-1, rather than anywhere else?",
)


# ---- predict: how far do two sliding windows reach? ----------------------------------------

WINDOW_CHOICES = {"a": "position 3", "b": "position 6", "c": "position 11, every position"}


predict(
    "07.window_reach",
    "Predict before you run it. Two blocks are stacked, each attending only within a sliding "
    "window of w = 4 positions (a query sees itself and the 3 positions before it). The input "
    "has 12 tokens, positions 0 to 11. Changing token 0 moves the second block's outputs at "
    "positions 0 up to:",
    WINDOW_CHOICES,
    _WINDOW,
    "not what the experiment shows: follow token 0 through the first block, then ask "
    "which queries of the second block can see the positions it reached",
)


# ---- compute ------------------------------------------------------------------------------


@exercise(
    "07.block_params",
    "How many parameters (weights and biases) does TransformerBlock(d_model=48, n_heads=4, "
    "d_ff=160) have? Count attention, feed-forward and the two LayerNorms. Answer with an int.",
    kind="compute",
)
def _block_params(answer: Any) -> str | None:
    return check_sealed(
        "07.block_params", answer, _BLOCK_PARAMS, hints=_BLOCK_HINTS,
        advice="attention: W_Q, W_K, W_V, W_O with biases; feed-forward: d -> d_ff -> d with "
        "biases; plus two LayerNorms",
    )


think(
    "07.long_context",
    "A sliding window of w positions makes attention's cost grow like n times w instead of n "
    "squared. What does a windowed model still lose on a document far longer than its window? "
    "Name two other ways a model could use such a document, and what each one gives up.",
)


teaching_notes(
    "07",
    70,
    "sinusoidal no_positions window_reach block_params long_context",
    goals=(
        "Show that attention without positions is permutation-equivariant, and add positions: "
        "sinusoidal (computed by hand) and learned; name rotary ones (built in notebook 11).",
        "Compute the position-wise feed-forward network and LayerNorm by hand, see why residual "
        "connections keep gradients alive, and check post-LN and pre-LN blocks against "
        "nn.TransformerEncoderLayer.",
        "Read a block as a residual stream: attention moves information between positions, "
        "the feed-forward network computes on each position.",
        "Count parameters of a block and a GPT, and predict the loss at step 0 (ln V).",
        "Measure attention's quadratic cost, compare honestly with an RNN of equal width "
        "(PyTorch's compiled nn.RNN, not only a Python loop, against a whole attention layer "
        "with its projections; on one thread at n = 1024 the RNN is faster, by less than its "
        "10x fewer operations say (how much less depends on the CPU's kernels), and the "
        "RNN's chain of dependent steps, counted with graph_depth, grows with n where "
        "attention's does not: parallel hardware cannot shorten it), and see what a context "
        "window and a sliding window cost and lose.",
    ),
    misconceptions=(
        "Attention knows word order by itself.",
        "LayerNorm, like batch normalisation, mixes the examples of a batch.",
        "Operation counts predict wall time: an RNN's O(n d^2) makes it far cheaper than "
        "attention.",
        "A model notices, or says, when something falls outside its context window.",
    ),
)
