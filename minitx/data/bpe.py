"""A byte-level BPE tokenizer (the scheme of GPT-2), written from its algorithm.

    BPETokenizer   train on a text, encode, decode, save and load, tiktoken's ranks
    GPT2_PATTERN   GPT-2's pre-tokenization regex (needs the ``regex`` package)
    ENDOFTEXT      GPT-2's one special token, ``"<|endoftext|>"``

Text is UTF-8 bytes, so the 256 byte values are the first tokens and any string encodes.
Training cuts the text into chunks with :data:`GPT2_PATTERN` (words with their leading space,
numbers, runs of punctuation or of white space) and repeatedly joins the most frequent adjacent
pair of tokens inside a chunk into a new token, so no token crosses a chunk boundary:

    >>> tok = BPETokenizer.train(text, vocab_size=512)     # 255 merges + <|endoftext|>
    >>> tok.decode(tok.encode("To be, or not to be")) == "To be, or not to be"
    True

A token's id is its *rank* (lower ids were learned earlier). Encoding a chunk starts from its
bytes and keeps joining the adjacent pair whose joined bytes is the lowest-ranked token, as
GPT-2 and tiktoken do: ``tiktoken.Encoding(name=..., pat_str=GPT2_PATTERN, mergeable_ranks=
tok.mergeable_ranks(), special_tokens=tok.special_tokens)`` gives the same ids.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from itertools import pairwise
from typing import Any

import regex

from minitx.data.tokenizer import id_list

__all__ = ["ENDOFTEXT", "GPT2_PATTERN", "BPETokenizer"]

ENDOFTEXT = "<|endoftext|>"
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
_CHUNK = regex.compile(GPT2_PATTERN)
_CACHE = 1 << 16  # how many chunks' ids encode remembers (words repeat a lot in real text)


def _merge(ids: list[int], pair: tuple[int, int], new: int) -> list[int]:
    """``ids`` with every non-overlapping ``pair``, left to right, replaced by ``new``."""
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def _check_specials(special_tokens: Sequence[str]) -> tuple[str, ...]:
    if isinstance(special_tokens, str) or not isinstance(special_tokens, Iterable):
        raise TypeError(f"special_tokens must be a list of str, got "
                        f"{type(special_tokens).__name__} {special_tokens!r}")
    specials = tuple(special_tokens)
    for s in specials:
        if not isinstance(s, str) or not s:
            raise ValueError(f"every special token must be a non-empty str, got {s!r}")
    if len(set(specials)) != len(specials):
        raise ValueError(f"special tokens must be distinct, got {list(specials)}")
    return specials


def _split_on(text: str, specials: Iterable[str]) -> list[str]:
    """``text`` cut around the given special tokens, which are kept as pieces of their own."""
    specials = sorted(specials, key=len, reverse=True)  # the longest wins where two overlap
    if not specials:
        return [text]
    return regex.split("(" + "|".join(regex.escape(s) for s in specials) + ")", text)


class BPETokenizer:
    """Byte-level BPE: ids 0..255 are the bytes, ``256 + i`` joins ``merges[i]``, and the
    special tokens take the ids after the merges (``vocab_size`` counts them all).

    ``merges``: pairs ``(a, b)`` of earlier ids, each joining into bytes no earlier token has.
    ``special_tokens``: strings such as :data:`ENDOFTEXT` that stand for one id each.
    """

    def __init__(self, merges: Sequence[tuple[int, int]], special_tokens: Sequence[str] = ()):
        self._merges: list[tuple[int, int]] = []
        self._tokens: list[bytes] = [bytes([b]) for b in range(256)]  # id -> its bytes
        self._ranks: dict[bytes, int] = {t: i for i, t in enumerate(self._tokens)}
        for pair in merges:
            new = len(self._tokens)
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2
                    and all(type(i) is int and 0 <= i < new for i in pair)):
                raise ValueError(f"merge {new - 256} must be a pair of ids below {new}, "
                                 f"got {pair!r}")
            joined = self._tokens[pair[0]] + self._tokens[pair[1]]
            if joined in self._ranks:
                raise ValueError(f"merge {new - 256} {tuple(pair)} gives the bytes {joined!r} "
                                 f"of token {self._ranks[joined]} again")
            self._merges.append((pair[0], pair[1]))
            self._tokens.append(joined)
            self._ranks[joined] = new
        specials = _check_specials(special_tokens)
        self._specials = {s: len(self._tokens) + i for i, s in enumerate(specials)}
        self._tokens += [s.encode("utf-8") for s in specials]  # what decode writes for them
        self._cache: dict[str, list[int]] = {}  # chunk -> its ids

    @classmethod
    def train(cls, text: str, vocab_size: int,
              special_tokens: Sequence[str] = (ENDOFTEXT,)) -> BPETokenizer:
        """Learn ``vocab_size - 256 - len(special_tokens)`` merges from ``text``.

        Special tokens in ``text`` only separate chunks. Each distinct chunk is counted once
        with its frequency, and after a merge only the chunks that held the pair are
        recounted. Ties between equally frequent pairs go to the smallest pair ``(a, b)``
        (smallest ``a``, then smallest ``b``; for bytes, byte order), so training is
        deterministic. A merge whose bytes some token already has reuses that token.
        """
        if not isinstance(text, str):
            raise TypeError(f"train expects the text as a str, got {type(text).__name__}")
        specials = _check_specials(special_tokens)
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
            raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__} "
                            f"{vocab_size!r}")
        if vocab_size < 256 + len(specials):
            raise ValueError(f"vocab_size must be at least 256 (the bytes) + {len(specials)} "
                             f"special tokens = {256 + len(specials)}, got {vocab_size}")
        chunks = Counter(c for piece in _split_on(text, specials) if piece not in specials
                         for c in _CHUNK.findall(piece))
        if not chunks:
            raise ValueError("train needs a non-empty text (special tokens aside), got "
                             f"{text[:40]!r}")
        words = [list(c.encode("utf-8")) for c in chunks]
        freqs = list(chunks.values())
        counts: Counter[tuple[int, int]] = Counter()
        where: dict[tuple[int, int], set[int]] = {}  # pair -> the words that (may) hold it
        for w, (ids, f) in enumerate(zip(words, freqs, strict=True)):
            for pair in pairwise(ids):
                counts[pair] += f
                where.setdefault(pair, set()).add(w)
        heap = [(-n, pair) for pair, n in counts.items()]  # max count, then smallest pair
        heapq.heapify(heap)
        tokens = [bytes([b]) for b in range(256)]
        ranks = {t: i for i, t in enumerate(tokens)}
        merges: list[tuple[int, int]] = []
        while len(tokens) < vocab_size - len(specials):
            if not heap:
                raise ValueError(f"text has too few distinct pairs: it stops at vocab_size "
                                 f"{len(tokens) + len(specials)}, below the {vocab_size} asked")
            n, pair = heapq.heappop(heap)
            if counts.get(pair) != -n:
                continue  # a stale entry: the pair's count changed since it was pushed
            joined = tokens[pair[0]] + tokens[pair[1]]
            if joined not in ranks:
                ranks[joined] = len(tokens)
                tokens.append(joined)
                merges.append(pair)
            new, touched = ranks[joined], set()
            for w in where.pop(pair):
                ids, f = words[w], freqs[w]
                merged = _merge(ids, pair, new)
                if len(merged) == len(ids):
                    continue
                for p in pairwise(ids):
                    counts[p] -= f
                    touched.add(p)
                for p in pairwise(merged):
                    counts[p] += f
                    touched.add(p)
                    if new in p:  # the word is already listed under its other pairs
                        where.setdefault(p, set()).add(w)
                words[w] = merged
            for p in touched:
                if counts[p] > 0:
                    heapq.heappush(heap, (-counts[p], p))
                else:
                    del counts[p]
        return cls(merges, specials)

    # -- the vocabulary -------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        """Number of ids: 256 bytes, the merges, the special tokens."""
        return len(self._tokens)

    @property
    def merges(self) -> list[tuple[int, int]]:
        """The learned pairs: ``merges[i]`` made id ``256 + i`` (a copy)."""
        return list(self._merges)

    @property
    def special_tokens(self) -> dict[str, int]:
        """Special token -> its id (a copy)."""
        return dict(self._specials)

    def mergeable_ranks(self) -> dict[bytes, int]:
        """Token bytes -> rank (= id) of every non-special token, as tiktoken takes them."""
        return dict(self._ranks)

    def token_bytes(self, i: int) -> bytes:
        """The bytes of id ``i`` (a special token's UTF-8 text)."""
        return self._bytes_of([i])

    def __len__(self) -> int:
        return self.vocab_size

    def __repr__(self) -> str:
        return (f"BPETokenizer(vocab_size={self.vocab_size}, merges={len(self._merges)}, "
                f"special_tokens={list(self._specials)})")

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, BPETokenizer) and self._merges == other._merges
                and self._specials == other._specials)

    def __hash__(self) -> int:
        return hash((tuple(self._merges), tuple(self._specials)))

    # -- text <-> ids ---------------------------------------------------------------------
    def _encode_chunk(self, chunk: str) -> list[int]:
        data = chunk.encode("utf-8")
        if data in self._ranks:  # tiktoken's shortcut, which can differ from merging
            return [self._ranks[data]]
        parts = [bytes([b]) for b in data]
        while len(parts) > 1:
            # Join the leftmost pair whose joined bytes is the lowest-ranked token. Looking
            # bytes up (not pairs of ids) also finds a token from a split it was not made from.
            ranks = [self._ranks.get(a + b) for a, b in pairwise(parts)]
            best = min((r for r in ranks if r is not None), default=None)
            if best is None:
                break
            i = ranks.index(best)
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        return [self._ranks[p] for p in parts]

    def encode(self, text: str, allowed_special: Collection[str] | str = ()) -> list[int]:
        """The ids of ``text``, a list of ints.

        The special tokens named in ``allowed_special`` (one name, a set of names, or
        ``"all"``) become their ids; any other special token's text is encoded as ordinary
        text, so a user's text cannot smuggle in a control token.
        """
        if not isinstance(text, str):
            raise TypeError(f"encode expects a str, got {type(text).__name__}")
        if isinstance(allowed_special, str):
            allowed = set(self._specials) if allowed_special == "all" else {allowed_special}
        else:
            allowed = set(allowed_special)
        if unknown := sorted(allowed - set(self._specials)):
            raise ValueError(f"allowed_special names {unknown}, which are not special tokens: "
                             f"the special tokens are {list(self._specials)}")
        ids: list[int] = []
        for piece in _split_on(text, allowed):
            if piece in allowed:
                ids.append(self._specials[piece])
                continue
            for chunk in _CHUNK.findall(piece):
                if chunk not in self._cache:
                    if len(self._cache) >= _CACHE:
                        self._cache.clear()
                    self._cache[chunk] = self._encode_chunk(chunk)
                ids.extend(self._cache[chunk])
        return ids

    def _bytes_of(self, ids: Iterable[int] | Any) -> bytes:
        out = []
        for i in id_list(ids):
            if not 0 <= i < self.vocab_size:
                raise ValueError(f"id {i} is outside the vocabulary: valid ids are "
                                 f"0 .. {self.vocab_size - 1}")
            out.append(self._tokens[i])
        return b"".join(out)

    def decode(self, ids: Iterable[int] | Any) -> str:
        """The text of a sequence of ids (a list of ints, or a 1-D tensor / array).

        Bytes that are not valid UTF-8 (a sequence cut inside a character) become U+FFFD.
        """
        return self._bytes_of(ids).decode("utf-8", errors="replace")

    # -- checkpoints ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-able description, for checkpoints:
        ``{"type": "bpe", "pattern": ..., "merges": [[a, b], ...], "special_tokens": [...]}``."""
        return {"type": "bpe", "pattern": GPT2_PATTERN,
                "merges": [list(p) for p in self._merges],
                "special_tokens": list(self._specials)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BPETokenizer:
        """Inverse of :meth:`to_dict`."""
        if not isinstance(d, dict):
            raise TypeError(f"from_dict expects a dict, got {type(d).__name__}")
        if d.get("type") != "bpe" or not isinstance(d.get("merges"), list):
            raise ValueError("from_dict expects {'type': 'bpe', 'merges': [...], ...}, got keys "
                             f"{sorted(d)} with type {d.get('type')!r}")
        if d.get("pattern", GPT2_PATTERN) != GPT2_PATTERN:
            raise ValueError(f"from_dict knows only GPT-2's pattern, got {d['pattern']!r}")
        return cls(d["merges"], d.get("special_tokens", ()))
