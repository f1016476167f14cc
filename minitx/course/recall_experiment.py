"""Notebook 02's delayed-recall comparison: one model kind, several seeds, one Trainer.

``recall_accuracies`` trains a ``RecallClassifier`` from each seed with
``minitx.train.trainer.Trainer`` (plain Adam, constant rate, fresh batches) and returns
its test accuracies. ``forget_bias=None`` keeps PyTorch's default initialisation of an
LSTM; a number sets the forget-gate bias (``init_forget_bias``) as a named intervention.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from minitx.data.recall import RecallTask, make_recall_data
from minitx.nn.rnn import LAYERS, RecallClassifier, init_forget_bias
from minitx.train.config import TrainConfig
from minitx.train.evaluate import accuracy
from minitx.train.runtime import plan_runtime
from minitx.train.trainer import Trainer

__all__ = ["build_model", "n_params", "recall_accuracies"]


def build_model(kind: str, hidden: int, forget_bias: float | None = None, *,
                task: RecallTask) -> RecallClassifier:
    """A RecallClassifier whose layer has PyTorch's default initialisation; for an LSTM,
    ``forget_bias`` (if not None) then sets the forget gate's bias."""
    model = RecallClassifier(kind, task.vocab, hidden, task.n_symbols)
    model.rnn = LAYERS[kind](task.vocab, hidden)  # default init, no forget-bias change
    if forget_bias is not None:
        if kind != "lstm":
            raise ValueError(f"forget_bias applies to an LSTM only, got kind={kind!r}")
        init_forget_bias(model.rnn, forget_bias)
    return model


def n_params(model: torch.nn.Module) -> int:
    """Number of trainable numbers."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def recall_accuracies(kind: str, hidden: int, gap: int, seeds: Iterable[int], *,
                      forget_bias: float | None = None, steps: int = 100,
                      batch_size: int = 64, lr: float = 1e-2, n_test: int = 500) -> list[float]:
    """Test accuracy on ``n_test`` fresh sequences after ``steps`` Adam steps, one per seed
    (the seed fixes the initial weights and the batches)."""
    task = RecallTask(gap, batch_size=batch_size)
    x_test, y_test = make_recall_data(n_test, gap, seed=10**6)
    config = TrainConfig(max_steps=steps, batch_size=batch_size, learning_rate=lr, min_lr=lr,
                         warmup_steps=0, weight_decay=0.0, betas=(0.9, 0.999), grad_clip=1.0,
                         eval_interval=steps, eval_steps=1, log_interval=steps)
    runtime = plan_runtime("cpu", threads=1)
    out = []
    for s in seeds:
        torch.manual_seed(s)
        model = build_model(kind, hidden, forget_bias, task=task)
        Trainer(model, TrainConfig(**{**config.__dict__, "seed": s}), task.get_batch,
                loss_fn=task.loss, runtime=runtime, progress=False).train()
        with torch.no_grad():
            out.append(accuracy(model(x_test), y_test))
    return out
