"""Exercises of notebook 02 (RNN and LSTM). Expected values come from the package."""

from __future__ import annotations

import math
from typing import Any

import torch

from minitx.exercises import close, exercise
from minitx.gradients import vanishing_estimate
from minitx.rnn import GRU, LSTM, LSTMCell, RNNCell

STEP = {
    "W_xh": [[0.1, 0.2], [-0.3, 0.4]],
    "W_hh": [[1.0, 0.0], [0.5, 0.5]],
    "b": [0.0, 0.1],
    "x_1": [1.0, 2.0],
    "h_0": [0.5, -1.0],
}
LSTM_SIZES = (10, 20)  # input_size, hidden_size
FORGET, STEPS = 0.9, 20
GRU_SIZES, GRU_INPUT = (5, 7), (3, 11, 5)


def _number(answer: Any) -> float:
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        raise TypeError(f"expected a number, got {type(answer).__name__}")
    return float(answer)


def _rnn_step() -> tuple[torch.Tensor, torch.Tensor]:
    """h_1 from the package's RNNCell, and its pre-activation (for the hint)."""
    W_xh, W_hh, b, x, h = (torch.tensor(STEP[k], dtype=torch.float64) for k in STEP)
    cell = RNNCell(2, 2).double()
    with torch.no_grad():
        cell.weight_ih.copy_(W_xh)
        cell.weight_hh.copy_(W_hh)
        cell.bias_ih.copy_(b)
        cell.bias_hh.zero_()
        return cell(x[None], h[None])[0], W_xh @ x + W_hh @ h + b


@exercise(
    "02.rnn_step",
    f"One RNN step by hand: h_1 = tanh(W_xh x_1 + W_hh h_0 + b) with W_xh = {STEP['W_xh']}, "
    f"W_hh = {STEP['W_hh']}, b = {STEP['b']}, x_1 = {STEP['x_1']}, h_0 = {STEP['h_0']}. "
    "Give h_1 as a list of 2 floats (3 decimals are enough).",
)
def _(answer):
    h1, pre = _rnn_step()
    if close(answer, h1, atol=2e-3):
        return None
    if close(answer, pre, atol=2e-3):
        return "that is the pre-activation; the step ends with a tanh"
    return "compute W_xh x_1 and W_hh h_0 as matrix-vector products (row times vector), add b"


@exercise(
    "02.lstm_params",
    f"How many trainable numbers does minitx.rnn.LSTM({LSTM_SIZES[0]}, {LSTM_SIZES[1]}) hold "
    "(weight_ih, weight_hh, bias_ih, bias_hh)? Give an int.",
)
def _(answer):
    value = _number(answer)
    want = sum(p.numel() for p in LSTM(*LSTM_SIZES).parameters())
    if value == want:
        return None
    if value * 4 == want:
        return "an LSTM has four gate blocks (i, f, g, o), each with its own weights"
    if value == want - 8 * LSTM_SIZES[1] or value == want - 4 * LSTM_SIZES[1]:
        return "count both bias vectors, bias_ih and bias_hh, each of size 4 * hidden_size"
    return "weight_ih is (4H, C) and weight_hh is (4H, H); add the two biases of size 4H"


@exercise(
    "02.vanish_steps",
    "With the estimate 0.45 per step, after how many steps N does the gradient factor "
    "0.45^N first drop below 1e-6? Give an int.",
)
def _(answer):
    value = _number(answer)
    want = next(n for n in range(1, 1000) if vanishing_estimate(n).item() < 1e-6)
    if value == want:
        return None
    if abs(value - want) == 1:
        return "off by one: check 0.45^N on both sides of your answer"
    return "solve 0.45^N < 1e-6 with logarithms: N > log(1e-6) / log(0.45)"


def _forget_fraction() -> float:
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
)
def _(answer):
    value = _number(answer)
    want = _forget_fraction()
    if close(value, want, atol=1e-3):
        return None
    if close(value, FORGET * STEPS, atol=1e-3) or close(value, 1 - (1 - FORGET) * STEPS):
        return "the forget gate multiplies the cell state at every step; it does not add"
    return "with g = 0, c_t = f * c_(t-1); apply that repeatedly"


@exercise(
    "02.gru_shapes",
    f"out, h_n = minitx.rnn.GRU{GRU_SIZES}(x) with x of shape {GRU_INPUT}. Give "
    "(out.shape, h_n.shape) as a tuple of two tuples.",
)
def _(answer):
    out_shape, h_shape = (tuple(int(n) for n in s) for s in answer)
    out, h_n = GRU(*GRU_SIZES)(torch.zeros(GRU_INPUT))
    if (out_shape, h_shape) == (tuple(out.shape), tuple(h_n.shape)):
        return None
    if out_shape != tuple(out.shape):
        return "out holds the hidden state of every step, batch first: (B, T, hidden_size)"
    return "h_n is the last hidden state with a leading num_layers dimension, like PyTorch's"
