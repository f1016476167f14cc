"""The learning-rate sweep behind notebook 02's recall comparison."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from minitx.course.recall_experiment import (
    LEARNING_RATES,
    Sweep,
    build_model,
    n_params,
    recall_runs,
    tune_lr,
)
from minitx.data.recall import RecallTask
from minitx.nn.rnn import LSTM, RNN


def test_default_init_leaves_the_forget_bias_alone_and_the_intervention_sets_it():
    task = RecallTask(gap=3)
    torch.manual_seed(0)
    default = build_model("lstm", 8, task=task)
    torch.manual_seed(0)
    again = build_model("lstm", 8, task=task)
    assert isinstance(default.rnn, nn.LSTM)
    pairs = zip(default.parameters(), again.parameters(), strict=True)
    assert all(torch.equal(p, q) for p, q in pairs)
    bound = 8**-0.5  # PyTorch's rule U(-1/sqrt(H), 1/sqrt(H)): no bias of 2 anywhere
    assert default.rnn.bias_ih_l0.abs().max() <= bound
    assert default.rnn.bias_hh_l0.abs().max() <= bound
    opened = build_model("lstm", 8, 2.0, task=task)
    torch.testing.assert_close(opened.rnn.bias_ih_l0[8:16] + opened.rnn.bias_hh_l0[8:16],
                               torch.full((8,), 2.0))


def test_the_torch_layer_computes_what_the_minitx_layer_computes():
    """The sweep trains nn.RNN / nn.LSTM for speed: the same function as minitx.nn.rnn's."""
    task = RecallTask(gap=4)
    x = torch.randint(0, task.vocab, (5, 6))
    for kind, ours_cls in (("rnn", RNN), ("lstm", LSTM)):
        model = build_model(kind, 6, task=task).double()
        ours = ours_cls.from_torch(model.rnn)
        one_hot = torch.nn.functional.one_hot(x, task.vocab).double()
        torch.testing.assert_close(model.head(ours(one_hot)[0][:, -1]), model(x))


def test_matched_parameter_counts_of_the_notebook():
    task = RecallTask(gap=5)
    rnn, lstm = build_model("rnn", 68, task=task), build_model("lstm", 32, task=task)
    assert isinstance(rnn.rnn, nn.RNN)
    assert n_params(rnn) == 68 * 9 + 68 * 68 + 2 * 68 + 68 * 4 + 4 == 5648
    assert n_params(lstm) == 4 * (32 * 9 + 32 * 32 + 2 * 32) + 32 * 4 + 4 == 5636


def test_bad_settings_are_refused_with_what_was_given():
    with pytest.raises(ValueError, match="LSTM only"):
        build_model("rnn", 4, 2.0, task=RecallTask(gap=1))
    with pytest.raises(ValueError, match="'gru'"):
        build_model("gru", 4, task=RecallTask(gap=1))
    with pytest.raises(ValueError, match="lr=0"):
        recall_runs("rnn", 4, 1, [0], lr=0)
    with pytest.raises(ValueError, match="at least one learning rate"):
        tune_lr("rnn", 4, 1, [0], lrs=())


def test_runs_are_seeded_and_learn_a_short_gap():
    a = recall_runs("lstm", 16, 1, [0, 1], forget_bias=2.0, steps=40, n_eval=200)
    b = recall_runs("lstm", 16, 1, [0, 1], forget_bias=2.0, steps=40, n_eval=200)
    assert a == b and len(a[0]) == len(a[1]) == 2
    assert min(a[0] + a[1]) > 0.9  # a gap of 1 is easy, on validation and test alike


def test_the_sweep_picks_on_validation_and_reports_test():
    sweep = Sweep(val={3e-3: [0.5, 0.7], 1e-2: [0.9, 0.8], 3e-2: [0.9, 0.8]},
                  test={3e-3: [0.4, 0.6], 1e-2: [0.7, 0.9], 3e-2: [1.0, 1.0]})
    assert sweep.best_lr == 1e-2  # a tie on validation goes to the smaller rate
    assert sweep.test[sweep.best_lr] == [0.7, 0.9]  # test accuracies never choose the rate
    assert sweep.result == []  # no held-out seeds, nothing to report
    run = tune_lr("rnn", 8, 1, [0], lrs=(1e-2, 3e-2), steps=5, n_eval=20)
    assert set(run.val) == set(run.test) == {1e-2, 3e-2} and run.best_lr in run.val
    assert LEARNING_RATES == (3e-3, 1e-2, 3e-2)


def test_more_seeds_run_at_the_picked_rate_only_and_are_the_whole_result():
    sweep = Sweep(val={1e-2: [0.9], 3e-2: [0.5]}, test={1e-2: [0.8], 3e-2: [1.0]},
                  more_test=(0.6, 0.7))
    assert sweep.result == [0.6, 0.7]  # the seed that picked the rate is not counted
    kw = {"lrs": (1e-2, 3e-2), "steps": 5, "n_eval": 20}
    run = tune_lr("rnn", 8, 1, [0], more_seeds=[1, 2], **kw)
    assert run.val == tune_lr("rnn", 8, 1, [0], **kw).val  # more seeds never pick the rate
    _, more = recall_runs("rnn", 8, 1, [1, 2], lr=run.best_lr, steps=5, n_eval=20)
    assert run.result == more
    with pytest.raises(ValueError, match=r"new seeds, got \[0\]"):
        tune_lr("rnn", 8, 1, [0, 1], more_seeds=[0, 5], **kw)
