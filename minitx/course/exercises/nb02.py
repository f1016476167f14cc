"""Exercises of notebook 02 (RNN and LSTM). Expected values come from the package."""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from minitx.course.exercises import close, exercise, teaching_notes, think
from minitx.course.exercises.checks import compare, implement, predict
from minitx.course.gradients import gradient_norms_by_distance
from minitx.nn.rnn import LSTM, RNN, LSTMCell

LSTM_SIZES = (10, 20)  # input_size, hidden_size
FORGET, STEPS = 0.9, 20
HIDDEN_SIZES = (32, 256)
CONV_STACKS = ((5, 2), (3, 4))  # (kernel, layers)


def _number(answer: Any) -> float:
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        raise TypeError(f"expected a number, got {type(answer).__name__}")
    return float(answer)


# ---- predict: a wider RNN -------------------------------------------------------------------


def hidden_size_setup() -> tuple[torch.Tensor, dict[int, RNN]]:
    """Random inputs (seed 9, (8, 61, 8) float64) and a default-initialised RNN of each hidden
    size in HIDDEN_SIZES (seed 2), as the notebook's experiment builds them."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(9)
        x = torch.randn(8, 61, 8, dtype=torch.float64)
        models = {}
        for H in HIDDEN_SIZES:
            torch.manual_seed(2)
            models[H] = RNN(8, H).double()
    return x, models


@cache
def hidden_size_factors() -> dict[int, float]:
    """Per-step factor of ||d h_T / d x_t|| between distance 1 and 60, for each size."""
    x, models = hidden_size_setup()
    factors = {}
    for H, rnn in models.items():
        n = gradient_norms_by_distance(rnn, x)
        factors[H] = (n[60] / n[1]).item() ** (1 / 59)
    return factors


def hidden_size_truth() -> str:
    """'a': the wide RNN's factor is smaller by more than 0.15, 'b': within 0.15, 'c': larger
    by more than 0.15."""
    small, wide = (hidden_size_factors()[H] for H in HIDDEN_SIZES)
    if abs(wide - small) <= 0.15:
        return "b"
    return "a" if wide < small else "c"


predict(
    "02.hidden_size",
    f"Section 3 measured a plain RNN with H = {HIDDEN_SIZES[0]} hidden units and PyTorch's "
    "default initialisation: per step back, its gradient norm was multiplied by about 0.53. "
    f"Now take H = {HIDDEN_SIZES[1]}, eight times as many units, with the same initialisation "
    "rule. Predict its per-step factor, measured between distance 1 and 60 on random inputs, "
    f"next to an H = {HIDDEN_SIZES[0]} RNN's on the same inputs:",
    {
        "a": "smaller by more than 0.15, the gradient vanishes faster",
        "b": "within 0.15 of it, the gradient vanishes about as fast",
        "c": "larger by more than 0.15, more units remember longer",
    },
    hidden_size_truth,
    "look at how PyTorch draws W_hh: uniform in (-1/sqrt(H), 1/sqrt(H)); ask how much "
    "such a matrix stretches a vector as H grows",
)


# ---- predict: two stacks of causal convolutions ---------------------------------------------


def conv_receptive_field(kernel: int, layers: int, T: int = 40) -> int:
    """How many input positions the last output of a stack of causal 1-D convolutions
    (left padding kernel - 1, tanh between layers) depends on, measured with autograd."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        convs = [nn.Conv1d(4, 4, kernel).double() for _ in range(layers)]
        x = torch.randn(1, 4, T, dtype=torch.float64, requires_grad=True)  # (B, C, T)
    h = x
    for conv in convs:
        h = torch.tanh(conv(F.pad(h, (kernel - 1, 0))))
    (grad,) = torch.autograd.grad(h[0, :, -1].sum(), x)
    return int((grad[0].abs().sum(0) > 0).sum())


def cnn_reach_truth() -> str:
    """'a': the first stack of CONV_STACKS sees farther, 'b': the second, 'c': the same."""
    first, second = (conv_receptive_field(k, n) for k, n in CONV_STACKS)
    return "c" if first == second else "a" if first > second else "b"


predict(
    "02.cnn_reach",
    f"Two stacks of causal 1-D convolutions: {CONV_STACKS[0][1]} layers with kernel "
    f"{CONV_STACKS[0][0]}, and {CONV_STACKS[1][1]} layers with kernel {CONV_STACKS[1][0]}. "
    "Predict which output sees more past tokens:",
    {
        "a": "the stack with the wider kernel",
        "b": "the deeper stack",
        "c": "both see exactly the same number",
    },
    cnn_reach_truth,
    "count, layer by layer, how many new past positions each layer adds to the window",
)


# ---- implement: one LSTM step ---------------------------------------------------------------


def lstm_step_cases() -> list[tuple[tuple[int, int, int], tuple[torch.Tensor, ...]]]:
    """((B, C, H), (x, h, c, weight_ih, weight_hh, bias_ih, bias_hh)) in float64: batch 1,
    hidden size 1 and input size 1 first, then random sizes."""
    sizes = [(3, 4, 5), (1, 2, 3), (2, 3, 1), (4, 1, 2)]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        sizes += [tuple(int(n) for n in torch.randint(1, 7, (3,))) for _ in range(6)]
        cases = []
        for B, C, H in sizes:
            shapes = [(B, C), (B, H), (B, H), (4 * H, C), (4 * H, H), (4 * H,), (4 * H,)]
            cases.append(((B, C, H), tuple(torch.randn(s, dtype=torch.float64) for s in shapes)))
    return cases


def lstm_cell_step(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    """The package's LSTMCell with these weights copied in: the reference for 02.lstm_step."""
    C, H = x.size(1), h.size(1)
    cell = LSTMCell(C, H).double()
    with torch.no_grad():
        for p, w in zip(cell.parameters(), (weight_ih, weight_hh, bias_ih, bias_hh), strict=True):
            p.copy_(w)
        return cell(x, (h, c))


@implement(
    "02.lstm_step",
    "Write lstm_step(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh) for one LSTM step, "
    "from the equations of section 4. x is (B, C), h and c are (B, H); the weights are laid "
    "out like PyTorch's: weight_ih (4H, C), weight_hh (4H, H), bias_ih and bias_hh (4H,), "
    "their four blocks of H rows in the gate order i, f, g, o. Return (h_new, c_new), each "
    "(B, H).",
)
def _(fn):
    return compare(
        fn,
        ((f"with B={B}, C={C}, H={H}", args) for (B, C, H), args in lstm_step_cases()),
        lstm_cell_step,
        names=("h_new", "c_new"),
        order=("c_new", "h_new"),
        atol=1e-8,
        rtol=1e-6,
        about={"h_new": "that is (B, H)", "c_new": "that is (B, H)"},
        axes=("batch row", "unit"),
        expected="the package's LSTMCell",
        advice={
            "c_new": "check which block of rows feeds which gate, and which gates take a "
            "sigmoid and which a tanh",
            "h_new": "look at how h_new is made from c_new",
        },
    )


# ---- compute --------------------------------------------------------------------------------


def _lstm_params() -> int:
    return sum(p.numel() for p in LSTM(*LSTM_SIZES).parameters())


@exercise(
    "02.lstm_params",
    f"How many trainable numbers does minitx.nn.rnn.LSTM({LSTM_SIZES[0]}, {LSTM_SIZES[1]}) hold "
    "(weight_ih, weight_hh, bias_ih, bias_hh)? Give an int.",
    kind="compute",
)
def _(answer):
    value = _number(answer)
    want = _lstm_params()
    if value == want:
        return None
    if value * 4 == want:
        return "an LSTM has four gate blocks (i, f, g, o), each with its own weights"
    if value == want - 8 * LSTM_SIZES[1] or value == want - 4 * LSTM_SIZES[1]:
        return "count both bias vectors, bias_ih and bias_hh, each of size 4 * hidden_size"
    return "weight_ih is (4H, C) and weight_hh is (4H, H); add the two biases of size 4H"


def forget_fraction() -> float:
    """c_STEPS / c_0 for an LSTM cell whose forget gate is FORGET and whose candidate is 0."""
    cell = LSTMCell(1, 1).double()
    with torch.no_grad():
        for p in cell.parameters():
            p.zero_()
        cell.bias_ih[1] = math.log(FORGET / (1 - FORGET))  # f = sigmoid(logit(0.9)) = 0.9
    x = torch.zeros(1, 1, dtype=torch.float64)
    state = (torch.zeros_like(x), torch.ones_like(x))  # h_0 = 0, c_0 = 1
    for _ in range(STEPS):
        state = cell(x, state)
    return state[1].item()


@exercise(
    "02.forget_gate",
    f"An LSTM cell's forget gate stays at f = {FORGET} and its candidate g is 0 at every step. "
    f"What fraction of the starting cell state c_0 is left after {STEPS} steps (c_{STEPS} / "
    "c_0)? Give a float.",
    kind="compute",
)
def _(answer):
    value = _number(answer)
    want = forget_fraction()
    if close(value, want, atol=1e-3):
        return None
    if close(value, FORGET * STEPS, atol=1e-3) or close(value, 1 - (1 - FORGET) * STEPS):
        return "the forget gate multiplies the cell state at every step; it does not add"
    return "with g = 0, c_t = f * c_(t-1); apply that repeatedly"


# ---- think ----------------------------------------------------------------------------------

think(
    "02.cnn_or_rnn",
    "Before attention, sequences were modelled with recurrent networks and with stacks of "
    "convolutions over time. Compare the two on three counts: what an output position can "
    "depend on, how the work of one long sequence can be spread over many cores, and how the "
    "cost of reaching k tokens back grows. Which weakness of each one does attention remove, "
    "and what does attention pay for it?",
)


teaching_notes(
    "02",
    60,
    "hidden_size lstm_step cnn_reach cnn_or_rnn",
    goals=(
        "Compute an RNN step by hand and explain weight sharing across time.",
        "Read and check from-scratch RNN, LSTM and GRU cells against PyTorch with copied "
        "weights, and write one LSTM step.",
        "Measure vanishing gradients with autograd, compare them with the 0.45^N estimate "
        "and explain the measured rate from the measured tanh' and gain of W_hh; explain the "
        "LSTM's additive cell state, its forget gate, and gradient clipping.",
        "Run a fair comparison: equal parameter counts, default initialisation first, one "
        "named intervention (the forget-gate bias), several seeds with their spread.",
        "Measure the two limits that attention removes: the RNN's sequential chain and the "
        "convolution's fixed window.",
    ),
    misconceptions=(
        "The back-of-envelope 0.45^N gives the rate; it gives the shape, the measured rate "
        "differs.",
        "A wider RNN remembers longer; with the default initialisation the gain per step "
        "stays about the same.",
        "An LSTM cannot forget; its forget gate multiplies the cell state at every step.",
        "An LSTM out of the box remembers longer than an RNN; at default initialisation and "
        "equal parameters it stayed at chance on gap 20 where the RNN partly learned, and "
        "the forget-gate bias made the difference.",
        "A bigger batch makes a recurrent network's steps run in parallel; it parallelises "
        "across sequences, never across time.",
    ),
)
