"""The dates task: correct answers, determinism, vocabularies and batches."""

from __future__ import annotations

import datetime
import random
import re

import pytest
import torch

from minitx.data import dates as D
from minitx.data.tokenizer import IGNORE_INDEX, CharTokenizer

# How to read each format back with the standard library (the test's own parser).
STRPTIME = {
    "d month yyyy": "%d %B %Y",
    "wd d month yyyy": "%a %d %B %Y",
    "month d, yyyy": "%B %d, %Y",
    "d mon yyyy": "%d %b %Y",
    "mon d yy": "%b %d %y",
    "weekday, month d, yyyy": "%A, %B %d, %Y",
    "weekday the dth of month yyyy": "%A the %d of %B %Y",
    "d/m/yy": "%d/%m/%y",
    "dd.mm.yyyy": "%d.%m.%Y",
    "yyyy, month d": "%Y, %B %d",
}


def _parse(date_text: str, fmt: str) -> datetime.date:
    text = re.sub(r"(\d+)(st|nd|rd|th)\b", r"\1", date_text)
    parsed = datetime.datetime.strptime(text, STRPTIME[fmt]).date()
    if "%y" in STRPTIME[fmt]:  # strptime's pivot is 69; ours is 50
        year = parsed.year % 100
        parsed = parsed.replace(year=1900 + year if year >= 50 else 2000 + year)
    return parsed


def _date_texts(ex: D.DateExample) -> list[str]:
    texts = []
    for spans in ex.spans:
        start = min(a for a, _ in spans.values())
        end = max(b for _, b in spans.values())
        texts.append(ex.source[start:end])
    return texts


def _date_region(ex: D.DateExample) -> tuple[int, int]:
    return min(a for a, _ in ex.spans[0].values()), max(b for _, b in ex.spans[-1].values())


def test_formats_table_is_complete():
    assert set(STRPTIME) == set(D.FORMATS)


def test_answers_match_datetime():
    examples = D.generate(3000, seed=7, n_dates=(1, 3), filler=(0, 5))
    assert {f for e in examples for f in e.formats} == set(D.FORMATS)
    assert {len(e.dates) for e in examples} == {1, 2, 3}
    for ex in examples:
        texts = _date_texts(ex)
        start, end = _date_region(ex)
        assert ex.source[start:end] == D.DATE_SEPARATOR.join(texts)
        parsed = [_parse(t, f) for t, f in zip(texts, ex.formats, strict=True)]
        assert tuple(parsed) == ex.dates, ex
        assert ex.target == " ".join(d.strftime("%Y-%m-%d") for d in parsed)
        assert len(ex.target) == D.target_length(len(ex.dates))


def test_weekday_names_are_right():
    formats = ["wd d month yyyy", "weekday, month d, yyyy"]
    exs = D.generate(500, seed=3, n_dates=(1, 2), formats=formats)
    assert {f for e in exs for f in e.formats} == set(formats)
    for ex in exs:
        for d, spans in zip(ex.dates, ex.spans, strict=True):
            a, b = spans["weekday"]
            assert D.WEEKDAYS[d.weekday()].startswith(ex.source[a:b])


def test_spans_point_at_fields():
    d = datetime.date(1998, 3, 3)
    ex = D.make_example(random.Random(0), dates=[d], formats=["wd d month yyyy"])
    assert ex.source == "tue 3 march 1998"
    assert ex.target == "1998-03-03"
    fields = {k: ex.source[a:b] for k, (a, b) in ex.spans[0].items()}
    assert fields == {"weekday": "tue", "day": "3", "month": "march", "year": "1998"}
    two = D.make_example(random.Random(0), dates=[d, datetime.date(2001, 5, 1)],
                         formats=["d/m/yy"])  # fmt: skip
    assert two.source == "3/3/98; 1/5/01"
    assert two.target == "1998-03-03 2001-05-01"
    assert [{k: two.source[a:b] for k, (a, b) in sp.items()} for sp in two.spans] == [
        {"day": "3", "month": "3", "year": "98"},
        {"day": "1", "month": "5", "year": "01"},
    ]


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("d month yyyy", "3 march 1998"),
        ("month d, yyyy", "march 3, 1998"),
        ("d/m/yy", "3/3/98"),
        ("dd.mm.yyyy", "03.03.1998"),
        ("weekday the dth of month yyyy", "tuesday the 3rd of march 1998"),
        ("mon d yy", "mar 3 98"),
    ],
)
def test_format_examples(fmt, text):
    assert D.format_date(datetime.date(1998, 3, 3), fmt) == text


def test_ordinals():
    days = {1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th",
            21: "21st", 22: "22nd", 23: "23rd", 31: "31st"}  # fmt: skip
    for day, text in days.items():
        out = D.format_date(datetime.date(2001, 1, day), "weekday the dth of month yyyy")
        assert f" {text} of " in out


def test_two_digit_years_pivot():
    assert D.format_date(datetime.date(1950, 1, 2), "d/m/yy") == "2/1/50"
    assert D.format_date(datetime.date(2049, 12, 31), "d/m/yy") == "31/12/49"


def test_deterministic_and_seed_dependent():
    a = D.generate(200, seed=5, n_dates=(1, 3), filler=(0, 4))
    b = D.generate(200, seed=5, n_dates=(1, 3), filler=(0, 4))
    c = D.generate(200, seed=6, n_dates=(1, 3), filler=(0, 4))
    assert [e.source for e in a] == [e.source for e in b]
    assert [e.source for e in a] != [e.source for e in c]


def test_filler_counts_and_positions():
    for pos in D.FILLER_POSITIONS:
        for ex in D.generate(200, seed=1, n_dates=(1, 2), filler=3, filler_position=pos):
            words = ex.source.split()
            start, end = _date_region(ex)
            before, after = ex.source[:start].split(), ex.source[end:].split()
            assert len(before) + len(after) == 3 == ex.n_filler
            assert all(w in D.FILLER_WORDS for w in before + after)
            if pos == "before":
                assert not after
            if pos == "after":
                assert not before
            assert len(words) >= 3
    # filler words carry no date information
    for w in D.FILLER_WORDS:
        assert not any(ch.isdigit() for ch in w)
        assert w not in D.MONTHS and w not in [m[:3] for m in D.MONTHS]


def test_more_dates_or_filler_give_longer_sources():
    mean = lambda exs: sum(len(e.source) for e in exs) / len(exs)
    one = D.generate(300, seed=0)
    assert mean(D.generate(300, seed=0, filler=6)) > mean(one) + 20
    assert mean(D.generate(300, seed=0, n_dates=3)) > 2.5 * mean(one)


def test_vocab_round_trip():
    for ex in D.generate(300, seed=2, n_dates=(1, 3), filler=(0, 3)):
        assert D.SOURCE_VOCAB.decode(D.SOURCE_VOCAB.encode(ex.source)) == ex.source
        assert D.TARGET_VOCAB.decode(D.TARGET_VOCAB.encode(ex.target)) == ex.target
    assert D.SOURCE_VOCAB.pad_id == D.TARGET_VOCAB.pad_id == 0
    assert D.TARGET_VOCAB.decode([D.BOS_ID, *D.TARGET_VOCAB.encode("12"), D.EOS_ID, 0]) == "12"
    assert D.TARGET_VOCAB.decode(torch.tensor(D.TARGET_VOCAB.encode("1 2"))) == "1 2"
    assert len({D.BOS_ID, D.EOS_ID, D.TARGET_VOCAB.pad_id}) == 3


def test_vocab_errors():
    with pytest.raises(ValueError, match="not in the vocabulary"):
        D.SOURCE_VOCAB.encode("March 3")
    with pytest.raises(TypeError, match="str"):
        D.SOURCE_VOCAB.encode([1, 2])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        D.TARGET_VOCAB.decode([99])
    with pytest.raises(ValueError, match="duplicate"):
        CharTokenizer("aa", specials=(CharTokenizer.PAD,))
    with pytest.raises(ValueError, match="non-empty"):
        D.SOURCE_VOCAB.encode_batch([])
    with pytest.raises(ValueError, match="more than T"):
        D.SOURCE_VOCAB.encode_batch(["abc"], T=2)


def test_batch_padding():
    exs = D.generate(5, seed=0, n_dates=(1, 2), filler=(0, 4))
    batch = D.make_batch(exs)
    lengths = [len(e.source) for e in exs]
    assert batch.src.shape == (5, max(lengths))
    assert batch.src_lengths.tolist() == lengths
    for b, ex in enumerate(exs):
        n = lengths[b]
        assert D.SOURCE_VOCAB.decode(batch.src[b, :n]) == ex.source
        assert (batch.src[b, n:] == 0).all()
        assert (batch.src[b, :n] != 0).all()
        m = len(ex.target)
        assert D.TARGET_VOCAB.decode(batch.tgt_out[b]) == ex.target
        assert batch.tgt_out[b, m] == D.EOS_ID
        assert (batch.tgt_out[b, m + 1 :] == IGNORE_INDEX).all()  # left out by every loss
        assert D.TARGET_VOCAB.decode(batch.tgt_in[b]) == ex.target
        assert batch.tgt_in[b, 0] == D.BOS_ID and (batch.tgt_in[b, m + 1 :] == 0).all()
        assert torch.equal(batch.tgt_in[b, 1 : m + 1], batch.tgt_out[b, :m])
    T_out = 1 + max(len(e.target) for e in exs)
    assert batch.tgt_in.shape == batch.tgt_out.shape == (5, T_out)
    assert len({len(e.target) for e in exs}) > 1  # the batch really has target padding


def test_batches_cover_everything():
    exs = D.generate(10, seed=0)
    sizes = [b.src.size(0) for b in D.batches(exs, 4)]
    assert sizes == [4, 4, 2]
    shuffled = torch.cat([b.tgt_out for b in D.batches(exs, 3, shuffle=True, seed=1)])
    plain = torch.cat([b.tgt_out for b in D.batches(exs, 3)])
    assert sorted(map(tuple, shuffled.tolist())) == sorted(map(tuple, plain.tolist()))


def test_generator_errors():
    with pytest.raises(ValueError, match="unknown date format"):
        D.generate(3, formats=["yyyy/dd/mm"])
    with pytest.raises(ValueError, match="filler"):
        D.generate(3, filler=(4, 2))
    with pytest.raises(ValueError, match="filler_position"):
        D.generate(3, filler_position="middle")
    with pytest.raises(ValueError, match="n must be"):
        D.generate(-1)
    with pytest.raises(ValueError, match="dates must lie"):
        D.make_example(random.Random(0), dates=[datetime.date(1900, 1, 1)])
    with pytest.raises(ValueError, match="at least one date"):
        D.make_example(random.Random(0), dates=[])
    with pytest.raises(ValueError, match="n_dates"):
        D.generate(3, n_dates=0)
    with pytest.raises(ValueError, match="formats must be a non-empty list"):
        D.generate(3, formats="d/m/yy")
    with pytest.raises(TypeError, match=r"random\.Random"):
        D.make_example(0)
    with pytest.raises(ValueError, match="unknown date format"):
        D.format_date(datetime.date(2000, 1, 1), "nope")
    with pytest.raises(ValueError, match="batch_size"):
        next(D.batches(D.generate(2), 0))
    with pytest.raises(ValueError, match="non-empty"):
        D.make_batch([])
