"""minitx.nn.rnn equals torch.nn.RNN / LSTM / GRU with copied weights: outputs, states, grads."""

from __future__ import annotations

import pytest
import torch
from parity import assert_same_outputs, assert_same_outputs_and_grads, matched_parameters
from torch import nn

from minitx.nn.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell

PAIRS = [(RNN, nn.RNN), (LSTM, nn.LSTM), (GRU, nn.GRU)]
SHAPES = [(1, 1, 1, 1), (2, 5, 3, 4), (3, 7, 6, 2), (4, 11, 2, 9)]  # (B, T, C, H)
TOL = {"rtol": 1e-10, "atol": 1e-12}


def _pair(ours_cls, torch_cls, C, H, seed, **kwargs):
    torch.manual_seed(seed)
    ref = torch_cls(C, H, batch_first=True, **kwargs).double()
    return ours_cls.from_torch(ref), ref


def _initial_state(ours_cls, B, H, seed):
    g = torch.Generator().manual_seed(seed + 100)
    h0 = torch.randn(1, B, H, generator=g, dtype=torch.float64)
    if ours_cls is LSTM:
        return h0, torch.randn(1, B, H, generator=g, dtype=torch.float64)
    return h0


@pytest.mark.parametrize("ours_cls, torch_cls", PAIRS, ids=["rnn", "lstm", "gru"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "given-state"])
def test_forward_and_gradients_match_torch(ours_cls, torch_cls, shape, seed, with_state):
    B, T, C, H = shape
    ours, ref = _pair(ours_cls, torch_cls, C, H, seed)
    x = torch.randn(B, T, C, dtype=torch.float64, requires_grad=True)
    state = _initial_state(ours_cls, B, H, seed) if with_state else None

    # One upstream gradient through output and state: input and every parameter gradient agree.
    names = {f"cell.{n}": f"{n}_l0" for n, _ in ours.cell.named_parameters()}
    got, _ = assert_same_outputs_and_grads(
        lambda x: ours(x, state),
        lambda x: ref(x, state),
        [x],
        matched_parameters(ours, ref, names),
        **TOL,
    )
    assert got[1].shape == (1, B, H)


@pytest.mark.parametrize("ours_cls, torch_cls", PAIRS, ids=["rnn", "lstm", "gru"])
def test_without_bias_matches_torch(ours_cls, torch_cls):
    ours, ref = _pair(ours_cls, torch_cls, 3, 4, seed=5, bias=False)
    assert ours.cell.bias_ih is None and len(list(ours.parameters())) == 2
    x = torch.randn(2, 6, 3, dtype=torch.float64)
    assert_same_outputs(ours(x), ref(x), **TOL)


def test_relu_rnn_matches_torch():
    ours, ref = _pair(RNN, nn.RNN, 3, 4, seed=2, nonlinearity="relu")
    assert ours.cell.nonlinearity == "relu"
    x = torch.randn(2, 6, 3, dtype=torch.float64)
    assert_same_outputs(ours(x), ref(x), **TOL)


def test_float32_copy_keeps_dtype_and_matches():
    ref = nn.LSTM(4, 8, batch_first=True)
    ours = LSTM.from_torch(ref)
    assert ours.cell.weight_ih.dtype == torch.float32
    x = torch.randn(3, 5, 4)
    torch.testing.assert_close(ours(x)[0], ref(x)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "cell_cls, torch_cell",
    [(RNNCell, nn.RNNCell), (LSTMCell, nn.LSTMCell), (GRUCell, nn.GRUCell)],
    ids=["rnn", "lstm", "gru"],
)
def test_cells_match_torch_cells(cell_cls, torch_cell):
    ref = torch_cell(3, 5).double()
    ours = cell_cls(3, 5).double()
    with torch.no_grad():
        for name, p in ours.named_parameters():
            p.copy_(getattr(ref, name))
    x, h = torch.randn(4, 3, dtype=torch.float64), torch.randn(4, 5, dtype=torch.float64)
    if cell_cls is LSTMCell:
        c = torch.randn(4, 5, dtype=torch.float64)
        assert_same_outputs(ours(x, (h, c)), ref(x, (h, c)), **TOL)
    else:
        torch.testing.assert_close(ours(x, h), ref(x, h), **TOL)
        torch.testing.assert_close(ours(x), ref(x), **TOL)


def test_parameter_layout_mirrors_torch():
    ours = LSTM(3, 5)
    assert ours.cell.weight_ih.shape == (20, 3)
    assert ours.cell.weight_hh.shape == (20, 5)
    assert ours.cell.bias_ih.shape == ours.cell.bias_hh.shape == (20,)
    assert GRU(3, 5).cell.weight_ih.shape == (15, 3)
    assert RNN(3, 5).cell.weight_hh.shape == (5, 5)


def test_lstm_gates_are_the_equations():
    cell = LSTMCell(2, 3).double()
    x, h, c = (torch.randn(4, n, dtype=torch.float64) for n in (2, 3, 3))
    i, f, g, o = cell.gates(x, h)
    assert all(t.min() > 0 and t.max() < 1 for t in (i, f, o))
    h1, c1 = cell(x, (h, c))
    torch.testing.assert_close(c1, f * c + i * g)
    torch.testing.assert_close(h1, o * torch.tanh(c1))


def test_gru_gates_are_the_equations():
    cell = GRUCell(2, 3).double()
    x, h = torch.randn(4, 2, dtype=torch.float64), torch.randn(4, 3, dtype=torch.float64)
    _, z, n = cell.gates(x, h)
    torch.testing.assert_close(cell(x, h), (1 - z) * n + z * h)


# ---- bad inputs: one test each -------------------------------------------------------------


def test_wrong_feature_size_names_shapes():
    with pytest.raises(ValueError, match=r"\(B, T, 3\).*\(2, 4, 5\)"):
        RNN(3, 4)(torch.randn(2, 4, 5))


def test_not_3d_input_names_shapes():
    with pytest.raises(ValueError, match=r"\(B, T, 3\).*\(4, 3\)"):
        LSTM(3, 4)(torch.randn(4, 3))


def test_empty_sequence():
    with pytest.raises(ValueError, match=r"T >= 1, got \(2, 0, 3\)"):
        GRU(3, 4)(torch.randn(2, 0, 3))


def test_cell_input_not_2d():
    with pytest.raises(ValueError, match=r"\(B, 3\).*\(2, 4, 3\)"):
        GRUCell(3, 4)(torch.randn(2, 4, 3))


def test_wrong_initial_state_shape():
    with pytest.raises(ValueError, match=r"\(1, 2, 4\).*\(2, 4\)"):
        GRU(3, 4)(torch.randn(2, 5, 3), torch.zeros(2, 4))


def test_lstm_state_must_be_a_pair():
    with pytest.raises(ValueError, match=r"tuple \(h0, c0\).*Tensor"):
        LSTM(3, 4)(torch.randn(2, 5, 3), torch.zeros(1, 2, 4))


def test_rnn_state_must_be_a_tensor():
    with pytest.raises(ValueError, match=r"tensor h0.*tuple"):
        RNN(3, 4)(torch.randn(2, 5, 3), (torch.zeros(1, 2, 4), torch.zeros(1, 2, 4)))


def test_from_torch_wrong_kind():
    with pytest.raises(TypeError, match=r"expected nn\.LSTM, got GRU"):
        LSTM.from_torch(nn.GRU(3, 4, batch_first=True))


def test_from_torch_not_a_module_of_that_family():
    with pytest.raises(TypeError, match=r"expected nn\.RNN, got Linear"):
        RNN.from_torch(nn.Linear(3, 4))


def test_from_torch_two_layers():
    with pytest.raises(ValueError, match=r"num_layers=1, .*got num_layers=2"):
        GRU.from_torch(nn.GRU(3, 4, num_layers=2, batch_first=True))


def test_from_torch_bidirectional():
    with pytest.raises(ValueError, match="bidirectional=True"):
        RNN.from_torch(nn.RNN(3, 4, bidirectional=True, batch_first=True))


def test_from_torch_not_batch_first():
    with pytest.raises(ValueError, match=r"batch_first=True\), got .*batch_first=False"):
        LSTM.from_torch(nn.LSTM(3, 4))


def test_from_torch_lstm_projection():
    with pytest.raises(ValueError, match="proj_size=0, got 2"):
        LSTM.from_torch(nn.LSTM(3, 4, proj_size=2, batch_first=True))


def test_bad_nonlinearity():
    with pytest.raises(ValueError, match="'tanh' or 'relu', got 'sigmoid'"):
        RNNCell(3, 4, nonlinearity="sigmoid")


# ---- gradient norms against distance -------------------------------------------------------


def test_gradient_norms_match_full_jacobian():
    from minitx.course.gradients import gradient_norms_by_distance

    torch.manual_seed(3)
    for model in (RNN(3, 4).double(), LSTM(3, 4).double(), nn.GRU(3, 4, batch_first=True).double()):
        x = torch.randn(2, 6, 3, dtype=torch.float64)
        norms = gradient_norms_by_distance(model, x)
        want = torch.zeros(6, dtype=torch.float64)
        for b in range(2):  # one sequence at a time, Jacobian (H, 1, T, C) by autograd
            J = torch.autograd.functional.jacobian(
                lambda s, m=model: m(s)[0][0, -1], x[b : b + 1]
            )
            want += J.pow(2).sum((0, 1, 3)).sqrt().flip(0) / 2
        torch.testing.assert_close(norms, want, **TOL)


def test_gradient_norms_bad_shape():
    from minitx.course.gradients import gradient_norms_by_distance

    with pytest.raises(ValueError, match=r"\(B, T, C\), got \(5, 3\)"):
        gradient_norms_by_distance(RNN(3, 4), torch.randn(5, 3))


def test_rnn_with_gain_scales_every_direction():
    from minitx.course.gradients import rnn_with_gain, vanishing_estimate

    W = rnn_with_gain(3, 5, gain=0.7).cell.weight_hh
    torch.testing.assert_close(torch.linalg.svdvals(W), torch.full((5,), 0.7, dtype=W.dtype))
    assert vanishing_estimate(10).item() == pytest.approx(0.45**10)


def test_init_forget_bias():
    from minitx.nn.rnn import init_forget_bias

    lstm = LSTM(2, 3)
    init_forget_bias(lstm, 4.0)
    f = lstm.cell.gates(torch.zeros(1, 2), torch.zeros(1, 3))[1]
    torch.testing.assert_close(f, torch.sigmoid(torch.full((1, 3), 4.0)))
    with pytest.raises(TypeError, match=r"LSTM or LSTMCell with biases, got GRU"):
        init_forget_bias(GRU(2, 3), 1.0)
