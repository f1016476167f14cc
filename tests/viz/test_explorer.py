"""minitx.viz.explorer: moving a control redraws the same image with the expected weights."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets
import numpy as np
import pytest
import torch
from torch import nn

from minitx.data.tokenizer import word_tokenize
from minitx.nn import word_attention as W
from minitx.nn.attention import scaled_dot_product_attention
from minitx.nn.masks import MASK_KINDS, causal_mask, mask_of_kind
from minitx.viz import explorer as E

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def expected_self_attention(sentence, d_k, temperature, head=0, *, d_model=16, seed=0,
                            scaled=True, mask=None, extra_tokens=()):
    """The weights computed independently of the explorer, from the package's parts."""
    tokens = word_tokenize(sentence) + list(extra_tokens)
    X = W.embed_tokens(tokens, d_model, seed)
    W_Q, W_K, W_V = W.random_projections(d_model, d_k, head, seed)
    _, A = scaled_dot_product_attention(
        X @ W_Q, X @ W_K, X @ W_V, mask, scale=None if scaled else 1.0, temperature=temperature
    )
    return A.numpy(), tokens


def tick_texts(ax, axis="x"):
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [t.get_text() for t in labels]


# -- explore_self_attention ----------------------------------------------------------------


def test_self_attention_default_state():
    ex = E.explore_self_attention("the bank of the river", d_k=8, temperature=1.0)
    expected, tokens = expected_self_attention("the bank of the river", 8, 1.0)
    np.testing.assert_allclose(ex.weights, expected, rtol=1e-12)
    np.testing.assert_allclose(ex.image.get_array(), expected, rtol=1e-12)
    assert tick_texts(ex.ax) == tokens == tick_texts(ex.ax, "y")
    assert set(ex.controls) == {"sentence", "d_k", "temperature", "scaled"}
    assert ex.png.startswith(PNG_MAGIC) and ex.image_widget.value == ex.png
    assert isinstance(ex.widget, widgets.VBox)
    with pytest.raises(ValueError, match="read-only"):
        ex.weights[0, 0] = 1.0  # the cache and the picture share this array
    np.testing.assert_allclose(ex.weights.sum(axis=1), 1.0, rtol=1e-12)


def test_temperature_control_redraws_the_same_image():
    ex = E.explore_self_attention("the bank of the river")
    image, figure, n_axes, png = ex.image, ex.figure, len(ex.figure.axes), ex.png
    ex.controls["temperature"].value = 0.25
    expected, _ = expected_self_attention("the bank of the river", 8, 0.25)
    np.testing.assert_allclose(ex.image.get_array(), expected, rtol=1e-12)
    assert ex.image is image and ex.figure is figure and len(figure.axes) == n_axes
    assert len(ex.ax.images) == 1
    assert ex.png != png and ex.image_widget.value == ex.png
    assert "temperature 0.25" in ex.ax.get_title()
    # A lower temperature sharpens: the largest weight of every row grows.
    ex.controls["temperature"].value = 4.0
    flat = ex.weights.max(axis=1)
    assert (expected.max(axis=1) > flat).all()


def test_rendered_record_never_mixes_two_renders():
    """A control's value changes before the explorer's observer draws; an observer that
    runs in that gap (as an execute request can, in ipykernel 7) sees the new value next to
    the old picture, but ``rendered`` stays one render's values, PNG and weights."""
    slider = widgets.FloatSlider(value=1.0, min=0.05, max=5.0, step=0.05)
    seen_in_gap = []
    slider.observe(lambda change: seen_in_gap.append(ex.rendered), names="value")

    def compute(temperature):
        weights, tokens = expected_self_attention("the bank of the river", 8, temperature)
        return weights, tokens, tokens

    ex = E.AttentionExplorer(compute, {"temperature": slider})
    first = ex.rendered
    assert first.values == {"temperature": 1.0} and first.png == ex.png
    slider.value = 0.5
    gap = seen_in_gap[-1]
    assert slider.value == 0.5 and gap is first  # the value moved, the picture not yet
    assert gap.values == {"temperature": 1.0} and gap.png != ex.png
    now = ex.rendered
    assert now.values == {"temperature": 0.5} and now.png == ex.png == ex.image_widget.value
    np.testing.assert_allclose(now.weights, compute(0.5)[0], rtol=1e-12)
    np.testing.assert_allclose(ex.image.get_array(), now.weights, rtol=1e-12)


def test_d_k_and_scaling_controls():
    ex = E.explore_self_attention("one two three four", d_k=8)
    ex.controls["d_k"].value = 64
    expected, _ = expected_self_attention("one two three four", 64, 1.0)
    np.testing.assert_allclose(ex.image.get_array(), expected, rtol=1e-12)
    ex.controls["scaled"].value = False
    unscaled, _ = expected_self_attention("one two three four", 64, 1.0, scaled=False)
    np.testing.assert_allclose(ex.image.get_array(), unscaled, rtol=1e-12)
    # Without 1/sqrt(64) the softmax saturates: rows are much peakier.
    assert unscaled.max(axis=1).mean() > expected.max(axis=1).mean()
    assert "unscaled" in ex.ax.get_title()


def test_head_control_picks_other_projections():
    ex = E.explore_self_attention("a b c", n_heads=3)
    assert ex.controls["head"].options == (0, 1, 2)
    ex.controls["head"].value = 2
    expected, _ = expected_self_attention("a b c", 8, 1.0, head=2)
    np.testing.assert_allclose(ex.image.get_array(), expected, rtol=1e-12)
    head0, _ = expected_self_attention("a b c", 8, 1.0, head=0)
    assert not np.allclose(expected, head0)


def test_sentence_of_another_length_resizes_image_and_labels():
    ex = E.explore_self_attention("be brief")
    ex.controls["sentence"].value = "the bank of the river was steep"
    expected, tokens = expected_self_attention("the bank of the river was steep", 8, 1.0)
    assert ex.image.get_array().shape == (7, 7)
    np.testing.assert_allclose(ex.image.get_array(), expected, rtol=1e-12)
    assert ex.image.get_extent() == [-0.5, 6.5, 6.5, -0.5]
    assert tick_texts(ex.ax) == tokens and tick_texts(ex.ax, "y") == tokens
    assert ex.query_labels == ex.key_labels == tokens
    ex.controls["sentence"].value = "be brief"
    assert ex.image.get_array().shape == (2, 2) and tick_texts(ex.ax) == ["be", "brief"]


def test_same_word_same_input_different_context():
    """'bank' enters with one vector, but its attention row depends on the sentence."""
    ex = E.explore_self_attention("the river bank")
    row_river = ex.weights[2]
    ex.controls["sentence"].value = "the savings bank"
    row_savings = ex.weights[2]
    assert not np.allclose(row_river, row_savings)


def test_bad_sentence_keeps_the_picture_and_says_why():
    ex = E.explore_self_attention("be brief")
    before = ex.image.get_array().copy()
    ex.controls["sentence"].value = "   "
    assert "no tokens" in ex.status.value
    np.testing.assert_array_equal(ex.image.get_array(), before)
    ex.controls["sentence"].value = " ".join(["w"] * (E.MAX_TOKENS + 1))
    assert f"at most {E.MAX_TOKENS} tokens" in ex.status.value
    ex.controls["sentence"].value = "be brief again"
    assert ex.status.value == "" and ex.weights.shape == (3, 3)


def test_results_are_cached():
    ex = E.explore_self_attention("a b c d")
    ex.controls["temperature"].value = 0.5
    n = ex.n_computes
    ex.controls["temperature"].value = 1.0
    ex.controls["temperature"].value = 0.5
    assert ex.n_computes == n
    expected, _ = expected_self_attention("a b c d", 8, 0.5)
    np.testing.assert_allclose(ex.image.get_array(), expected, rtol=1e-12)


def test_custom_embedding_and_tokenizer():
    table = nn.Embedding(26, 6)

    def embed(tokens):
        return table(torch.tensor([ord(t) - ord("a") for t in tokens])).detach().double()

    ex = E.explore_self_attention("abc", tokenizer=list, embed=embed, d_k=4, scaled=None)
    assert "scaled" not in ex.controls
    X = embed(list("abc"))
    W_Q, W_K, W_V = W.random_projections(6, 4)
    _, A = scaled_dot_product_attention(X @ W_Q, X @ W_K, X @ W_V)
    np.testing.assert_allclose(ex.weights, A.numpy(), rtol=1e-12)
    assert tick_texts(ex.ax) == ["a", "b", "c"]


def test_factory_validates_its_arguments():
    with pytest.raises(ValueError, match="d_k=3 is not one of"):
        E.explore_self_attention(d_k=3)
    with pytest.raises(ValueError, match="temperature 20"):
        E.explore_self_attention(temperature=20)
    with pytest.raises(ValueError, match=r"temperature 0\.5"):
        E.explore_self_attention(temperature=0.5, temperature_range=(1.0, 2.0))
    with pytest.raises(ValueError, match="no tokens"):
        E.explore_self_attention("")


def test_static_figure_and_text_repr():
    import matplotlib.pyplot as plt

    ex = E.explore_self_attention("be brief")
    fig = ex.static_figure()
    np.testing.assert_allclose(fig.axes[0].images[0].get_array(), ex.weights)
    assert fig.axes[0].get_xlabel() == ex.ax.get_xlabel()
    assert fig.axes[0].get_ylabel() == ex.ax.get_ylabel()
    plt.close(fig)
    assert repr(ex) == (
        "AttentionExplorer(controls=['sentence', 'd_k', 'temperature', 'scaled'], weights 2x2)"
    )
    data, _ = ex._repr_mimebundle_()
    assert data["text/plain"] == repr(ex)
    assert "application/vnd.jupyter.widget-view+json" in data


# -- explore_masks ---------------------------------------------------------------------------


@pytest.mark.parametrize("mask_type", MASK_KINDS)
def test_mask_explorer_matches_masked_attention(mask_type):
    ex = E.explore_masks("the cat sat", mask_type="none", n_pad=2)
    ex.controls["mask_type"].value = mask_type
    mask = mask_of_kind(mask_type, 5, n_real=3)
    expected, tokens = expected_self_attention(
        "the cat sat", 8, 1.0, mask=mask, extra_tokens=["<pad>", "<pad>"]
    )
    shown = ex.image.get_array()
    np.testing.assert_allclose(shown.data, expected, rtol=1e-12)
    blocked = np.zeros((5, 5), bool) if mask is None else ~mask.numpy()
    np.testing.assert_array_equal(np.ma.getmaskarray(shown), blocked)
    np.testing.assert_allclose(ex.weights.sum(axis=1), 1.0, rtol=1e-12)
    assert tick_texts(ex.ax) == tokens
    assert ex.heatmap.legend_shown == (mask is not None)


def test_mask_explorer_padding_slider():
    ex = E.explore_masks("the cat sat", mask_type="padding", n_pad=0)
    assert ex.weights.shape == (3, 3) and ex.mask.all()
    ex.controls["n_pad"].value = 3
    assert ex.weights.shape == (6, 6)
    assert not ex.mask[:, 3:].any() and ex.mask[:, :3].all()
    assert np.all(ex.weights[:, 3:] == 0)


# -- explore_heads, explore_gpt, explore_alignments ----------------------------------------


def test_head_explorer_picks_layer_and_head():
    w = torch.softmax(torch.randn(2, 4, 5, 5), dim=-1)
    ex = E.explore_heads(w, list("abcde"), layer_names=["first", "second"])
    np.testing.assert_allclose(ex.weights, w[0, 0].numpy(), rtol=1e-6)
    ex.controls["layer"].value = 1
    ex.controls["head"].value = 3
    np.testing.assert_allclose(ex.image.get_array(), w[1, 3].numpy(), rtol=1e-6)
    assert tick_texts(ex.ax) == list("abcde")
    assert ex.controls["layer"].label == "second"
    assert "layer 1, head 3" in ex.ax.get_title()


def test_head_explorer_shapes():
    ex = E.explore_heads(torch.softmax(torch.randn(3, 4, 4), -1))
    assert len(ex.controls["layer"].options) == 1 and len(ex.controls["head"].options) == 3
    batched = torch.softmax(torch.randn(2, 1, 3, 4, 4), -1)  # (L, B=1, H, T, T)
    assert len(E.explore_heads(batched).controls["head"].options) == 3
    with pytest.raises(ValueError, match=r"\(L, H, T_q, T_k\).*\(4, 4\)"):
        E.explore_heads(torch.rand(4, 4))
    with pytest.raises(ValueError, match="query_labels has 2 labels, expected 4"):
        E.explore_heads(torch.rand(1, 1, 4, 4), ["a", "b"])


class CharTokenizer:
    def __init__(self, text: str):
        self.chars = sorted(set(text))

    def encode(self, s: str) -> list[int]:
        return [self.chars.index(c) for c in s]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.chars[i] for i in ids)


class TinyAttentionModel(nn.Module):
    """Causal attention maps from per-head random scores of the token embeddings."""

    block_size = 8

    def __init__(self, vocab: int, n_layer: int = 2, n_head: int = 3):
        super().__init__()
        self.emb = nn.Embedding(vocab, 4)
        self.q = nn.Parameter(torch.randn(n_layer, n_head, 4, 4))
        self.calls = 0

    def attention_maps(self, idx):
        assert not self.training
        self.calls += 1
        x = self.emb(idx)  # (B, T, 4)
        T = idx.size(1)
        scores = torch.einsum("btc,lhcd,bsd->lbhts", x, self.q, x)
        mask = causal_mask(T)
        return torch.stack([
            torch.softmax(scores[layer].masked_fill(~mask, float("-inf")), -1)
            for layer in range(scores.size(0))
        ])  # (n_layer, B, n_head, T, T)


def test_gpt_explorer_prompt_layer_head():
    tok = CharTokenizer("ROMEO: to be or not\n")
    model = TinyAttentionModel(len(tok.chars)).train()
    ex = E.explore_gpt(model, tok, "ROMEO:")
    assert model.training  # mode restored
    assert tick_texts(ex.ax) == list("ROMEO:")
    ex.controls["layer"].value = 1
    ex.controls["head"].value = 2
    model.eval()
    with torch.no_grad():
        expected = model.attention_maps(torch.tensor([tok.encode("ROMEO:")]))[1, 0, 2]
    np.testing.assert_allclose(ex.image.get_array().data, expected.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(np.ma.getmaskarray(ex.image.get_array()),
                                  ~causal_mask(6).numpy())
    calls = model.calls
    ex.controls["head"].value = 0  # same prompt: maps are cached
    assert model.calls == calls
    ex.controls["prompt"].value = "to be or not\n"  # 13 chars, cut to block_size 8
    assert ex.weights.shape == (8, 8)
    assert tick_texts(ex.ax) == ["␣", "o", "r", "␣", "n", "o", "t", "↵"]


def test_gpt_explorer_checks_its_inputs():
    tok = CharTokenizer("abc")
    with pytest.raises(TypeError, match="attention_maps"):
        E.explore_gpt(nn.Linear(2, 2), tok, "ab")

    class Wrong(TinyAttentionModel):
        def attention_maps(self, idx):
            return super().attention_maps(idx)[:, 0]  # drops the batch dim

    with pytest.raises(ValueError, match=r"\(n_layer, 1, n_head, 2, 2\)"):
        E.explore_gpt(Wrong(3), tok, "ab")


def test_alignment_explorer_switches_examples():
    a = torch.softmax(torch.randn(3, 4), -1)
    b = torch.softmax(torch.randn(5, 2), -1)
    ex = E.explore_alignments([(a, ["le", "chat", "<eos>"], ["the", "cat", "sat", "<eos>"]),
                               (b, list("vwxyz"), ["hi", "<eos>"])])
    assert ex.controls["example"].label == "the cat sat <eos>"
    assert ex.ax.get_ylabel() == "output step"
    static = ex.static_figure()
    assert static.axes[0].get_ylabel() == "output step"  # the explorer's labels, not defaults
    ex.controls["example"].value = 1
    np.testing.assert_allclose(ex.image.get_array(), b.numpy(), rtol=1e-6)
    assert ex.image.get_extent() == [-0.5, 1.5, 4.5, -0.5]
    assert tick_texts(ex.ax) == ["hi", "<eos>"] and tick_texts(ex.ax, "y") == list("vwxyz")
    with pytest.raises(ValueError, match=r"examples\[0\] .*key_labels has 1 labels, expected 4"):
        E.explore_alignments([(a, ["x", "y", "z"], ["only"])])
    with pytest.raises(ValueError, match="at least one"):
        E.explore_alignments([])


# -- the generic class -----------------------------------------------------------------------


def test_generic_explorer_validates_compute_and_controls():
    slider = widgets.IntSlider(value=2, min=1, max=4)
    with pytest.raises(TypeError, match="value widget"):
        E.AttentionExplorer(lambda n: None, {"n": widgets.Button(description="x")})
    with pytest.raises(TypeError, match="must return a tuple"):
        E.AttentionExplorer(lambda n: np.eye(n), {"n": slider})
    with pytest.raises(ValueError, match="key_labels has 1 labels, expected 2"):
        E.AttentionExplorer(lambda n: (np.eye(n), ["a", "b"], ["a"]), {"n": slider})

    ex = E.AttentionExplorer(lambda n: (np.eye(n), None, None), {"n": slider}, title="eye")
    slider.value = 4
    np.testing.assert_array_equal(ex.image.get_array(), np.eye(4))
    assert ex.ax.get_title() == "eye" and ex.n_renders == 2
