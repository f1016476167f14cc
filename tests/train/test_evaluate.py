"""minitx.train.evaluate: the one loop that averages a loss over held-out batches, and the
scores built on it (the Trainer's evaluations, estimate_loss, split_loss, accuracy)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from minitx.data import IGNORE_INDEX
from minitx.data.batches import random_blocks, sequential_blocks
from minitx.train import evaluate, trainer
from minitx.train.evaluate import accuracy, estimate_loss, mean_loss, split_loss
from minitx.train.runtime import plan_runtime
from minitx.train.trainer import TrainConfig, Trainer

V = 7


class Bigram(nn.Module):
    """model(x, y) -> (logits, loss), with a dropout whose mode each call records."""

    def __init__(self, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.table = nn.Embedding(V, V, dtype=dtype)
        self.drop = nn.Dropout(0.5)
        self.calls: list[tuple[bool, bool]] = []  # (training, grad enabled)

    def forward(self, x, y=None):
        self.calls.append((self.training, torch.is_grad_enabled()))
        logits = self.drop(self.table(x))  # (B, T, V)
        loss = None if y is None else F.cross_entropy(logits.flatten(0, 1), y.flatten())
        return logits, loss


def blocks(n: int, rows: int = 4, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    data = torch.randint(V, (200,), generator=g)
    return [random_blocks(data, 8, rows, g) for _ in range(n)]


def test_mean_loss_averages_in_eval_mode_without_gradients_and_restores_the_mode():
    torch.manual_seed(0)
    model = Bigram()
    batches = blocks(3)
    with torch.no_grad():
        model.eval()
        expected = sum(model(x, y)[1].item() for x, y in batches) / 3
    model.train()
    model.calls.clear()
    assert mean_loss(model, iter(batches)) == pytest.approx(expected, abs=1e-6)
    assert model.calls == [(False, False)] * 3  # dropout off, no graph
    assert model.training


def test_mean_loss_weights_batches_and_keeps_float64():
    torch.manual_seed(0)
    model = Bigram(torch.float64)
    data = torch.randint(V, (61,), generator=torch.Generator().manual_seed(1))
    windows = list(sequential_blocks(data, 8, 3))  # the last batch has fewer rows
    assert windows[-1][1].numel() < windows[0][1].numel()
    model.eval()
    with torch.no_grad():
        logits = [model(x)[0] for x, _ in windows]
        total = sum(F.cross_entropy(lg.flatten(0, 1), y.flatten(), reduction="sum").item()
                    for lg, (_, y) in zip(logits, windows, strict=True))
    count = sum(y.numel() for _, y in windows)
    got = mean_loss(model, windows, weight=lambda batch: batch[1].numel())
    assert got == pytest.approx(total / count, abs=1e-12)  # float64 all the way
    assert split_loss(model, data, 8, batch_size=3) == got


def test_mean_loss_takes_any_loss_and_names_what_is_wrong():
    model = nn.Linear(2, 1)
    batches = [(torch.ones(4, 2), torch.zeros(4, 1))] * 2

    def mse(m, b):
        return F.mse_loss(m(b[0]), b[1])

    assert mean_loss(model, batches, mse) == pytest.approx(mse(model, batches[0]).item())
    with pytest.raises(ValueError, match=r"loss_fn must return a scalar tensor, got \(4, 1\)"):
        mean_loss(model, batches, lambda m, b: m(b[0]))
    with pytest.raises(ValueError, match="got tuple"):
        mean_loss(model, batches, lambda m, b: (m(b[0]), 0.0))
    with pytest.raises(ValueError, match="no batch"):
        mean_loss(model, [], mse)


def test_estimate_loss_is_mean_loss_over_its_seeded_blocks():
    torch.manual_seed(0)
    model = Bigram()
    data = torch.randint(V, (300,), generator=torch.Generator().manual_seed(2))
    g = torch.Generator().manual_seed(5)
    same = [random_blocks(data, 8, 4, g) for _ in range(3)]
    assert estimate_loss(model, data, 8, batch_size=4, n_batches=3, seed=5) == mean_loss(
        model, same
    )


def test_trainer_evaluate_is_mean_loss_over_its_fixed_batches():
    torch.manual_seed(0)
    model = Bigram()
    data = torch.randint(V, (300,), generator=torch.Generator().manual_seed(3))

    def get_batch(split, generator):
        return random_blocks(data, 8, 4, generator)

    config = TrainConfig(max_steps=1, batch_size=4, eval_steps=3, seed=11)
    t = Trainer(model, config, get_batch, runtime=plan_runtime("cpu"), progress=False)
    g = torch.Generator().manual_seed(config.seed + 1)
    expected = mean_loss(model, [get_batch("val", g) for _ in range(3)])
    model.calls.clear()
    assert t.evaluate() == {"val": pytest.approx(expected, abs=1e-7)}
    assert model.calls == [(False, False)] * 3 and model.training


def test_accuracy_leaves_out_the_one_ignore_index():
    logits = torch.tensor([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0]])  # (3, 2): predicts 1, 0, 0
    assert accuracy(logits, torch.tensor([1, IGNORE_INDEX, 1])) == 0.5
    assert accuracy(logits, torch.tensor([1, 0, 1]), ignore_index=0) == 0.5
    with pytest.raises(ValueError, match="nothing to score"):
        accuracy(logits, torch.full((3,), IGNORE_INDEX))


def test_the_trainer_module_still_offers_the_names_that_moved():
    assert trainer.accuracy is evaluate.accuracy
    assert trainer.language_model_loss is evaluate.language_model_loss
