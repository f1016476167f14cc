"""The multi-seed runner behind notebook 02's recall comparison."""

from __future__ import annotations

import pytest
import torch

from minitx.course.recall_experiment import build_model, n_params, recall_accuracies
from minitx.data.recall import RecallTask
from minitx.nn.rnn import LSTM, RNN


def test_default_init_leaves_the_forget_bias_alone_and_the_intervention_sets_it():
    task = RecallTask(gap=3)
    torch.manual_seed(0)
    default = build_model("lstm", 8, task=task)
    torch.manual_seed(0)
    again = build_model("lstm", 8, task=task)
    assert isinstance(default.rnn, LSTM)
    pairs = zip(default.parameters(), again.parameters(), strict=True)
    assert all(torch.equal(p, q) for p, q in pairs)
    bound = 8**-0.5  # PyTorch's rule U(-1/sqrt(H), 1/sqrt(H)): no bias of 2 anywhere
    assert default.rnn.cell.bias_ih.abs().max() <= bound
    assert default.rnn.cell.bias_hh.abs().max() <= bound
    opened = build_model("lstm", 8, 2.0, task=task)
    torch.testing.assert_close(opened.rnn.cell.bias_ih[8:16] + opened.rnn.cell.bias_hh[8:16],
                               torch.full((8,), 2.0))


def test_matched_parameter_counts_of_the_notebook():
    task = RecallTask(gap=5)
    rnn, lstm = build_model("rnn", 68, task=task), build_model("lstm", 32, task=task)
    assert isinstance(rnn.rnn, RNN)
    assert n_params(rnn) == 68 * 9 + 68 * 68 + 2 * 68 + 68 * 4 + 4 == 5648
    assert n_params(lstm) == 4 * (32 * 9 + 32 * 32 + 2 * 32) + 32 * 4 + 4 == 5636


def test_forget_bias_on_an_rnn_is_refused():
    with pytest.raises(ValueError, match="LSTM only"):
        build_model("rnn", 4, 2.0, task=RecallTask(gap=1))


def test_runner_is_seeded_and_learns_a_short_gap():
    a = recall_accuracies("lstm", 16, 1, [0, 1], forget_bias=2.0, steps=40, n_test=200)
    b = recall_accuracies("lstm", 16, 1, [0, 1], forget_bias=2.0, steps=40, n_test=200)
    assert a == b and len(a) == 2
    assert min(a) > 0.9  # a gap of 1 is easy
