"""Tokenizers: words for the small examples, characters for the language models.

``word_tokenize`` splits a sentence into words and punctuation marks (notebooks 01 and 04).
``CharTokenizer`` makes every distinct character one token (notebooks 05 and 08):

    >>> tok = CharTokenizer.from_text("hello world")
    >>> tok.chars
    [' ', 'd', 'e', 'h', 'l', 'o', 'r', 'w']
    >>> tok.encode("low")
    [4, 5, 7]
    >>> tok.decode([4, 5, 7])
    'low'

Token ids are positions in the sorted list of characters, so the same text always gives
the same vocabulary. Over tiny Shakespeare the vocabulary has 65 symbols.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable, Sequence
from typing import Any

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


class CharTokenizer:
    """Maps characters to integer ids and back.

    ``chars``: the vocabulary, one single-character string per id, no duplicates.
    """

    def __init__(self, chars: Sequence[str]) -> None:
        if isinstance(chars, str):
            chars = list(chars)
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
        self._itos: list[str] = chars
        self._stoi: dict[str, int] = {c: i for i, c in enumerate(chars)}

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        """The tokenizer whose vocabulary is the sorted set of characters in ``text``."""
        if not isinstance(text, str):
            raise TypeError(f"from_text expects a str, got {type(text).__name__}")
        if not text:
            raise ValueError("from_text needs a non-empty text to build a vocabulary from")
        return cls(sorted(set(text)))

    @property
    def vocab_size(self) -> int:
        """Number of distinct tokens (ids are 0 .. vocab_size - 1)."""
        return len(self._itos)

    @property
    def chars(self) -> list[str]:
        """The vocabulary: ``chars[i]`` is the character of id ``i`` (a copy)."""
        return list(self._itos)

    def __len__(self) -> int:
        return self.vocab_size

    def __repr__(self) -> str:
        return f"CharTokenizer(vocab_size={self.vocab_size})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CharTokenizer) and self._itos == other._itos

    def __hash__(self) -> int:
        return hash(tuple(self._itos))

    def _vocab_preview(self) -> str:
        shown = "".join(self._itos[:_SHOW])
        more = f" ... ({self.vocab_size} in all)" if self.vocab_size > _SHOW else ""
        return f"{shown!r}{more}"

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

    def decode(self, ids: Iterable[int] | Any) -> str:
        """The text of a sequence of ids (a list of ints, or a 1-D tensor / array)."""
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
        ids = ints
        bad = sorted({i for i in ids if not 0 <= i < self.vocab_size})
        if bad:
            raise ValueError(
                f"ids out of range: {bad[:_SHOW]}; valid ids are 0 .. {self.vocab_size - 1}"
            )
        return "".join(self._itos[i] for i in ids)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able description, for checkpoints: ``{"type": "char", "chars": [...]}``."""
        return {"type": "char", "chars": list(self._itos)}

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
        return cls(d["chars"])
