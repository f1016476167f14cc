"""minitx.viz.plots: heatmaps and the course's repeated plots (Agg backend, no display)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.colors import to_rgba

from minitx import viz
from minitx.nn.masks import causal_mask, padding_mask
from minitx.viz.heatmap import heatmap_data


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _weights(T_q: int = 4, T_k: int = 4) -> torch.Tensor:
    return torch.softmax(torch.randn(T_q, T_k), dim=-1)


def _pixel(image, i: int, j: int) -> np.ndarray:
    """RGBA (0..1) of the rendered figure at the centre of cell (row i, column j)."""
    fig = image.figure
    fig.canvas.draw()
    x, y = image.axes.transData.transform((j, i))
    buf = np.asarray(fig.canvas.buffer_rgba())
    height = buf.shape[0]
    return buf[int(height - y), int(x)] / 255.0


def test_heatmap_shows_weights_labels_and_colorbar():
    w = _weights(3, 4)
    image = viz.attention_heatmap(w, ["a", "b", "c"], ["w", "x", "y", "z"], title="A").image
    np.testing.assert_allclose(image.get_array(), w.numpy(), rtol=1e-6)
    ax = image.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["w", "x", "y", "z"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert "key" in ax.get_xlabel() and "query" in ax.get_ylabel()
    assert ax.get_title() == "A"
    assert image.colorbar is not None
    assert image.colorbar.ax.get_ylabel() == "attention weight"
    assert image.get_clim() == (0.0, 1.0)


def test_heatmap_accepts_numpy_and_a_batch_of_one():
    w = _weights()
    a = viz.attention_heatmap(w.numpy()).image.get_array()
    b = viz.attention_heatmap(w[None, None]).image.get_array()
    np.testing.assert_allclose(a, b)
    assert a.shape == (4, 4)


def test_heatmap_default_title_and_labels_are_positions():
    image = viz.attention_heatmap(_weights(2, 3)).image
    assert image.axes.get_title() == "Attention weights"
    assert [t.get_text() for t in image.axes.get_xticklabels()] == ["0", "1", "2"]


def test_square_heatmap_reuses_query_labels_for_keys():
    image = viz.attention_heatmap(_weights(2, 2), ["be", "brief"]).image
    assert [t.get_text() for t in image.axes.get_xticklabels()] == ["be", "brief"]
    with pytest.raises(ValueError, match="key_labels has 2 labels, expected 3"):
        viz.attention_heatmap(_weights(2, 3), ["be", "brief"], ["x", "y"])


def test_heatmap_vmax_grows_for_values_above_one():
    image = viz.attention_heatmap(torch.tensor([[0.0, 3.0], [1.0, 2.0]])).image
    assert image.get_clim() == (0.0, 3.0)


def test_masked_cells_are_drawn_distinct_from_zero_weight():
    # Causal mask: cells above the diagonal are blocked and must show the "bad" grey.
    w = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0],
                      [0.2, 0.3, 0.5, 0.0], [0.1, 0.2, 0.3, 0.4]])
    mask = causal_mask(4)
    image = viz.attention_heatmap(w, mask=mask, colorbar=False).image
    arr = image.get_array()
    assert np.array_equal(np.ma.getmaskarray(arr), ~mask.numpy())
    masked = _pixel(image, 0, 2)
    np.testing.assert_allclose(masked, to_rgba(viz.MASKED_COLOR), atol=2 / 255)
    np.testing.assert_allclose(_pixel(image, 1, 3), masked, atol=2 / 255)
    assert not np.allclose(_pixel(image, 0, 0), masked, atol=0.05)  # weight 1
    # A real zero weight (allowed cell) is drawn with the colormap's lowest colour.
    image2 = viz.attention_heatmap(torch.tensor([[1.0, 0.0]]), colorbar=False).image
    zero_allowed = _pixel(image2, 0, 1)
    np.testing.assert_allclose(zero_allowed, image2.cmap(0.0), atol=2 / 255)
    assert not np.allclose(zero_allowed, masked, atol=0.05)


def test_padding_mask_broadcasts_to_the_weights():
    heatmap = viz.attention_heatmap(_weights(3, 3), mask=padding_mask([2], 3))
    blocked = np.ma.getmaskarray(heatmap.image.get_array())
    assert blocked[:, 2].all() and not blocked[:, :2].any()
    assert heatmap.legend_shown and heatmap.legend.get_visible()
    heatmap.show(heatmap_data(_weights(3, 3)))  # no mask now: the key hides
    assert not heatmap.legend_shown and heatmap.legend is not None
    assert viz.attention_heatmap(_weights(2, 2)).legend is None


def test_annotate_writes_one_number_per_visible_cell():
    image = viz.attention_heatmap(_weights(3, 3), mask=causal_mask(3), annotate=True).image
    texts = [t.get_text() for t in image.axes.texts]
    assert len(texts) == 6
    assert all(len(t) == 4 and t[1] == "." for t in texts)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"weights": torch.rand(2, 3, 3)}, ValueError, r"2-D \(T_q, T_k\).*\(2, 3, 3\)"),
        ({"weights": torch.rand(3)}, ValueError, r"2-D.*\(3,\)"),
        ({"query_labels": ["a", "b"]}, ValueError, "query_labels has 2 labels, expected 3"),
        ({"key_labels": list("abcd")}, ValueError, "key_labels has 4 labels, expected 3"),
        ({"query_labels": "abc"}, TypeError, "list"),
        ({"mask": torch.ones(2, 2, dtype=torch.bool)}, ValueError, r"\(2, 2\).*\(3, 3\)"),
        ({"mask": torch.ones(3, 3)}, ValueError, "boolean"),
        ({"weights": "not an array"}, TypeError, "numeric"),
    ],
)
def test_heatmap_rejects_bad_input(kwargs, error, match):
    args = {"weights": _weights(3, 3), **kwargs}
    with pytest.raises(error, match=match):
        viz.attention_heatmap(**args)


def test_show_redraws_in_place_with_a_new_shape():
    heatmap = viz.attention_heatmap(_weights(2, 2), ["a", "b"], ["a", "b"], annotate=True)
    image = heatmap.image
    w = _weights(3, 5)
    heatmap.show(heatmap_data(w, list("xyz"), list("pqrst"), mask=padding_mask([4], 5)))
    assert heatmap.image is image
    np.testing.assert_allclose(image.get_array().data, w.numpy(), rtol=1e-6)
    assert image.get_extent() == [-0.5, 4.5, 2.5, -0.5]
    assert [t.get_text() for t in image.axes.get_xticklabels()] == list("pqrst")
    assert np.ma.getmaskarray(image.get_array())[:, 4].all()
    assert len(image.axes.images) == 1
    # The old cell numbers are gone: one per visible cell of the new weights.
    assert len(heatmap.texts) == len(image.axes.texts) == 12
    assert heatmap.data.key_labels == list("pqrst")


def test_attention_grid_layers_by_heads():
    w = torch.softmax(torch.randn(2, 3, 4, 4), dim=-1)
    fig = viz.attention_grid(w, list("abcd"), list("abcd"), layer_names=["enc", "dec"])
    heatmaps = [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]
    assert len(heatmaps) == 6
    np.testing.assert_allclose(heatmaps[5].images[0].get_array(), w[1, 2].numpy(), rtol=1e-6)
    assert heatmaps[0].get_title() == "enc, head 0"
    assert any(ax.get_label() == "<colorbar>" for ax in fig.axes)
    assert fig.get_suptitle()


def test_attention_grid_single_layer_and_errors():
    fig = viz.attention_grid(torch.softmax(torch.randn(2, 3, 3), -1))
    assert sum(1 for ax in fig.axes if ax.get_label() != "<colorbar>") == 2
    with pytest.raises(ValueError, match=r"\(L, H, T_q, T_k\).*\(3, 3\)"):
        viz.attention_grid(torch.rand(3, 3))
    with pytest.raises(ValueError, match="layer_names has 1 labels, expected 2"):
        viz.attention_grid(torch.rand(2, 1, 3, 3), layer_names=["only"])


def test_plot_loss_curves_plain_and_stepped():
    ax = viz.plot_loss_curves(
        {"train": [3.0, 2.0, 1.5], "val": ([0, 10], torch.tensor([3.1, 1.7]))},
        log=True, reference={"ln 65": 4.17},
    )
    lines = {line.get_label(): line for line in ax.get_lines()}
    np.testing.assert_allclose(lines["train"].get_xdata(), [0, 1, 2])
    np.testing.assert_allclose(lines["val"].get_xdata(), [0, 10])
    np.testing.assert_allclose(lines["val"].get_ydata(), [3.1, 1.7], rtol=1e-6)
    assert "ln 65" in lines
    assert ax.get_yscale() == "log"
    assert ax.get_xlabel() == "step" and ax.get_ylabel() == "loss" and ax.get_title()


@pytest.mark.parametrize(
    ("history", "match"),
    [
        ({}, "non-empty dict"),
        ({"a": ([0, 1, 2], [1.0, 2.0])}, r"steps of shape \(3,\) and values of shape \(2,\)"),
        ({"a": np.zeros((2, 2, 2))}, r"values of shape \(2, 2, 2\)"),
        ({"a": ([], [])}, "is empty"),
    ],
)
def test_plot_loss_curves_rejects_bad_history(history, match):
    with pytest.raises(ValueError, match=match):
        viz.plot_loss_curves(history)


def test_plot_loss_curves_runs_draw_mean_and_band():
    runs = np.array([[3.0, 2.0, 1.0], [4.0, 2.5, 0.5]])  # (runs, N): two seeds
    ax = viz.plot_loss_curves({"model": ([0, 10, 20], runs)}, log=True)
    (line,) = ax.get_lines()
    np.testing.assert_allclose(line.get_ydata(), [3.5, 2.25, 0.75])
    (band,) = ax.collections
    y = band.get_paths()[0].vertices[:, 1]
    assert y.min() == pytest.approx(0.5) and y.max() == pytest.approx(4.0)  # lowest to highest
    assert ax.get_yscale() == "log"
    assert ax.yaxis.get_major_formatter()(0.5, 0) == "0.5"  # plain numbers, not 5x10^-1
    wide = viz.plot_loss_curves({"a": [5.0, 1e-3]}, log=True)  # 3.7 decades: decades only
    assert [t for t in wide.get_yticks() if 1e-3 <= t <= 5] == pytest.approx([1e-3, 1e-2, 0.1, 1])
    narrow = viz.plot_loss_curves({"a": [1.5, 1.8]}, log=True)  # within a factor of 4
    assert narrow.yaxis.get_major_formatter()(0.5, 0) != "0.5"  # matplotlib's own ticks


def test_plot_loss_curves_reference_lines_get_their_own_colours():
    ax = viz.plot_loss_curves({"train": [2.0, 1.0]}, reference={"ln 65": 4.17, "bigram": 2.5})
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert lines["ln 65"].get_color() != lines["bigram"].get_color()
    assert lines["bigram"].get_ydata()[0] == 2.5
    with pytest.raises(ValueError, match="at most 4 lines, got 5"):
        viz.plot_loss_curves({"train": [1.0]}, reference={str(i): 1.0 for i in range(5)})


def _history(train, val):
    return {"step": list(range(1, len(train) + 1)), "train_loss": train,
            "eval_step": [0, len(train)], "val_loss": val, "elapsed_s": [0.0] * len(train)}


def test_plot_training_history_one_colour_per_run():
    runs = {"causal": _history([3.0, 2.0, 1.5], [4.0, 1.6]),
            "no mask": _history([2.0, 0.5, 0.1], [4.0, 0.2])}
    ax = viz.plot_training_history(runs, log=True, reference={"ln 65": 4.17})
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"causal: train", "causal: validation", "no mask: train",
                          "no mask: validation", "ln 65"}
    for name in runs:
        train, val = lines[f"{name}: train"], lines[f"{name}: validation"]
        assert train.get_color() == val.get_color()
        assert val.get_linestyle() == "--" and val.get_marker() == "o"
        np.testing.assert_allclose(val.get_xdata(), runs[name]["eval_step"])
        np.testing.assert_allclose(train.get_ydata(), runs[name]["train_loss"])
    assert lines["causal: train"].get_color() != lines["no mask: train"].get_color()
    assert ax.get_yscale() == "log"
    one = viz.plot_training_history({"": _history([2.0, 1.0], [3.0, 1.2])})
    assert [line.get_label() for line in one.get_lines()] == ["train", "validation"]


def test_plot_training_history_accepts_a_real_trainer_history():
    from minitx.train.trainer import TrainConfig, Trainer

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    x, y = torch.randn(8, 3), torch.randn(8, 1)

    def batches(split, generator=None):
        return x, y

    config = TrainConfig(max_steps=4, batch_size=8, learning_rate=1e-2, warmup_steps=0,
                         eval_interval=2, eval_steps=1, log_interval=1)
    def mse(model, batch):
        inputs, targets = batch
        return torch.nn.functional.mse_loss(model(inputs), targets)

    trainer = Trainer(model, config, batches, loss_fn=mse, progress=False)
    history = trainer.train()
    ax = viz.plot_training_history({"linear": history})
    lines = {line.get_label(): line for line in ax.get_lines()}
    np.testing.assert_allclose(lines["linear: validation"].get_xdata(), [0, 2, 4])


@pytest.mark.parametrize(
    ("runs", "match"),
    [
        ({}, "non-empty dict"),
        ({"a": [1.0, 2.0]}, r"Trainer history \(a dict\), got list"),
        ({"a": {"step": [1], "train_loss": [1.0]}}, r"missing \['eval_step', 'val_loss'\]"),
        ({"a": _history([[1.0, 2.0]], [1.0, 2.0])}, "steps of shape"),
    ],
)
def test_plot_training_history_rejects_bad_runs(runs, match):
    with pytest.raises(ValueError, match=match):
        viz.plot_training_history(runs)


def test_plot_gradient_norms_log_axis_and_estimate():
    d = np.arange(1, 6)
    ax = viz.plot_gradient_norms(
        d, {"RNN": 0.5 ** d, "LSTM": np.array([1.0, 0.9, 0.0, 0.8, 0.7])},
        estimate=lambda x: 0.5 ** x,
    )
    assert ax.get_yscale() == "log"
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"RNN", "LSTM", "estimate"}
    assert lines["estimate"].get_linestyle() == "--"
    assert np.isnan(lines["LSTM"].get_ydata()[2])  # a zero cannot sit on a log axis
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
    with pytest.raises(ValueError, match=r"norms\['x'\] has shape \(3,\), expected \(5,\)"):
        viz.plot_gradient_norms(d, {"x": [1.0, 2.0, 3.0]})


def test_plot_positional_encoding():
    pe = torch.randn(10, 8)
    image = viz.plot_positional_encoding(pe)
    np.testing.assert_allclose(image.get_array(), pe.numpy(), rtol=1e-6)
    vmin, vmax = image.get_clim()
    assert vmin == -vmax and vmax >= 1.0
    assert image.axes.get_xlabel() == "embedding dimension"
    assert image.axes.get_ylabel() == "position"
    with pytest.raises(ValueError, match=r"2-D \(T, d\).*\(8,\)"):
        viz.plot_positional_encoding(torch.randn(8))


def test_plot_mask():
    mask = causal_mask(3)[None, None]
    image = viz.plot_mask(mask, ["a", "b", "c"])
    np.testing.assert_array_equal(image.get_array(), causal_mask(3).numpy().astype(float))
    assert [t.get_text() for t in image.axes.texts].count("-inf") == 3
    assert image.axes.get_title() == "Mask (True = may attend)"
    with pytest.raises(ValueError, match="boolean"):
        viz.plot_mask(torch.ones(3, 3))
    with pytest.raises(ValueError, match="query_labels has 2 labels"):
        viz.plot_mask(causal_mask(3), ["a", "b"])
