"""minitx.data.tokenizer.CharTokenizer."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from minitx.data.tokenizer import IGNORE_INDEX, CharTokenizer, word_tokenize


def test_vocabulary_is_the_sorted_distinct_characters():
    tok = CharTokenizer.from_text("hello world")
    assert tok.chars == [" ", "d", "e", "h", "l", "o", "r", "w"]
    assert tok.vocab_size == len(tok) == 8
    assert tok.encode("low") == [4, 5, 7]
    assert tok.decode([4, 5, 7]) == "low"
    assert repr(tok) == "CharTokenizer(vocab_size=8)"


def test_round_trip_and_tensor_input():
    text = "To be, or not to be: that is the question.\n"
    tok = CharTokenizer.from_text(text)
    ids = tok.encode(text)
    assert len(ids) == len(text) and all(isinstance(i, int) for i in ids)
    assert tok.decode(ids) == text
    assert tok.decode(torch.tensor(ids)) == text
    assert tok.decode(np.array(ids)) == text
    assert tok.decode(list(np.array(ids))) == text  # numpy integer scalars
    assert tok.encode("") == [] and tok.decode([]) == ""


def test_unknown_character_names_it_and_the_vocabulary():
    tok = CharTokenizer.from_text("abc")
    with pytest.raises(ValueError) as info:
        tok.encode("abzq")
    message = str(info.value)
    assert "'q'" in message and "'z'" in message and "abc" in message


def test_out_of_range_ids_are_rejected():
    tok = CharTokenizer.from_text("abc")
    with pytest.raises(ValueError, match=r"\[-1, 3\].*0 \.\. 2"):
        tok.decode([0, 3, -1])


@pytest.mark.parametrize("bad", [[0.0, 1.0], ["a"], [True], "ab", 3])
def test_decode_rejects_non_integer_ids(bad):
    with pytest.raises(TypeError):
        CharTokenizer.from_text("abc").decode(bad)


def test_encode_rejects_non_strings():
    with pytest.raises(TypeError, match="str"):
        CharTokenizer.from_text("abc").encode([0, 1])


@pytest.mark.parametrize("chars", [[], ["a", "a"], ["ab"], [1]])
def test_constructor_validates_the_vocabulary(chars):
    with pytest.raises(ValueError):
        CharTokenizer(chars)


def test_from_text_rejects_empty_and_non_text():
    with pytest.raises(ValueError):
        CharTokenizer.from_text("")
    with pytest.raises(TypeError):
        CharTokenizer.from_text(b"bytes")


def test_dict_round_trip_through_json():
    tok = CharTokenizer.from_text("Hello, World!\n\t\u00e9")
    d = json.loads(json.dumps(tok.to_dict()))
    again = CharTokenizer.from_dict(d)
    assert again == tok and again.chars == tok.chars
    assert again.encode("World") == tok.encode("World")
    with pytest.raises(ValueError, match="type"):
        CharTokenizer.from_dict({"type": "bpe", "merges": []})
    with pytest.raises(TypeError):
        CharTokenizer.from_dict([("type", "char")])


def test_chars_is_a_copy():
    tok = CharTokenizer.from_text("abc")
    tok.chars.append("z")
    assert tok.vocab_size == 3


def test_tiny_shakespeare_has_65_symbols(shakespeare_available):
    if not shakespeare_available:
        pytest.skip("tiny Shakespeare is not in the data folder")
    from minitx.data import load_text

    text = load_text(download=False)
    tok = CharTokenizer.from_text(text)
    assert tok.vocab_size == 65
    assert tok.chars[:2] == ["\n", " "]
    assert tok.decode(tok.encode(text[:5000])) == text[:5000]


def test_word_tokenize_splits_punctuation():
    assert word_tokenize("The cat, which slept.") == ["The", "cat", ",", "which", "slept", "."]
    assert word_tokenize("Don't STOP", lower=True) == ["don't", "stop"]
    with pytest.raises(TypeError):
        word_tokenize(["a"])
    # One tokenizer for the whole course: the explorer of notebook 04 splits the same way.
    from minitx.viz.explorer import explore_self_attention

    assert explore_self_attention("Don't stop, Kate.").query_labels == [
        "Don't", "stop", ",", "Kate", "."
    ]


# ---- special symbols: the one character vocabulary of the date and relation tasks ---------


def test_specials_come_first_and_are_never_written():
    tok = CharTokenizer(" -0123456789", specials=(CharTokenizer.PAD, "<s>", "</s>"))
    assert tok.itos[:4] == ("<pad>", "<s>", "</s>", " ")
    assert tok.vocab_size == len(tok) == 15 and tok.n_special == 3
    assert tok.pad_id == 0 and tok.id("<s>") == 1 and tok.id("</s>") == 2 and tok.id("-") == 4
    assert tok.chars == list(" -0123456789") and tok.specials == ("<pad>", "<s>", "</s>")
    assert tok.encode("1-2") == [6, 4, 7]
    assert tok.decode([1, 6, 4, 7, 2, 0, 0]) == "1-2"  # specials skipped
    assert tok.stoi["</s>"] == 2 and tok.stoi["9"] == 14
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tok.encode("<s>")  # a special is not text
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tok.id("x")
    assert "specials=['<pad>', '<s>', '</s>']" in repr(tok)


def test_decode_skips_ignore_index_but_not_other_negative_ids():
    tok = CharTokenizer("ab", specials=(CharTokenizer.PAD,))
    assert tok.decode([1, 2, IGNORE_INDEX, IGNORE_INDEX]) == "ab"
    assert CharTokenizer.from_text("ab").decode(torch.tensor([1, 0, IGNORE_INDEX])) == "ba"
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.decode([1, -1])
    with pytest.raises(ValueError, match="1-D"):
        tok.decode(torch.zeros(2, 2, dtype=torch.long))


def test_the_task_vocabularies_keep_their_ids():
    """Trained date and relation models depend on these exact ids."""
    from minitx.data import dates
    from minitx.data.relations import RelationTask

    assert dates.SOURCE_VOCAB.itos == (
        "<pad>", *" ,./;0123456789abcdefghijklmnopqrstuvwxyz"
    )
    assert dates.TARGET_VOCAB.itos == ("<pad>", "<s>", "</s>", *" -0123456789")
    assert (dates.BOS_ID, dates.EOS_ID, dates.SOURCE_VOCAB.pad_id) == (1, 2, 0)
    assert RelationTask().itos == tuple("^abcdefgh([{<)]}>")
    assert RelationTask(n_letters=3).tokenizer == CharTokenizer("^abc([{<)]}>")


def test_encode_batch_pads_right_with_the_pad_id():
    tok = CharTokenizer("abc", specials=(CharTokenizer.PAD, "<s>"))
    ids, lengths = tok.encode_batch(["ab", "", "cab"])
    assert ids.tolist() == [[2, 3, 0], [0, 0, 0], [4, 2, 3]] and ids.dtype == torch.long
    assert lengths.tolist() == [2, 0, 3] and lengths.dtype == torch.long
    ids, _ = tok.encode_batch(["a"], T=4)
    assert ids.tolist() == [[2, 0, 0, 0]]
    with pytest.raises(ValueError, match="more than T"):
        tok.encode_batch(["abc"], T=2)
    with pytest.raises(ValueError, match="non-empty"):
        tok.encode_batch("abc")
    with pytest.raises(ValueError, match="<pad>"):
        CharTokenizer.from_text("abc").encode_batch(["ab"])  # nothing to pad with


@pytest.mark.parametrize("specials", [("a",), ("<s>", "<s>"), ("",), "<s>"])
def test_bad_specials_are_refused(specials):
    with pytest.raises((ValueError, TypeError)):
        CharTokenizer("abc", specials=specials)


def test_dict_without_specials_is_unchanged_and_specials_round_trip():
    plain = CharTokenizer.from_text("ba")
    assert plain.to_dict() == {"type": "char", "chars": ["a", "b"]}  # checkpoints as before
    assert CharTokenizer.from_dict({"type": "char", "chars": ["a", "b"]}) == plain
    tok = CharTokenizer("ab", specials=("<pad>", "<s>"))
    d = json.loads(json.dumps(tok.to_dict()))
    assert d["specials"] == ["<pad>", "<s>"]
    again = CharTokenizer.from_dict(d)
    assert again == tok and again.itos == tok.itos and hash(again) == hash(tok)
    assert again != CharTokenizer("ab") and again != CharTokenizer("ab", specials=("<s>", "<pad>"))
