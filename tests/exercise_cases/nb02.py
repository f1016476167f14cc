"""Exercise cases of notebook 02: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import torch

from exercise_cases import Case, prediction, solution, wrong, wrong_answers
from minitx.course.exercises import nb02

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
    # 2 layers x (5 - 1) = 8 = 4 layers x (3 - 1): both see 9 positions
    "02.cnn_reach": prediction(
        ("(c)", "C)"), {"(a)": "layer by layer", "(b)": "layer by layer"}, no_letter=("e", 3.5)
    ),
    "02.lstm_step": Case(
        right=(step_by_slices, step_by_units),
        wrong=wrong_answers("02.lstm_step"),
    ),
    "02.lstm_params": Case(
        right=(4 * (20 * 10 + 20 * 20 + 20 + 20),),  # 2560
        wrong=((640, "four gate"), (2400, "bias"), (1920, None), (2520, None)),
        unreadable=("2560",),
    ),
    "02.forget_gate": Case(
        right=(0.9**20, 0.1216),
        wrong=((0.9 * 20, "multiplies"), (1 - 0.1 * 20, None), (0.5, "repeatedly")),
        unreadable=("0.12",),
    ),
}


def check_hidden_size_factors():
    """The per-step factors, by a hand-written backward pass: d h_T / d x_t is
    D_T W_hh D_(T-1) W_hh ... D_t W_ih with D_k = diag(1 - h_k^2)."""
    x, models = nb02.hidden_size_setup()
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
    for H, f in nb02.hidden_size_factors().items():
        assert abs(f - factors[H]) < 1e-6, (H, f, factors[H])
    small, wide = factors[32], factors[256]
    assert 0.4 < small < 0.7 and 0.4 < wide < 0.7 and abs(small - wide) < 0.15
    assert nb02.hidden_size_truth() == "b"


def check_cnn_reach():
    """1 + L (k - 1) positions: 9 for both stacks, 7 for section 8's stack."""
    for (k, L), want in (((5, 2), 9), ((3, 4), 9), ((3, 3), 7), ((2, 1), 2)):
        assert nb02.conv_receptive_field(k, L) == want == 1 + L * (k - 1)
    assert nb02.cnn_reach_truth() == "c"


def check_lstm_step_reference():
    """The package's cell and the instructor's solution agree with the unit-by-unit step on
    every case."""
    for _, args in nb02.lstm_step_cases():
        want = step_by_units(*args)
        for got in (nb02.lstm_cell_step(*args), solution("02.lstm_step")(*args)):
            assert all(torch.allclose(g, w, atol=1e-12) for g, w in zip(got, want, strict=True))


def check_counts():
    assert nb02._lstm_params() == 2560
    assert abs(nb02.forget_fraction() - 0.9**20) < 1e-12


VALUE_CHECKS = [check_hidden_size_factors, check_cnn_reach, check_lstm_step_reference, check_counts]
