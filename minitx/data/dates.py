"""A toy translation task: human-written dates -> ISO dates.

    "tue 3 march 1998"             -> "1998-03-03"
    "march 3, 1998"                -> "1998-03-03"
    "3/3/98"                       -> "1998-03-03"
    "note tue 3 march 1998 please" -> "1998-03-03"   (with filler words)
    "3/3/98; may 1, 2001"          -> "1998-03-03 2001-05-01"   (several dates)

Rules that make every source unambiguous:

- dates lie between 1950-01-01 and 2049-12-31;
- numeric formats put the day first (day/month/year, as in most of the world);
- a two-digit year 50-99 means 19xx, 00-49 means 20xx;
- filler words never contain a digit or a month name, so they carry no information.

Everything is generated from a seed, so the same seed gives the same data on any machine.
Sources and targets are read one character at a time: :data:`SOURCE_VOCAB` and
:data:`TARGET_VOCAB` (two :class:`minitx.data.tokenizer.CharTokenizer`) map characters to
ids and back, and :func:`make_batch` pads a list of examples into tensors. The task is data
only: the models that learn it are in :mod:`minitx.nn.seq2seq` and
:mod:`minitx.nn.encoder_decoder`.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from minitx.data.tokenizer import IGNORE_INDEX, CharTokenizer

__all__ = [
    "BOS_ID",
    "DATE_SEPARATOR",
    "EOS_ID",
    "FILLER_POSITIONS",
    "FILLER_WORDS",
    "FIRST_DATE",
    "FORMATS",
    "LAST_DATE",
    "MONTHS",
    "SOURCE_VOCAB",
    "TARGET_VOCAB",
    "WEEKDAYS",
    "DateBatch",
    "DateExample",
    "batches",
    "format_date",
    "generate",
    "make_batch",
    "make_example",
    "random_date",
    "target_length",
]

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
DATE_SEPARATOR = "; "


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
        "month d, yyyy": [("month", month), ("", " "), ("day", str(d.day)), ("", ", "),
                          ("year", y)],
        "d mon yyyy": [("day", str(d.day)), ("", " "), ("month", mon), ("", " "), ("year", y)],
        "mon d yy": [("month", mon), ("", " "), ("day", str(d.day)), ("", " "),
                     ("year", _yy(d.year))],
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
        "yyyy, month d": [("year", y), ("", ", "), ("month", month), ("", " "),
                          ("day", str(d.day))],
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
    """One example. ``source`` is what the model reads, ``target`` the ISO date(s).

    A source may hold several dates separated by "; "; the target then lists their ISO
    forms separated by spaces: "3/3/98; may 1, 2001" -> "1998-03-03 2001-05-01".
    ``dates`` and ``formats`` have one entry per date. ``spans[k]`` maps "day", "month",
    "year" (and "weekday" when present) to the ``(start, end)`` character range of that
    field of date k in ``source`` (end exclusive). ``n_filler`` counts the filler words.
    """

    source: str
    target: str
    dates: tuple[datetime.date, ...]
    formats: tuple[str, ...]
    n_filler: int
    spans: tuple[dict[str, tuple[int, int]], ...]


def format_date(d: datetime.date, fmt: str) -> str:
    """Write ``d`` in format ``fmt`` (one of :data:`FORMATS`), e.g. "tue 3 march 1998"."""
    return "".join(text for _, text in _pieces(d, fmt))


def random_date(rng: random.Random) -> datetime.date:
    """A uniformly random date in [FIRST_DATE, LAST_DATE]."""
    span = (LAST_DATE - FIRST_DATE).days
    return FIRST_DATE + datetime.timedelta(days=rng.randint(0, span))


def target_length(n_dates: int) -> int:
    """Characters of the target for ``n_dates`` dates: 10 each, 1 space between."""
    return 11 * n_dates - 1


def make_example(
    rng: random.Random,
    *,
    dates: Sequence[datetime.date] | None = None,
    n_dates: int = 1,
    formats: Sequence[str] | None = None,
    n_filler: int = 0,
    filler_position: str = "both",
) -> DateExample:
    """One example drawn with ``rng``.

    ``n_dates`` random dates (or the given ``dates``), each in a format drawn from
    ``formats`` (default: all of :data:`FORMATS`), joined by "; ", with ``n_filler``
    filler words placed "before" the dates, "after" them, or split at random between the
    two ("both").
    """
    if not isinstance(rng, random.Random):
        raise TypeError(f"rng must be a random.Random, got {type(rng).__name__}")
    if not isinstance(n_filler, int) or n_filler < 0:
        raise ValueError(f"n_filler must be an int >= 0, got {n_filler!r}")
    if filler_position not in FILLER_POSITIONS:
        raise ValueError(
            f"filler_position must be one of {FILLER_POSITIONS}, got {filler_position!r}"
        )
    if dates is None:
        if not isinstance(n_dates, int) or n_dates < 1:
            raise ValueError(f"n_dates must be an int >= 1, got {n_dates!r}")
        dates = [random_date(rng) for _ in range(n_dates)]
    if len(dates) == 0:
        raise ValueError("dates must hold at least one date")
    for d in dates:
        if not isinstance(d, datetime.date) or not FIRST_DATE <= d <= LAST_DATE:
            raise ValueError(f"dates must lie in [{FIRST_DATE}, {LAST_DATE}], got {d!r}")
    choices = _check_formats(formats)
    formats = [rng.choice(choices) for _ in dates]
    words = [rng.choice(FILLER_WORDS) for _ in range(n_filler)]
    n_before = {"before": n_filler, "after": 0, "both": rng.randint(0, n_filler)}[filler_position]

    source = "".join(w + " " for w in words[:n_before])
    spans = []
    for k, (d, f) in enumerate(zip(dates, formats, strict=True)):
        if k:
            source += DATE_SEPARATOR
        fields = {}
        for field, text in _pieces(d, f):
            if field:
                fields[field] = (len(source), len(source) + len(text))
            source += text
        spans.append(fields)
    source += "".join(" " + w for w in words[n_before:])
    target = " ".join(d.isoformat() for d in dates)
    return DateExample(source, target, tuple(dates), tuple(formats), n_filler, tuple(spans))


def _check_formats(formats: Sequence[str] | None) -> tuple[str, ...]:
    formats = FORMATS if formats is None else formats
    if isinstance(formats, str) or len(formats) == 0:
        raise ValueError(f"formats must be a non-empty list of format names, got {formats!r}")
    for fmt in formats:
        if fmt not in FORMATS:
            raise ValueError(f"unknown date format {fmt!r}; known: {', '.join(FORMATS)}")
    return tuple(formats)


def _int_range(value: int | tuple[int, int], name: str, low: int) -> tuple[int, int]:
    lo, hi = (value, value) if isinstance(value, int) else tuple(value)
    if not (isinstance(lo, int) and isinstance(hi, int) and low <= lo <= hi):
        raise ValueError(
            f"{name} must be an int >= {low} or a range (lo, hi) with {low} <= lo <= hi, "
            f"got {value!r}"
        )
    return lo, hi


def generate(
    n: int,
    seed: int = 0,
    *,
    n_dates: int | tuple[int, int] = 1,
    formats: Sequence[str] | None = None,
    filler: int | tuple[int, int] = 0,
    filler_position: str = "both",
) -> list[DateExample]:
    """``n`` examples, deterministic given ``seed``.

    ``n_dates`` (dates per example) and ``filler`` (filler words per example) are numbers,
    or ranges ``(lo, hi)`` (inclusive) to draw them from. ``formats`` restricts the
    formats (default: all of :data:`FORMATS`); ``filler_position`` says where the filler
    goes (see :func:`make_example`).
    """
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    formats = _check_formats(formats)
    d_lo, d_hi = _int_range(n_dates, "n_dates", 1)
    f_lo, f_hi = _int_range(filler, "filler", 0)
    rng = random.Random(seed)
    examples = []
    for _ in range(n):
        k = rng.randint(d_lo, d_hi)
        dates = [random_date(rng) for _ in range(k)]
        examples.append(
            make_example(
                rng,
                dates=dates,
                formats=formats,
                n_filler=rng.randint(f_lo, f_hi),
                filler_position=filler_position,
            )
        )
    return examples


# The vocabularies of the task: padding (id 0) then the characters; the target's also holds
# the decoder's start and end symbols, ids 1 and 2.
SOURCE_VOCAB = CharTokenizer(" ,./;0123456789abcdefghijklmnopqrstuvwxyz",
                             specials=(CharTokenizer.PAD,))
TARGET_VOCAB = CharTokenizer(" -0123456789", specials=(CharTokenizer.PAD, "<s>", "</s>"))
BOS_ID = TARGET_VOCAB.id("<s>")
EOS_ID = TARGET_VOCAB.id("</s>")


@dataclass
class DateBatch:
    """Tensors for one batch of B examples; T_out = 1 + the longest target.

    src (B, T_in) source ids, right-padded with the pad id 0; src_lengths (B,);
    tgt_in (B, T_out) = <s> + target, right-padded with 0 (what the decoder is fed,
    teacher forcing); tgt_out (B, T_out) = target + </s> (what it must predict),
    right-padded with ``IGNORE_INDEX`` (-100), the target id every loss leaves out.
    ``tgt_out[b, t]`` is the id that follows ``tgt_in[b, t]``; ``tgt_out != IGNORE_INDEX``
    marks the positions that count.
    """

    src: Tensor
    src_lengths: Tensor
    tgt_in: Tensor
    tgt_out: Tensor


def make_batch(examples: Sequence[DateExample]) -> DateBatch:
    """Pad a list of B examples into a :class:`DateBatch` (shapes there)."""
    if len(examples) == 0:
        raise ValueError("make_batch expects a non-empty list of DateExample")
    src, lengths = SOURCE_VOCAB.encode_batch([e.source for e in examples])
    tgt, tgt_lengths = TARGET_VOCAB.encode_batch([e.target for e in examples])  # (B, T), (B,)
    B, T_out = tgt.size(0), tgt.size(1) + 1
    tgt_in = torch.cat([torch.full((B, 1), BOS_ID, dtype=torch.long), tgt], dim=1)
    tgt_out = torch.cat([tgt, torch.zeros(B, 1, dtype=torch.long)], dim=1)  # (B, T_out)
    tgt_out[torch.arange(B), tgt_lengths] = EOS_ID
    tgt_out[torch.arange(T_out)[None, :] > tgt_lengths[:, None]] = IGNORE_INDEX
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
