"""A toy translation task: human-written dates -> ISO dates.

    "tue 3 march 1998"             -> "1998-03-03"
    "march 3, 1998"                -> "1998-03-03"
    "3/3/98"                       -> "1998-03-03"
    "note tue 3 march 1998 please" -> "1998-03-03"   (with filler words)

Rules that make every source unambiguous:

- dates lie between 1950-01-01 and 2049-12-31;
- numeric formats put the day first (day/month/year, as in most of the world);
- a two-digit year 50-99 means 19xx, 00-49 means 20xx;
- filler words never contain a digit or a month name, so they carry no information.

Everything is generated from a seed, so the same seed gives the same data on any machine.
Sources and targets are read one character at a time; :class:`CharVocab` maps
characters to ids and back, and :func:`make_batch` pads a list of examples into tensors.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

FIRST_DATE = datetime.date(1950, 1, 1)
LAST_DATE = datetime.date(2049, 12, 31)

# Words that carry no date information: no digits, no month names (not even "may").
FILLER_WORDS = (
    "the", "date", "is", "on", "please", "note", "that", "we", "meet", "due",
    "sent", "at", "noon", "about", "ok", "see", "you", "then", "until", "from",
)  # fmt: skip

FILLER_POSITIONS = ("both", "before", "after")
TARGET_LENGTH = 10  # "yyyy-mm-dd"


def _ordinal(day: int) -> str:
    if 11 <= day % 100 <= 13:
        return f"{day}th"
    return f"{day}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(day % 10, 'th') }"


def _yy(year: int) -> str:
    return f"{year % 100:02d}"


# Each format returns a list of (field, text) pieces; field names the piece so we can
# record where the day, month and year sit in the source (for the alignment checks).
def _pieces(d: datetime.date, fmt: str) -> list[tuple[str, str]]:
    month, mon = MONTHS[d.month - 1], MONTHS[d.month - 1][:3]
    weekday, wd = WEEKDAYS[d.weekday()], WEEKDAYS[d.weekday()][:3]
    y = str(d.year)
    table: dict[str, list[tuple[str, str]]] = {
        "d month yyyy": [("day", str(d.day)), ("", " "), ("month", month), ("", " "), ("year", y)],
        "wd d month yyyy": [
            ("weekday", wd), ("", " "), ("day", str(d.day)), ("", " "),
            ("month", month), ("", " "), ("year", y),
        ],
        "month d, yyyy": [("month", month), ("", " "), ("day", str(d.day)), ("", ", "), ("year", y)],
        "d mon yyyy": [("day", str(d.day)), ("", " "), ("month", mon), ("", " "), ("year", y)],
        "mon d yy": [("month", mon), ("", " "), ("day", str(d.day)), ("", " "), ("year", _yy(d.year))],
        "weekday, month d, yyyy": [
            ("weekday", weekday), ("", ", "), ("month", month), ("", " "),
            ("day", str(d.day)), ("", ", "), ("year", y),
        ],
        "weekday the dth of month yyyy": [
            ("weekday", weekday), ("", " the "), ("day", _ordinal(d.day)), ("", " of "),
            ("month", month), ("", " "), ("year", y),
        ],
        "d/m/yy": [("day", str(d.day)), ("", "/"), ("month", str(d.month)), ("", "/"),
                   ("year", _yy(d.year))],
        "dd.mm.yyyy": [("day", f"{d.day:02d}"), ("", "."), ("month", f"{d.month:02d}"), ("", "."),
                       ("year", y)],
        "yyyy, month d": [("year", y), ("", ", "), ("month", month), ("", " "), ("day", str(d.day))],
    }  # fmt: skip
    if fmt not in table:
        raise ValueError(f"unknown date format {fmt!r}; known: {', '.join(FORMATS)}")
    return table[fmt]


FORMATS = (
    "d month yyyy",
    "wd d month yyyy",
    "month d, yyyy",
    "d mon yyyy",
    "mon d yy",
    "weekday, month d, yyyy",
    "weekday the dth of month yyyy",
    "d/m/yy",
    "dd.mm.yyyy",
    "yyyy, month d",
)


@dataclass(frozen=True)
class DateExample:
    """One example. ``source`` is what the model reads, ``target`` the ISO date.

    ``spans`` maps "day", "month", "year" (and "weekday" when present) to the
    ``(start, end)`` character range of that field in ``source`` (end exclusive).
    """

    source: str
    target: str
    date: datetime.date
    fmt: str
    n_filler: int
    spans: dict[str, tuple[int, int]]


def format_date(d: datetime.date, fmt: str) -> str:
    """Write ``d`` in format ``fmt`` (one of :data:`FORMATS`), e.g. "tue 3 march 1998"."""
    return "".join(text for _, text in _pieces(d, fmt))


def random_date(rng: random.Random) -> datetime.date:
    """A uniformly random date in [FIRST_DATE, LAST_DATE]."""
    span = (LAST_DATE - FIRST_DATE).days
    return FIRST_DATE + datetime.timedelta(days=rng.randint(0, span))


def make_example(
    rng: random.Random,
    *,
    d: datetime.date | None = None,
    fmt: str | None = None,
    n_filler: int = 0,
    filler_position: str = "both",
) -> DateExample:
    """One example drawn with ``rng``: a date (random unless ``d``), a format (random
    unless ``fmt``) and ``n_filler`` filler words placed "before" the date, "after" it, or
    split at random between the two ("both")."""
    if not isinstance(rng, random.Random):
        raise TypeError(f"rng must be a random.Random, got {type(rng).__name__}")
    if not isinstance(n_filler, int) or n_filler < 0:
        raise ValueError(f"n_filler must be an int >= 0, got {n_filler!r}")
    if filler_position not in FILLER_POSITIONS:
        raise ValueError(
            f"filler_position must be one of {FILLER_POSITIONS}, got {filler_position!r}"
        )
    d = random_date(rng) if d is None else d
    if not FIRST_DATE <= d <= LAST_DATE:
        raise ValueError(f"date must lie in [{FIRST_DATE}, {LAST_DATE}], got {d}")
    fmt = rng.choice(FORMATS) if fmt is None else fmt
    pieces = _pieces(d, fmt)
    words = [rng.choice(FILLER_WORDS) for _ in range(n_filler)]
    n_before = {"before": n_filler, "after": 0, "both": rng.randint(0, n_filler)}[filler_position]
    before = "".join(w + " " for w in words[:n_before])
    after = "".join(" " + w for w in words[n_before:])

    spans, pos = {}, len(before)
    for field, text in pieces:
        if field:
            spans[field] = (pos, pos + len(text))
        pos += len(text)
    source = before + "".join(text for _, text in pieces) + after
    return DateExample(source, d.isoformat(), d, fmt, n_filler, spans)


def generate(
    n: int,
    seed: int = 0,
    *,
    formats: Sequence[str] | None = None,
    filler: int | tuple[int, int] = 0,
    filler_position: str = "both",
) -> list[DateExample]:
    """``n`` examples, deterministic given ``seed``.

    ``formats`` restricts the formats (default: all of :data:`FORMATS`). ``filler`` is a
    number of filler words, or a range ``(lo, hi)`` (inclusive) to draw it from, and
    ``filler_position`` says where they go (see :func:`make_example`).
    """
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    formats = tuple(FORMATS if formats is None else formats)
    if not formats:
        raise ValueError("formats must not be empty")
    for fmt in formats:
        if fmt not in FORMATS:
            raise ValueError(f"unknown date format {fmt!r}; known: {', '.join(FORMATS)}")
    lo, hi = (filler, filler) if isinstance(filler, int) else tuple(filler)
    if not (isinstance(lo, int) and isinstance(hi, int) and 0 <= lo <= hi):
        raise ValueError(f"filler must be an int >= 0 or a range (lo, hi) with lo <= hi, got {filler!r}")
    rng = random.Random(seed)
    return [
        make_example(
            rng,
            fmt=rng.choice(formats),
            n_filler=rng.randint(lo, hi),
            filler_position=filler_position,
        )
        for _ in range(n)
    ]


class CharVocab:
    """Characters <-> ids. Id 0 is padding; ``specials`` (e.g. "<s>") come next.

    >>> v = CharVocab("ab", specials=("<s>",))
    >>> v.encode("ba"), v.decode([3, 2])
    ([3, 2], 'ba')
    """

    PAD = "<pad>"

    def __init__(self, chars: str, specials: Sequence[str] = ()) -> None:
        if len(set(chars)) != len(chars):
            raise ValueError(f"chars must be distinct, got {chars!r}")
        self.itos: list[str] = [self.PAD, *specials, *chars]
        self.stoi = {s: i for i, s in enumerate(self.itos)}
        self.pad_id = 0
        self.chars = chars
        self._char_set = frozenset(chars)

    def __len__(self) -> int:
        return len(self.itos)

    def __repr__(self) -> str:
        return f"CharVocab({len(self)} symbols: {self.itos[: len(self) - len(self.chars)]} + {self.chars!r})"

    def id(self, symbol: str) -> int:
        """The id of one character or special symbol."""
        if symbol not in self.stoi:
            raise ValueError(f"{symbol!r} is not in the vocabulary ({self.chars!r} + specials)")
        return self.stoi[symbol]

    def encode(self, text: str) -> list[int]:
        """Ids of the characters of ``text``; ValueError on a character outside the vocabulary."""
        if not isinstance(text, str):
            raise TypeError(f"encode expects a str, got {type(text).__name__}")
        bad = sorted({c for c in text if c not in self._char_set})
        if bad:
            raise ValueError(f"characters {bad} of {text!r} are not in the vocabulary {self.chars!r}")
        return [self.stoi[c] for c in text]

    def decode(self, ids: Sequence[int] | Tensor) -> str:
        """The characters of ``ids``, skipping padding and special symbols."""
        if isinstance(ids, Tensor):
            if ids.dim() != 1:
                raise ValueError(f"decode expects a 1-D sequence of ids, got shape {tuple(ids.shape)}")
            ids = ids.tolist()
        n_special = len(self) - len(self.chars)
        out = []
        for i in ids:
            if not 0 <= i < len(self):
                raise ValueError(f"id {i} is outside the vocabulary of size {len(self)}")
            if i >= n_special:
                out.append(self.itos[i])
        return "".join(out)

    def encode_batch(self, texts: Sequence[str], T: int | None = None) -> tuple[Tensor, Tensor]:
        """Right-padded ids (B, T) and lengths (B,); T defaults to the longest text."""
        if isinstance(texts, str) or len(texts) == 0:
            raise ValueError("encode_batch expects a non-empty list of strings")
        encoded = [self.encode(t) for t in texts]
        lengths = torch.tensor([len(e) for e in encoded])
        T = int(lengths.max()) if T is None else T
        if lengths.max() > T:
            raise ValueError(f"longest text has {int(lengths.max())} characters, more than T={T}")
        ids = torch.full((len(texts), T), self.pad_id, dtype=torch.long)
        for b, e in enumerate(encoded):
            ids[b, : len(e)] = torch.tensor(e, dtype=torch.long)
        return ids, lengths


SOURCE_VOCAB = CharVocab(" ,./0123456789abcdefghijklmnopqrstuvwxyz")
TARGET_VOCAB = CharVocab("-0123456789", specials=("<s>",))
BOS_ID = TARGET_VOCAB.id("<s>")


@dataclass
class DateBatch:
    """Tensors for one batch.

    src (B, T_in) right-padded source ids; src_lengths (B,);
    tgt_in (B, 10) = <s> + target[:-1] (teacher forcing input); tgt_out (B, 10) = target.
    """

    src: Tensor
    src_lengths: Tensor
    tgt_in: Tensor
    tgt_out: Tensor


def make_batch(examples: Sequence[DateExample]) -> DateBatch:
    """Pad a list of examples into a :class:`DateBatch`."""
    if len(examples) == 0:
        raise ValueError("make_batch expects a non-empty list of DateExample")
    src, lengths = SOURCE_VOCAB.encode_batch([e.source for e in examples])
    tgt_out, _ = TARGET_VOCAB.encode_batch([e.target for e in examples], T=TARGET_LENGTH)
    bos = torch.full((len(examples), 1), BOS_ID, dtype=torch.long)
    tgt_in = torch.cat([bos, tgt_out[:, :-1]], dim=1)
    return DateBatch(src, lengths, tgt_in, tgt_out)


def batches(
    examples: Sequence[DateExample], batch_size: int, *, shuffle: bool = False, seed: int = 0
) -> Iterator[DateBatch]:
    """Consecutive batches of ``batch_size`` examples (the last may be smaller)."""
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    order = list(range(len(examples)))
    if shuffle:
        random.Random(seed).shuffle(order)
    for i in range(0, len(order), batch_size):
        yield make_batch([examples[j] for j in order[i : i + batch_size]])
