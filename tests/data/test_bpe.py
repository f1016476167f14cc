"""minitx.data.bpe.BPETokenizer: training, tiktoken parity, round trips, bad input."""

from __future__ import annotations

import copy
import json
import pickle
import random
import time
from collections import Counter
from itertools import pairwise

import numpy as np
import pytest
import tiktoken
import torch

from minitx import data
from minitx.data.bpe import _CHUNK, ENDOFTEXT, GPT2_PATTERN, BPETokenizer, _merge

ADVERSARIAL = [
    "",
    ENDOFTEXT,
    f"one{ENDOFTEXT}two {ENDOFTEXT}\n{ENDOFTEXT}{ENDOFTEXT}",
    "<|endoftext", "|>", "<|endoftext|",
    "👍 👍🏽 👍🏿👋🏻",  # skin tones
    "👨‍👩‍👧‍👦 and 🏳️‍🌈 and 👩🏾‍💻",  # ZWJ sequences
    "🇫🇷🇯🇵 flags",
    "Привет, мир! Ёлка и ёжик.",
    "日本語のテキストと中文文本，还有한국어。",
    "مرحبا بالعالم، كيف حالك؟",
    "नमस्ते दुनिया, क्षत्रिय",
    "mixed: abcЖжЖ中文ab١٢٣ok",
    "     five spaces, then\ttab\t\tand  two",
    "\n\n\nlines\r\n\r\nand trailing   ",
    " \t \n \u00a0 \u2003 \u3000 ",  # ASCII and Unicode white space
    "0 7 42 3.14159 1234567890123456789012345 -17 1e-9",
    "٣٤٥ ४२ 一二三 ⅫⅣ",  # non-ASCII digits and numerals
    "I'm, you're, they've, we'll, he'd, it's, don't, 'tis, O'Neil's 'S 'LL",
    "café naïve résumé Ångström",  # NFC
    "cafe\u0301 nai\u0308ve re\u0301sume\u0301 A\u030angstro\u0308m",  # NFD
    "\x00\x01\x07\x1b[31mred\x1b[0m\x7f\x85\u200b\u200d\ufeff",  # control and format
    "\U0010ffff\U000e0001 \U0001d11e 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",  # astral planes
    "!!!??? ... --- ''' \"\"\" @#$%^&*()",
    "a" * 200 + " " + "ab" * 100,
]


def tiktoken_of(tok: BPETokenizer) -> tiktoken.Encoding:
    return tiktoken.Encoding(name="minitx-test", pat_str=GPT2_PATTERN,
                             mergeable_ranks=tok.mergeable_ranks(),
                             special_tokens=tok.special_tokens)


def reference_train(text: str, vocab_size: int) -> list[tuple[int, int]]:
    """The slow textbook loop: recount every pair of every chunk after each merge."""
    words = [list(c.encode("utf-8")) for c in _CHUNK.findall(text)]
    merges: list[tuple[int, int]] = []
    for new in range(256, vocab_size):
        counts = Counter(p for w in words for p in pairwise(w))
        top = max(counts.values())
        pair = min(p for p, n in counts.items() if n == top)
        merges.append(pair)
        words = [_merge(w, pair, new) for w in words]
    return merges


@pytest.fixture(scope="module")
def multilingual() -> BPETokenizer:
    """Trained on the adversarial strings, so merges join bytes inside emoji, CJK, ..."""
    return BPETokenizer.train("\n".join(ADVERSARIAL * 3), 600)


@pytest.fixture(scope="module")
def shakespeare_text() -> str:
    return data.load_text("tinyshakespeare", download=False)


@pytest.fixture(scope="module")
def shakespeare_512(shakespeare_text) -> tuple[BPETokenizer, float]:
    start = time.perf_counter()
    tok = BPETokenizer.train(shakespeare_text, 512)
    return tok, time.perf_counter() - start


def test_the_classic_example_and_the_tie_break():
    # aa is the most frequent pair; then ab and (aa, a) tie at 2 and the smaller pair wins
    tok = BPETokenizer.train("aaabdaaabac", 259, special_tokens=())
    assert tok.merges == [(97, 97), (97, 98), (256, 257)]
    assert tok.encode("aaabdaaabac") == [258, 100, 258, 97, 99]
    assert tok.token_bytes(258) == b"aaab"
    assert tok.vocab_size == len(tok) == 259 and tok.special_tokens == {}
    assert repr(tok) == "BPETokenizer(vocab_size=259, merges=3, special_tokens=[])"


def test_merges_never_cross_a_chunk_boundary():
    tok = BPETokenizer.train("ab ab ab. ab!", 258, special_tokens=())
    assert tok.merges == [(97, 98), (32, 256)]  # 'ab', then ' ab'; never 'b ' or 'b.'
    assert tok.encode("ab ab") == [256, 257]


def test_training_matches_the_textbook_loop():
    for seed in range(6):
        rng = random.Random(seed)
        words = ["".join(rng.choice("abcé1 '") for _ in range(rng.randint(1, 10)))
                 for _ in range(150)]
        text = " ".join(words)
        assert BPETokenizer.train(text, 300, special_tokens=()).merges == \
            reference_train(text, 300)


def test_training_is_deterministic_and_special_tokens_only_separate():
    text = "\n".join(ADVERSARIAL)
    a, b = BPETokenizer.train(text, 400), BPETokenizer.train(text, 400)
    assert a.merges == b.merges and a == b and hash(a) == hash(b)
    assert a.special_tokens == {ENDOFTEXT: 399} and len(a.merges) == 400 - 256 - 1
    assert not any(b"<|" in t and b"|>" in t for t in a.mergeable_ranks())


def test_save_and_load(multilingual):
    d = multilingual.to_dict()
    assert d["type"] == "bpe" and d["pattern"] == GPT2_PATTERN
    back = BPETokenizer.from_dict(json.loads(json.dumps(d)))
    assert back == multilingual
    assert back.encode(ADVERSARIAL[8]) == multilingual.encode(ADVERSARIAL[8])
    assert pickle.loads(pickle.dumps(multilingual)) == copy.deepcopy(multilingual) == back


def test_mergeable_ranks_are_the_token_bytes_in_id_order(multilingual):
    ranks = multilingual.mergeable_ranks()
    assert len(ranks) == multilingual.vocab_size - 1  # all but <|endoftext|>
    assert sorted(ranks.values()) == list(range(len(ranks)))
    assert all(multilingual.token_bytes(i) == t for t, i in ranks.items())
    assert multilingual.token_bytes(599) == ENDOFTEXT.encode()


@pytest.mark.parametrize("text", ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_adversarial_strings_match_tiktoken_and_round_trip(multilingual, text):
    enc = tiktoken_of(multilingual)
    ids = multilingual.encode(text)
    assert ids == enc.encode(text, disallowed_special=())
    assert multilingual.decode(ids) == text
    ids = multilingual.encode(text, allowed_special="all")
    assert ids == enc.encode(text, allowed_special="all")
    assert multilingual.decode(ids) == text


@pytest.mark.needs_shakespeare
def test_shakespeare_trains_fast_and_matches_tiktoken(shakespeare_text, shakespeare_512):
    tok, seconds = shakespeare_512
    assert seconds < 20, f"training at vocab 512 took {seconds:.1f} s"  # about 2 s alone
    ids = tok.encode(shakespeare_text)
    assert ids == tiktoken_of(tok).encode(shakespeare_text)
    assert tok.decode(ids) == shakespeare_text
    assert len(shakespeare_text) / len(ids) > 1.8  # characters per token


@pytest.mark.needs_shakespeare
def test_shakespeare_tokenizer_on_adversarial_strings(shakespeare_512):
    tok, _ = shakespeare_512
    enc = tiktoken_of(tok)
    for text in ADVERSARIAL:
        assert tok.encode(text) == enc.encode(text, disallowed_special=()), text
        assert tok.decode(tok.encode(text, allowed_special="all")) == text


def random_text(rng: random.Random) -> str:
    spans = [(0x20, 0x7E), (0x00, 0x1F), (0xA0, 0x24F), (0x400, 0x4FF), (0x900, 0x97F),
             (0x3040, 0x30FF), (0x4E00, 0x9FFF), (0xE000, 0xFFFD), (0x1F300, 0x1FAFF),
             (0x10000, 0x10FFFF)]
    out = []
    for _ in range(rng.randint(0, 40)):
        lo, hi = rng.choice(spans)
        out.append(chr(rng.randint(lo, hi)))  # no span holds a surrogate
    return "".join(out)


def test_random_unicode_round_trips_and_matches_tiktoken(multilingual):
    rng = random.Random(0)
    enc = tiktoken_of(multilingual)
    for _ in range(500):
        text = random_text(rng)
        ids = multilingual.encode(text)
        assert multilingual.decode(ids) == text
        assert ids == enc.encode(text, disallowed_special=())


def test_special_tokens_only_when_allowed(multilingual):
    eot = multilingual.special_tokens[ENDOFTEXT]
    text = f"a{ENDOFTEXT}b"
    assert eot not in multilingual.encode(text)  # ordinary text by default
    ids = multilingual.encode(text, allowed_special={ENDOFTEXT})
    assert ids.count(eot) == 1 and ids == multilingual.encode(text, allowed_special="all")
    assert ids == multilingual.encode(text, allowed_special=ENDOFTEXT)
    assert multilingual.decode(ids) == text
    with pytest.raises(ValueError, match=r"\['<pad>'\].*special tokens are \['<\|endoftext"):
        multilingual.encode("x", allowed_special="<pad>")


def test_decode_of_a_cut_character_and_of_tensors(multilingual):
    ids = multilingual.encode("é😀")
    assert multilingual.decode(list(b"\xe2")) == "\ufffd"
    assert multilingual.decode(torch.tensor(ids)) == "é😀"
    assert multilingual.decode(np.array(ids)) == "é😀"
    assert multilingual.decode(list(np.array(ids))) == "é😀"
    assert multilingual.encode("") == [] and multilingual.decode([]) == ""


@pytest.mark.parametrize(
    ("args", "error", "expected"),
    [
        ((123, 300), TypeError, "str, got int"),
        ((b"abc", 300), TypeError, "str, got bytes"),
        (("", 300), ValueError, "non-empty text"),
        ((ENDOFTEXT * 2, 300), ValueError, "non-empty text"),
        (("abc", 255, ()), ValueError, "at least 256.* got 255"),
        (("abc", 256), ValueError, "at least 256 .* = 257, got 256"),
        (("abc", 300.0), TypeError, "vocab_size must be an int, got float"),
        (("abc", True), TypeError, "vocab_size must be an int, got bool"),
        (("abc", "300"), TypeError, "vocab_size must be an int, got str"),
        (("abc", 300, ENDOFTEXT), TypeError, "special_tokens must be a list of str, got str"),
        (("abc", 300, [""]), ValueError, "non-empty str, got ''"),
        (("abc", 300, ["<a>", "<a>"]), ValueError, "distinct"),
        (("ab ab", 300), ValueError, "too few distinct pairs.* vocab_size 259, below the 300"),
    ],
)
def test_train_rejects_bad_input(args, error, expected):
    with pytest.raises(error, match=expected):
        BPETokenizer.train(*args)


@pytest.mark.parametrize(
    ("ids", "error", "expected"),
    [
        ([600], ValueError, r"id 600 is outside the vocabulary: valid ids are 0 \.\. 599"),
        ([-1], ValueError, r"id -1 .* 0 \.\. 599"),
        ([1.0], TypeError, "int ids, got 1.0 of type float"),
        ([True], TypeError, "int ids, got True of type bool"),
        (["a"], TypeError, "int ids, got 'a'"),
        ("abc", TypeError, "sequence of int ids, got str"),
        (3, TypeError, "sequence of int ids, got int"),
    ],
)
def test_decode_rejects_bad_ids(multilingual, ids, error, expected):
    with pytest.raises(error, match=expected):
        multilingual.decode(ids)


def test_encode_rejects_non_strings(multilingual):
    with pytest.raises(TypeError, match="encode expects a str, got list"):
        multilingual.encode([1, 2])


@pytest.mark.parametrize(
    ("d", "error", "expected"),
    [
        ([], TypeError, "expects a dict, got list"),
        ({"type": "char", "chars": ["a"]}, ValueError, "'type': 'bpe'.* type 'char'"),
        ({"type": "bpe", "merges": [[0, 256]]}, ValueError, "pair of ids below 256, got"),
        ({"type": "bpe", "merges": [[97, 98], [97, 98]]}, ValueError, "token 256 again"),
        ({"type": "bpe", "merges": [[97]]}, ValueError, "pair of ids"),
        ({"type": "bpe", "merges": [], "pattern": r"\w+"}, ValueError, "GPT-2's pattern"),
    ],
)
def test_from_dict_rejects_bad_descriptions(d, error, expected):
    with pytest.raises(error, match=expected):
        BPETokenizer.from_dict(d)
