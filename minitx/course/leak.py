"""Measuring a mask leak: a language model that sees the future looks perfect in training
and is useless when it generates.

A model trained without the causal mask can read the token it must predict: the target
at position t is the input at position t + 1. Its training loss collapses, and so does
its ordinary (teacher-forced) validation loss, because the leak is in the model, not in
the data. Two measurements expose it:

- :func:`future_blind_losses`: the loss at each position when the model is given only
  the tokens up to that position, exactly what it sees when it generates;
- the quality of what it generates: :func:`real_word_fraction` (how much of a text is
  made of words that occur in the corpus) and :func:`text_nll` (how likely an honest,
  causal model finds the text).

:func:`train_with_and_without_mask` trains the two models that notebook 05 compares. Models
follow the GPT interface: ``model(idx (B, T)) -> (logits (B, T, V), loss)``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from minitx.nn.gpt import GPT, GPTConfig
from minitx.nn.modes import evaluating, model_device
from minitx.train.config import TrainConfig
from minitx.train.evaluate import mean_loss
from minitx.train.runtime import Runtime, plan_runtime
from minitx.train.trainer import BatchFn, Trainer

__all__ = [
    "HONEST",
    "LEAKING",
    "corpus_words",
    "future_blind_losses",
    "position_losses",
    "real_word_fraction",
    "text_nll",
    "train_with_and_without_mask",
]

HONEST, LEAKING = "honest (causal)", "leaking (no mask)"

_WORD_RE = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*")


def _check_model(model: nn.Module) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")


def _check_xy(x: Tensor, y: Tensor) -> None:
    for name, t in (("x", x), ("y", y)):
        if not isinstance(t, Tensor) or t.dtype != torch.long or t.dim() != 2:
            got = (
                f"{tuple(t.shape)} {t.dtype}" if isinstance(t, Tensor) else type(t).__name__
            )
            raise ValueError(f"{name} must be a (B, T) torch.long tensor of token ids, got {got}")
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same shape, got {tuple(x.shape)} and "
                         f"{tuple(y.shape)}")


def _logits(model: nn.Module, idx: Tensor) -> Tensor:
    out = model(idx)
    logits = out[0] if isinstance(out, tuple) else out
    if logits.dim() != 3 or logits.shape[:2] != idx.shape:
        raise ValueError(
            f"model(idx {tuple(idx.shape)}) must return logits (B, T, V), got "
            f"{tuple(logits.shape)}"
        )
    # Half-precision logits (autocast) are scored in float32; float64 stays float64.
    return logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits


def position_losses(model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
    """Teacher-forced cross-entropy at each position, averaged over the batch.

    The model reads the whole window ``x`` (B, T) at once, as in training; the loss at
    position t compares ``logits[:, t]`` with ``y[:, t]``. Returns (T,) float. Its mean
    is the usual training/validation loss.
    """
    _check_model(model)
    _check_xy(x, y)
    with evaluating(model):
        logits = _logits(model, x)  # (B, T, V)
    B, T, V = logits.size()
    loss = F.cross_entropy(logits.reshape(B * T, V), y.reshape(-1), reduction="none")
    return loss.view(B, T).mean(0)  # (T,)


def future_blind_losses(model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
    """Cross-entropy at each position when the model sees only the past and present.

    For every t the model is run on the prefix ``x[:, :t + 1]`` and its prediction at
    the last position is compared with ``y[:, t]``: this is how the model is used when it
    generates text, where the next token does not exist yet. Returns (T,) float.

    For a causal model this equals :func:`position_losses` (it never looked ahead); for a
    model trained without the causal mask it is far worse. Costs T forward passes.
    """
    _check_model(model)
    _check_xy(x, y)
    T = x.size(1)
    losses = []
    with evaluating(model):
        for t in range(T):
            logits = _logits(model, x[:, : t + 1])[:, -1, :]  # (B, V)
            losses.append(F.cross_entropy(logits, y[:, t]))
    return torch.stack(losses)  # (T,)


def corpus_words(text: str) -> frozenset[str]:
    """The set of lower-cased words (letters, inner apostrophes) that occur in ``text``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return frozenset(w.lower() for w in _WORD_RE.findall(text))


def real_word_fraction(text: str, words: Iterable[str]) -> float:
    """Fraction of the characters of ``text`` that belong to a real word.

    A word is a run of letters (with inner apostrophes, like "o'er"); it is real when its
    lower-cased form is in ``words`` (e.g. :func:`corpus_words` of the training text).
    Spaces, punctuation and newlines count in the denominator, so real Shakespeare
    scores about 0.75, not 1; a stream of newlines or invented words scores near 0.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if not text:
        raise ValueError("real_word_fraction needs a non-empty text")
    if isinstance(words, str):
        raise TypeError("words must be a collection of words, not a single string")
    vocabulary = words if isinstance(words, (set, frozenset)) else set(words)
    real = sum(len(w) for w in _WORD_RE.findall(text) if w.lower() in vocabulary)
    return real / len(text)


def text_nll(judge: nn.Module, ids: Tensor | list[int], block_size: int | None = None) -> float:
    """Mean negative log-likelihood (nats per token) of a token sequence under ``judge``.

    ``ids``: (N,) token ids, N >= 2. Every token after the first is scored once, with
    the tokens before it as context (at most ``block_size`` of them, default
    ``judge.config.block_size``). The judge must be causal (a model that could look
    ahead would score the text by reading it): a ``judge.config.causal`` that is False
    is refused. Lower is more plausible; ln(vocab_size) is a uniform guess.
    """
    _check_model(judge)
    config = getattr(judge, "config", None)
    if config is not None and getattr(config, "causal", True) is False:
        raise ValueError("the judge must be a causal model (config.causal=True); a model "
                         "without the causal mask reads the tokens it is asked to score")
    if block_size is None:
        if config is None or not hasattr(config, "block_size"):
            raise ValueError("pass block_size: the judge has no config.block_size")
        block_size = config.block_size
    if not isinstance(block_size, int) or isinstance(block_size, bool) or block_size < 1:
        raise ValueError(f"block_size must be an int >= 1, got {block_size!r}")
    ids = torch.as_tensor(ids)
    if ids.dim() != 1 or ids.dtype.is_floating_point or ids.dtype == torch.bool:
        raise ValueError(f"ids must be a 1-D sequence of integer token ids, got "
                         f"{tuple(ids.shape)} {ids.dtype}")
    if ids.numel() < 2:
        raise ValueError(f"ids needs at least 2 tokens to score one, got {ids.numel()}")
    ids = ids.long().to(model_device(judge))

    def windows() -> Iterator[tuple[Tensor, Tensor]]:
        # Non-overlapping windows: x = ids[s : s+T], y = ids[s+1 : s+T+1], (t,) each.
        for start in range(0, ids.numel() - 1, block_size):
            y = ids[start + 1 : start + 1 + block_size]
            yield ids[start : start + y.numel()], y

    def window_nll(model: nn.Module, xy: tuple[Tensor, Tensor]) -> Tensor:
        return F.cross_entropy(_logits(model, xy[0][None])[0], xy[1])  # (t, V) logits

    return mean_loss(judge, windows(), window_nll, weight=lambda xy: xy[1].numel())


def train_with_and_without_mask(
    config: GPTConfig, train_config: TrainConfig, batches: BatchFn, *, seed: int = 0,
    runtime: Runtime | None = None,
) -> tuple[dict[str, GPT], dict[str, dict[str, list[float]]]]:
    """Train two GPTs that differ only in the causal mask: :data:`HONEST` with
    ``causal=True`` and :data:`LEAKING` with ``causal=False``, the rest of ``config`` shared.

    Both start from the same weights (``torch.manual_seed(seed)`` before each is built;
    checked) and train on the same ``batches`` with the same schedule (``train_config``).
    ``runtime`` defaults to one CPU thread. Returns ``(models, histories)``, dicts keyed by
    the two names: the models in eval mode, the histories as ``Trainer.train()`` returns
    them.
    """
    if not isinstance(config, GPTConfig):
        raise TypeError(f"config must be a GPTConfig, got {type(config).__name__}")
    if not isinstance(train_config, TrainConfig):
        raise TypeError(f"train_config must be a TrainConfig, got {type(train_config).__name__}")
    runtime = plan_runtime("cpu", threads=1) if runtime is None else runtime
    models: dict[str, GPT] = {}
    histories: dict[str, dict[str, list[float]]] = {}
    start: list[Tensor] = []
    for name, causal in ((HONEST, True), (LEAKING, False)):
        torch.manual_seed(seed)  # the same initial weights for both
        model = GPT(dataclasses.replace(config, causal=causal))
        initial = [p.detach().clone() for p in model.parameters()]
        if start and not all(torch.equal(a, b) for a, b in zip(start, initial, strict=True)):
            raise RuntimeError("the two models did not start from the same weights")
        start = initial
        trainer = Trainer(model, train_config, batches, runtime=runtime, progress=False)
        histories[name] = trainer.train()
        models[name] = trainer.model.eval()
    return models, histories
