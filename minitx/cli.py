"""The ``minitx`` command: train the course's Mini-GPT, sample from it, export a checkpoint,
and the teacher's solutions, progress and guide (:mod:`minitx.course.teacher`).

    minitx train  --preset cpu [--arch modern] [--tokens bpe [--vocab-size 512]]
                  [--out runs/cpu] [--max-steps N] [--resume]
    minitx sample --prompt "ROMEO:" [--checkpoint runs/cpu/ckpt.pt] [--temperature 0.8] ...
                                                        (minitx.cli_sample)
    minitx export --checkpoint runs/cpu/ckpt.pt --out data/minigpt_shakespeare.pt [--force]
    minitx course [DIR] [--force]                       (the student edition, to open)
    minitx edition student --out DIR [--only 00 04]     (or instructor; see course.editions)
    minitx site --out DIR                               (the course site; see course.site)

Mistakes in the input (an unknown preset, a prompt with characters the model never saw,
impossible sampling settings, a missing corpus or checkpoint ...) end with one line on
stderr and a non-zero exit status, never a traceback (set ``MINITX_DEBUG=1`` to see one).
Nothing is lost silently: Ctrl-C or SIGTERM during training saves a checkpoint that
``--resume`` continues from (status 130 or 143), Ctrl-C during sampling keeps the text
printed so far (130), and export replaces no file without ``--force``, never the one it reads.
"""

from __future__ import annotations

import argparse
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
EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 1, 2, 130, 143


class UsageError(ValueError):
    """Bad command-line input (reported with exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse, but its errors are one line: ``minitx train: error: ...``."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _one_line(message: str) -> str:
    return "; ".join(line.strip() for line in str(message).splitlines() if line.strip())


def _fail(message: str | BaseException, status: int = EXIT_ERROR) -> int:
    if isinstance(message, OSError) and message.strerror and message.filename:
        message = f"{message.filename}: {message.strerror}"  # not "[Errno 13] ..."
    print(f"minitx: error: {_one_line(str(message))}", file=sys.stderr)
    return status


# ---------------------------------------------------------------- argument parsing
def build_parser() -> argparse.ArgumentParser:
    """The ``minitx`` argument parser (subcommands train, sample, export, and the teacher's
    solutions, progress and guide, which :mod:`minitx.course.teacher` adds; course; edition)."""
    from minitx import cli_sample
    from minitx.course import editions, handout, site, teacher
    from minitx.data.encoded import BPE_VOCAB, TOKENS
    from minitx.train.presets import ARCHS, preset_names

    parser = _Parser(prog="minitx", description="minitx: train and sample the course's Mini-GPT.")
    parser.add_argument("--version", action="version", version=f"minitx {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    train = sub.add_parser("train", help="train a Mini-GPT on tiny Shakespeare", description=(
        "Train a Mini-GPT on tiny Shakespeare and save checkpoints to --out. Ctrl-C or "
        "SIGTERM stops at the end of a step and saves; --resume continues."))
    presets = ", ".join(preset_names())
    train.add_argument("--preset", default="auto", metavar="NAME",
                       help=f"one of {presets}, or auto (gpu with CUDA, else cpu); default auto")
    train.add_argument("--arch", choices=list(ARCHS), help="gpt2 (default) or modern: RMSNorm, "
                       "rotary positions, SwiGLU, half the key/value heads (notebook 11)")
    train.add_argument("--tokens", choices=list(TOKENS), help="char (default): a token a "
                       "character; bpe: byte-pair tokens learnt from the training text "
                       "(notebook 12). A resumed run keeps its checkpoint's tokenizer")
    train.add_argument("--vocab-size", type=int, metavar="N", help="with --tokens bpe: the "
                       f"vocabulary, 256 bytes + merges (default {BPE_VOCAB})")
    train.add_argument("--out", type=Path, metavar="DIR", help="output folder (default "
                       "runs/<preset>, with -modern and -bpe when they apply)")
    train.add_argument("--max-steps", type=int, metavar="N",
                       help="train until this many steps (default: the preset's length)")
    train.add_argument("--resume", action="store_true", help="continue the run in --out, "
                       "to the preset's length unless --max-steps says otherwise")
    train.add_argument("--device", help="auto (default: $MINITX_DEVICE if set, else CUDA, "
                       "mps or the CPU), cpu, cuda or mps")
    train.add_argument("--seed", type=int, metavar="S", help="seed of initialisation and batches")
    train.add_argument("--export", type=Path, metavar="PATH",
                       help="also write a stripped copy here at the end (a new file)")
    train.add_argument("--compile", choices=sorted(COMPILE_CHOICES), default="auto",
                       help="torch.compile the model: auto (default) on CUDA only; 'on' "
                       "compiles on a CPU too (needs a C++ compiler; see "
                       "benchmarks/bench_gpt_step.py --compile)")
    train.add_argument("--no-download", action="store_true", help="never download the corpus")
    train.add_argument("--no-progress", action="store_true", help="no progress bar")

    cli_sample.add_command(sub)

    export = sub.add_parser("export", help="write a small copy of a checkpoint for sharing",
                            description="Drop optimizer and RNG states; optionally store "
                            "half-precision weights. The copy cannot be resumed.")
    export.add_argument("--checkpoint", type=Path, required=True, help="checkpoint to read")
    export.add_argument("--out", type=Path, required=True,
                        help="file to write (never the checkpoint it reads)")
    export.add_argument("--force", action="store_true", help="replace --out if it exists")
    export.add_argument("--dtype", default="float32", help="float32 (default), float16 or "
                        "bfloat16 for the weights (float32 again on load)")
    teacher.add_commands(sub)
    handout.add_command(sub)
    editions.add_command(sub)
    site.add_command(sub)
    return parser


# ---------------------------------------------------------------- train
def _train(args: argparse.Namespace) -> int:
    import torch

    from minitx.data import load_text
    from minitx.data.batches import BlockBatches
    from minitx.data.encoded import encode_corpus, tokenizer_from_dict, tokens_of
    from minitx.nn.gpt import GPT, GPTConfig
    from minitx.train import checkpoint as ck
    from minitx.train.config import TrainConfig
    from minitx.train.presets import get_preset
    from minitx.train.runtime import TerminateAsInterrupt, check_run_folder, describe, plan_runtime
    from minitx.train.trainer import Trainer

    try:
        preset = get_preset(args.preset)
    except ValueError as err:  # names the known presets
        raise UsageError(str(err)) from err
    if args.arch:
        preset = preset.with_arch(args.arch)
    if args.vocab_size is not None and args.tokens != "bpe":
        raise UsageError(f"--vocab-size {args.vocab_size} sets a BPE vocabulary: give it with "
                         "--tokens bpe")
    suffix = ("-modern" if args.arch == "modern" else "") + (
        "-bpe" if args.tokens == "bpe" else "")
    out = args.out if args.out is not None else Path("runs") / f"{preset.name}{suffix}"
    for flag, value in (("--seed", args.seed), ("--arch", args.arch),
                        ("--tokens", args.tokens), ("--vocab-size", args.vocab_size)):
        if args.resume and value is not None:
            raise UsageError(f"{flag} cannot change a resumed run (it keeps its checkpoint's)")
    try:  # before any work: a bad --out, --export or --max-steps fails in a second
        path = check_run_folder(out, resume=args.resume, export=args.export,
                                max_steps=args.max_steps)
    except ValueError as err:
        raise UsageError(str(err)) from err
    config, model_config, resumed = preset.train, None, None
    if args.resume:
        resumed = ck.load_checkpoint(path)
        if not ck.is_resumable(resumed):
            raise UsageError(f"{path} is an exported checkpoint; it cannot be resumed")
        if resumed.get("preset") != preset.name:
            raise UsageError(
                f"{path} was trained with preset {resumed.get('preset')!r}, not {preset.name!r}"
            )
        config = TrainConfig.from_dict(resumed["trainer"]["train_config"])
        model_config = GPTConfig(**resumed["model_config"])
    # A run goes to the preset's length unless --max-steps says otherwise, resumed or not.
    # Device and progress bar belong to this session, not to the run: a resumed run
    # takes them from the command line, everything else from its checkpoint.
    overrides = {"max_steps": args.max_steps or preset.train.max_steps}
    if args.seed is not None:
        overrides["seed"] = args.seed
    config = TrainConfig.from_dict({**config.to_dict(), **overrides})
    if resumed is not None:
        step = resumed["trainer"]["step"]
        limit = "--max-steps" if args.max_steps else f"the {preset.name} preset's length"
        if config.max_steps <= step:
            raise UsageError(f"{path} is already at step {step} and {limit} is "
                             f"{config.max_steps}: give a larger --max-steps to train on")
        print(f"resuming at step {step}; training to step {config.max_steps}, {limit}"
              + ("" if args.max_steps else " (--max-steps N stops elsewhere)"))
    runtime = plan_runtime(args.device or "auto", compile=COMPILE_CHOICES[args.compile])

    text = load_text(CORPUS, download=not args.no_download)
    if resumed is not None:  # the checkpoint carries its tokenizer
        try:
            carried = tokenizer_from_dict(resumed["tokenizer"])
        except (TypeError, ValueError) as err:
            raise UsageError(f"{path}: its tokenizer cannot be read ({err})") from err
        corpus = encode_corpus(text, tokens_of(carried), tokenizer=carried,
                               train_fraction=TRAIN_FRACTION)
    else:
        try:
            corpus = encode_corpus(text, args.tokens or "char", vocab_size=args.vocab_size,
                                   train_fraction=TRAIN_FRACTION)
        except ValueError as err:  # a vocabulary smaller than the 256 bytes
            raise UsageError(f"--vocab-size: {err}") from err
    tokenizer, train_data, val_data = corpus.tokenizer, corpus.train, corpus.val
    if resumed is not None and tokens_of(tokenizer) == "char" and (
        tokenizer != encode_corpus(text).tokenizer
    ):
        raise UsageError(f"{path} was trained on a different vocabulary than {CORPUS}")
    model_config = model_config or preset.gpt_config(tokenizer.vocab_size)

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
    mc = model_config
    print(f"preset {preset.name}: {mc.n_layer} layers x {mc.n_embd} wide, {mc.n_head} heads "
          f"({mc.n_kv_heads or mc.n_head} key/value), block {mc.block_size}, {mc.norm} norm, "
          f"{mc.positions} positions, {mc.mlp} MLP, {model.num_parameters() / 1e6:.2f}M parameters")
    print(f"data: {train_data.numel():,} train / {val_data.numel():,} val tokens "
          f"({tokens_of(tokenizer)}, {corpus.chars_per_token:.2f} characters a token), "
          f"vocabulary {tokenizer.vocab_size}")
    print(
        f"device {describe(trainer.runtime, trainer.shards)} | batch {config.batch_size} x "
        f"{model_config.block_size} | steps {trainer.step} -> {config.max_steps} | "
        f"checkpoint {path}",
        flush=True,
    )
    t0 = time.perf_counter()
    with TerminateAsInterrupt() as term:
        try:
            trainer.train()
        except KeyboardInterrupt:
            print(
                f"{'terminated' if term.received else 'interrupted'} at step {trainer.step}; "
                f"checkpoint saved to {path}. Continue with: minitx train --preset "
                f"{preset.name} --out {out} --resume",
                file=sys.stderr,
            )
            return EXIT_TERMINATED if term.received else EXIT_INTERRUPTED
    save(trainer)
    wall = time.perf_counter() - t0
    tps = trainer.history["tokens_per_s"]
    print(
        f"done: step {trainer.step} | val loss {trainer.last_val_loss:.4f} "
        f"(best {trainer.best_val_loss:.4f}) = "
        f"{corpus.bits_per_char(trainer.last_val_loss):.4f} bits/char | {wall:.0f} s this session, "
        f"{trainer.elapsed_s:.0f} s in all | {sum(tps) / max(len(tps), 1):.0f} tokens/s | "
        + (f"{trainer.shard_trial.summary()} | " if trainer.shard_trial else "")
        + f"saved {path}"
    )
    if args.export is not None:
        ck.export_checkpoint(path, args.export)
        print(f"exported {args.export} ({args.export.stat().st_size / 1e6:.1f} MB)")
    return 0


# ---------------------------------------------------------------- export
def _export(args: argparse.Namespace) -> int:
    from minitx.train.checkpoint import export_checkpoint

    if args.dtype not in ("float32", "float16", "bfloat16"):
        raise UsageError(f"--dtype must be float32, float16 or bfloat16, got {args.dtype!r}")
    try:
        dst = export_checkpoint(args.checkpoint, args.out, args.dtype, overwrite=args.force)
    except FileExistsError as err:  # refused before reading anything
        raise UsageError(str(err)) from err
    print(f"exported {dst} ({dst.stat().st_size / 1e6:.2f} MB, {args.dtype} weights)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the ``minitx`` command with ``argv`` (default ``sys.argv[1:]``); return the
    exit status: 0 ok, 1 error, 2 bad usage, 130 interrupted (Ctrl-C), 143 terminated."""
    from minitx.course import editions, handout, site, teacher
    from minitx.train.runtime import TerminateAsInterrupt

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command in teacher.COMMANDS:
        return teacher.run(args)
    if args.command == handout.COMMAND:
        return handout.run(args)
    if args.command == editions.COMMAND:
        return editions.run(args)
    if args.command == "site":
        return site.run(args)
    from minitx.cli_sample import sample

    commands = {"train": _train, "sample": sample, "export": _export}
    with TerminateAsInterrupt() as term:
        try:
            status = commands[args.command](args)
        except UsageError as err:
            return _fail(str(err), EXIT_USAGE)
        except (ValueError, OSError) as err:  # CorpusError, CheckpointError are ValueErrors
            if os.environ.get("MINITX_DEBUG"):
                raise
            return _fail(err)
        except KeyboardInterrupt:
            print("minitx: interrupted", file=sys.stderr)
            status = EXIT_INTERRUPTED
    return EXIT_TERMINATED if term.received and status == EXIT_INTERRUPTED else status


if __name__ == "__main__":
    sys.exit(main())
