"""Exercises of notebook 02 (RNN and LSTM). The answers are kept as seals, never computed
here: the instructor's solutions compute them (instructor/solutions/nb02.py)."""

from __future__ import annotations

import math

import torch

from minitx.course.exercises import exercise, teaching_notes, think
from minitx.course.exercises.checks import compare, implement, predict
from minitx.course.exercises.plain import numbers
from minitx.course.exercises.seal import canonical, hint_for, seal
from minitx.nn.rnn import LSTMCell

FORGET, STEPS = 0.9, 20
HIDDEN_SIZES = (32, 256)

# Seals of the answers (minitx.course.exercises.seal), computed from the instructor's
# solutions (instructor/solutions/nb02.py), and of known mistakes; the package keeps no answer.
_HIDDEN_SIZE = "5100582bb701f84576e971172a9be651b9725d0b"
_FORGET_GATE = "bdd06e36c0140b9ae13b4a68d9d488631b340555"  # 4 decimals
_FORGET_GATE_2DP = "97f33213837cf8551bb06f24dd206331aebba72e"  # rounded to 2 decimals, "0.1200"
_ADDS = "the forget gate multiplies the cell state at every step; it does not add"
_FORGET_GATE_MISTAKES = {  # at 3 decimals
    "77c672187e6c52da0e61f75db3bbbc3e8ef3387d": _ADDS,  # f * STEPS
    "9dd7798682f3fa70ef4d9362416958feabae3976": _ADDS,  # 1 - (1 - f) * STEPS
}


# ---- predict: a wider RNN -------------------------------------------------------------------

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
    _HIDDEN_SIZE,
    "look at how PyTorch draws W_hh: uniform in (-1/sqrt(H), 1/sqrt(H)); ask how much "
    "such a matrix stretches a vector as H grows",
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


def lstm_cell_step(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh, _cell=LSTMCell):
    """The package's LSTMCell with these weights copied in: the reference for 02.lstm_step,
    bound when this module was imported (patching the package later changes nothing)."""
    C, H = x.size(1), h.size(1)
    cell = _cell(C, H).double()
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
    # The package's LSTM reaches LSTMCell.forward, and both reach LSTMCell.gates.
    forbid=(
        "minitx.nn.rnn.LSTMCell",
        "minitx.nn.rnn.LSTMCell.gates",
        "minitx.nn.rnn.LSTM",
        "torch.lstm_cell",
        "torch.lstm",
        "torch.nn.LSTMCell",
        "torch.nn.LSTM",
    ),
)
def _(fn, _reference=lstm_cell_step):
    return compare(
        fn,
        ((f"with B={B}, C={C}, H={H}", args) for (B, C, H), args in lstm_step_cases()),
        _reference,
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


@exercise(
    "02.forget_gate",
    f"An LSTM cell's forget gate stays at f = {FORGET} and its candidate g is 0 at every step. "
    f"What fraction of the starting cell state c_0 is left after {STEPS} steps (c_{STEPS} / "
    "c_0)? Give a float to 3 decimals.",
    kind="compute",
)
def _(answer):
    name = "02.forget_gate"
    values = numbers(answer, 1)
    if isinstance(values, str):
        return values
    value = values[0]
    if not math.isfinite(value):
        return "answer with a finite number"
    # Right within about 6e-4 (0.121 and 0.122 both are): the answer moved by up to 6 steps
    # of 1e-4 and rounded to 4 decimals meets the seal of the 4-decimal truth.
    if any(seal(name, canonical(value + k * 1e-4, 4)) == _FORGET_GATE for k in range(-6, 7)):
        return None
    if seal(name, canonical(value, 4)) == _FORGET_GATE_2DP:
        return "give the fraction to 3 decimals, not 2"
    return hint_for(name, canonical(value, 3), _FORGET_GATE_MISTAKES) or (
        "with g = 0, c_t = f * c_(t-1); apply that repeatedly")


# ---- think ----------------------------------------------------------------------------------

think(
    "02.cnn_or_rnn",
    "Sections 7 and 8 measured how far back an output reaches and at what cost: reaching d "
    "tokens back takes the RNN a chain of d steps and a causal convolution with kernel k about "
    "d / (k - 1) layers. A self-attention layer lets each of n positions read every earlier "
    "one directly. How do its chain length and its arithmetic grow with d and with n, next to "
    "the RNN's and the CNN's? What does it lose that the RNN's order of steps gave for free?",
)


teaching_notes(
    "02",
    60,
    "hidden_size lstm_step cnn_or_rnn",
    goals=(
        "Compute an RNN step by hand and explain weight sharing across time.",
        "Read and check from-scratch RNN, LSTM and GRU cells against PyTorch with copied "
        "weights, and write one LSTM step.",
        "Measure vanishing gradients with autograd, compare them with the 0.45^N estimate "
        "and explain the measured rate from the measured tanh' and the spectral radius of "
        "W_hh; explain the LSTM's additive cell state, its forget gate, and gradient clipping.",
        "Run a fair comparison: equal parameter counts, default initialisation first, one "
        "named intervention (the forget-gate bias), a learning rate tuned for each model on "
        "validation accuracy, the same budget and seeds, results from held-out seeds with "
        "the spread shown.",
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
        "equal parameters it stayed at chance on gap 20 at every learning rate tried, where "
        "the tuned RNN learned it in 7 of 12 held-out runs; with the forget-gate bias at 2 it "
        "learned it in 10 of 12.",
        "A bigger batch makes a recurrent network's steps run in parallel; it parallelises "
        "across sequences, never across time.",
    ),
)
