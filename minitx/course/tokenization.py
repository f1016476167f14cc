"""Characters against byte-pair tokens on the same small GPT, and a text's tokens on view
(notebook 12).

The comparison: one model shape (:func:`comparison_recipe`, the ``cpu`` preset cut down to
2 layers x 64 wide, 4 heads, a context of 64 tokens) trained on character ids and on BPE
ids of the same training text, with the same blocks (only the embedding table, tied to the
head, and so the vocabulary differ) and the same training FLOPs: the BPE run gets
:func:`matched_steps`, fewer steps of the same batch, because each of its tokens costs more
(:func:`flops_per_token`, notebook 08's ``6N + 12LTC``). Every run is scored on the whole
validation text, in nats summed over its tokens (:func:`total_nats`), so that the two are
compared per character of the same text, not per token.

    comparison_recipe   the shared recipe (steps, batch, optimisers, schedule)
    flops_per_token     training FLOPs per token of a GPT config
    matched_steps       steps that give a config the FLOPs of another's run
    train_run           train one model on ids with one seed; a :class:`Run`
    total_nats          the summed cross-entropy over every token of a text but the first
    bigram_nats         the same sum for a counted bigram table, the baseline of both models
    spread_table        mean and spread (max - min over seeds) of bits per character
    token_pieces        what each token of a text stands for, as text
    tokens_html         a text with its tokens coloured, for a notebook
    TokenViewer         the widget: type a text, see its tokens coloured
"""

from __future__ import annotations

import html
import math
import statistics
import time
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from minitx.data.batches import BlockBatches
from minitx.data.bpe import BPETokenizer
from minitx.data.tokenizer import CharTokenizer
from minitx.nn.gpt import GPT, GPTConfig
from minitx.train.presets import Preset, get_preset
from minitx.train.runtime import Runtime
from minitx.train.trainer import Trainer

KINDS = ("characters", "BPE")


def comparison_recipe(max_steps: int = 300, seed: int = 0) -> Preset:
    """The ``cpu`` preset cut down: 2 layers x 64 wide, 4 heads, a context of 64 tokens,
    batches of 16 windows, ``max_steps`` steps (warmup 20, then warmup-stable-decay to 0
    over the second half); ``seed`` draws the training batches. Evaluated only at the start
    and at the end: the score that counts is :func:`total_nats` on the whole validation
    text."""
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps must be an int >= 1, got {max_steps!r}")
    train = {"max_steps": max_steps, "batch_size": 16, "warmup_steps": 20,
             "eval_interval": max_steps, "eval_steps": 1, "log_interval": 10, "seed": seed}
    return get_preset("cpu").with_overrides(
        model={"n_layer": 2, "n_embd": 64, "n_head": 4, "block_size": 64}, train=train
    )


def flops_per_token(config: GPTConfig) -> int:
    """Training FLOPs per token, notebook 08's estimate: ``6 N + 12 L T C``, where N counts
    the weights that multiply (the blocks' ``12 C^2`` per layer and the tied head's
    ``V C``) and ``12 L T C`` is attention over a full context of T."""
    L, C, T, V = config.n_layer, config.n_embd, config.block_size, config.vocab_size
    return 6 * (L * 12 * C * C + V * C) + 12 * L * T * C


def matched_steps(steps: int, reference: GPTConfig, other: GPTConfig) -> int:
    """The number of steps (of the same batch) that gives ``other`` the training FLOPs of
    ``steps`` steps of ``reference``, rounded to the nearest step."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be an int >= 1, got {steps!r}")
    if reference.block_size != other.block_size:
        raise ValueError(f"the two configs must share a context to share a batch, got "
                         f"{reference.block_size} and {other.block_size}")
    return round(steps * flops_per_token(reference) / flops_per_token(other))


@torch.no_grad()
def total_nats(model: GPT, ids: Tensor, batch_size: int = 64) -> float:
    """The cross-entropy (nats) summed over every token of ``ids`` (N,) but the first,
    which has no context: non-overlapping windows of the model's context, the last window
    moved back to end at the last token (its positions already scored are not counted
    again). Eval mode, no gradients; summed in float64."""
    if not isinstance(ids, Tensor) or ids.dim() != 1 or ids.numel() < 2:
        got = tuple(ids.shape) if isinstance(ids, Tensor) else type(ids).__name__
        raise ValueError(f"ids must be a 1-D tensor of at least 2 token ids, got {got}")
    T = model.config.block_size
    n = ids.numel() - 1  # targets
    starts = list(range(0, n - T + 1, T))
    tail = n - (starts[-1] + T if starts else 0)  # targets the full windows leave
    if tail:
        starts.append(max(0, n - T))
    was = model.training
    model.eval()
    total = torch.zeros((), dtype=torch.float64)
    for i in range(0, len(starts), batch_size):
        chunk = starts[i : i + batch_size]
        width = min(T, n)
        x = torch.stack([ids[s : s + width] for s in chunk])  # (b, T)
        y = torch.stack([ids[s + 1 : s + width + 1] for s in chunk])
        logits, _ = model(x)
        nats = F.cross_entropy(logits.transpose(1, 2), y, reduction="none").double()  # (b, T)
        if tail and i + batch_size >= len(starts):  # the moved-back window: its new part only
            nats[-1, : width - tail] = 0.0
        total += nats.sum()
    model.train(was)
    return float(total)


def bigram_nats(train_ids: Tensor, val_ids: Tensor, vocab_size: int,
                smoothing: float = 0.1) -> float:
    """The baseline of :func:`total_nats`: a bigram table counted on ``train_ids`` (N,), the
    next token from the current one only, each count plus ``smoothing`` so that no pair has
    probability 0 (notebook 09's ``counted_bigram`` adds 1). Returns the nats summed over
    every token of ``val_ids`` (M,) but the first, in float64, no training."""
    for name, ids in (("train_ids", train_ids), ("val_ids", val_ids)):
        if not isinstance(ids, Tensor) or ids.dim() != 1 or ids.numel() < 2:
            got = tuple(ids.shape) if isinstance(ids, Tensor) else type(ids).__name__
            raise ValueError(f"{name} must be a 1-D tensor of at least 2 token ids, got {got}")
        if ids.min() < 0 or ids.max() >= vocab_size:
            raise ValueError(f"{name} must hold ids in [0, {vocab_size}), got ids from "
                             f"{int(ids.min())} to {int(ids.max())}")
    if isinstance(smoothing, bool) or not isinstance(smoothing, int | float) or smoothing <= 0:
        raise ValueError(f"smoothing must be a number > 0, got {smoothing!r}")
    pairs = train_ids[:-1].long() * vocab_size + train_ids[1:]
    counts = torch.bincount(pairs, minlength=vocab_size * vocab_size).double()
    counts = counts.view(vocab_size, vocab_size) + smoothing  # (V, V): row a counts a's next
    log_p = counts.log() - counts.sum(1, keepdim=True).log()
    return float(-log_p[val_ids[:-1], val_ids[1:]].sum())


@dataclass
class Run:
    """One trained model: its ``kind`` of tokens (one of :data:`KINDS`), ``seed`` and
    ``steps``, the model, ``nats`` (summed over the validation tokens it predicts, every
    one but the first), ``chars`` (the characters of those tokens) and the training wall
    time in ``seconds``."""

    kind: str
    seed: int
    steps: int
    model: GPT
    nats: float
    chars: int
    seconds: float

    @property
    def bits_per_char(self) -> float:
        """Bits per character of the validation text: ``nats / chars / ln 2``."""
        return self.nats / self.chars / math.log(2)


def train_run(tokenizer: CharTokenizer | BPETokenizer, train_ids: Tensor, val_ids: Tensor,
              max_steps: int, seed: int, runtime: Runtime) -> Run:
    """Train :func:`comparison_recipe` (``max_steps``, ``seed``) on ``train_ids`` (N,), the
    ids of ``tokenizer``: weights from ``torch.manual_seed(seed)``, the batches of ``seed``.
    Scored with :func:`total_nats` on ``val_ids``; ``chars`` counts the characters of every
    validation token but the first, decoded."""
    if not isinstance(tokenizer, CharTokenizer | BPETokenizer):
        raise TypeError(f"tokenizer must be a CharTokenizer or a BPETokenizer, got "
                        f"{type(tokenizer).__name__}")
    kind = KINDS[isinstance(tokenizer, BPETokenizer)]
    recipe = comparison_recipe(max_steps, seed)
    config = recipe.gpt_config(tokenizer.vocab_size)
    torch.manual_seed(seed)
    model = GPT(config)
    batches = BlockBatches(train_ids, val_ids, config.block_size, recipe.train.batch_size,
                           runtime.device, vocab_size=config.vocab_size)
    trainer = Trainer(model, recipe.train, batches, runtime=runtime, progress=False)
    t0 = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - t0
    chars = len(tokenizer.decode(val_ids)) - len(tokenizer.decode(val_ids[:1]))
    return Run(kind, seed, max_steps, model.eval(), total_nats(model, val_ids), chars, seconds)


def spread_table(runs: list[Run]) -> dict[str, dict[str, float]]:
    """Per kind of tokens: ``mean`` and ``spread`` (max - min over seeds) of bits per
    character, ``seeds``, ``steps`` and mean training ``seconds``."""
    by: dict[str, list[Run]] = {}
    for run in runs:
        by.setdefault(run.kind, []).append(run)
    table = {}
    for kind, group in by.items():
        bits = [r.bits_per_char for r in group]
        table[kind] = {"mean": statistics.fmean(bits), "spread": max(bits) - min(bits),
                       "seeds": len(group), "steps": group[0].steps,
                       "seconds": statistics.fmean(r.seconds for r in group)}
    return table


# ---- a text's tokens, on view ----------------------------------------------------------------


def token_pieces(tokenizer: BPETokenizer, text: str) -> list[str]:
    """The text each token of ``text`` stands for. A token that holds only part of a
    character's UTF-8 bytes is shown as its bytes, e.g. ``'\\xe6\\x97'``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    pieces = []
    for i in tokenizer.encode(text):
        data = tokenizer.token_bytes(i)
        try:
            pieces.append(data.decode("utf-8"))
        except UnicodeDecodeError:
            pieces.append("".join(f"\\x{b:02x}" for b in data))
    return pieces


# Light backgrounds from the colour-blind-safe Okabe-Ito palette; neighbours always differ,
# and a border marks each token's edge, so the colour is never the only cue.
_COLOURS = ("#f5d6a3", "#bcdff5", "#b5e3cf", "#f7efa1", "#c3d5ec", "#f3c9ad", "#e6cde0")


def tokens_html(tokenizer: BPETokenizer, text: str) -> str:
    """``text`` as HTML, each token a coloured box with its id on hover; a space shows as
    ``·`` and a line break as ``↵``, so that the boxes show where the spaces went."""
    ids = tokenizer.encode(text)
    boxes = []
    for k, (i, piece) in enumerate(zip(ids, token_pieces(tokenizer, text), strict=True)):
        shown = html.escape(piece.replace(" ", "·").replace("\n", "↵"))
        boxes.append(f'<span title="id {i}" style="background:{_COLOURS[k % len(_COLOURS)]};'
                     'border:1px solid #555;border-radius:3px;padding:1px 2px;margin:1px;'
                     f'font-family:monospace;font-size:15px;color:#000">{shown}</span>')
    count = (f"<p style='font-size:14px'>{len(text)} characters, {len(text.encode())} bytes, "
             f"{len(ids)} tokens</p>")
    return count + "<div style='line-height:2.2em'>" + "".join(boxes) + "</div>"


class TokenViewer:
    """A text box and its tokens, coloured: ``widget`` to display, ``text`` (the box),
    ``ids`` and ``pieces`` of the text shown now. Setting ``text.value`` redraws."""

    def __init__(self, tokenizer: BPETokenizer, text: str = "To be, or not to be") -> None:
        import ipywidgets as widgets

        if not isinstance(tokenizer, BPETokenizer):
            raise TypeError(f"tokenizer must be a BPETokenizer, got {type(tokenizer).__name__}")
        self.tokenizer = tokenizer
        self.text = widgets.Text(value=text, description="text", continuous_update=True,
                                 layout=widgets.Layout(width="40em"))
        self.view = widgets.HTML()
        self.widget = widgets.VBox([self.text, self.view])
        self.text.observe(lambda change: self._draw(), names="value")
        self._draw()

    def _draw(self) -> None:
        self.ids: list[int] = self.tokenizer.encode(self.text.value)
        self.pieces: list[str] = token_pieces(self.tokenizer, self.text.value)
        self.view.value = tokens_html(self.tokenizer, self.text.value)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)


__all__ = [
    "KINDS",
    "Run",
    "TokenViewer",
    "bigram_nats",
    "comparison_recipe",
    "flops_per_token",
    "matched_steps",
    "spread_table",
    "token_pieces",
    "tokens_html",
    "total_nats",
    "train_run",
]
