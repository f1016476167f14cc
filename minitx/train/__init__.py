"""Training: the one loop, its optimizers and schedule, the presets, checkpoints, and the
device and threads it runs on. Imports :mod:`minitx.nn` and :mod:`minitx.data` only.

    trainer     the Trainer, which knows nothing about GPT and trains every model
    config      TrainConfig, the Trainer's settings
    optim       AdamW and Muon parameter groups, and the learning-rate schedule
    muon        the Muon optimizer
    presets     the named recipes (cpu, laptop, gpu, ...)
    evaluate    a language model's loss on held-out data
    checkpoint  save, resume, export and load
    runtime     device, threads, autocast and deferred interrupts
    shards      one CPU core per slice of the batch
    parallel    independent runs side by side, one worker process per core
"""

from minitx.train.checkpoint import load_gpt
from minitx.train.config import TrainConfig
from minitx.train.evaluate import estimate_loss, mean_loss, split_loss
from minitx.train.presets import get_preset
from minitx.train.runtime import plan_runtime
from minitx.train.trainer import Trainer

__all__ = [
    "TrainConfig",
    "Trainer",
    "estimate_loss",
    "get_preset",
    "load_gpt",
    "mean_loss",
    "plan_runtime",
    "split_loss",
]
