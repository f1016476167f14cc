"""What a training run is told: :class:`TrainConfig`, and the runtime it asks for."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from minitx.optim import lr_at
from minitx.runtime import DTYPES, Runtime, plan_runtime


@dataclass
class TrainConfig:
    """Everything the training loop needs to know; nothing about the model.

    ``lr_decay_steps=None`` means "decay until ``max_steps``" (a run shorter than its
    warmup stays in the warmup). Weight decay applies to matrices only (see
    ``param_groups``). ``eval_train`` also evaluates on fixed training batches (dropout
    off), for a train curve comparable with the val curve. ``grad_clip=0`` turns
    clipping off. ``device='auto'`` picks CUDA, then mps, then CPU; ``dtype='auto'``
    picks bfloat16 autocast on CUDA (when supported) and float32 elsewhere;
    ``compile=None`` compiles on CUDA only. ``seed`` seeds the batch generator (the
    caller seeds the model's initialisation).
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
    device: str = "auto"
    dtype: str = "auto"
    compile: bool | None = None
    threads: int | None = None  # CPU threads; None: $OMP_NUM_THREADS, else every core
    seed: int = 1337
    progress: bool = True

    def __post_init__(self) -> None:
        self.betas = tuple(float(b) for b in self.betas)  # lists come back from checkpoints
        for name in ("max_steps", "batch_size", "eval_interval", "eval_steps", "log_interval"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"TrainConfig.{name} must be a positive int, got {value!r}")
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            raise ValueError(
                f"TrainConfig.threads must be None or an int >= 1, got {self.threads!r}"
            )
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
        if len(self.betas) != 2 or not all(0 <= b < 1 for b in self.betas):
            raise ValueError(f"betas must be two numbers in [0, 1), got {self.betas}")
        if self.device not in ("auto", "cpu", "cuda", "mps") and not self.device.startswith(
            "cuda:"
        ):
            raise ValueError(
                f"device must be 'auto', 'cpu', 'cuda[:N]' or 'mps', got {self.device!r}"
            )
        if self.dtype not in ("auto", *DTYPES):
            raise ValueError(
                f"dtype must be 'auto', {', '.join(map(repr, DTYPES))}, got {self.dtype!r}"
            )

    def lr_at(self, step: int) -> float:
        """The learning rate of step ``step`` under this config (see the module-level ``lr_at``)."""
        decay = self.max_steps if self.lr_decay_steps is None else self.lr_decay_steps
        return lr_at(
            step,
            learning_rate=self.learning_rate,
            min_lr=self.min_lr,
            warmup_steps=self.warmup_steps,
            decay_steps=max(decay, self.warmup_steps),  # a run shorter than its warmup
        )

    def to_dict(self) -> dict:
        """Plain dict (lists, numbers, str, None): safe for ``torch.load(weights_only=True)``."""
        d = asdict(self)
        d["betas"] = list(self.betas)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        """Inverse of ``to_dict``; unknown keys are an error."""
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown TrainConfig fields: {sorted(unknown)}")
        return cls(**d)


# ---------------------------------------------------------------- runtime
def runtime_for(config: TrainConfig, **availability: Any) -> Runtime:
    """The :class:`minitx.runtime.Runtime` that ``config`` asks for (device, dtype,
    compile, threads); ``availability`` passes ``cuda_available=`` etc. through, for tests."""
    return plan_runtime(config.device, config.dtype, config.compile, config.threads,
                        **availability)


__all__ = ["TrainConfig", "runtime_for"]
