"""Notebook 02's delayed-recall comparison: a learning-rate sweep per model, several seeds.

``recall_runs`` trains a ``RecallClassifier`` from each seed with
``minitx.train.trainer.Trainer`` (plain Adam, constant rate, gradients clipped at 1, fresh
batches) and returns its accuracies on a validation set and on a separate test set.
``tune_lr`` runs it at every rate of a sweep and picks, for this model, the rate with the
best mean *validation* accuracy; it then runs that rate from more, *held-out* seeds, and
their test accuracies are the result: no seed that helped pick the rate is counted. Every
model gets the same sweep, steps and seeds, so none is compared at a rate tuned for another.

``forget_bias=None`` keeps PyTorch's default initialisation of an LSTM; a number sets the
forget-gate bias as a named intervention. The layers are PyTorch's ``nn.RNN`` and
``nn.LSTM``: the same equations and initialisation as ``minitx.nn.rnn`` (notebook 02
checks them equal), with the time loop in C++, about twice as fast for these small models.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from minitx.data.recall import RecallTask, make_recall_data
from minitx.nn.rnn import RecallClassifier
from minitx.train.config import TrainConfig
from minitx.train.evaluate import accuracy
from minitx.train.parallel import run_parallel
from minitx.train.runtime import plan_runtime
from minitx.train.trainer import Trainer

__all__ = [
    "LEARNING_RATES",
    "TORCH_LAYERS",
    "Sweep",
    "build_model",
    "n_params",
    "recall_runs",
    "tune_lr",
]

LEARNING_RATES = (3e-3, 1e-2, 3e-2)  # Adam's usual range, a factor of about 3 apart
TORCH_LAYERS = {"rnn": nn.RNN, "lstm": nn.LSTM}  # the time loop in C++
_VAL_SEED, _TEST_SEED = 10**6 + 1, 10**6  # two fixed sets of sequences, never trained on


def build_model(kind: str, hidden: int, forget_bias: float | None = None, *,
                task: RecallTask) -> RecallClassifier:
    """A RecallClassifier whose layer has PyTorch's default initialisation; for an LSTM,
    ``forget_bias`` (if not None) then sets the forget gate's bias."""
    if kind not in TORCH_LAYERS:
        raise ValueError(f"kind must be one of {sorted(TORCH_LAYERS)}, got {kind!r}")
    if forget_bias is not None and kind != "lstm":
        raise ValueError(f"forget_bias applies to an LSTM only, got kind={kind!r}")
    model = RecallClassifier(kind, task.vocab, hidden, task.n_symbols)
    model.rnn = TORCH_LAYERS[kind](task.vocab, hidden, batch_first=True)  # default init
    if forget_bias is not None:
        with torch.no_grad():  # gate order i, f, g, o: rows H..2H are the forget gate
            model.rnn.bias_ih_l0[hidden : 2 * hidden] = forget_bias
            model.rnn.bias_hh_l0[hidden : 2 * hidden] = 0.0
    return model


def n_params(model: nn.Module) -> int:
    """Number of trainable numbers."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def recall_runs(kind: str, hidden: int, gap: int, seeds: Iterable[int], *,
                forget_bias: float | None = None, lr: float = 1e-2, steps: int = 100,
                batch_size: int = 64, n_eval: int = 500) -> tuple[list[float], list[float]]:
    """(validation accuracies, test accuracies), one of each per seed, after ``steps`` Adam
    steps at rate ``lr``; each set has ``n_eval`` sequences. The seed fixes the initial
    weights and the batches; the seeds train side by side (``run_parallel``)."""
    runs = run_parallel(_one_run, _jobs(kind, hidden, gap, seeds, forget_bias, lr, steps,
                                        batch_size, n_eval))
    return [v for v, _ in runs], [t for _, t in runs]


def _jobs(kind: str, hidden: int, gap: int, seeds: Iterable[int], forget_bias: float | None,
          lr: float, steps: int, batch_size: int, n_eval: int) -> list[tuple]:
    """One ``_one_run`` job per seed, after checking the settings before any run starts."""
    if lr <= 0 or steps < 1 or n_eval < 1:
        raise ValueError(f"need lr > 0, steps >= 1, n_eval >= 1; got lr={lr}, steps={steps}, "
                         f"n_eval={n_eval}")
    build_model(kind, hidden, forget_bias, task=RecallTask(gap, batch_size=batch_size))  # checks
    return [(kind, hidden, gap, s, forget_bias, lr, steps, batch_size, n_eval) for s in seeds]


def _one_run(kind: str, hidden: int, gap: int, seed: int, forget_bias: float | None,
             lr: float, steps: int, batch_size: int, n_eval: int) -> tuple[float, float]:
    task = RecallTask(gap, batch_size=batch_size)
    config = TrainConfig(max_steps=steps, batch_size=batch_size, learning_rate=lr, min_lr=lr,
                         warmup_steps=0, weight_decay=0.0, betas=(0.9, 0.999), grad_clip=1.0,
                         eval_interval=steps, eval_steps=1, log_interval=steps, seed=seed)
    torch.manual_seed(seed)
    model = build_model(kind, hidden, forget_bias, task=task)
    Trainer(model, config, task.get_batch, loss_fn=task.loss,
            runtime=plan_runtime("cpu", threads=1), progress=False).train()
    sets = [make_recall_data(n_eval, gap, seed=s) for s in (_VAL_SEED, _TEST_SEED)]
    with torch.no_grad():
        val, test = (accuracy(model(x), y) for x, y in sets)
    return val, test


@dataclass(frozen=True)
class Sweep:
    """One model's learning-rate sweep: accuracies per rate (one per seed), the rate picked
    on mean validation accuracy, and the test accuracies of held-out seeds run at that rate."""

    val: dict[float, list[float]]
    test: dict[float, list[float]]
    more_test: tuple[float, ...] = ()

    @property
    def best_lr(self) -> float:
        """The rate with the highest mean validation accuracy (the smaller rate on a tie)."""
        return max(sorted(self.val), key=lambda lr: (_mean(self.val[lr]), -lr))

    @property
    def result(self) -> list[float]:
        """Test accuracies at ``best_lr`` of the held-out seeds only, one per seed: the
        sweep's own seeds picked the rate, so they are not counted (empty without more)."""
        return list(self.more_test)


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def tune_lr(kind: str, hidden: int, gap: int, seeds: Iterable[int], *,
            more_seeds: Iterable[int] = (), lrs: Sequence[float] = LEARNING_RATES,
            forget_bias: float | None = None, steps: int = 100, batch_size: int = 64,
            n_eval: int = 500) -> Sweep:
    """Run ``recall_runs`` at every rate of ``lrs`` with the same seeds and budget, pick the
    rate on validation accuracy, then run that rate from ``more_seeds`` too."""
    if not lrs:
        raise ValueError("need at least one learning rate, got none")
    seeds, more_seeds = list(seeds), list(more_seeds)
    if shared := sorted(set(seeds) & set(more_seeds)):
        raise ValueError(f"more_seeds must be new seeds, got {shared} in seeds too")
    # Every (rate, seed) run at once, so that no core waits for the slowest seed of a rate.
    flat = run_parallel(_one_run, [job for lr in lrs for job in _jobs(
        kind, hidden, gap, seeds, forget_bias, lr, steps, batch_size, n_eval)])
    n = len(seeds)
    runs = {lr: flat[i * n:(i + 1) * n] for i, lr in enumerate(lrs)}
    sweep = Sweep({lr: [v for v, _ in r] for lr, r in runs.items()},
                  {lr: [t for _, t in r] for lr, r in runs.items()})
    if not more_seeds:
        return sweep
    _, more = recall_runs(kind, hidden, gap, more_seeds, forget_bias=forget_bias,
                          lr=sweep.best_lr, steps=steps, batch_size=batch_size, n_eval=n_eval)
    return Sweep(sweep.val, sweep.test, tuple(more))
