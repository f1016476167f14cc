"""A corpus split then encoded: both tokenizers score the same validation text, and a loss
per token converts to bits per character."""

from __future__ import annotations

import math

import pytest
import torch

from minitx.data.bpe import BPETokenizer
from minitx.data.encoded import encode_corpus, tokenizer_from_dict, tokens_of
from minitx.data.tokenizer import CharTokenizer

TEXT = ("To be, or not to be, that is the question:\n"
        "Whether 'tis nobler in the mind to suffer\n") * 40


def test_characters_are_split_as_the_ids_were():
    enc = encode_corpus(TEXT)
    ids = torch.tensor(CharTokenizer.from_text(TEXT).encode(TEXT))
    n = int(0.9 * len(TEXT))
    assert torch.equal(enc.train, ids[:n]) and torch.equal(enc.val, ids[n:])
    assert enc.chars_per_token == 1.0
    assert enc.bits_per_char(math.log(2)) == pytest.approx(1.0)


def test_bpe_scores_the_same_validation_text_and_learns_from_training_text_only():
    enc = encode_corpus(TEXT, "bpe", vocab_size=280)
    char = encode_corpus(TEXT)
    assert enc.val_chars == char.val.numel()
    n = int(0.9 * len(TEXT))
    assert enc.tokenizer.decode(enc.val) == TEXT[n:]
    assert enc.tokenizer == BPETokenizer.train(TEXT[:n], 280)
    assert enc.chars_per_token == pytest.approx(enc.val_chars / enc.val.numel())
    assert enc.chars_per_token > 1.5
    # 2 nats per token over tokens of c characters: 2 / c / ln 2 bits per character
    assert enc.bits_per_char(2.0) == pytest.approx(2.0 / enc.chars_per_token / math.log(2))


def test_a_given_tokenizer_is_used_and_must_match_the_kind():
    tok = BPETokenizer.train(TEXT, 270)
    assert encode_corpus(TEXT, "bpe", tokenizer=tok).tokenizer is tok
    with pytest.raises(ValueError, match="tokens is 'char' but the tokenizer given is 'bpe'"):
        encode_corpus(TEXT, "char", tokenizer=tok)


@pytest.mark.parametrize("kwargs, match", [
    ({"text": ""}, "non-empty str"),
    ({"text": b"bytes"}, "non-empty str, got bytes"),
    ({"text": TEXT, "tokens": "words"}, r"tokens must be one of \('char', 'bpe'\), got 'words'"),
    ({"text": TEXT, "vocab_size": 300}, "vocab_size is a BPE setting"),
])
def test_bad_input_is_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        encode_corpus(**kwargs)


def test_a_checkpoints_tokenizer_comes_back_as_its_kind():
    char, bpe = CharTokenizer.from_text(TEXT), BPETokenizer.train(TEXT, 270)
    assert tokenizer_from_dict(char.to_dict()) == char and tokens_of(char) == "char"
    assert tokenizer_from_dict(bpe.to_dict()) == bpe and tokens_of(bpe) == "bpe"
    with pytest.raises(ValueError, match="got 'words'"):
        tokenizer_from_dict({"type": "words"})
    with pytest.raises(TypeError, match="got list"):
        tokenizer_from_dict([])
    with pytest.raises(TypeError, match="got str"):
        tokens_of("abc")
