"""Alt text: set by hand, or described from the figure's own titles, labels and legend."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from minitx.viz.alt_text import figure_alt_text, set_alt_text


def test_a_line_plot_is_described_by_its_labels_and_legend():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [2, 1], label="RNN")
    ax.plot([0, 1], [2, 0.5], label="LSTM")
    ax.set(title="Loss against step", xlabel="step", ylabel="loss (nats)")
    ax.legend()
    text = figure_alt_text(fig)
    assert text == ("Line plot titled 'Loss against step'; x axis: step; y axis: loss (nats); "
                    "legend: RNN, LSTM.")
    plt.close(fig)


def test_panels_and_heatmaps_are_counted_and_named():
    fig, (a, b) = plt.subplots(1, 2)
    a.imshow(np.eye(3))
    a.set_title("head 0")
    b.bar([0, 1], [1, 2])
    fig.suptitle("Two heads")
    assert figure_alt_text(fig) == (
        "Two heads. 2 panels. Panel 1: heatmap titled 'head 0'. Panel 2: bar chart."
    )
    plt.close(fig)


def test_a_figure_may_give_its_own_sentence():
    fig, _ = plt.subplots()
    assert set_alt_text(fig, " The loss falls. ") is fig
    assert figure_alt_text(fig) == "The loss falls."
    with pytest.raises(ValueError, match="non-empty sentence"):
        set_alt_text(fig, "  ")
    with pytest.raises(TypeError, match="matplotlib Figure"):
        set_alt_text("fig", "text")
    plt.close(fig)
