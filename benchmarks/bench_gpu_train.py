"""Full GPU training run, minitx's ``gpu`` preset against a nanoGPT-style reference.

    PYTHONPATH=. python benchmarks/bench_gpu_train.py [--which minitx reference]
        [--max-steps N] [--out DIR] [--skip-steps 50]
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_gpu_train.py --smoke --out /tmp/gpusmoke

Two models of the same size and shape (nanoGPT's "baby GPT": 6 layers x 384 wide, 6 heads,
block 256, dropout 0.2, no biases, tied head, batch 64) are trained one after the other on
one CUDA GPU, on the same tokens (tiny Shakespeare, minitx's character encoding, the first
90% for training and the rest for validation), each with its own recipe:

  minitx      what ``minitx train --preset gpu --no-progress`` runs (3000 steps: Muon at
              lr 0.02 for the block matrices, AdamW at lr 1e-3 for the rest, warmup then
              warmup-stable-decay to 0; ``--minitx-train`` changes fields): the objects of
              ``minitx.cli._train`` built the same way from the package's own functions
              (preset, TrainConfig, ``plan_runtime("auto")``, ``BlockBatches``, ``GPT``,
              ``Trainer``, a checkpoint written at every evaluation as the CLI does).
              On CUDA the runtime plan is bf16 autocast, fused AdamW, TF32 and
              torch.compile. Evaluates val only, every 250 steps, on 200 fixed batches.
  reference   REFERENCE written in this script for this benchmark (it is not imported from
              nanoGPT): Karpathy's nanoGPT ``model.py`` + ``train.py`` with
              ``config/train_shakespeare_char.py`` written out (5000 AdamW steps, lr 1e-3
              -> 1e-4 on a cosine after 100 warmup steps, betas (0.9, 0.99), weight decay
              0.1 on matrices, clipping at 1). Tokens are read from uint16
              ``train.bin`` / ``val.bin`` files (minitx's ids, written to a temporary
              folder) through a ``np.memmap`` opened afresh for every batch; bf16 autocast,
              torch.compile, fused AdamW, TF32; the next batch is fetched right after the
              forward; train and val are each evaluated every 250 iterations on 200 random
              batches; a checkpoint is saved when the val loss improves. As in train.py,
              the loop runs iterations 0..max_iters inclusive, so it takes 5001 optimizer
              steps and its last evaluation sees 5000.

Figures, per model (also in ``DIR/results.json``, rewritten after each model):
  val_loss_whole_split  mean cross-entropy (nats/char) over the whole val split in
                        non-overlapping windows of 256 (``minitx.train.evaluate.split_loss``),
                        after training, on the GPU in float32 (no autocast, TF32 off), the
                        uncompiled module in eval mode: both models scored the same way
  last_eval_val         the recipe's own last periodic val estimate (random batches)
  wall_s                wall time of the whole training call: compilation, periodic
                        evaluations and checkpoint writes included
  train_tokens_per_s    B * T * steps / seconds over the training steps after the first
                        ``--skip-steps`` (compile and warm-up), evaluations and checkpoint
                        writes left out; the GPU is synchronized only at the edges of each
                        segment between evaluations
  peak_mem_gib          ``torch.cuda.max_memory_allocated()`` during training / 2**30
and ``steps``, ``batch``, ``block``, ``params``, torch version, GPU name, compile on/off.

What else differs between the two recipes (by design, not by this script): minitx's
feed-forward also drops out its 1536-wide hidden activations (nanoGPT only the MLP's
output), its warmup is lr * (s + 1) / 100 (nanoGPT's lr * (s + 1) / 101), and its periodic
evaluations use the same fixed batches every time (nanoGPT's are fresh random ones).

Each model takes a few minutes on an H100; where one command has a time limit, train
them in separate calls (``--which minitx``, ``--which reference``, separate ``--out``).

``--smoke`` checks the code path on a CPU in seconds: 2 layers x 32, block 16, batch 4,
20 steps, evaluation every 10 steps on 2 batches, no compile, no autocast.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from nanogpt_reference import RefConfig, RefGPT, memmap_batch
from torch import Tensor, nn

from minitx.cli import CORPUS, TRAIN_FRACTION
from minitx.data import load_text, train_val_split
from minitx.data.batches import BlockBatches
from minitx.data.tokenizer import CharTokenizer
from minitx.nn.gpt import GPT
from minitx.train import checkpoint as ck
from minitx.train.evaluate import split_loss
from minitx.train.presets import get_preset
from minitx.train.runtime import plan_runtime
from minitx.train.trainer import TrainConfig, Trainer, count_parameters

MODELS = ("minitx", "reference")
SKIP_STEPS = 50
SMOKE_SKIP_STEPS = 5
# --smoke: the sizes both models shrink to (everything else as on the GPU)
SMOKE_MODEL = {"block_size": 16, "n_layer": 2, "n_head": 2, "n_embd": 32}
SMOKE_TRAIN = {"max_steps": 20, "batch_size": 4, "eval_interval": 10, "eval_steps": 2}


# ----------------------------------------------------------------------------- shared


@dataclass
class Setup:
    """What both runs share: the tokens, the device and the session's switches."""

    train_data: Tensor  # (N_train,) int64, minitx's char ids
    val_data: Tensor  # (N_val,) int64
    tokenizer: CharTokenizer
    device: torch.device
    smoke: bool
    max_steps: int | None  # --max-steps, or None for the recipe's own
    minitx_train: dict[str, Any]  # --minitx-train: TrainConfig fields changed for minitx
    skip_steps: int
    workdir: Path  # temporary: token files and checkpoints


class StepClock:
    """Seconds spent in training steps, summed over segments between evaluations.

    ``start`` and ``pause`` synchronize the GPU, so the work queued inside a segment is
    counted in it; the steps in between are not synchronized by the clock.
    """

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.seconds = 0.0
        self._t0: float | None = None

    @property
    def running(self) -> bool:
        return self._t0 is not None

    def start(self) -> None:
        synchronize(self.device)
        self._t0 = time.perf_counter()

    def pause(self) -> None:
        if self._t0 is None:
            return
        synchronize(self.device)
        self.seconds += time.perf_counter() - self._t0
        self._t0 = None


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@contextlib.contextmanager
def tf32_off() -> Iterator[None]:
    """Plain float32 matmuls for the duration (both runs switch TF32 on while training)."""
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def whole_split_loss(model: nn.Module, setup: Setup, block_size: int) -> float:
    """``split_loss`` over the whole val split, float32, no autocast, on ``setup.device``."""
    with tf32_off():
        return split_loss(model, setup.val_data, block_size=block_size)


def tokens_per_s(steps: int, batch: int, block: int, seconds: float) -> float | None:
    return steps * batch * block / seconds if steps > 0 and seconds > 0 else None


def session_info(device: torch.device) -> dict[str, Any]:
    return {
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "device": str(device),
    }


def reset_peak_memory(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory_gib(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    return torch.cuda.max_memory_allocated(device) / 2**30


def load_setup(args: argparse.Namespace) -> Setup:
    """The tokens as ``minitx train`` makes them (corpus from ``data/``, never downloaded)."""
    if args.smoke:
        device = torch.device("cpu")
    elif torch.cuda.is_available():
        device = torch.device("cuda")
    else:
        raise SystemExit("bench_gpu_train: no CUDA GPU here (use --smoke to check on a CPU)")
    text = load_text(CORPUS, download=False)
    tokenizer = CharTokenizer.from_text(text)
    data = torch.tensor(tokenizer.encode(text), dtype=torch.long)
    train_data, val_data = train_val_split(data, TRAIN_FRACTION)
    return Setup(
        train_data=train_data,
        val_data=val_data,
        tokenizer=tokenizer,
        device=device,
        smoke=args.smoke,
        max_steps=args.max_steps,
        minitx_train=dict(args.minitx_train),
        skip_steps=args.skip_steps if args.skip_steps is not None
        else (SMOKE_SKIP_STEPS if args.smoke else SKIP_STEPS),
        workdir=Path(args.workdir),
    )


# ----------------------------------------------------------------------------- minitx


def run_minitx(setup: Setup) -> dict[str, Any]:
    """Train the ``gpu`` preset the way ``minitx.cli._train`` does (fresh run, no bar)."""
    preset = get_preset("gpu")
    if setup.smoke:
        preset = preset.with_overrides(model=SMOKE_MODEL, train=SMOKE_TRAIN)
    overrides = {} if setup.max_steps is None else {"max_steps": setup.max_steps}
    changed = {**overrides, **setup.minitx_train}
    config = TrainConfig.from_dict({**preset.train.to_dict(), **changed})
    # _train: plan_runtime(args.device or "auto"); the smoke run asks for the CPU.
    runtime = plan_runtime("cpu" if setup.smoke else "auto")
    if runtime.device.type != setup.device.type:
        raise RuntimeError(f"minitx planned {runtime.device}, the benchmark runs on {setup.device}")
    model_config = preset.gpt_config(setup.tokenizer.vocab_size)

    reset_peak_memory(setup.device)
    torch.manual_seed(config.seed)
    model = GPT(model_config)
    batches = BlockBatches(
        setup.train_data, setup.val_data, model_config.block_size, config.batch_size,
        runtime.device,
    )
    trainer = Trainer(model, config, batches, runtime=runtime, progress=False)
    path = setup.workdir / "minitx" / "ckpt.pt"

    def save(t: Trainer) -> None:  # as _train's: a checkpoint at every evaluation
        ck.save_checkpoint(
            ck.make_checkpoint(t.model, model_config, setup.tokenizer, t, preset.name), path
        )

    def report_eval(t: Trainer) -> None:
        print(f"  minitx step {t.step:5d} | val loss {t.last_val_loss:.4f} | best "
              f"{t.best_val_loss:.4f} | {t.elapsed_s:.0f} s", flush=True)

    trainer.add_callback("on_eval_end", report_eval)
    trainer.add_callback("on_eval_end", save)

    # Timing hooks; they change nothing the trainer does. The clock stops before each
    # evaluation (and the checkpoint written after it) and starts again at the end of
    # that step, once the first skip_steps steps are done.
    clock = StepClock(runtime.device)
    evaluate = trainer.evaluate

    def timed_evaluate(*a: Any, **kw: Any) -> dict[str, float]:
        clock.pause()
        return evaluate(*a, **kw)

    def restart_clock(t: Trainer) -> None:
        if setup.skip_steps <= t.step < config.max_steps and not clock.running:
            clock.start()

    trainer.evaluate = timed_evaluate  # type: ignore[method-assign]
    trainer.add_callback("on_step_end", restart_clock)

    rt = trainer.runtime
    n_params = count_parameters(model)
    print(f"minitx: preset {preset.name}, {model_config.n_layer} layers x "
          f"{model_config.n_embd}, {model_config.n_head} heads, block "
          f"{model_config.block_size}, {n_params / 1e6:.2f}M parameters | device "
          f"{rt.device} ({str(rt.dtype).replace('torch.', '')}"
          f"{', compiled' if rt.compile else ''}{', fused AdamW' if rt.fused_adamw else ''}"
          f"{', TF32' if rt.tf32 else ''}) | batch {config.batch_size} | steps "
          f"{config.max_steps}", flush=True)

    synchronize(rt.device)
    t0 = time.perf_counter()
    trainer.train()
    synchronize(rt.device)
    wall = time.perf_counter() - t0
    clock.pause()
    peak = peak_memory_gib(rt.device)
    counted = trainer.step - setup.skip_steps
    B, T = config.batch_size, model_config.block_size
    result = {
        "val_loss_whole_split": whole_split_loss(trainer.model, setup, T),
        "last_eval_val": trainer.last_val_loss,
        "wall_s": wall,
        "train_tokens_per_s": tokens_per_s(counted, B, T, clock.seconds),
        "timed_steps": max(counted, 0),
        "timed_s": clock.seconds,
        "peak_mem_gib": peak,
        "steps": trainer.step,
        "batch": B,
        "block": T,
        "params": n_params,
        "compile": rt.compile,
        "autocast_dtype": str(rt.dtype).replace("torch.", ""),
        "fused_adamw": rt.fused_adamw,
        "tf32": rt.tf32,
        "train_config": config.to_dict(),
        "eval_curve": [
            [s, v] for s, v in zip(trainer.history["eval_step"], trainer.history["val_loss"],
                                   strict=True)
        ],
        **session_info(rt.device),
    }
    return result


# ----------------------------------------------------------------------------- reference
# REFERENCE: nanoGPT's train.py (config/train_shakespeare_char.py), written out for this
# benchmark; the model is nanogpt_reference.RefGPT.


@dataclass
class RefTrainConfig:
    """train.py's defaults with config/train_shakespeare_char.py applied."""

    batch_size: int = 64
    max_iters: int = 5000
    lr_decay_iters: int = 5000
    learning_rate: float = 1e-3
    min_lr: float = 1e-4
    warmup_iters: int = 100
    weight_decay: float = 1e-1
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0
    eval_interval: int = 250
    eval_iters: int = 200
    log_interval: int = 10
    always_save_checkpoint: bool = False
    dtype: str = "bfloat16"
    compile: bool = True


def run_reference(
    setup: Setup, mcfg: RefConfig | None = None, tcfg: RefTrainConfig | None = None,
    score: bool = True,
) -> dict[str, Any]:
    """REFERENCE: train.py's loop, single process, no gradient accumulation. ``mcfg`` and
    ``tcfg`` replace the baby GPT's config (``bench_cpu_recipe.py`` runs the laptop
    recipe); ``score=False`` skips the whole-split loss and saves the final weights to
    ``setup.workdir / "reference" / "final.pt"`` for the caller to score."""
    given = mcfg is not None
    mcfg = mcfg or RefConfig(vocab_size=setup.tokenizer.vocab_size)
    tcfg = tcfg or RefTrainConfig()
    if setup.smoke and not given:
        mcfg = RefConfig(vocab_size=setup.tokenizer.vocab_size, **SMOKE_MODEL)
        tcfg = RefTrainConfig(
            batch_size=SMOKE_TRAIN["batch_size"], max_iters=SMOKE_TRAIN["max_steps"],
            lr_decay_iters=SMOKE_TRAIN["max_steps"], eval_interval=SMOKE_TRAIN["eval_interval"],
            eval_iters=SMOKE_TRAIN["eval_steps"], dtype="float32", compile=False,
        )
    if setup.max_steps is not None:
        tcfg.max_iters = tcfg.lr_decay_iters = setup.max_steps
    device = setup.device
    device_type = device.type
    block_size, batch_size = mcfg.block_size, tcfg.batch_size

    data_dir = setup.workdir / "reference"
    data_dir.mkdir(parents=True, exist_ok=True)
    setup.train_data.numpy().astype(np.uint16).tofile(data_dir / "train.bin")
    setup.val_data.numpy().astype(np.uint16).tofile(data_dir / "val.bin")

    reset_peak_memory(device)
    torch.manual_seed(1337)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16,
               "float16": torch.float16}[tcfg.dtype]
    ctx = (contextlib.nullcontext() if device_type == "cpu"
           else torch.amp.autocast(device_type=device_type, dtype=ptdtype))

    def get_batch(split: str) -> tuple[Tensor, Tensor]:
        return memmap_batch(data_dir / f"{split}.bin", batch_size, block_size, device)

    model = RefGPT(mcfg).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    scaler = torch.amp.GradScaler("cuda", enabled=(tcfg.dtype == "float16"))
    optimizer = model.configure_optimizers(
        tcfg.weight_decay, tcfg.learning_rate, (tcfg.beta1, tcfg.beta2), device_type
    )
    raw_model = model
    if tcfg.compile:
        model = torch.compile(model)

    @torch.no_grad()
    def estimate_loss() -> dict[str, float]:
        out = {}
        model.eval()
        for split in ("train", "val"):
            losses = torch.zeros(tcfg.eval_iters)
            for k in range(tcfg.eval_iters):
                X, Y = get_batch(split)
                with ctx:
                    _, loss = model(X, Y)
                losses[k] = loss.item()
            out[split] = losses.mean().item()
        model.train()
        return out

    def get_lr(it: int) -> float:
        if it < tcfg.warmup_iters:
            return tcfg.learning_rate * (it + 1) / (tcfg.warmup_iters + 1)
        if it > tcfg.lr_decay_iters:
            return tcfg.min_lr
        ratio = (it - tcfg.warmup_iters) / (tcfg.lr_decay_iters - tcfg.warmup_iters)
        coeff = 0.5 * (1.0 + math.cos(math.pi * ratio))
        return tcfg.min_lr + coeff * (tcfg.learning_rate - tcfg.min_lr)

    print(f"reference: nanoGPT layout, {mcfg.n_layer} layers x {mcfg.n_embd}, {mcfg.n_head} "
          f"heads, block {block_size}, {n_params / 1e6:.2f}M parameters | device {device} "
          f"({tcfg.dtype if device_type != 'cpu' else 'float32'}"
          f"{', compiled' if tcfg.compile else ''}"
          f"{', fused AdamW' if device_type == 'cuda' else ''}) | batch {batch_size} | "
          f"iters 0..{tcfg.max_iters}", flush=True)

    clock = StepClock(device)
    iter_num, best_val_loss, last_val = 0, 1e9, math.nan
    curve: list[list[float]] = []
    train_log: list[list[float]] = []
    ckpt_path = data_dir / "ckpt.pt"
    model.train()

    synchronize(device)
    t_start = time.perf_counter()
    X, Y = get_batch("train")  # the first batch
    while True:
        lr = get_lr(iter_num)
        for group in optimizer.param_groups:
            group["lr"] = lr
        if iter_num % tcfg.eval_interval == 0:
            clock.pause()
            losses = estimate_loss()
            last_val = losses["val"]
            curve.append([iter_num, last_val])
            print(f"  reference step {iter_num:5d} | train loss {losses['train']:.4f} | val "
                  f"loss {losses['val']:.4f} | {time.perf_counter() - t_start:.0f} s", flush=True)
            if losses["val"] < best_val_loss or tcfg.always_save_checkpoint:
                best_val_loss = losses["val"]
                if iter_num > 0:
                    torch.save({
                        "model": raw_model.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "model_args": vars(mcfg),
                        "iter_num": iter_num,
                        "best_val_loss": best_val_loss,
                        "config": vars(tcfg),
                    }, ckpt_path)
        if iter_num >= setup.skip_steps and not clock.running:
            clock.start()
        with ctx:
            _, loss = model(X, Y)
        X, Y = get_batch("train")  # prefetch while the GPU works on the forward
        scaler.scale(loss).backward()
        if tcfg.grad_clip != 0.0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), tcfg.grad_clip)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        if iter_num % tcfg.log_interval == 0:
            train_log.append([iter_num, loss.item()])  # a device sync, as in train.py
        iter_num += 1
        if iter_num > tcfg.max_iters:
            break
    synchronize(device)
    wall = time.perf_counter() - t_start
    clock.pause()
    peak = peak_memory_gib(device)
    counted = iter_num - setup.skip_steps
    if not score:
        torch.save(raw_model.state_dict(), data_dir / "final.pt")
    result = {
        "val_loss_whole_split": whole_split_loss(raw_model, setup, block_size) if score else None,
        "last_eval_val": last_val,
        "wall_s": wall,
        "train_tokens_per_s": tokens_per_s(counted, batch_size, block_size, clock.seconds),
        "timed_steps": max(counted, 0),
        "timed_s": clock.seconds,
        "peak_mem_gib": peak,
        "steps": iter_num,
        "batch": batch_size,
        "block": block_size,
        "params": n_params,
        "compile": tcfg.compile,
        "autocast_dtype": tcfg.dtype if device_type != "cpu" else "float32",
        "fused_adamw": device_type == "cuda",
        "tf32": device_type == "cuda",
        "eval_curve": curve,
        "last_train_log_loss": train_log[-1][1] if train_log else None,
        **session_info(device),
    }
    return result


# ----------------------------------------------------------------------------- main


def write_json(path: Path, results: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(results, indent=2) + "\n")
    os.replace(tmp, path)


def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else (
        format(value, spec)
    )


def print_table(models: dict[str, dict[str, Any]]) -> None:
    head = (f"{'model':10s} {'params':>10s} {'steps':>6s} {'val whole':>10s} "
            f"{'last eval':>10s} {'wall s':>9s} {'tok/s':>11s} {'peak GiB':>9s}")
    print(head, flush=True)
    print("-" * len(head), flush=True)
    for name, r in models.items():
        print(f"{name:10s} {r['params']:>10,d} {r['steps']:>6d} "
              f"{fmt(r['val_loss_whole_split'], '10.4f')} {fmt(r['last_eval_val'], '10.4f')} "
              f"{fmt(r['wall_s'], '9.1f')} {fmt(r['train_tokens_per_s'], '11,.0f')} "
              f"{fmt(r['peak_mem_gib'], '9.2f')}", flush=True)


def train_override(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` -> (key, value), the value read as JSON where it parses (0.5, true)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--which", nargs="+", choices=MODELS, default=list(MODELS),
                        help="models to train, in this order (default: both)")
    parser.add_argument("--max-steps", type=int, metavar="N",
                        help="train N steps instead of the recipe's 5000 (lr decays to N)")
    parser.add_argument("--out", type=Path, default=Path("runs/bench_gpu_train"), metavar="DIR",
                        help="where results.json goes (default runs/bench_gpu_train)")
    parser.add_argument("--skip-steps", type=int, metavar="K",
                        help=f"steps left out of tokens/s (default {SKIP_STEPS}, "
                        f"{SMOKE_SKIP_STEPS} with --smoke)")
    parser.add_argument("--minitx-train", nargs="+", default=[], metavar="KEY=VALUE",
                        type=train_override,
                        help="change TrainConfig fields of the minitx run, e.g. optimizer=muon "
                        "schedule=wsd cooldown_frac=0.5 (values read as JSON, else as text)")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny models on the CPU, no compile/autocast: checks the code path")
    args = parser.parse_args()
    if args.max_steps is not None and args.max_steps < 1:
        parser.error(f"--max-steps must be >= 1, got {args.max_steps}")
    if args.skip_steps is not None and args.skip_steps < 0:
        parser.error(f"--skip-steps must be >= 0, got {args.skip_steps}")

    out = args.out / "results.json"
    with tempfile.TemporaryDirectory(prefix="bench_gpu_train.") as workdir:
        args.workdir = workdir
        setup = load_setup(args)
        info = session_info(setup.device)
        print(f"torch {info['torch']} | {info['gpu'] or setup.device} | "
              f"{setup.train_data.numel():,} train / {setup.val_data.numel():,} val tokens, "
              f"vocabulary {setup.tokenizer.vocab_size}{' | SMOKE' if setup.smoke else ''}",
              flush=True)
        results: dict[str, Any] = {**info, "argv": sys.argv[1:], "smoke": setup.smoke,
                                   "skip_steps": setup.skip_steps, "models": {}}
        runners = {"minitx": run_minitx, "reference": run_reference}
        for name in dict.fromkeys(args.which):
            results["models"][name] = runners[name](setup)
            write_json(out, results)
            if setup.device.type == "cuda":
                torch._dynamo.reset()  # the next model compiles from a clean slate
            print(f"{name} done; wrote {out}", flush=True)
    print_table(results["models"])


if __name__ == "__main__":
    main()
