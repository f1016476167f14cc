"""Training the RNN encoder-decoder of :mod:`minitx.nn.seq2seq` on the date task, through
the one :class:`minitx.train.trainer.Trainer`; and the two date models trained to the end
that the package ships (notebook 10), made by ``benchmarks/bench_date_models.py``."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from minitx.data import dates
from minitx.data.dates import DateBatch, DateExample
from minitx.data.tokenizer import IGNORE_INDEX
from minitx.nn.encoder_decoder import DateTransformer
from minitx.nn.modes import model_device
from minitx.nn.seq2seq import Seq2Seq, exact_match
from minitx.train.runtime import plan_runtime
from minitx.train.trainer import TrainConfig, Trainer

__all__ = ["DATE_MODELS", "SHIPPED_DATE_MODELS", "DateTask", "build_date_model",
           "load_date_models", "train_new_date_model", "train_seq2seq"]

# The date models of notebooks 03 and 10, by name: how to build each, untrained.
DATE_MODELS = {
    "Bahdanau (GRU)": ("seq2seq", {"attention": "additive"}),  # notebook 03's attention model
    "GRU, no attention": ("seq2seq", {"attention": None}),  # notebook 03's bottleneck model
    "transformer": ("transformer", {"d_model": 32, "d_ff": 64}),  # notebook 10's
}
SHIPPED_DATE_MODELS = Path(__file__).resolve().parents[1] / "data/checkpoints/date_models.pt"


def build_date_model(name: str) -> nn.Module:
    """A fresh, untrained model of :data:`DATE_MODELS` (initialised from torch's RNG)."""
    if name not in DATE_MODELS:
        raise ValueError(f"name must be one of {sorted(DATE_MODELS)}, got {name!r}")
    kind, kwargs = DATE_MODELS[name]
    return Seq2Seq.for_dates(**kwargs) if kind == "seq2seq" else DateTransformer(**kwargs)


def train_new_date_model(name: str, seed: int, train: Sequence[DateExample],
                         val: Sequence[DateExample], steps: int, batch_size: int,
                         lr: float = 2e-2, log_every: int | None = None,
                         keep_weights_at: Sequence[int] = ()) -> tuple[nn.Module, dict[str, Any]]:
    """A new model ``name`` of :data:`DATE_MODELS`, weights from ``torch.manual_seed(seed)``,
    trained by :func:`train_seq2seq` (batches of ``seed``, one evaluation at the end; the
    other arguments are :func:`train_seq2seq`'s): (the model, its history). A package
    function, so that :func:`minitx.train.parallel.run_parallel` can train several side by
    side."""
    torch.manual_seed(seed)
    model = build_date_model(name)
    history = train_seq2seq(model, train, val=val, steps=steps, batch_size=batch_size, lr=lr,
                            seed=seed, eval_every=steps, log_every=log_every,
                            keep_weights_at=keep_weights_at)
    return model, history


def load_date_models(path: str | Path | None = None) -> dict[str, nn.Module]:
    """The shipped date models (seed 0, at their best swept learning rate, trained until they
    write 99% of the validation dates right), in eval mode, by name:
    ``{"Bahdanau (GRU)": Seq2Seq, "transformer": DateTransformer}``. Their recipe and
    scores: ``benchmarks/results/date_models.json``."""
    path = Path(SHIPPED_DATE_MODELS if path is None else path)
    if not path.is_file():
        raise FileNotFoundError(
            f"the date models should come with the minitx package but are not at {path}: "
            "reinstall minitx, or run benchmarks/bench_date_models.py --record"
        )
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(ckpt, dict) or ckpt.get("format") != "minitx-date-models-1":
        raise ValueError(f"{path} is not a date-models checkpoint (format minitx-date-models-1)")
    models = {}
    for name, saved in ckpt["models"].items():
        models[name] = build_date_model(name)
        models[name].load_state_dict(saved["state_dict"])
        models[name].eval()
    return models


class DateTask:
    """The date task as :class:`minitx.train.trainer.Trainer` wants it: batches and a loss.

    ``get_batch(split, generator)`` draws ``batch_size`` examples from a random run of
    ``window * batch_size`` neighbours in source-length order, trimmed of padding, so
    little of a batch is padding (cheaper steps); ``window=None`` draws from the whole
    split, lengths mixed. ``loss(model, batch)`` is the teacher-forced cross-entropy,
    padded target positions (``IGNORE_INDEX`` in ``tgt_out``) left out.
    """

    def __init__(
        self,
        train: Sequence[DateExample],
        val: Sequence[DateExample] | None = None,
        batch_size: int = 64,
        window: int | None = 4,
    ) -> None:
        if len(train) == 0:
            raise ValueError("train must not be empty")
        self.splits = {"train": dates.make_batch(train)}
        if val is not None and len(val) > 0:
            self.splits["val"] = dates.make_batch(val)
        N = self.splits["train"].src.size(0)
        if not isinstance(batch_size, int) or not 1 <= batch_size <= N:
            raise ValueError(f"batch_size must be an int in [1, {N}], got {batch_size!r}")
        if window is not None and (not isinstance(window, int) or window < 1):
            raise ValueError(f"window must be None or an int >= 1, got {window!r}")
        self.batch_size, self.window = batch_size, window
        self.order = {k: torch.argsort(d.src_lengths, stable=True) for k, d in self.splits.items()}

    def get_batch(self, split: str, generator: torch.Generator) -> DateBatch:
        """``batch_size`` examples of ``split`` ('train' or 'val'), cut to their longest
        source and target: a :class:`minitx.data.dates.DateBatch`."""
        if split not in self.splits:
            raise ValueError(f"no {split!r} examples: the task has {sorted(self.splits)}")
        data, order = self.splits[split], self.order[split]
        N = data.src.size(0)
        size = N if self.window is None else min(N, self.window * self.batch_size)
        first = int(torch.randint(0, N - size + 1, (1,), generator=generator))
        pick = torch.randperm(size, generator=generator)[: self.batch_size]
        idx = order[first + pick]
        T_in = int(data.src_lengths[idx].max())
        T_out = int((data.tgt_out[idx] != IGNORE_INDEX).sum(dim=1).max())  # target + </s>
        return DateBatch(
            data.src[idx, :T_in], data.src_lengths[idx],
            data.tgt_in[idx, :T_out], data.tgt_out[idx, :T_out],
        )  # fmt: skip

    @staticmethod
    def loss(model: nn.Module, batch: DateBatch) -> Tensor:
        """Mean cross-entropy (a scalar) of ``model(src, src_lengths, tgt_in)``'s logits
        (B, T_out, V) against ``tgt_out`` (B, T_out), ``IGNORE_INDEX`` positions left out."""
        logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)  # (B, T_out, V)
        return F.cross_entropy(
            logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=IGNORE_INDEX
        )


def train_seq2seq(
    model: Seq2Seq,
    train: Sequence[DateExample],
    *,
    val: Sequence[DateExample],
    steps: int = 250,
    batch_size: int = 64,
    lr: float = 2e-2,
    seed: int = 0,
    eval_every: int = 50,
    clip: float = 1.0,
    min_lr_fraction: float = 0.1,
    window: int | None = 4,
    target_acc: float | None = None,
    schedule_steps: int | None = None,
    log_every: int | None = None,
    keep_weights_at: Sequence[int] = (),
) -> dict[str, Any]:
    """Train a date model with :class:`minitx.train.trainer.Trainer` on a :class:`DateTask`:
    Adam (AdamW without weight decay), gradient norm clipped at ``clip``, learning rate
    decayed from ``lr`` to ``lr * min_lr_fraction`` along a cosine over ``schedule_steps``
    (default ``steps``); batches drawn with ``seed``. ``val``, held-out examples, gives
    the validation loss and the exact-match accuracy.

    ``target_acc``: stop early, at the first evaluation (every ``eval_every`` steps) where
    the exact-match accuracy on ``val`` reaches it. (To give a second model the same
    number of steps under the same schedule, pass ``steps=`` the first model's last step
    and ``schedule_steps=`` its ``steps``.)

    ``log_every`` (default ``eval_every``): how often the mean training loss is logged, so
    a loss curve can have more points than there are evaluations. ``keep_weights_at``:
    the steps after which a copy of the model's weights is kept, to look at a run halfway.

    Returns the Trainer's history (``step``, ``train_loss``, ``elapsed_s``, ``eval_step``,
    ``val_loss``, ...), plus ``val_acc``, the exact match on ``val`` at each ``eval_step``,
    and ``weights``, a dict from each step of ``keep_weights_at`` to the model's
    ``state_dict`` after it.
    """
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be an int >= 1, got {steps!r}")
    schedule_steps = steps if schedule_steps is None else schedule_steps
    if not isinstance(schedule_steps, int) or schedule_steps < steps:
        raise ValueError(f"schedule_steps must be an int >= steps={steps}, got {schedule_steps!r}")
    if len(val) == 0:
        raise ValueError("val must hold examples: the run is judged on held-out dates")
    log_every = eval_every if log_every is None else log_every
    if not isinstance(log_every, int) or log_every < 1:
        raise ValueError(f"log_every must be an int >= 1, got {log_every!r}")
    keep = set(keep_weights_at)
    if not all(isinstance(k, int) and 1 <= k <= steps for k in keep):
        raise ValueError(
            f"keep_weights_at must hold steps in [1, {steps}], got {keep_weights_at!r}"
        )
    task = DateTask(train, val, batch_size, window)
    device = model_device(model)
    config = TrainConfig(
        max_steps=steps, batch_size=batch_size, learning_rate=lr,
        min_lr=lr * min_lr_fraction, warmup_steps=0, lr_decay_steps=schedule_steps,
        weight_decay=0.0, betas=(0.9, 0.999), grad_clip=clip, eval_interval=eval_every,
        eval_steps=1, log_interval=log_every, seed=seed,
    )  # fmt: skip
    runtime = plan_runtime(str(device), "float32", compile=False, threads=torch.get_num_threads())
    trainer = Trainer(model, config, task.get_batch, loss_fn=task.loss, runtime=runtime,
                      progress=False)
    trainer.history["val_acc"] = []
    weights: dict[int, dict[str, Tensor]] = {}

    def record_accuracy(t: Trainer) -> None:
        t.history["val_acc"].append(exact_match(t.model, val))
        if target_acc is not None and t.history["val_acc"][-1] >= target_acc:
            t.stop()

    def keep_weights(t: Trainer) -> None:
        if t.step in keep:
            weights[t.step] = copy.deepcopy(t.model.state_dict())

    trainer.add_callback("on_eval_end", record_accuracy)
    trainer.add_callback("on_step_end", keep_weights)
    history: dict[str, Any] = trainer.train()
    history["weights"] = weights
    model.eval()
    return history
