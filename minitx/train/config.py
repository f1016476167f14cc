"""What a training run is: :class:`TrainConfig`. Where it runs (device, dtype, threads,
compile) belongs to the session, not to the run: see :func:`minitx.train.runtime.plan_runtime`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from minitx.train.optim import OPTIMIZERS, SCHEDULES, lr_at

# Settings of a session, not of a run; older checkpoints kept them in the config.
SESSION_KEYS = ("device", "dtype", "compile", "threads", "progress")


@dataclass
class TrainConfig:
    """Everything the training loop needs to know; nothing about the model.

    ``lr_decay_steps=None`` means "decay until ``max_steps``" (a run shorter than its
    warmup stays in the warmup). Weight decay applies to matrices only (see
    ``param_groups``). ``eval_train`` also evaluates on fixed training batches (dropout
    off), for a train curve comparable with the val curve. ``grad_clip=0`` turns
    clipping off. ``seed`` seeds the batch generator (the caller seeds the model's
    initialisation). The device, dtype, threads and progress bar are not part of a run:
    they are given to the :class:`~minitx.train.trainer.Trainer` (``runtime=``, ``progress=``),
    so a run resumed elsewhere keeps its config and takes them from its new session.

    ``optimizer="muon"`` trains the hidden matrices with Muon at ``muon_lr`` and the
    rest with AdamW at ``learning_rate`` (see :func:`~minitx.train.optim.make_optimizer`); the
    schedule scales both. ``schedule="wsd"`` holds the peak rate and decays linearly
    over the last ``cooldown_frac`` of the decay steps; ``"cosine"`` decays all along.
    """

    max_steps: int = 2000
    batch_size: int = 12
    learning_rate: float = 1e-3
    min_lr: float = 1e-4
    warmup_steps: int = 100
    lr_decay_steps: int | None = None
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.99)
    grad_clip: float = 1.0
    eval_interval: int = 250
    eval_steps: int = 20
    eval_train: bool = False
    log_interval: int = 10
    seed: int = 1337
    optimizer: str = "adamw"
    muon_lr: float = 0.02
    schedule: str = "cosine"
    cooldown_frac: float = 0.3

    def __post_init__(self) -> None:
        self.betas = tuple(float(b) for b in self.betas)  # lists come back from checkpoints
        for name in ("max_steps", "batch_size", "eval_interval", "eval_steps", "log_interval"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"TrainConfig.{name} must be a positive int, got {value!r}")
        if not isinstance(self.warmup_steps, int) or self.warmup_steps < 0:
            raise ValueError(
                f"TrainConfig.warmup_steps must be an int >= 0, got {self.warmup_steps!r}"
            )
        if self.lr_decay_steps is not None and self.lr_decay_steps < self.warmup_steps:
            raise ValueError(
                f"TrainConfig.lr_decay_steps ({self.lr_decay_steps}) must be >= warmup_steps "
                f"({self.warmup_steps})"
            )
        if not self.learning_rate > 0 or not 0 <= self.min_lr <= self.learning_rate:
            raise ValueError(
                f"need learning_rate > 0 and 0 <= min_lr <= learning_rate, got "
                f"learning_rate={self.learning_rate}, min_lr={self.min_lr}"
            )
        if self.weight_decay < 0 or self.grad_clip < 0:
            raise ValueError(
                f"weight_decay and grad_clip must be >= 0, got weight_decay={self.weight_decay}, "
                f"grad_clip={self.grad_clip}"
            )
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(
                f"TrainConfig.optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}"
            )
        if self.schedule not in SCHEDULES:
            raise ValueError(
                f"TrainConfig.schedule must be one of {SCHEDULES}, got {self.schedule!r}"
            )
        if not self.muon_lr > 0 or not 0 <= self.cooldown_frac <= 1:
            raise ValueError(
                f"need muon_lr > 0 and 0 <= cooldown_frac <= 1, got muon_lr={self.muon_lr}, "
                f"cooldown_frac={self.cooldown_frac}"
            )
        if len(self.betas) != 2 or not all(0 <= b < 1 for b in self.betas):
            raise ValueError(f"betas must be two numbers in [0, 1), got {self.betas}")

    def lr_at(self, step: int) -> float:
        """The learning rate of step ``step`` under this config (see the module-level ``lr_at``)."""
        decay = self.max_steps if self.lr_decay_steps is None else self.lr_decay_steps
        decay = max(decay, self.warmup_steps)  # a run shorter than its warmup
        return lr_at(
            step,
            learning_rate=self.learning_rate,
            min_lr=self.min_lr,
            warmup_steps=self.warmup_steps,
            decay_steps=decay,
            schedule=self.schedule,
            cooldown_steps=round(self.cooldown_frac * decay),
        )

    def to_dict(self) -> dict:
        """Plain dict (lists, numbers, str, None): safe for ``torch.load(weights_only=True)``."""
        d = asdict(self)
        d["betas"] = list(self.betas)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        """Inverse of ``to_dict``; unknown keys are an error. The session settings that
        older checkpoints stored here (device, dtype, ...) are dropped."""
        known = {f.name for f in fields(cls)}
        d = {k: v for k, v in d.items() if k not in SESSION_KEYS}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown TrainConfig fields: {sorted(unknown)}")
        return cls(**d)


__all__ = ["SESSION_KEYS", "TrainConfig"]
