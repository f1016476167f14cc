"""Pictures: one heatmap for every attention map, the curves the course repeats, and the
interactive widgets. Imports :mod:`minitx.nn` and :mod:`minitx.data` only.

    heatmap             attention heatmaps, grids of heads and mask pictures
    plots               loss curves, gradient norms against distance, positional encodings
    explorer            the interactive attention explorers of notebooks 03-08 (ipywidgets)
    attention_explorer  the widget those explorers are built on
    sampling_explorer   temperature, top-k and top-p on a trained model's next token
    arrays              tensors or arrays in, validated numpy arrays out
    alt_text            the sentence that describes a figure (every figure's alt text)
"""

from minitx.viz.heatmap import (
    MASKED_COLOR,
    Heatmap,
    attention_grid,
    attention_heatmap,
    plot_mask,
    visible_label,
)
from minitx.viz.plots import (
    plot_gradient_norms,
    plot_loss_curves,
    plot_positional_encoding,
    plot_training_history,
)

__all__ = [
    "MASKED_COLOR",
    "Heatmap",
    "attention_grid",
    "attention_heatmap",
    "plot_gradient_norms",
    "plot_loss_curves",
    "plot_mask",
    "plot_positional_encoding",
    "plot_training_history",
    "visible_label",
]
