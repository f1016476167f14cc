"""The instructor's answers to notebook 02's exercises, computed with the package."""

from __future__ import annotations

import math

import torch

from minitx.course.gradients import gradient_norms_by_distance
from minitx.nn.rnn import RNN, LSTMCell

FORGET, STEPS = 0.9, 20
HIDDEN_SIZES = (32, 256)


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


def forget_fraction() -> float:
    """c_STEPS / c_0 for an LSTM cell whose forget gate is FORGET and whose candidate is 0."""
    cell = LSTMCell(1, 1).double()
    with torch.no_grad():
        for p in cell.parameters():
            p.zero_()
        cell.bias_ih[1] = math.log(FORGET / (1 - FORGET))  # f = sigmoid(logit(0.9)) = 0.9
    x = torch.zeros(1, 1, dtype=torch.float64)
    state = (torch.zeros_like(x), torch.ones_like(x))  # h_0 = 0, c_0 = 1
    with torch.no_grad():
        for _ in range(STEPS):
            state = cell(x, state)
    return state[1].item()


def lstm_step(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    """One LSTM step: x (B, C), h and c (B, H), weights as in PyTorch (gate order i, f, g, o).
    Returns (h_new, c_new), each (B, H)."""
    a = x @ weight_ih.T + bias_ih + h @ weight_hh.T + bias_hh  # (B, 4H)
    i, f, g, o = a.chunk(4, dim=1)  # each (B, H)
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    h_new = torch.sigmoid(o) * torch.tanh(c_new)
    return h_new, c_new


SOLUTIONS = {
    "02.hidden_size": hidden_size_truth,
    "02.lstm_step": lambda: lstm_step,
    "02.forget_gate": forget_fraction,  # 0.12158; the notebook's answer to 3 decimals: 0.122
}

MODEL_ANSWERS = {
    "02.cnn_or_rnn": (
        "Chain length: the RNN's grows with d (a fixed number of operations per step, 8 for "
        "our LSTM, so 8n for the whole sequence); the convolution's grows with d / (k - 1) "
        "layers but not with n; one attention layer reaches any d in a few operations, a "
        "chain that does not grow with d, and with n only through the sum over n scores "
        "(about log n rounds added as a tree). Arithmetic: the RNN and the convolution do "
        "work proportional to n (n steps of H x H products; n positions times L layers of a "
        "k-wide kernel); attention scores every pair of positions, about n^2 / 2 scores of "
        "width d_model, and keeps an n x n table of weights, so work and memory grow with the "
        "square of the length. It also loses order: a weighted sum over positions is the same "
        "whatever order the tokens come in, so attention needs positional information added "
        "to its inputs, where the RNN knew the order from the order of its steps (and the "
        "convolution from its kernel's positions)."
    ),
}
