"""minitx.data.sequences: words, bag of words, windows, padding and truncation."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

from minitx.data import sequences as seq
from minitx.data.tokenizer import word_tokenize


def test_bag_of_words_forgets_order_but_counts():
    a = word_tokenize("dog bites man")
    b = word_tokenize("man bites dog")
    vocab = seq.build_vocab(a + b)
    assert vocab == {"bites": 0, "dog": 1, "man": 2}
    assert torch.equal(seq.bag_of_words(a, vocab), seq.bag_of_words(b, vocab))
    assert seq.bag_of_words(["dog", "dog"], vocab).tolist() == [0.0, 2.0, 0.0]
    with pytest.raises(ValueError, match="cat"):
        seq.bag_of_words(["cat"], vocab)


def test_distance_and_window_on_the_cat_sentence():
    tokens = word_tokenize(seq.CAT_SENTENCE)
    d = seq.token_distance(tokens, "cat", "woke")
    assert d == tokens.index("woke") - tokens.index("cat") == 19
    verb = tokens.index("woke")
    assert "cat" not in seq.context_window(tokens, verb, 5)
    assert "cat" not in seq.context_window(tokens, verb, d - 1)
    assert seq.context_window(tokens, verb, d)[0] == "cat"
    assert seq.context_window(tokens, 2, 10) == ["The", "cat"]
    with pytest.raises(ValueError):
        seq.token_distance(tokens, "dog", "woke")
    with pytest.raises(ValueError):
        seq.token_distance(tokens, "woke", "cat")
    with pytest.raises(ValueError):
        seq.context_window(tokens, 99, 3)


def test_line_lengths():
    assert seq.line_lengths("ab\n\nabc\n \n") == [2, 3]
    assert seq.line_lengths("ab\n\nabc", skip_empty=False) == [2, 0, 3]


def test_pad_batch_pads_and_truncates():
    ids, lengths = seq.pad_batch([[1, 2, 3], [4], [5, 6]], pad_id=0)
    assert ids.tolist() == [[1, 2, 3], [4, 0, 0], [5, 6, 0]]
    assert lengths.tolist() == [3, 1, 2]
    ids, lengths = seq.pad_batch([[1, 2, 3], [4]], pad_id=-1, max_len=2)
    assert ids.tolist() == [[1, 2], [4, -1]] and lengths.tolist() == [2, 1]
    with pytest.raises(ValueError):
        seq.pad_batch([])


def test_padding_stats_by_hand():
    s = seq.padding_stats([3, 7, 5, 1])
    assert (s.batch_size, s.padded_length, s.real, s.padding, s.truncated) == (4, 7, 16, 12, 0)
    assert s.waste == pytest.approx(12 / 28) and s.lost == 0
    s = seq.padding_stats([3, 7, 5, 1], max_len=5)
    assert (s.real, s.padding, s.truncated, s.truncated_sequences) == (14, 6, 2, 1)
    assert s.lost == pytest.approx(2 / 16)
    with pytest.raises(ValueError):
        seq.padding_stats([])
    with pytest.raises(ValueError):
        seq.padding_stats([3, -1])


def test_padding_stats_match_an_actual_padded_batch():
    seqs = [list(range(n)) for n in [4, 9, 2, 6, 6]]
    ids, lengths = seq.pad_batch(seqs, pad_id=-1, max_len=5)
    s = seq.padding_stats([len(x) for x in seqs], max_len=5)
    assert int((ids == -1).sum()) == s.padding
    assert int(lengths.sum()) == s.real


def test_corpus_padding_waste_sorting_helps():
    lengths = [1, 10, 1, 10, 1, 10]
    assert seq.corpus_padding_waste(lengths, 2) == pytest.approx(27 / 60)
    assert seq.corpus_padding_waste(lengths, 2, sort_by_length=True) == pytest.approx(9 / 42)
    with pytest.raises(ValueError):
        seq.corpus_padding_waste(lengths, 0)


def test_plot_padded_batch_draws_three_kinds_of_cell():
    ax = seq.plot_padded_batch([3, 7, 5], max_len=5)
    image = ax.images[0].get_array()
    assert image.shape == (3, 7)
    assert image[1].tolist() == [1, 1, 1, 1, 1, 3, 3]  # kept then cut
    assert image[0].tolist() == [1, 1, 1, 2, 2, 0, 0]  # kept, padding, nothing
    assert "padding" in ax.get_title()
    plt.close(ax.figure)
