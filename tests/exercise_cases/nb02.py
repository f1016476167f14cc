"""Exercise cases of notebook 02: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import importlib

import numpy as np
import torch
from torch import nn

from exercise_cases import Case, prediction, solution, wrong, wrong_answers
from minitx.course.exercises import answers, nb02
from minitx.nn.rnn import LSTM, LSTMCell

# ---- learner functions for 02.lstm_step, written by hand ------------------------------------


def step_by_slices(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    H = h.shape[1]
    pre = x @ weight_ih.t() + h @ weight_hh.t() + bias_ih + bias_hh
    i = torch.sigmoid(pre[:, 0:H])
    f = torch.sigmoid(pre[:, H : 2 * H])
    g = torch.tanh(pre[:, 2 * H : 3 * H])
    o = torch.sigmoid(pre[:, 3 * H : 4 * H])
    c_new = f * c + i * g
    return o * torch.tanh(c_new), c_new


def step_by_units(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    """One sequence and one unit at a time, with plain dot products."""
    B, H = h.shape
    h_new, c_new = torch.empty(B, H, dtype=x.dtype), torch.empty(B, H, dtype=x.dtype)
    for b in range(B):
        for j in range(H):
            pre = [
                weight_ih[k * H + j] @ x[b]
                + weight_hh[k * H + j] @ h[b]
                + bias_ih[k * H + j]
                + bias_hh[k * H + j]
                for k in range(4)
            ]
            i, f, o = (1 / (1 + torch.exp(-pre[k])) for k in (0, 1, 3))
            c_new[b, j] = f * c[b, j] + i * torch.tanh(pre[2])
            h_new[b, j] = o * torch.tanh(c_new[b, j])
    return h_new, c_new


def step_numpy(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    """In NumPy, gate by gate, handed back as tensors."""
    x, h, c, W, U, b1, b2 = (t.numpy() for t in (x, h, c, weight_ih, weight_hh, bias_ih, bias_hh))
    a = x @ W.T + h @ U.T + b1 + b2
    i, f, g, o = np.split(a, 4, axis=1)
    sig = lambda z: 1 / (1 + np.exp(-z))
    c_new = sig(f) * c + sig(i) * np.tanh(g)
    return torch.from_numpy(sig(o) * np.tanh(c_new)), torch.from_numpy(c_new)


def step_float64_stacked(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    """One matrix product of [x, h] with [W_ih, W_hh], in float64 whatever comes in."""
    xh = torch.cat([x, h], dim=1).double()
    a = xh @ torch.cat([weight_ih, weight_hh], dim=1).double().T + (bias_ih + bias_hh).double()
    H = h.shape[1]
    gates = [a[:, k * H : (k + 1) * H] for k in range(4)]
    i, f, o = (torch.sigmoid(gates[k]) for k in (0, 1, 3))
    c_new = f * c.double() + i * torch.tanh(gates[2])
    return o * torch.tanh(c_new), c_new


# ---- cheats: the package's or PyTorch's LSTM, in every wrapping ---------------------------


def cheat_lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    return torch.lstm_cell(x, (h, c), weight_ih, weight_hh, bias_ih, bias_hh)


def cheat_lstm_cell_plus_zero(x, h, c, *weights):
    h_new, c_new = torch.lstm_cell(x, (h, c), *weights)
    return h_new + 0, c_new.clone().double()


def _copied(cell, weights):
    with torch.no_grad():
        for p, w in zip(cell.parameters(), weights, strict=True):
            p.copy_(w)
    return cell


def cheat_torch_cell(x, h, c, *weights):
    cell = _copied(nn.LSTMCell(x.size(1), h.size(1)).double(), weights)
    with torch.no_grad():
        h_new, c_new = cell(x, (h, c))
    return h_new, c_new


def cheat_torch_lstm(x, h, c, *weights):
    lstm = _copied(nn.LSTM(x.size(1), h.size(1), batch_first=True).double(), weights)
    with torch.no_grad():
        _, (h_n, c_n) = lstm(x[:, None], (h[None], c[None]))
    return h_n[0], c_n[0]


def cheat_package_cell(x, h, c, *weights):
    cell = _copied(LSTMCell(x.size(1), h.size(1)).double(), weights)
    with torch.no_grad():
        return tuple(cell(x, (h, c)))


def cheat_package_lstm(x, h, c, *weights):
    lstm = _copied(LSTM(x.size(1), h.size(1)).double(), weights)
    with torch.no_grad():
        _, (h_n, c_n) = lstm(x[:, None], (h[None], c[None]))
    return h_n[0], c_n[0]


def cheat_package_gates(x, h, c, *weights):
    cell = _copied(LSTMCell(x.size(1), h.size(1)).double(), weights)
    with torch.no_grad():
        i, f, g, o = cell.gates(x, h)
    c_new = f * c + i * g
    return o * torch.tanh(c_new), c_new


def cheat_by_getattr(x, h, c, *weights):
    cls = getattr(importlib.import_module("minitx.nn.rnn"), "LSTM" + "Cell")
    cell = _copied(cls(x.size(1), h.size(1)).double(), weights)
    with torch.no_grad():
        return cell(x, (h, c))


CHEATS = {
    "02.lstm_step": (
        cheat_lstm_cell,
        cheat_lstm_cell_plus_zero,
        cheat_torch_cell,
        cheat_torch_lstm,
        cheat_package_cell,
        cheat_package_lstm,
        cheat_package_gates,
        cheat_by_getattr,
    ),
}


@wrong("02.lstm_step", "wrong order")
def swapped(x, h, c, *weights):
    h_new, c_new = step_by_slices(x, h, c, *weights)
    return c_new, h_new


@wrong("02.lstm_step", "c_new is right but h_new differs first at batch row 0")
def no_tanh_on_c(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    _, c_new = step_by_slices(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh)
    H = h.shape[1]
    o = torch.sigmoid((x @ weight_ih.t() + h @ weight_hh.t() + bias_ih + bias_hh)[:, 3 * H :])
    return o * c_new, c_new


@wrong("02.lstm_step", "c_new differs from the package's LSTMCell first at batch row 0")
def gates_ifog(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):  # wrong gate order
    i, f, o, g = (x @ weight_ih.t() + h @ weight_hh.t() + bias_ih + bias_hh).chunk(4, 1)
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c_new), c_new


@wrong("02.lstm_step", "c_new differs")
def without_bias_hh(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    return step_by_slices(x, h, c, weight_ih, weight_hh, bias_ih, torch.zeros_like(bias_hh))


@wrong("02.lstm_step", "shape")
def squeezed(x, h, c, *weights):  # drops the batch dimension when B = 1
    h_new, c_new = step_by_slices(x, h, c, *weights)
    return h_new.squeeze(), c_new.squeeze()


@wrong("02.lstm_step", "raised RuntimeError")
def untransposed(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    return step_by_slices(x, h, c, weight_ih.t(), weight_hh.t(), bias_ih, bias_hh)


@wrong("02.lstm_step", "NaN")
def nan_on_the_cell(x, h, c, *weights):
    h_new, c_new = step_by_slices(x, h, c, *weights)
    return h_new, c_new * torch.log(-torch.ones_like(c_new))


CASES: dict[str, Case] = {
    # default init: W_hh ~ U(-1/sqrt(H), 1/sqrt(H)), spectral radius ~ 1/sqrt(3) for any H
    "02.hidden_size": prediction(
        ("(b)", "B"), {"(a)": "sqrt(H)", "(c)": "sqrt(H)"}, no_letter=("d", 2)
    ),
    "02.lstm_step": Case(
        right=(step_by_slices, step_by_units, step_numpy, step_float64_stacked),
        wrong=wrong_answers("02.lstm_step"),
    ),
    # 0.9 ** 20 = 0.12158: right within about 6e-4, so 0.121 and 0.122 pass, 0.123 does not
    "02.forget_gate": Case(
        right=(0.9**20, 0.122, 0.121, 0.1216, np.float32(0.9) ** 20,
               torch.tensor(0.9, dtype=torch.float32) ** 20, np.float64(0.12158), [0.122]),
        wrong=((0.9 * 20, "multiplies"), (1 - 0.1 * 20, None), (0.5, "repeatedly"),
               ("0.12", "answer with numbers"), (0.12, "3 decimals"), (0.1, "repeatedly"),
               (0.123, "repeatedly"), (0.1209, "repeatedly"), (0.1223, "repeatedly"),
               (float("nan"), "finite")),
    ),
}


def check_hidden_size_factors():
    """The per-step factors, by a hand-written backward pass: d h_T / d x_t is
    D_T W_hh D_(T-1) W_hh ... D_t W_ih with D_k = diag(1 - h_k^2)."""
    key = answers.key("02")
    x, models = key.hidden_size_setup()
    factors = {}
    for H, rnn in models.items():
        W_ih, W_hh = rnn.cell.weight_ih.detach(), rnn.cell.weight_hh.detach()
        b = (rnn.cell.bias_ih + rnn.cell.bias_hh).detach()
        B, T, _ = x.shape
        hs, h = [], torch.zeros(B, H, dtype=torch.float64)
        for t in range(T):
            h = torch.tanh(x[:, t] @ W_ih.T + h @ W_hh.T + b)
            hs.append(h)
        norms = {}
        back = torch.diag_embed(1 - hs[-1] ** 2)  # (B, H, H): d h_T / d a_T
        for d in range(61):
            t = T - 1 - d
            if d in (1, 60):
                J = back @ W_ih  # (B, H, C): d h_T / d x_t
                norms[d] = J.pow(2).sum((1, 2)).sqrt().mean()
            if t > 0:
                back = back @ W_hh @ torch.diag_embed(1 - hs[t - 1] ** 2)
        factors[H] = (norms[60] / norms[1]).item() ** (1 / 59)
    for H, f in key.hidden_size_factors().items():
        assert abs(f - factors[H]) < 1e-6, (H, f, factors[H])
    small, wide = factors[32], factors[256]
    assert 0.4 < small < 0.7 and 0.4 < wide < 0.7 and abs(small - wide) < 0.15
    assert solution("02.hidden_size") == "b"


def check_lstm_step_reference():
    """The package's cell and the instructor's solution agree with the unit-by-unit step on
    every case."""
    for _, args in nb02.lstm_step_cases():
        want = step_by_units(*args)
        for got in (nb02.lstm_cell_step(*args), solution("02.lstm_step")(*args)):
            assert all(torch.allclose(g, w, atol=1e-12) for g, w in zip(got, want, strict=True))


def check_counts():
    assert abs(answers.key("02").forget_fraction() - 0.9**20) < 1e-12
    assert (answers.key("02").FORGET, answers.key("02").STEPS) == (nb02.FORGET, nb02.STEPS)


VALUE_CHECKS = [check_hidden_size_factors, check_lstm_step_reference, check_counts]
