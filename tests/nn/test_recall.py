"""The delayed-recall task: generator, model wrapper, training."""

from __future__ import annotations

import pytest
import torch

from minitx.data.recall import RecallTask, make_recall_data, vocab_size
from minitx.nn.rnn import RecallClassifier
from minitx.train.trainer import TrainConfig, Trainer, accuracy


def test_same_seed_same_data_other_seed_other_data():
    x1, y1 = make_recall_data(50, gap=6, seed=3)
    x2, y2 = make_recall_data(50, gap=6, seed=3)
    x3, _ = make_recall_data(50, gap=6, seed=4)
    assert torch.equal(x1, x2) and torch.equal(y1, y2)
    assert not torch.equal(x1, x3)


@pytest.mark.parametrize("gap, K, D", [(0, 2, 1), (1, 4, 4), (9, 3, 5)])
def test_layout_and_labels(gap, K, D):
    x, y = make_recall_data(200, gap, n_symbols=K, n_distractors=D, seed=1)
    assert x.shape == (200, gap + 2) and y.shape == (200,)
    assert x.dtype == y.dtype == torch.long
    assert torch.equal(y, x[:, 0])  # the answer is the first token
    assert ((y >= 0) & (y < K)).all()
    middle = x[:, 1:-1]
    assert ((middle >= K) & (middle < K + D)).all()  # distractors never look like a symbol
    assert (x[:, -1] == K + D).all() and vocab_size(K, D) == K + D + 1  # query token last
    assert set(y.tolist()) == set(range(K))  # every symbol occurs in 200 draws


@pytest.mark.parametrize(
    "kwargs", [{"n": 0, "gap": 1}, {"n": 4, "gap": -1}, {"n": 4, "gap": 1, "n_symbols": 1}]
)
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError, match="need n >= 1"):
        make_recall_data(**kwargs)


def test_classifier_shapes_and_forget_bias():
    model = RecallClassifier("lstm", vocab=9, hidden_size=6, n_classes=4, forget_bias=2.0)
    x, _ = make_recall_data(5, gap=3)
    assert model(x).shape == (5, 4)
    cell = model.rnn.cell
    torch.testing.assert_close(cell.bias_ih[6:12] + cell.bias_hh[6:12], torch.full((6,), 2.0))


def test_classifier_bad_kind():
    with pytest.raises(ValueError, match=r"kind must be one of .*got 'transformer'"):
        RecallClassifier("transformer", 9, 6, 4)


def test_accuracy_counts_argmax_hits_and_skips_ignored_targets():
    logits = torch.nn.functional.one_hot(torch.ones(4, dtype=torch.long), 4).float()  # class 1
    assert accuracy(logits, torch.tensor([1, 1, 0, 3])) == 0.5
    assert accuracy(logits, torch.tensor([1, -100, 0, -100])) == 0.5
    with pytest.raises(ValueError, match="must agree"):
        accuracy(logits, torch.tensor([1, 1]))
    with pytest.raises(ValueError, match="nothing to score"):
        accuracy(logits, torch.full((4,), -100))


@pytest.mark.parametrize("kind", ["rnn", "lstm"])
def test_the_trainer_learns_a_short_gap(kind):
    task = RecallTask(gap=1, batch_size=64)
    config = TrainConfig(max_steps=60, batch_size=64, learning_rate=1e-2, min_lr=1e-2,
                         warmup_steps=0, weight_decay=0.0, betas=(0.9, 0.999), grad_clip=1.0,
                         eval_interval=60, eval_steps=1, log_interval=1, seed=0)
    torch.manual_seed(0)
    model = RecallClassifier(kind, task.vocab, 16, task.n_symbols)
    losses = Trainer(model, config, task.get_batch, loss_fn=task.loss).train()["train_loss"]
    assert len(losses) == 60 and losses[-1] < 0.25 * losses[0]
    x, y = make_recall_data(300, gap=1, seed=12345)
    assert accuracy(model(x), y) > 0.95


def test_the_task_gives_fresh_seeded_batches_and_checks_its_sizes():
    task = RecallTask(gap=3, batch_size=5)
    a = task.get_batch("train", torch.Generator().manual_seed(0))
    b = task.get_batch("train", torch.Generator().manual_seed(0))
    g = torch.Generator().manual_seed(0)
    first, second = task.get_batch("train", g), task.get_batch("train", g)
    assert torch.equal(a[0], b[0]) and not torch.equal(first[0], second[0])
    assert a[0].shape == (5, 5) and torch.equal(a[1], a[0][:, 0])
    assert task.vocab == 9
    with pytest.raises(ValueError, match="gap >= 0"):
        RecallTask(gap=-1)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        RecallTask(gap=1, batch_size=0)
