"""Looking at what a trained language model writes: loss, repetition, memorisation, sampling.

    estimate_loss            mean loss of a model over fixed random blocks of a token tensor
    split_loss               mean loss over a whole split, in non-overlapping windows
    next_token_probs         the distribution a sampler draws the next token from
    continuation_log_probs   log-probability the model gives each token of a continuation
    repeated_ngram_fraction  how much of a text repeats itself (greedy decoding loops)
    match_lengths            for every position of a sample, the longest stretch starting
                             there that occurs verbatim in a corpus
    longest_verbatim_match   the longest passage of a sample found verbatim in a corpus
    occlusion_importance     how much the prediction changes when one input token is replaced
    SamplingExplorer         a widget: temperature, top-k, top-p and a seed -> a new sample

The verbatim search needs no index: ``match_lengths`` slides a window over the sample
and asks Python's substring search (``str.__contains__``, a fast C routine) whether the
window occurs in the corpus. Because a substring of a match is also a match, the window
only ever moves forward, so a sample of n characters costs at most 2n searches.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets
import numpy as np
import torch
from torch import Tensor, nn

from minitx import sampling
from minitx.batches import random_blocks, sequential_blocks
from minitx.runtime import evaluating


# ---------------------------------------------------------------- loss
def _model_device(model: nn.Module) -> torch.device:
    param = next(iter(model.parameters()), None)
    return param.device if param is not None else torch.device("cpu")


@torch.no_grad()
def estimate_loss(
    model: nn.Module,
    data: Tensor,
    block_size: int,
    batch_size: int = 32,
    n_batches: int = 10,
    seed: int = 0,
) -> float:
    """Mean cross-entropy of ``model`` over ``n_batches`` random blocks of ``data``.

    ``data`` (N,) token ids; ``model(x, y)`` returns ``(logits, loss)``. The block offsets
    come from a ``torch.Generator`` seeded with ``seed``, so the same call always scores
    the same ``n_batches * batch_size`` windows of ``block_size`` tokens. Runs in eval
    mode without gradients; the model's mode is restored.
    """
    if not isinstance(n_batches, int) or isinstance(n_batches, bool) or n_batches < 1:
        raise ValueError(f"n_batches must be an int >= 1, got {n_batches!r}")
    generator = torch.Generator().manual_seed(seed)
    device = _model_device(model)
    with evaluating(model):
        total = 0.0
        for _ in range(n_batches):
            x, y = random_blocks(data, block_size, batch_size, generator)  # (B, T) each
            _, loss = model(x.to(device), y.to(device))
            total += float(loss)
    return total / n_batches


def split_loss(
    model: nn.Module,
    data: Tensor,
    block_size: int,
    batch_size: int = 64,
    max_tokens: int | None = None,
) -> float:
    """Mean cross-entropy (nats per token) of ``model`` over the whole of ``data``.

    Where :func:`estimate_loss` samples windows (quick, and noisy from one seed to the
    next), this walks ``data`` (N,) once in non-overlapping windows of ``block_size``
    tokens, so two models, or two machines, scoring one split get comparable numbers.
    Each window's first prediction has no context. ``max_tokens`` scores only the first
    that many tokens (a fixed subset, for a quick check). Eval mode, no gradients.
    """
    if not isinstance(data, Tensor) or data.dim() != 1:
        got = tuple(data.shape) if isinstance(data, Tensor) else type(data).__name__
        raise ValueError(f"data must be a 1-D tensor of token ids (N,), got {got}")
    if max_tokens is not None:
        if max_tokens <= block_size:
            raise ValueError(f"max_tokens must exceed block_size={block_size}, got {max_tokens}")
        data = data[: max_tokens + 1]  # +1: the last window's shifted target
    device = _model_device(model)
    total, count = 0.0, 0
    with evaluating(model):
        for x, y in sequential_blocks(data, block_size, batch_size):  # (b, T) each
            _, loss = model(x.to(device), y.to(device))
            total += float(loss) * y.numel()
            count += y.numel()
    return total / count


@torch.no_grad()
def next_token_probs(
    model: nn.Module,
    idx: Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> Tensor:
    """Probabilities (V,) of the token that follows ``idx`` (1, T), after the filters.

    Exactly what ``GPT.generate`` draws its next token from: the logits of the last
    position (context cut to ``model.config.block_size``), then temperature, top-k and
    top-p (``minitx.sampling.filter_logits``), then softmax. Tokens a filter removed
    have probability 0.
    """
    if not isinstance(idx, Tensor) or idx.dim() != 2 or idx.size(0) != 1:
        got = tuple(idx.shape) if isinstance(idx, Tensor) else type(idx).__name__
        raise ValueError(f"idx must be a (1, T) tensor of token ids, got {got}")
    block = model.config.block_size
    with evaluating(model):
        logits, _ = model(idx[:, -block:].to(_model_device(model)))
    filtered = sampling.filter_logits(logits[0, -1].float(), temperature, top_k, top_p)  # (V,)
    return torch.softmax(filtered, dim=-1).cpu()


@torch.no_grad()
def continuation_log_probs(model: nn.Module, ids: Tensor, start: int) -> Tensor:
    """Log-probability the model gives each token ``ids[t]``, ``t >= start``, of a sequence.

    ``ids`` (N,) or (1, N) token ids; ``start`` >= 1 is where the continuation begins (the
    length of the prompt). Token t is scored from the ``block_size`` tokens before it,
    the context ``GPT.generate`` used when it produced it. Returns (N - start,) float.
    """
    if not isinstance(ids, Tensor):
        raise TypeError(f"ids must be a tensor of token ids, got {type(ids).__name__}")
    ids = ids.reshape(-1).cpu()  # (N,)
    N = ids.numel()
    if isinstance(start, bool) or not isinstance(start, int) or not 1 <= start <= N:
        raise ValueError(f"start must be an int in [1, {N}], got {start!r}")
    block = model.config.block_size
    device = _model_device(model)
    with evaluating(model):
        # Tokens 1 .. block are scored from one window ids[:block] (causal: position t-1
        # sees exactly ids[:t]); every later token from its own window ids[t-block:t].
        head = ids[: min(block, N)][None]  # (1, <=block)
        logits, _ = model(head.to(device))
        logp = [torch.log_softmax(logits[0].float(), -1).cpu()]  # row t-1 scores token t
        late = torch.arange(block + 1, max(block + 1, N))  # tokens with a cropped window
        if late.numel():
            windows = ids[late[:, None] - block + torch.arange(block)]  # (n_late, block)
            logits, _ = model(windows.to(device))
            logp.append(torch.log_softmax(logits[:, -1].float(), -1).cpu())  # (n_late, V)
    table = torch.cat(logp)  # row r scores token r + 1
    t = torch.arange(start, N)
    return table[t - 1, ids[t]]


# ---------------------------------------------------------------- repetition
def _check_str(value: Any, name: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")


def repeated_ngram_fraction(text: str, n: int = 10) -> float:
    """Fraction of the n-grams (runs of ``n`` characters) of ``text`` that already
    occurred earlier in it: ``1 - distinct / total``.

    0 means no stretch of ``n`` characters comes twice; a text stuck in a loop scores
    close to 1. A text shorter than ``n`` has no n-grams and scores 0.
    """
    _check_str(text, "text")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    total = len(text) - n + 1
    if total <= 0:
        return 0.0
    distinct = len({text[i : i + n] for i in range(total)})
    return 1.0 - distinct / total


# ---------------------------------------------------------------- memorisation
@dataclass(frozen=True)
class VerbatimMatch:
    """A passage of a sample that occurs verbatim in a corpus."""

    length: int  # characters
    sample_start: int  # where it starts in the sample
    corpus_start: int  # where it first occurs in the corpus (-1 when length is 0)
    text: str


def match_lengths(sample: str, corpus: str) -> np.ndarray:
    """Matching statistics: entry i is the length of the longest prefix of ``sample[i:]``
    that occurs somewhere in ``corpus``. Returns an int64 array of ``len(sample)`` entries.

    If ``sample[i:j]`` occurs in the corpus, so does ``sample[i+1:j]``: the end of the
    window never moves back, so at most ``2 * len(sample)`` substring searches are run.
    """
    _check_str(sample, "sample")
    _check_str(corpus, "corpus")
    n = len(sample)
    out = np.zeros(n, dtype=np.int64)
    j = 0  # sample[i:j] occurs in the corpus
    for i in range(n):
        j = max(j, i)
        while j < n and sample[i : j + 1] in corpus:
            j += 1
        out[i] = j - i
    return out


def longest_verbatim_match(sample: str, corpus: str) -> VerbatimMatch:
    """The longest passage of ``sample`` that occurs verbatim in ``corpus`` (the first one
    when several are as long), with where it sits in both texts."""
    lengths = match_lengths(sample, corpus)
    if lengths.size == 0 or lengths.max() == 0:
        return VerbatimMatch(0, 0, -1, "")
    start = int(lengths.argmax())
    length = int(lengths[start])
    text = sample[start : start + length]
    return VerbatimMatch(length, start, corpus.find(text), text)


# ---------------------------------------------------------------- what the prediction uses
@torch.no_grad()
def occlusion_importance(model: nn.Module, idx: Tensor, replacement: int) -> Tensor:
    """How much each input token matters to the next-token prediction after ``idx`` (1, T).

    For every position j, token j is replaced by ``replacement`` and the drop in the
    log-probability of the token the model predicts from the intact input is measured.
    Returns (T,) float: entry j is ``log p(top | idx) - log p(top | idx with j replaced)``
    (large = the prediction relied on token j; positions already equal to ``replacement``
    score 0).
    """
    if not isinstance(idx, Tensor) or idx.dim() != 2 or idx.size(0) != 1:
        got = tuple(idx.shape) if isinstance(idx, Tensor) else type(idx).__name__
        raise ValueError(f"idx must be a (1, T) tensor of token ids, got {got}")
    T = idx.size(1)
    with evaluating(model):
        variants = idx.repeat(T + 1, 1)  # (T+1, T): row 0 intact, row j+1 has j replaced
        variants[torch.arange(1, T + 1), torch.arange(T)] = replacement
        logits, _ = model(variants.to(_model_device(model)))
    logp = torch.log_softmax(logits[:, -1].float(), dim=-1).cpu()  # (T+1, V)
    top = int(logp[0].argmax())
    return logp[0, top] - logp[1:, top]  # (T,)


# ---------------------------------------------------------------- sampling widget
class SamplingExplorer:
    """A widget to resample a continuation with other decoding settings.

    Controls: ``temperature`` (slider), ``top_k`` (slider; 0 = off), ``top_p`` (slider;
    1.0 = off), ``seed`` (int) and a *resample* button (next seed). Every change runs
    ``model.generate`` on ``prompt`` with a ``torch.Generator`` seeded with ``seed``, so
    a setting always gives the same text. The text, its repeated-10-gram fraction and
    how many tokens the first step could choose from are shown under the controls.

    Attributes: ``controls`` (dict name -> widget), ``button``, ``output`` (HTML),
    ``text`` (the last continuation, prompt excluded), ``widget`` (the box to display),
    ``n_samples`` (how many samples were drawn).
    """

    def __init__(
        self,
        model: nn.Module,
        tokenizer: Any,
        prompt: str = "ROMEO:",
        *,
        num_tokens: int = 200,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        seed: int = 0,
    ) -> None:
        _check_str(prompt, "prompt")
        if not prompt:
            raise ValueError("prompt must hold at least one character")
        sampling.check_temperature(temperature)
        sampling.check_top_k(top_k)
        sampling.check_top_p(top_p)
        self.model = model
        self.tokenizer = tokenizer
        self.prompt = prompt
        self.num_tokens = num_tokens
        self.idx = torch.tensor([tokenizer.encode(prompt)], dtype=torch.long)  # (1, T)
        V = model.config.vocab_size
        self.controls: dict[str, widgets.ValueWidget] = {
            "temperature": widgets.FloatSlider(
                value=temperature, min=0.1, max=2.0, step=0.05, description="temperature",
                readout_format=".2f", continuous_update=False,
            ),
            "top_k": widgets.IntSlider(
                value=0 if top_k is None else min(top_k, V), min=0, max=V,
                description="top-k (0 = off)", continuous_update=False,
            ),
            "top_p": widgets.FloatSlider(
                value=1.0 if top_p is None else top_p, min=0.05, max=1.0, step=0.05,
                description="top-p (1 = off)", readout_format=".2f", continuous_update=False,
            ),
            "seed": widgets.BoundedIntText(value=seed, min=0, max=2**31 - 1,
                                           description="seed"),
        }
        for control in self.controls.values():
            control.style.description_width = "initial"
        self.button = widgets.Button(description="resample (next seed)")
        self.output = widgets.HTML()
        self.n_samples = 0
        self.text = ""
        self.widget = widgets.VBox(
            [widgets.HBox(list(self.controls.values()),
                          layout=widgets.Layout(flex_flow="row wrap")),
             self.button, self.output]
        )
        self.update()
        for control in self.controls.values():
            control.observe(lambda change: self.update(), names="value")
        self.button.on_click(self._next_seed)

    @property
    def settings(self) -> dict[str, Any]:
        """The decoding settings as ``generate`` takes them (None = filter off)."""
        v = {name: c.value for name, c in self.controls.items()}
        return {
            "temperature": float(v["temperature"]),
            "top_k": int(v["top_k"]) or None,
            "top_p": None if v["top_p"] >= 1.0 else float(v["top_p"]),
            "seed": int(v["seed"]),
        }

    def sample(self, temperature: float, top_k: int | None, top_p: float | None,
               seed: int) -> str:
        """The continuation (prompt excluded) for these settings; the same settings give
        the same text."""
        device = _model_device(self.model)
        generator = torch.Generator(device=device).manual_seed(seed)
        out = self.model.generate(
            self.idx.to(device), self.num_tokens, temperature=temperature, top_k=top_k,
            top_p=top_p, generator=generator,
        )  # (1, T + num_tokens)
        self.n_samples += 1
        return self.tokenizer.decode(out[0, self.idx.size(1):])

    def update(self) -> None:
        """Draw a sample for the current settings and show it."""
        s = self.settings
        self.text = self.sample(**s)
        probs = next_token_probs(self.model, self.idx, s["temperature"], s["top_k"], s["top_p"])
        kept = int((probs > 0).sum())
        rep = repeated_ngram_fraction(self.text, 10)
        self.output.value = (
            f"<pre style='white-space: pre-wrap'>{html.escape(self.prompt + self.text)}</pre>"
            f"<div>first step chooses among {kept} of {probs.numel()} tokens | "
            f"repeated 10-grams: {rep:.0%}</div>"
        )

    def _next_seed(self, _button: Any = None) -> None:
        self.controls["seed"].value += 1  # observe() redraws

    def __repr__(self) -> str:
        return f"SamplingExplorer(prompt={self.prompt!r}, settings={self.settings})"


__all__ = [
    "SamplingExplorer",
    "VerbatimMatch",
    "continuation_log_probs",
    "estimate_loss",
    "longest_verbatim_match",
    "match_lengths",
    "next_token_probs",
    "occlusion_importance",
    "repeated_ngram_fraction",
    "split_loss",
]
