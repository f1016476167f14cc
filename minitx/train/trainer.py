"""A training loop that knows nothing about GPT (in the spirit of minGPT's trainer).

What the trainer needs: a ``model`` (any ``nn.Module``); a batch source
``get_batch(split, generator) -> batch`` for ``split`` in {'train', 'val'}, drawing its
randomness from ``generator`` (see ``minitx.data.batches``); a loss ``loss_fn(model,
batch) -> scalar tensor`` (the default, for language models such as ``minitx.nn.gpt.GPT``,
is ``model(x, y)[1]`` with ``batch = (x, y)``); a ``TrainConfig``.

A task (the date translation of notebook 03, the recall task of 02, the relations of 06)
supplies the batches and the loss and nothing else: every model of the course is trained
by this one loop, and its ``history`` has one format.

What it does: the optimiser and learning-rate schedule of ``minitx.train.optim``,
gradient clipping, periodic evaluation on fixed batches (``minitx.train.evaluate``), a
tqdm progress bar, a ``history`` of plain lists for plotting, and callbacks so that
checkpointing, logging or early stopping live outside the loop. Ctrl-C stops at the end
of the current step, runs the ``on_interrupt`` callbacks (the CLI saves a checkpoint
there) and re-raises ``KeyboardInterrupt``.

Where it runs comes from ``minitx.train.runtime.plan_runtime``: CUDA (bf16 autocast,
fused AdamW, TF32, ``torch.compile``), mps or the CPU. On a CPU with several cores, a
language model with the default loss and no dropout trains data-parallel, one core per
slice of the batch (``minitx.train.shards``), for the same gradient up to float rounding,
or on one thread when timed trials find that faster (``minitx.train.cpu_policy``).
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Callable
from dataclasses import fields, is_dataclass

import torch
from torch import Tensor, nn

from minitx.train.config import TrainConfig
from minitx.train.cpu_policy import ShardTrial
from minitx.train.evaluate import Batch, LossFn, checked_loss, language_model_loss, mean_loss
from minitx.train.evaluate import accuracy as accuracy  # re-exported: its old home
from minitx.train.optim import make_optimizer
from minitx.train.runtime import (
    DeferredInterrupt,
    Runtime,
    activated,
    autocast,
    plan_runtime,
    threads,
)
from minitx.train.shards import ShardedGradients, can_shard, has_dropout

BatchFn = Callable[[str, torch.Generator], Batch]  # get_batch(split, generator) -> batch
Callback = Callable[["Trainer"], None]

EVENTS = ("on_step_end", "on_eval_end", "on_interrupt", "on_train_end")
HISTORY_KEYS = (
    "step",  # logged every log_interval steps
    "train_loss",  # mean training loss over the steps since the previous log
    "lr",
    "grad_norm",  # total gradient norm before clipping, at the logged step
    "tokens_per_s",
    "elapsed_s",  # wall time since the start of training (resumed runs continue it)
    "eval_step",  # logged every eval_interval steps
    "val_loss",
    "eval_train_loss",  # only filled when TrainConfig.eval_train is True
)


# ---------------------------------------------------------------- the trainer
class Trainer:
    """Train ``model`` on batches from ``get_batch`` following ``config``.

    Args:
        model: any module; config: a ``TrainConfig``.
        get_batch: ``get_batch(split, generator) -> batch``, whose first tensor has
            ``config.batch_size`` rows.
        loss_fn: ``loss_fn(model, batch) -> scalar tensor``; default
            :func:`language_model_loss`, ``model(x, y)[1]``.
        callbacks: optional ``{event: [fn(trainer), ...]}`` for the events in ``EVENTS``.
        runtime: where to run, from :func:`minitx.train.runtime.plan_runtime` (default: the
            best device found, every CPU core); a session setting, not part of ``config``.
        progress: show a progress bar.

    Attributes read by callbacks: ``step`` (optimisation steps done), ``model``,
    ``optimizer``, ``generator`` (the batch generator), ``history``, ``last_val_loss``,
    ``best_val_loss``, ``runtime``, ``config``, ``shard_trial``. A callback may call
    :meth:`stop` (e.g. early stopping on a validation accuracy it records in ``history``).
    """

    def __init__(
        self,
        model: nn.Module,
        config: TrainConfig,
        get_batch: BatchFn,
        *,
        loss_fn: LossFn | None = None,
        callbacks: dict[str, list[Callback]] | None = None,
        runtime: Runtime | None = None,
        progress: bool = True,
    ) -> None:
        if not isinstance(config, TrainConfig):
            raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
        if not callable(get_batch):
            raise TypeError(f"get_batch must be callable, got {type(get_batch).__name__}")
        self.config = config
        self.runtime = plan_runtime() if runtime is None else runtime
        self.progress = progress
        self.model = model.to(self.runtime.device)
        self.optimizer = make_optimizer(
            self.model, learning_rate=config.learning_rate, weight_decay=config.weight_decay,
            betas=config.betas, fused=self.runtime.fused_adamw,
            optimizer=config.optimizer, muon_lr=config.muon_lr,
        )
        # forward_model may be a compiled wrapper; self.model keeps clean state_dict keys.
        self.forward_model = torch.compile(self.model) if self.runtime.compile else self.model
        self.get_batch = get_batch
        if loss_fn is not None and not callable(loss_fn):
            raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
        self.loss_fn = language_model_loss if loss_fn is None else loss_fn
        self.stop_requested = False
        self.generator = torch.Generator().manual_seed(config.seed)
        self.step = 0
        self.best_val_loss = math.inf
        self.last_val_loss = math.nan
        self.elapsed_s = 0.0
        self.history: dict[str, list[float]] = {k: [] for k in HISTORY_KEYS}
        self.callbacks: dict[str, list[Callback]] = {e: [] for e in EVENTS}
        for event, fns in (callbacks or {}).items():
            for fn in fns:
                self.add_callback(event, fn)
        # Sum of the training losses since the last log, kept on the device (a tensor once
        # training ran) so that steps need no sync; saved, so a resumed history matches.
        self._loss_sum: Tensor | float = 0.0
        self._loss_count = 0
        self._mid_update = False
        self._sharded: ShardedGradients | None = None  # open only inside train()
        self.shard_trial: ShardTrial | None = None  # shards or one thread, timed

    # -------------------------------------------------------------- callbacks
    def add_callback(self, event: str, fn: Callback) -> None:
        """Call ``fn(trainer)`` on ``event`` (one of ``EVENTS``)."""
        if event not in EVENTS:
            raise ValueError(f"unknown event {event!r}; expected one of {EVENTS}")
        self.callbacks[event].append(fn)

    def _trigger(self, event: str) -> None:
        for fn in self.callbacks[event]:
            fn(self)

    # -------------------------------------------------------------- evaluation
    def evaluate(self, splits: tuple[str, ...] = ("val",)) -> dict[str, float]:
        """Mean loss over ``config.eval_steps`` batches of each split, in eval mode without
        gradients (:func:`minitx.train.evaluate.mean_loss`).

        The batches come from a generator seeded with ``config.seed + 1`` afresh on each
        call: every evaluation sees the same batches (comparable numbers) and the
        training batch stream is untouched.
        """
        out = {}
        with activated(self.runtime):
            for split in splits:
                gen = torch.Generator().manual_seed(self.config.seed + 1)
                batches = (self.get_batch(split, gen) for _ in range(self.config.eval_steps))
                out[split] = mean_loss(self.model, batches, lambda _, batch: self._loss(batch))
        return out

    def _eval_and_record(self) -> None:
        splits = ("train", "val") if self.config.eval_train else ("val",)
        losses = self.evaluate(splits)
        self.last_val_loss = losses["val"]
        self.best_val_loss = min(self.best_val_loss, self.last_val_loss)
        self.history["eval_step"].append(self.step)
        self.history["val_loss"].append(losses["val"])
        if self.config.eval_train:
            self.history["eval_train_loss"].append(losses["train"])
        self._trigger("on_eval_end")

    # -------------------------------------------------------------- training
    def _loss(self, batch: Batch) -> Tensor:
        first_tensor(batch)  # a clear error for a batch that holds no tensor
        with autocast(self.runtime):
            return checked_loss(self.loss_fn(self.forward_model, batch))

    def _train_step(self) -> tuple[Tensor, Tensor | None, int]:
        """One optimisation step; returns (loss, grad norm before clipping or None, tokens)."""
        factor = self.config.lr_at(self.step) / self.config.learning_rate
        for group in self.optimizer.param_groups:
            group["lr"] = group.get("peak_lr", self.config.learning_rate) * factor
        batch = self.get_batch("train", self.generator)
        x = first_tensor(batch)
        if x.size(0) != self.config.batch_size:
            raise ValueError(f"get_batch returned a batch of {x.size(0)} rows; "
                             f"TrainConfig.batch_size is {self.config.batch_size}")
        shard = self._sharded is not None and can_shard(batch, self._sharded.shards)
        trial = self.shard_trial if shard else None
        shard = shard and (trial is None or trial.use_shards())
        t0 = time.perf_counter()
        if shard:
            loss = self._sharded.backward(self.model, lambda _, piece: self._loss(piece), batch)
        else:
            loss = self._loss(batch)
            loss.backward()
        if trial is not None:
            trial.record(shard, time.perf_counter() - t0)
        norm = None
        if self.config.grad_clip > 0:
            norm = nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_clip)
        self._mid_update = True
        self.optimizer.step()
        self.step += 1
        self._mid_update = False
        self.optimizer.zero_grad(set_to_none=True)
        return loss.detach(), norm, x.numel()

    def train(self, max_steps: int | None = None) -> dict[str, list[float]]:
        """Train until ``max_steps`` (default ``config.max_steps``) steps are done.

        Evaluates at step 0 of a fresh run, every ``eval_interval`` steps and at the end
        of the call; logs every ``log_interval`` steps and at the end. Returns ``history``.
        Raises ``KeyboardInterrupt`` after the ``on_interrupt`` callbacks ran (Ctrl-C), and
        ``FloatingPointError`` if the training loss stops being finite.
        """
        from tqdm.auto import tqdm

        max_steps = self.config.max_steps if max_steps is None else max_steps
        if max_steps < self.step:
            raise ValueError(f"max_steps={max_steps} but {self.step} steps are already done")
        self.model.train()
        self.stop_requested = False
        self.optimizer.zero_grad(set_to_none=True)  # drop grads of an interrupted step
        if self.step == 0 and not self.history["eval_step"]:
            self._eval_and_record()
        bar = tqdm(total=max_steps, initial=self.step, desc="train", unit="step",
                   disable=not self.progress, dynamic_ncols=True)
        t_last = t_window = time.perf_counter()
        tokens_window = 0
        try:
            if self.shards > 1:
                self._sharded = ShardedGradients(self.shards)
                if self.runtime.timed_shards:
                    self.shard_trial = self.shard_trial or ShardTrial()
            # With shards, every thread of the loop computes with one torch thread: the idle
            # OpenMP team of a two-thread optimizer step would spin on the shards' cores.
            step_threads = threads(1) if self._sharded else contextlib.nullcontext()
            with activated(self.runtime), step_threads, DeferredInterrupt() as interrupt:
                while self.step < max_steps:
                    loss, norm, n_tokens = self._train_step()
                    self._loss_sum = self._loss_sum + loss.float()  # no device sync here
                    self._loss_count += 1
                    tokens_window += n_tokens
                    last = self.step == max_steps
                    log_now = self.step % self.config.log_interval == 0 or last
                    if log_now and self.runtime.device.type == "cuda":
                        torch.cuda.synchronize(self.runtime.device)  # honest tokens/s
                    now = time.perf_counter()
                    self.elapsed_s += now - t_last
                    t_last = now
                    bar.update(1)
                    if log_now:
                        self._log(norm, tokens_window / max(now - t_window, 1e-9))
                        bar.set_postfix_str(self._postfix(), refresh=False)
                        t_window, tokens_window = time.perf_counter(), 0
                    if self.step % self.config.eval_interval == 0 or last:
                        self._eval_and_record()
                        bar.set_postfix_str(self._postfix(), refresh=False)
                        # evaluation time counts in elapsed_s but not in tokens/s
                        t_window, tokens_window = time.perf_counter(), 0
                        self.elapsed_s += t_window - t_last
                        t_last = t_window
                    self._trigger("on_step_end")
                    if interrupt.requested:
                        raise KeyboardInterrupt
                    if self.stop_requested:
                        if self.history["eval_step"][-1:] != [self.step]:
                            self._eval_and_record()
                        break
        except KeyboardInterrupt:
            if self._mid_update:
                print(
                    "interrupted inside an optimizer update: state is ambiguous, "
                    "on_interrupt callbacks skipped",
                    file=sys.stderr,
                )
            else:
                self._trigger("on_interrupt")
            raise
        finally:
            bar.close()
            if self._sharded is not None:
                self._sharded.close()
                self._sharded = None
        self._trigger("on_train_end")
        return self.history

    @property
    def shards(self) -> int:
        """Row shards per training batch: the runtime's, on the CPU without compiling, for a
        model without dropout and the default language-model loss; else 1. The gradient is
        the whole batch's either way (``minitx.train.shards``)."""
        if (self.runtime.device.type != "cpu" or self.runtime.compile
                or self.loss_fn is not language_model_loss
                or has_dropout(self.model)):
            return 1
        return self.runtime.shards

    def stop(self) -> None:
        """Ask :meth:`train` to stop after the current step (it evaluates first)."""
        self.stop_requested = True

    def _log(self, norm: Tensor | None, tokens_per_s: float) -> None:
        h = self.history
        mean_loss = float(self._loss_sum) / self._loss_count
        if not math.isfinite(mean_loss):
            raise FloatingPointError(
                f"the training loss became {mean_loss} by step {self.step}; lower the learning "
                f"rate (now {self.config.lr_at(self.step - 1):.2e}) or clip gradients harder"
            )
        h["step"].append(self.step)
        h["train_loss"].append(mean_loss)
        h["lr"].append(self.config.lr_at(self.step - 1))
        h["grad_norm"].append(math.nan if norm is None else float(norm))
        h["tokens_per_s"].append(tokens_per_s)
        h["elapsed_s"].append(self.elapsed_s)
        self._loss_sum, self._loss_count = 0.0, 0

    def _postfix(self) -> str:
        """The progress bar's text: the latest loss, val loss and tokens/s logged."""
        shown = (("train_loss", "loss {:.3f}"), ("val_loss", "val {:.3f}"),
                 ("tokens_per_s", "{:.0f} tok/s"))
        return " | ".join(fmt.format(self.history[k][-1]) for k, fmt in shown if self.history[k])

    # -------------------------------------------------------------- state for checkpoints
    def state_dict(self) -> dict:
        """Everything needed to resume exactly: step, optimizer, RNG states, history, config.

        Only tensors, dicts, lists, str, int, float, bool and None (``weights_only`` safe).
        """
        rng = {
            "torch_cpu": torch.get_rng_state(),
            "batch_generator": self.generator.get_state(),
        }
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            rng["torch_cuda"] = torch.cuda.get_rng_state_all()
        return {
            "step": self.step,
            "optimizer": self.optimizer.state_dict(),
            "rng": rng,
            "best_val_loss": self.best_val_loss,
            "last_val_loss": self.last_val_loss,
            "elapsed_s": self.elapsed_s,
            "history": {k: list(v) for k, v in self.history.items()},
            "train_config": self.config.to_dict(),
            "loss_window": [float(self._loss_sum), self._loss_count],
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore what ``state_dict`` saved (the model's weights are loaded separately)."""
        missing = {"step", "optimizer", "rng", "best_val_loss", "history"} - set(state)
        if missing:
            raise ValueError(f"trainer state is missing {sorted(missing)}")
        self.step = int(state["step"])
        self.optimizer.load_state_dict(state["optimizer"])
        rng = state["rng"]
        torch.set_rng_state(rng["torch_cpu"])
        self.generator.set_state(rng["batch_generator"])
        if "torch_cuda" in rng and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(rng["torch_cuda"])
        self.best_val_loss = float(state["best_val_loss"])
        self.last_val_loss = float(state.get("last_val_loss", math.nan))
        self.elapsed_s = float(state.get("elapsed_s", 0.0))
        self.history = {k: list(state["history"].get(k, [])) for k in HISTORY_KEYS}
        loss_sum, count = state.get("loss_window", [0.0, 0])
        self._loss_sum, self._loss_count = float(loss_sum), int(count)


def first_tensor(batch: Batch) -> Tensor:
    """The first tensor of a batch (a tensor, a tuple/list or a dataclass/NamedTuple of
    them): its rows are the batch size and its entries the tokens counted in tokens/s."""
    if isinstance(batch, Tensor):
        return batch
    items = batch if isinstance(batch, (tuple, list)) else (
        [getattr(batch, f.name) for f in fields(batch)] if is_dataclass(batch) else []
    )
    for item in items:
        if isinstance(item, Tensor):
            return item
    raise TypeError(
        f"get_batch must return a tensor, or a tuple or dataclass holding tensors, got "
        f"{type(batch).__name__}"
    )


def count_parameters(model: nn.Module) -> int:
    """Number of distinct trainable parameters (tied tensors counted once)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


__all__ = ["EVENTS", "HISTORY_KEYS", "Trainer", "count_parameters", "first_tensor"]
