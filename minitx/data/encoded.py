"""A corpus as training and validation ids, by characters or by byte-pair tokens.

The text is split first (``train_val_split``: the first 90% for training) and each part
encoded after, so a character model and a BPE model are scored on the same validation
*text*. The BPE vocabulary is learnt from the training part only. Their losses are in
nats per token of different sizes, so compare them in bits per character:

    bits/char = (nats per token) * (tokens / characters of the validation text) / ln 2

    >>> enc = encode_corpus(text, "bpe", vocab_size=512)
    >>> enc.bits_per_char(2.9)   # a loss of 2.9 nats per BPE token
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from minitx.data.bpe import BPETokenizer
from minitx.data.corpus import train_val_split
from minitx.data.tokenizer import CharTokenizer

TOKENS = ("char", "bpe")
BPE_VOCAB = 512  # 256 bytes + 256 merges: about 2 characters a token on tiny Shakespeare

Tokenizer = CharTokenizer | BPETokenizer


def tokenizer_from_dict(d: dict[str, Any]) -> Tokenizer:
    """The tokenizer a checkpoint carries: ``CharTokenizer`` or ``BPETokenizer`` by its
    ``"type"`` ('char' or 'bpe')."""
    if not isinstance(d, dict):
        raise TypeError(f"a tokenizer is stored as a dict, got {type(d).__name__}")
    kinds = {"char": CharTokenizer, "bpe": BPETokenizer}
    if d.get("type") not in kinds:
        raise ValueError(f"tokenizer type must be one of {sorted(kinds)}, got {d.get('type')!r}")
    return kinds[d["type"]].from_dict(d)


def tokens_of(tokenizer: Any) -> str:
    """'char' or 'bpe': which kind ``tokenizer`` is."""
    if isinstance(tokenizer, CharTokenizer):
        return "char"
    if isinstance(tokenizer, BPETokenizer):
        return "bpe"
    raise TypeError(f"expected a CharTokenizer or BPETokenizer, got {type(tokenizer).__name__}")


@dataclass(frozen=True)
class EncodedCorpus:
    """A corpus split, then encoded: ``train`` (N_train,) and ``val`` (N_val,) long ids, and
    the number of characters of the validation text."""

    tokenizer: Tokenizer
    train: Tensor
    val: Tensor
    val_chars: int

    @property
    def chars_per_token(self) -> float:
        """Characters per token on the validation text (1.0 for characters)."""
        return self.val_chars / self.val.numel()

    def bits_per_char(self, nats_per_token: float) -> float:
        """A loss in nats per token of this corpus, in bits per character of its text."""
        return nats_per_token / self.chars_per_token / math.log(2)


def encode_corpus(
    text: str,
    tokens: str = "char",
    *,
    vocab_size: int | None = None,
    tokenizer: Tokenizer | None = None,
    train_fraction: float = 0.9,
) -> EncodedCorpus:
    """Split ``text`` into training and validation text, then encode both with ``tokenizer``
    or, when none is given, a new one: every character of ``text`` ('char'), or a BPE
    vocabulary of ``vocab_size`` (default :data:`BPE_VOCAB`) learnt from the training text."""
    if not isinstance(text, str) or not text:
        raise ValueError(f"encode_corpus needs a non-empty str, got {type(text).__name__} "
                         f"of length {len(text) if isinstance(text, str) else '-'}")
    if tokens not in TOKENS:
        raise ValueError(f"tokens must be one of {TOKENS}, got {tokens!r}")
    if vocab_size is not None and tokens != "bpe":
        raise ValueError(f"vocab_size is a BPE setting; tokens is {tokens!r}")
    train_text, val_text = train_val_split(text, train_fraction)
    if tokenizer is None:
        if tokens == "char":
            tokenizer = CharTokenizer.from_text(text)
        else:
            tokenizer = BPETokenizer.train(train_text, vocab_size or BPE_VOCAB)
    elif tokens_of(tokenizer) != tokens:
        raise ValueError(f"tokens is {tokens!r} but the tokenizer given is "
                         f"{tokens_of(tokenizer)!r}")
    def ids(part: str) -> Tensor:
        return torch.tensor(tokenizer.encode(part), dtype=torch.long)

    return EncodedCorpus(tokenizer, ids(train_text), ids(val_text), len(val_text))


__all__ = ["BPE_VOCAB", "TOKENS", "EncodedCorpus", "Tokenizer", "encode_corpus",
           "tokenizer_from_dict", "tokens_of"]
