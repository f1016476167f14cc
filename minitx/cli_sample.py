"""The ``minitx sample`` command: continue a prompt with a trained Mini-GPT, each token
printed as it comes (see :mod:`minitx.cli` for the other commands and the error policy).

    minitx sample --prompt "ROMEO:" [--checkpoint runs/cpu/ckpt.pt] [--temperature 0.8]
                  [--top-k 40] [--top-p 0.9] [--greedy] [--num-tokens 300] [--seed 0]
                  [--no-cache]
"""

from __future__ import annotations

import argparse
import codecs
import math
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from minitx.cli import EXIT_INTERRUPTED, UsageError
from minitx.data.encoded import tokens_of


def add_command(sub: Any) -> None:
    """Add the ``sample`` subcommand to ``sub`` (what ``add_subparsers`` returns)."""
    sample = sub.add_parser("sample", help="generate text from a checkpoint", description=(
        "Continue a prompt with a trained Mini-GPT, printing each token as it comes; "
        "Ctrl-C stops and keeps what was printed."))
    sample.add_argument("--checkpoint", type=Path, metavar="PATH", help="a minitx checkpoint "
                        "(default: the best model shipped with the package, "
                        "minitx/data/checkpoints/minigpt_shakespeare_large.pt)")
    sample.add_argument("--prompt", required=True, metavar="TEXT", help="text to continue")
    sample.add_argument("--temperature", type=float, metavar="T", help="> 0; default 1.0")
    sample.add_argument("--top-k", type=int, metavar="K",
                        help="keep the k most likely tokens (k >= 1)")
    sample.add_argument("--top-p", type=float, metavar="P", help="nucleus sampling, p in (0, 1]")
    sample.add_argument("--greedy", action="store_true", help="always take the most likely token")
    sample.add_argument("--num-tokens", type=int, metavar="N", default=300,
                        help="tokens to add (default 300)")
    sample.add_argument("--seed", type=int, default=0, metavar="S",
                        help="sampling seed (default 0)")
    sample.add_argument("--device", default="cpu", help="cpu (default), cuda or mps")
    sample.add_argument("--no-cache", action="store_true", help="recompute the whole context "
                        "for every token instead of keeping a KV cache (slower; the same text)")


def _check_sampling(args: argparse.Namespace) -> None:
    filters = (("--temperature", args.temperature), ("--top-k", args.top_k),
               ("--top-p", args.top_p))
    given = [flag for flag, value in filters if value is not None]
    if args.greedy and given:
        raise UsageError(f"--greedy always takes the most likely token; {', '.join(given)} "
                         "would be ignored: give one or the other")
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


def _tokens(model: Any, idx: Any, args: argparse.Namespace) -> Iterator[int]:
    """The sampled tokens one at a time, as ``GPT.generate`` draws them."""
    import torch

    generator = torch.Generator(device=idx.device).manual_seed(args.seed)
    temperature = 1.0 if args.temperature is None else args.temperature
    for nxt in model.stream(idx, args.num_tokens, temperature, args.top_k, args.top_p,
                            greedy=args.greedy, generator=generator,
                            use_cache=not args.no_cache):
        yield int(nxt)


def _text_of(tokenizer: Any) -> Callable[[int], str]:
    """The text of each next token. A BPE token may end inside a UTF-8 character: its
    bytes wait for the rest."""
    if tokens_of(tokenizer) == "char":
        return lambda token: tokenizer.decode([token])
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return lambda token: decoder.decode(tokenizer.token_bytes(token))


def sample(args: argparse.Namespace) -> int:
    """Run ``minitx sample``; the exit status."""
    _check_sampling(args)  # before the (slower) checkpoint load
    import torch

    from minitx.data import shipped_model_path
    from minitx.train.checkpoint import load_gpt
    from minitx.train.runtime import DeferredInterrupt, select_device

    device = select_device(args.device)
    checkpoint = shipped_model_path("large") if args.checkpoint is None else args.checkpoint
    model, tokenizer, _ = load_gpt(checkpoint, device)
    if tokens_of(tokenizer) == "char":  # a BPE vocabulary spells any text in bytes
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
        unit = "characters" if tokens_of(tokenizer) == "char" else "tokens"
        print(f"minitx: note: the prompt has {len(ids)} {unit} but the model's context is "
              f"{block}; it sees only the last {block}", file=sys.stderr)
        ids = ids[-block:]
    if args.top_k is not None and args.top_k > tokenizer.vocab_size:
        print(f"minitx: note: --top-k {args.top_k} is more than the vocabulary "
              f"({tokenizer.vocab_size}); it keeps every token", file=sys.stderr)
    idx = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T)
    sys.stdout.write(args.prompt)
    sys.stdout.flush()
    done = 0
    text_of = _text_of(tokenizer)
    with DeferredInterrupt(quiet=True) as interrupt:  # Ctrl-C: stop after a whole token
        for token in _tokens(model, idx, args):  # each as it comes: no wait for the end
            sys.stdout.write(text_of(token))
            sys.stdout.flush()
            done += 1
            if interrupt.requested:
                break
    print(flush=True)
    if interrupt.requested:
        print(f"minitx: interrupted after {done:,} of {args.num_tokens:,} tokens; the text "
              "above is what was generated", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0
