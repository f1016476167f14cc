"""The ``minitx`` command: train the course's Mini-GPT, sample from it, export a checkpoint.

    minitx train  --preset cpu [--out runs/cpu] [--max-steps N] [--resume]
    minitx sample --prompt "ROMEO:" [--checkpoint runs/cpu/ckpt.pt] [--temperature 0.8]
                  [--top-k 40] [--top-p 0.9] [--greedy] [--num-tokens 300] [--seed 0]
                  [--no-cache]
    minitx export --checkpoint runs/cpu/ckpt.pt --out data/minigpt_shakespeare.pt

Mistakes in the input (an unknown preset, a prompt with characters the model never saw,
impossible sampling settings, a missing corpus or checkpoint ...) end with one line on
stderr and a non-zero exit status, never a traceback (set ``MINITX_DEBUG=1`` to see one).
Ctrl-C during training saves a
checkpoint that ``--resume`` continues from.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import NoReturn

from minitx import __version__

CORPUS = "tinyshakespeare"
TRAIN_FRACTION = 0.9
# --compile: "auto" leaves the choice to the runtime (compiled on CUDA only).
COMPILE_CHOICES = {"auto": None, "on": True, "off": False}
EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130


class UsageError(ValueError):
    """Bad command-line input (reported with exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse, but its errors are one line: ``minitx train: error: ...``."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _one_line(message: str) -> str:
    return "; ".join(line.strip() for line in str(message).splitlines() if line.strip())


def _fail(message: str, status: int = EXIT_ERROR) -> int:
    print(f"minitx: error: {_one_line(message)}", file=sys.stderr)
    return status


TEACHER_COMMANDS = {
    "solutions": "print the solutions of one notebook's exercises (e.g. minitx solutions 04)",
    "progress": "which exercises saved notebooks answer correctly, as a table (--csv FILE)",
    "guide": "print the teacher's guide, TEACHING.md",
}


# ---------------------------------------------------------------- argument parsing
def build_parser() -> argparse.ArgumentParser:
    """The ``minitx`` argument parser (subcommands train, sample, export, and the teacher's
    solutions, progress and guide, which :mod:`minitx.course.teacher` parses)."""
    from minitx.train.presets import preset_names

    parser = _Parser(prog="minitx", description="minitx: train and sample the course's Mini-GPT.")
    parser.add_argument("--version", action="version", version=f"minitx {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    for name, text in TEACHER_COMMANDS.items():
        teacher = sub.add_parser(name, help=text, add_help=False)
        teacher.add_argument("rest", nargs=argparse.REMAINDER)

    train = sub.add_parser(
        "train",
        help="train a Mini-GPT on tiny Shakespeare",
        description="Train a Mini-GPT on tiny Shakespeare and save checkpoints to --out.",
    )
    train.add_argument(
        "--preset",
        default="auto",
        metavar="NAME",
        help=f"one of {', '.join(preset_names())}, or auto (gpu with CUDA, else cpu); default auto",
    )
    train.add_argument(
        "--out", type=Path, metavar="DIR", help="output folder (default runs/<preset>)"
    )
    train.add_argument("--max-steps", type=int, metavar="N", help="train until this many steps")
    train.add_argument("--resume", action="store_true", help="continue the run in --out")
    train.add_argument("--device", help="auto (default: $MINITX_DEVICE if set, else CUDA, "
                       "mps or the CPU), cpu, cuda or mps")
    train.add_argument("--seed", type=int, metavar="S", help="seed of initialisation and batches")
    train.add_argument(
        "--export", type=Path, metavar="PATH", help="also write a stripped copy here at the end"
    )
    train.add_argument(
        "--compile",
        choices=sorted(COMPILE_CHOICES),
        default="auto",
        help="torch.compile the model: auto (default) on CUDA only; 'on' compiles on a CPU "
        "too (needs a C++ compiler; see benchmarks/bench_gpt_step.py --compile)",
    )
    train.add_argument("--no-download", action="store_true", help="never download the corpus")
    train.add_argument("--no-progress", action="store_true", help="no progress bar")

    sample = sub.add_parser(
        "sample",
        help="generate text from a checkpoint",
        description="Continue a prompt with a trained Mini-GPT.",
    )
    sample.add_argument(
        "--checkpoint", type=Path, metavar="PATH",
        help="a minitx checkpoint (default: the best model shipped with the repository, "
        "data/minigpt_shakespeare_large.pt)",
    )
    sample.add_argument("--prompt", required=True, metavar="TEXT", help="text to continue")
    sample.add_argument("--temperature", type=float, metavar="T", help="> 0; default 1.0")
    sample.add_argument(
        "--top-k", type=int, metavar="K", help="keep the k most likely tokens (k >= 1)"
    )
    sample.add_argument("--top-p", type=float, metavar="P", help="nucleus sampling, p in (0, 1]")
    sample.add_argument("--greedy", action="store_true", help="always take the most likely token")
    sample.add_argument(
        "--num-tokens", type=int, metavar="N", default=300, help="tokens to add (default 300)"
    )
    sample.add_argument(
        "--seed", type=int, default=0, metavar="S", help="sampling seed (default 0)"
    )
    sample.add_argument("--device", default="cpu", help="cpu (default), cuda or mps")
    sample.add_argument(
        "--no-cache",
        action="store_true",
        help="recompute the whole context for every token instead of keeping a KV cache "
        "(slower; the same text)",
    )

    export = sub.add_parser(
        "export",
        help="write a small copy of a checkpoint for sharing",
        description="Drop optimizer and RNG states; optionally store half-precision weights.",
    )
    export.add_argument("--checkpoint", type=Path, required=True, help="checkpoint to read")
    export.add_argument("--out", type=Path, required=True, help="file to write")
    export.add_argument(
        "--dtype", default="float32",
        help="float32 (default), float16 or bfloat16 for the weights (float32 again on load)"
    )
    return parser


# ---------------------------------------------------------------- train
def _train(args: argparse.Namespace) -> int:
    import torch

    from minitx.data import load_text, train_val_split
    from minitx.data.batches import BlockBatches
    from minitx.data.tokenizer import CharTokenizer
    from minitx.nn.gpt import GPT, GPTConfig
    from minitx.train import checkpoint as ck
    from minitx.train.presets import get_preset
    from minitx.train.runtime import plan_runtime
    from minitx.train.trainer import TrainConfig, Trainer, count_parameters

    try:
        preset = get_preset(args.preset)
    except ValueError as err:  # names the known presets
        raise UsageError(str(err)) from err
    if args.max_steps is not None and args.max_steps < 1:
        raise UsageError(f"--max-steps must be >= 1, got {args.max_steps}")
    out = args.out if args.out is not None else Path("runs") / preset.name
    path = out / "ckpt.pt"

    resumed = None
    if args.resume:
        if not path.exists():
            raise UsageError(f"nothing to resume: no checkpoint at {path}")
        resumed = ck.load_checkpoint(path)
        if not ck.is_resumable(resumed):
            raise UsageError(f"{path} is an exported checkpoint; it cannot be resumed")
        if resumed.get("preset") != preset.name:
            raise UsageError(
                f"{path} was trained with preset {resumed.get('preset')!r}, not {preset.name!r}"
            )
        config = TrainConfig.from_dict(resumed["trainer"]["train_config"])
        model_config = GPTConfig(**resumed["model_config"])
    else:
        if path.exists():
            raise UsageError(
                f"{path} exists; add --resume to continue that run, or choose another --out"
            )
        config = preset.train
        model_config = None
    # Device and progress bar belong to this session, not to the run: a resumed run
    # takes them from the command line, everything else from its checkpoint.
    overrides = {}
    if args.max_steps is not None:
        overrides["max_steps"] = args.max_steps
    if args.seed is not None:
        if args.resume:
            raise UsageError("--seed cannot change a resumed run (it keeps its own RNG states)")
        overrides["seed"] = args.seed
    config = TrainConfig.from_dict({**config.to_dict(), **overrides})
    runtime = plan_runtime(args.device or "auto", compile=COMPILE_CHOICES[args.compile])

    text = load_text(CORPUS, download=not args.no_download)
    tokenizer = CharTokenizer.from_text(text)
    if resumed is not None and CharTokenizer.from_dict(resumed["tokenizer"]) != tokenizer:
        raise UsageError(f"{path} was trained on a different vocabulary than {CORPUS}")
    data = torch.tensor(tokenizer.encode(text), dtype=torch.long)
    train_data, val_data = train_val_split(data, TRAIN_FRACTION)
    if model_config is None:
        model_config = preset.gpt_config(tokenizer.vocab_size)

    torch.manual_seed(config.seed)
    model = GPT(model_config)
    batches = BlockBatches(
        train_data, val_data, model_config.block_size, config.batch_size, runtime.device
    )
    trainer = Trainer(model, config, batches, runtime=runtime, progress=not args.no_progress)

    def save(t: Trainer) -> None:
        ck.save_checkpoint(
            ck.make_checkpoint(t.model, model_config, tokenizer, t, preset.name), path
        )

    def report_eval(t: Trainer) -> None:
        from tqdm.auto import tqdm

        tqdm.write(
            f"step {t.step:5d} | val loss {t.last_val_loss:.4f} | best {t.best_val_loss:.4f} "
            f"| {t.elapsed_s:.0f} s"
        )

    trainer.add_callback("on_eval_end", report_eval)
    trainer.add_callback("on_eval_end", save)
    trainer.add_callback("on_interrupt", save)
    if resumed is not None:
        ck.restore_trainer(trainer, resumed, str(path))
        if config.max_steps < trainer.step:
            raise UsageError(
                f"{path} is already at step {trainer.step}; --max-steps {config.max_steps} is "
                "behind it"
            )

    rt = trainer.runtime
    dtype = str(rt.dtype).replace("torch.", "")
    plural = "s" if rt.num_threads != 1 else ""
    threads = f", {rt.num_threads} thread{plural}" if rt.device.type == "cpu" else ""
    if trainer.shards > 1:
        threads += f", each batch in {trainer.shards} row shards"
    print(
        f"preset {preset.name}: {model_config.n_layer} layers x {model_config.n_embd} wide, "
        f"{model_config.n_head} heads, block {model_config.block_size}, "
        f"{count_parameters(model) / 1e6:.2f}M parameters"
    )
    print(
        f"data: {train_data.numel():,} train / {val_data.numel():,} val tokens, "
        f"vocabulary {tokenizer.vocab_size}"
    )
    print(
        f"device {rt.device} ({dtype}{threads}{', compiled' if rt.compile else ''}) | "
        f"batch {config.batch_size} x {model_config.block_size} | steps {trainer.step} -> "
        f"{config.max_steps} | checkpoint {path}",
        flush=True,
    )
    t0 = time.perf_counter()
    try:
        trainer.train()
    except KeyboardInterrupt:
        print(
            f"interrupted at step {trainer.step}; checkpoint saved to {path}. Continue with: "
            f"minitx train --preset {preset.name} --out {out} --resume",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    save(trainer)
    wall = time.perf_counter() - t0
    tps = trainer.history["tokens_per_s"]
    print(
        f"done: step {trainer.step} | val loss {trainer.last_val_loss:.4f} "
        f"(best {trainer.best_val_loss:.4f}) | {wall:.0f} s this session, "
        f"{trainer.elapsed_s:.0f} s in all | {sum(tps) / max(len(tps), 1):.0f} tokens/s | "
        f"saved {path}"
    )
    if args.export is not None:
        ck.export_checkpoint(path, args.export)
        print(f"exported {args.export} ({args.export.stat().st_size / 1e6:.1f} MB)")
    return 0


# ---------------------------------------------------------------- sample
def _check_sampling(args: argparse.Namespace) -> None:
    if args.greedy:
        given = [
            flag
            for flag, value in (
                ("--temperature", args.temperature),
                ("--top-k", args.top_k),
                ("--top-p", args.top_p),
            )
            if value is not None
        ]
        if given:
            raise UsageError(
                f"--greedy always takes the most likely token; {', '.join(given)} would be "
                "ignored: give one or the other"
            )
    if args.temperature is not None and not (
        math.isfinite(args.temperature) and args.temperature > 0
    ):
        raise UsageError(f"--temperature must be a number > 0, got {args.temperature}")
    if args.top_k is not None and args.top_k < 1:
        raise UsageError(f"--top-k must be >= 1, got {args.top_k}")
    if args.top_p is not None and not 0 < args.top_p <= 1:
        raise UsageError(f"--top-p must be in (0, 1], got {args.top_p}")
    if args.num_tokens < 0:
        raise UsageError(f"--num-tokens must be >= 0, got {args.num_tokens}")
    if args.prompt == "":
        raise UsageError("--prompt is empty; give at least one character to continue")


def _sample(args: argparse.Namespace) -> int:
    _check_sampling(args)  # before the (slower) checkpoint load
    import torch

    from minitx.data import shipped_model_path
    from minitx.train.checkpoint import load_gpt
    from minitx.train.runtime import select_device

    device = select_device(args.device)
    checkpoint = shipped_model_path("large") if args.checkpoint is None else args.checkpoint
    model, tokenizer, _ = load_gpt(checkpoint, device)
    vocab = set(tokenizer.chars)
    unknown = sorted({c for c in args.prompt if c not in vocab})
    if unknown:
        raise UsageError(
            f"the prompt has characters the model never saw: {unknown!r} "
            f"(its vocabulary has {tokenizer.vocab_size} symbols)"
        )
    ids = tokenizer.encode(args.prompt)
    block = model.config.block_size
    if len(ids) > block:
        print(
            f"minitx: note: the prompt has {len(ids)} characters but the model's context is "
            f"{block}; it sees only the last {block}",
            file=sys.stderr,
        )
        ids = ids[-block:]
    if args.top_k is not None and args.top_k > tokenizer.vocab_size:
        print(
            f"minitx: note: --top-k {args.top_k} is more than the vocabulary "
            f"({tokenizer.vocab_size}); it keeps every token",
            file=sys.stderr,
        )
    idx = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T)
    generator = torch.Generator(device=device).manual_seed(args.seed)
    out = model.generate(
        idx,
        args.num_tokens,
        temperature=1.0 if args.temperature is None else args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        greedy=args.greedy,
        generator=generator,
        use_cache=not args.no_cache,
    )
    continuation = tokenizer.decode(out[0, len(ids) :])
    sys.stdout.write(args.prompt + continuation + "\n")
    return 0


# ---------------------------------------------------------------- export
def _export(args: argparse.Namespace) -> int:
    from minitx.train.checkpoint import export_checkpoint

    if args.dtype not in ("float32", "float16", "bfloat16"):
        raise UsageError(f"--dtype must be float32, float16 or bfloat16, got {args.dtype!r}")
    dst = export_checkpoint(args.checkpoint, args.out, args.dtype)
    print(f"exported {dst} ({dst.stat().st_size / 1e6:.2f} MB, {args.dtype} weights)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the ``minitx`` command with ``argv`` (default ``sys.argv[1:]``); return the
    exit status: 0 ok, 1 error, 2 bad usage, 130 interrupted."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command in TEACHER_COMMANDS:
        from minitx.course.teacher import main as teacher_main

        return teacher_main([args.command, *args.rest])
    commands = {"train": _train, "sample": _sample, "export": _export}
    try:
        return commands[args.command](args)
    except UsageError as err:
        return _fail(str(err), EXIT_USAGE)
    except (ValueError, OSError) as err:  # CorpusError, CheckpointError are ValueErrors
        if os.environ.get("MINITX_DEBUG"):
            raise
        return _fail(str(err))
    except KeyboardInterrupt:
        print("minitx: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
