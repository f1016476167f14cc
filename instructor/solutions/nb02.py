"""The instructor's answers to notebook 02's exercises."""

from __future__ import annotations

import torch

from minitx.course.exercises.nb02 import (
    _lstm_params,
    cnn_reach_truth,
    forget_fraction,
    hidden_size_truth,
)


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
    "02.cnn_reach": cnn_reach_truth,
    "02.lstm_step": lambda: lstm_step,
    "02.lstm_params": _lstm_params,
    "02.forget_gate": lambda: round(forget_fraction(), 4),
}

MODEL_ANSWERS = {
    "02.cnn_or_rnn": (
        "An RNN's state at step t depends on every earlier token, but through a chain of t "
        "multiplications, so old tokens fade (vanishing gradients), and the steps must run one "
        "after another. A stack of causal convolutions depends only on a fixed window of "
        "1 + L(k - 1) tokens, but sees that window without fading through time, and every "
        "position is computed at once, so it parallelises over the length. Reaching k tokens back "
        "costs an RNN k sequential steps and a convolution stack about k / (kernel - 1) layers (or "
        "log k with dilations). Attention connects every pair of positions in one step, in "
        "parallel, with no fixed window; it pays with work and memory that grow with the square "
        "of the length, and it needs positional information to know the order."
    ),
}
