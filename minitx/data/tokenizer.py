"""Tokenizers: words for the small examples, characters for everything else.

``word_tokenize`` splits a sentence into words and punctuation marks (notebooks 01 and 04).
``CharTokenizer`` is the package's one character vocabulary: every distinct character is
one token (the language models of notebooks 05 and 08, the tasks of notebooks 03, 06, 10):

    >>> tok = CharTokenizer.from_text("hello world")
    >>> tok.chars
    [' ', 'd', 'e', 'h', 'l', 'o', 'r', 'w']
    >>> tok.encode("low")
    [4, 5, 7]
    >>> tok.decode([4, 5, 7])
    'low'

Token ids are positions in the list of characters (sorted, for ``from_text``), so the same
text always gives the same vocabulary. Over tiny Shakespeare the vocabulary has 65 symbols.

A tokenizer may also hold *special* symbols that stand for no character, such as padding
``<pad>`` and the start and end symbols ``<s>`` and ``</s>`` of a decoder. They take the
first ids, before the characters; ``encode`` never writes them and ``decode`` skips them:

    >>> tgt = CharTokenizer(" -0123456789", specials=("<pad>", "<s>", "</s>"))
    >>> tgt.pad_id, tgt.id("<s>"), tgt.id("</s>"), tgt.encode("1-2")
    (0, 1, 2, [6, 4, 7])
    >>> tgt.decode([1, 6, 4, 7, 2, 0])
    '1-2'

``IGNORE_INDEX`` is the one target id that every loss (and accuracy) of the package leaves
out; ``decode`` skips it too, so a row of targets decodes to its text.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable, Sequence
from typing import Any

from torch import Tensor

from minitx.data.sequences import pad_batch

__all__ = ["IGNORE_INDEX", "CharTokenizer", "id_list", "word_tokenize"]

_SHOW = 12  # how many vocabulary entries an error message lists

# The target id that a loss leaves out (padding, positions without an answer): the one value
# every loss and accuracy of the package uses, PyTorch's default for F.cross_entropy.
IGNORE_INDEX = -100
_WORD = re.compile(r"\w+(?:'\w+)*|[^\w\s]")  # a word (with its apostrophes) or one mark


def word_tokenize(text: str, *, lower: bool = False) -> list[str]:
    """Split ``text`` into words and single punctuation marks.

    ``word_tokenize("Don't stop, Kate.")`` -> ``["Don't", 'stop', ',', 'Kate', '.']``
    """
    if not isinstance(text, str):
        raise TypeError(f"word_tokenize expects a str, got {type(text).__name__}")
    return _WORD.findall(text.lower() if lower else text)


def id_list(ids: Iterable[int] | Any) -> list[int]:
    """``ids`` (a list of ints, a 1-D tensor or array, NumPy or 0-d tensor items) as a list
    of Python ints, what every tokenizer's ``decode`` reads; a clear error for anything
    else."""
    if getattr(ids, "ndim", 1) > 1:
        raise ValueError(f"decode expects a 1-D sequence of ids, got shape {tuple(ids.shape)}")
    if hasattr(ids, "tolist"):  # torch tensors and numpy arrays
        ids = ids.tolist()
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
        raise TypeError(f"decode expects a sequence of int ids, got {type(ids).__name__}")
    ints = []
    for i in ids:
        if hasattr(i, "tolist"):  # a 0-d tensor or a numpy scalar
            i = i.tolist()
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            raise TypeError(f"decode expects int ids, got {i!r} of type {type(i).__name__}")
        ints.append(int(i))
    return ints


class CharTokenizer:
    """Maps characters to integer ids and back.

    ``chars``: the characters, one single-character string each, no duplicates.
    ``specials``: symbols that stand for no character (e.g. ``"<pad>"``, ``"<s>"``), given
    the ids ``0 .. len(specials) - 1``; the characters follow, ``chars[i]`` at id
    ``len(specials) + i``. With :attr:`PAD` among them, ``pad_id`` is its id.
    """

    PAD = "<pad>"

    def __init__(self, chars: Sequence[str], specials: Sequence[str] = ()) -> None:
        chars = list(chars)
        if not chars:
            raise ValueError("CharTokenizer needs a non-empty vocabulary, got no characters")
        for c in chars:
            if not isinstance(c, str) or len(c) != 1:
                raise ValueError(
                    f"every vocabulary entry must be a single character, got {c!r}"
                )
        if len(set(chars)) != len(chars):
            dupes = sorted({c for c in chars if chars.count(c) > 1})
            raise ValueError(f"vocabulary has duplicate characters: {dupes!r}")
        if isinstance(specials, str):
            raise TypeError(f"specials must be a list of symbols, got the str {specials!r}")
        specials = tuple(specials)
        for s in specials:
            if not isinstance(s, str) or not s:
                raise ValueError(f"every special symbol must be a non-empty str, got {s!r}")
        clash = sorted({s for s in specials if specials.count(s) > 1 or s in chars})
        if clash:
            raise ValueError(f"special symbols must be distinct and not characters: {clash!r}")
        self._chars: list[str] = chars
        self._specials: tuple[str, ...] = specials
        self._itos: tuple[str, ...] = (*specials, *chars)
        # _stoi: character -> id (what encode reads); _ids: every symbol, specials too.
        self._stoi: dict[str, int] = {c: len(specials) + i for i, c in enumerate(chars)}
        self._ids: dict[str, int] = {s: i for i, s in enumerate(self._itos)}

    @classmethod
    def from_text(cls, text: str, specials: Sequence[str] = ()) -> CharTokenizer:
        """The tokenizer whose characters are the sorted set of characters in ``text``."""
        if not isinstance(text, str):
            raise TypeError(f"from_text expects a str, got {type(text).__name__}")
        if not text:
            raise ValueError("from_text needs a non-empty text to build a vocabulary from")
        return cls(sorted(set(text)), specials)

    # -- the vocabulary -------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        """Number of distinct tokens, specials included (ids are 0 .. vocab_size - 1)."""
        return len(self._itos)

    @property
    def chars(self) -> list[str]:
        """The characters: ``chars[i]`` has id ``n_special + i`` (a copy)."""
        return list(self._chars)

    @property
    def specials(self) -> tuple[str, ...]:
        """The special symbols, ids 0 .. n_special - 1."""
        return self._specials

    @property
    def n_special(self) -> int:
        """How many ids stand for special symbols (padding included), not characters."""
        return len(self._specials)

    @property
    def itos(self) -> tuple[str, ...]:
        """Id -> symbol: the specials, then the characters."""
        return self._itos

    @property
    def stoi(self) -> dict[str, int]:
        """Symbol -> id, specials included (a copy)."""
        return dict(self._ids)

    @property
    def pad_id(self) -> int | None:
        """The id of :attr:`PAD` (what :meth:`encode_batch` pads with), None without it."""
        return self._ids[self.PAD] if self.PAD in self._specials else None

    def id(self, symbol: str) -> int:
        """The id of one character or special symbol."""
        if symbol not in self._ids:
            raise ValueError(
                f"{symbol!r} is not in the vocabulary: specials {list(self._specials)}, "
                f"characters {self._vocab_preview()}"
            )
        return self._ids[symbol]

    def __len__(self) -> int:
        return self.vocab_size

    def __repr__(self) -> str:
        if not self._specials:
            return f"CharTokenizer(vocab_size={self.vocab_size})"
        return (
            f"CharTokenizer(vocab_size={self.vocab_size}, specials={list(self._specials)}, "
            f"chars={''.join(self._chars)!r})"
        )

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, CharTokenizer)
            and self._chars == other._chars
            and self._specials == other._specials
        )

    def __hash__(self) -> int:
        return hash((self._specials, tuple(self._chars)))

    def _vocab_preview(self) -> str:
        shown = "".join(self._chars[:_SHOW])
        more = f" ... ({len(self._chars)} in all)" if len(self._chars) > _SHOW else ""
        return f"{shown!r}{more}"

    # -- text <-> ids ---------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        """Ids of the characters of ``text``: a list of ``len(text)`` ints."""
        if not isinstance(text, str):
            raise TypeError(f"encode expects a str, got {type(text).__name__}")
        try:
            return [self._stoi[c] for c in text]
        except KeyError:
            unknown = sorted({c for c in text if c not in self._stoi})
            raise ValueError(
                f"cannot encode characters not in the vocabulary: {unknown!r}; "
                f"the vocabulary starts {self._vocab_preview()}"
            ) from None

    def encode_batch(self, texts: Sequence[str], T: int | None = None) -> tuple[Tensor, Tensor]:
        """Encode ``texts`` (B strings) into right-padded ids and their lengths.

        Returns ``ids`` (B, T) long, padded with :attr:`pad_id`, and ``lengths`` (B,) long;
        ``T`` defaults to the longest text. Needs :attr:`PAD` among the specials.
        """
        if self.pad_id is None:
            raise ValueError(
                f"encode_batch pads with {self.PAD!r}: build the tokenizer with "
                f"specials=({self.PAD!r}, ...)"
            )
        if isinstance(texts, str) or len(texts) == 0:
            raise ValueError("encode_batch expects a non-empty list of strings")
        encoded = [self.encode(t) for t in texts]
        longest = max(len(e) for e in encoded)
        T = longest if T is None else T
        if longest > T:
            raise ValueError(f"longest text has {longest} characters, more than T={T}")
        return pad_batch(encoded, pad_id=self.pad_id, max_len=T)

    def decode(self, ids: Iterable[int] | Any) -> str:
        """The text of a sequence of ids (a list of ints, or a 1-D tensor / array).

        Special symbols (padding, ``<s>`` ...) and ``IGNORE_INDEX`` are skipped.
        """
        ints = id_list(ids)
        bad = sorted({i for i in ints if not 0 <= i < self.vocab_size and i != IGNORE_INDEX})
        if bad:
            raise ValueError(
                f"ids {bad[:_SHOW]} are outside the vocabulary: valid ids are "
                f"0 .. {self.vocab_size - 1}"
            )
        first = self.n_special
        return "".join(self._itos[i] for i in ints if i >= first)

    # -- checkpoints ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-able description, for checkpoints: ``{"type": "char", "chars": [...]}``,
        plus ``"specials": [...]`` when there are any."""
        d: dict[str, Any] = {"type": "char", "chars": list(self._chars)}
        if self._specials:
            d["specials"] = list(self._specials)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CharTokenizer:
        """Inverse of :meth:`to_dict`."""
        if not isinstance(d, dict):
            raise TypeError(f"from_dict expects a dict, got {type(d).__name__}")
        if d.get("type") != "char" or "chars" not in d:
            raise ValueError(
                "from_dict expects {'type': 'char', 'chars': [...]}, got keys "
                f"{sorted(d)} with type {d.get('type')!r}"
            )
        return cls(d["chars"], d.get("specials", ()))
