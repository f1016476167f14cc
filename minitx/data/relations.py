"""A toy task that needs two relations: which token came just before, and where my partner is.

A sequence starts with ``^`` and holds letters and up to three pairs of delimiters, each
pair of a different kind, properly nested::

    ^ a b ( c [ d ] e ) f g < a > b

At every position the model answers two questions at once:

- **previous**: which token stands just before me? (every position but the first)
- **partner**: where is my partner? (delimiters only: ``)`` points at its ``(`` and
  ``(`` at its ``)``; letters and ``^`` have no answer, marked ``IGNORE_INDEX``)

The first is a relation between *positions* (always one step back), the second a relation
between *contents* (the other delimiter of the same kind, wherever it is). A model with
several heads can give each relation its own head.

Every token is one character, read by :meth:`RelationTask.encode` with a
:class:`minitx.data.tokenizer.CharTokenizer`. Everything is generated from a seed: the same
seed gives the same data. The model that learns the task, and the measurements of its
heads, are in :mod:`minitx.course.relations`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from minitx.data.tokenizer import IGNORE_INDEX, CharTokenizer

__all__ = [
    "BOS",
    "LETTERS",
    "PAIRS",
    "RelationBatch",
    "RelationOutput",
    "RelationTask",
    "relation_loss",
]

BOS = "^"
LETTERS = "abcdefgh"
PAIRS = ("()", "[]", "{}", "<>")


class RelationBatch(NamedTuple):
    """Token ids and both targets, each a long tensor (B, T).

    ``prev[b, t] = x[b, t-1]`` (``IGNORE_INDEX`` at t = 0); ``partner[b, t]`` is the
    position of the delimiter matching ``x[b, t]`` (``IGNORE_INDEX`` on ``^`` and letters).
    """

    x: Tensor
    prev: Tensor
    partner: Tensor


class RelationOutput(NamedTuple):
    """What a model of this task returns (:class:`minitx.course.relations.RelationNet` does).

    ``prev_logits`` (B, T, vocab_size), ``partner_logits`` (B, T, T) (scores over
    positions), ``weights`` (L, B, H, T, T) attention weights or None.
    """

    prev_logits: Tensor
    partner_logits: Tensor
    weights: Tensor | None


def relation_loss(out: RelationOutput, batch: RelationBatch) -> Tensor:
    """Sum of the two cross-entropies, a scalar (positions marked ``IGNORE_INDEX`` left out).

    ``out.prev_logits`` (B, T, V) against ``batch.prev`` (B, T), ``out.partner_logits``
    (B, T, T) against ``batch.partner`` (B, T).
    """
    prev = F.cross_entropy(out.prev_logits.flatten(0, 1), batch.prev.flatten(),
                           ignore_index=IGNORE_INDEX)
    partner = F.cross_entropy(out.partner_logits.flatten(0, 1), batch.partner.flatten(),
                              ignore_index=IGNORE_INDEX)
    return prev + partner


@functools.cache
def _tokenizer(n_letters: int) -> CharTokenizer:
    """The vocabulary of a task with ``n_letters`` letters: ``^``, the letters, the
    openers, the closers (one character each, no special symbols)."""
    openers = [p[0] for p in PAIRS]
    closers = [p[1] for p in PAIRS]
    return CharTokenizer([BOS, *LETTERS[:n_letters], *openers, *closers])


@dataclass(frozen=True)
class RelationTask:
    """Generator of the two-relation task.

    ``seq_len`` tokens per sequence (``^`` included); each sequence holds between 1 and
    ``max_pairs`` delimiter pairs of distinct kinds (from :data:`PAIRS`), the rest are
    letters drawn from the first ``n_letters`` of :data:`LETTERS`.
    """

    seq_len: int = 16
    max_pairs: int = 3
    n_letters: int = 8
    batch_size: int = 64

    def __post_init__(self) -> None:
        for name in ("seq_len", "max_pairs", "n_letters", "batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if not 1 <= self.max_pairs <= len(PAIRS):
            raise ValueError(f"max_pairs must be in [1, {len(PAIRS)}], got {self.max_pairs}")
        if self.seq_len < 2 * self.max_pairs + 1:
            raise ValueError(
                f"seq_len must leave room for ^ and {self.max_pairs} pairs "
                f"(>= {2 * self.max_pairs + 1}), got {self.seq_len}"
            )
        if not 1 <= self.n_letters <= len(LETTERS):
            raise ValueError(f"n_letters must be in [1, {len(LETTERS)}], got {self.n_letters}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")

    # -- vocabulary ---------------------------------------------------------------------
    @property
    def tokenizer(self) -> CharTokenizer:
        """The task's vocabulary: ``^``, the letters, the openers, the closers."""
        return _tokenizer(self.n_letters)

    @property
    def itos(self) -> tuple[str, ...]:
        """Id -> token: ``^``, the letters, the openers, the closers."""
        return self.tokenizer.itos

    @property
    def stoi(self) -> dict[str, int]:
        """Token -> id (a copy)."""
        return self.tokenizer.stoi

    @property
    def vocab_size(self) -> int:
        """Number of tokens: ``^``, ``n_letters`` letters, the openers and closers."""
        return self.tokenizer.vocab_size

    def encode(self, text: str) -> Tensor:
        """``"^ab(c)..."`` (one character per token, spaces ignored) -> long tensor (T,)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        chars = "".join(c for c in text if not c.isspace())
        try:
            ids = self.tokenizer.encode(chars)
        except ValueError as e:
            raise ValueError(f"unknown tokens in {text!r}: {e}") from None
        return torch.tensor(ids, dtype=torch.long)

    def decode(self, ids: Tensor | Sequence[int]) -> str:
        """Long tensor or list of ids (T,) -> string of T characters."""
        return self.tokenizer.decode(torch.as_tensor(ids))

    # -- targets ------------------------------------------------------------------------
    def targets(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Both targets of token ids ``x`` (B, T): ``(prev, partner)``, each (B, T).

        The partner is found with a stack, as a parser would: a closer matches the most
        recent unmatched opener, which must be of its kind. Unbalanced input raises
        ``ValueError``.
        """
        if not isinstance(x, Tensor) or x.dim() != 2 or x.dtype != torch.long:
            raise ValueError(
                f"x must be a long tensor (B, T), got "
                f"{tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__}"
            )
        prev = torch.full_like(x, IGNORE_INDEX)
        prev[:, 1:] = x[:, :-1]
        itos, stoi = self.itos, self.stoi
        opener_of = {stoi[p[1]]: stoi[p[0]] for p in PAIRS}
        openers = set(opener_of.values())
        partner = torch.full_like(x, IGNORE_INDEX)
        for b, row in enumerate(x.tolist()):
            stack: list[int] = []
            for t, tok in enumerate(row):
                if tok in openers:
                    stack.append(t)
                elif tok in opener_of:
                    if not stack or row[stack[-1]] != opener_of[tok]:
                        raise ValueError(f"sequence {b}: {itos[tok]!r} at {t} has no partner")
                    s = stack.pop()
                    partner[b, t], partner[b, s] = s, t
            if stack:
                raise ValueError(f"sequence {b}: {itos[row[stack[-1]]]!r} is never closed")
        return prev, partner

    # -- sampling -----------------------------------------------------------------------
    def sample(self, n: int, seed: int | torch.Generator = 0) -> RelationBatch:
        """``n`` sequences: a :class:`RelationBatch` of (n, seq_len) tensors.

        The number of pairs k is uniform in [1, max_pairs]; the nesting is uniform among
        the balanced bracket words of k pairs (``(())`` or ``()()`` for k = 2); the
        kinds, the positions and the letters are uniform too. ``seed`` is an int or a
        ``torch.Generator`` (which is advanced). Vectorised: no Python loop per sequence.
        """
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"n must be a positive int, got {n!r}")
        g = seed if isinstance(seed, torch.Generator) else torch.Generator().manual_seed(seed)
        T, M, n_let = self.seq_len, self.max_pairs, self.n_letters
        pair_of, is_close, n_words = _bracket_words(M)  # (W, 2M), (W, 2M), per k

        # Which word: k uniform, then a word uniform among those with k pairs.
        k = torch.randint(1, M + 1, (n,), generator=g)  # (n,)
        counts = torch.tensor(n_words)
        first = torch.cumsum(counts, 0) - counts
        word = first[k - 1] + (torch.rand(n, generator=g) * counts[k - 1]).long()  # (n,)
        pair, close = pair_of[word], is_close[word]  # (n, 2M)
        used = torch.arange(2 * M)[None, :] < 2 * k[:, None]  # (n, 2M)

        # Where: the first 2k of a random permutation of 1..T-1, sorted.
        slots = torch.rand(n, T - 1, generator=g).argsort(dim=-1)[:, : 2 * M] + 1
        slots = slots.masked_fill(~used, T).sort(dim=-1).values  # unused slots pushed last

        # Which kinds: a random permutation of PAIRS, pair j gets kind kinds[:, j].
        kinds = torch.rand(n, len(PAIRS), generator=g).argsort(dim=-1)
        kind = kinds.gather(1, pair.clamp(min=0))  # (n, 2M)
        delim = 1 + n_let + kind + close.long() * len(PAIRS)  # opener ids, then closer ids

        x = 1 + torch.randint(0, n_let, (n, T), generator=g)  # letters
        x[:, 0] = 0  # ^
        rows = torch.arange(n)[:, None].expand(n, 2 * M)
        x[rows[used], slots[used]] = delim[used]

        # Partner: the other slot holding the same pair j.
        same = (pair[:, :, None] == pair[:, None, :]) & ~torch.eye(2 * M, dtype=torch.bool)
        other = same.float().argmax(dim=-1)  # (n, 2M) index of the partner slot
        partner = torch.full_like(x, IGNORE_INDEX)
        partner[rows[used], slots[used]] = slots.gather(1, other)[used]
        prev = torch.full_like(x, IGNORE_INDEX)
        prev[:, 1:] = x[:, :-1]
        return RelationBatch(x, prev, partner)

    # -- what minitx.train.trainer.Trainer needs: batches and a loss --------------------------
    def get_batch(self, split: str, generator: torch.Generator) -> RelationBatch:
        """``batch_size`` fresh sequences drawn with ``generator`` (every split is fresh:
        the task can make as many sequences as anyone asks for)."""
        return self.sample(self.batch_size, generator)

    @staticmethod
    def loss(model: nn.Module, batch: RelationBatch) -> Tensor:
        """The training loss of ``model`` on ``batch``: :func:`relation_loss`."""
        return relation_loss(model(batch.x), batch)

    def batches(self, batch_size: int, seed: int = 0) -> Iterator[RelationBatch]:
        """An endless stream of fresh batches, all drawn from one generator seeded ``seed``."""
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        g = torch.Generator().manual_seed(seed)
        while True:
            yield self.sample(batch_size, g)


@functools.cache
def _bracket_words(max_pairs: int) -> tuple[Tensor, Tensor, tuple[int, ...]]:
    """Every balanced bracket word of 1..max_pairs pairs, as two (W, 2*max_pairs) tables.

    ``pair[w, i]`` numbers the pair that symbol i belongs to (pairs in order of opening),
    ``close[w, i]`` says whether it is a closer; padding has pair -1. Also returns the
    number of words of each size k (the Catalan numbers 1, 2, 5, 14).
    """

    def words(n_open: int, n_close: int) -> list[str]:
        if n_open == 0 and n_close == 0:
            return [""]
        out = []
        if n_open > 0:
            out += ["(" + w for w in words(n_open - 1, n_close + 1)]
        if n_close > 0:
            out += [")" + w for w in words(n_open, n_close - 1)]
        return out

    pairs, closes, counts = [], [], []
    for k in range(1, max_pairs + 1):
        ws = words(k, 0)
        counts.append(len(ws))
        for w in ws:
            stack, pair, close, j = [], [], [], 0
            for c in w:
                if c == "(":
                    stack.append(j)
                    pair.append(j)
                    j += 1
                else:
                    pair.append(stack.pop())
                close.append(c == ")")
            pad = 2 * max_pairs - len(w)
            pairs.append(pair + [-1] * pad)
            closes.append(close + [False] * pad)
    return torch.tensor(pairs), torch.tensor(closes), tuple(counts)
