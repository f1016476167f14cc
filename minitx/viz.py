"""The plots the course draws again and again.

Attention heatmaps, their grids and mask pictures come from :mod:`minitx.heatmap` and are
available here too (``viz.attention_heatmap``); this module adds the curves: losses,
gradient norms against distance, and positional encodings.

Every function accepts torch tensors or numpy arrays, validates shapes (``ValueError``
naming what was expected and what was given), labels its axes, and draws into ``ax``
when one is passed, else into a new figure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.image import AxesImage

from minitx.arrays import as_numpy, squeeze_to
from minitx.heatmap import (
    MASKED_COLOR,
    Heatmap,
    attention_grid,
    attention_heatmap,
    axes_or_new,
    plot_mask,
    visible_label,
)

__all__ = [
    "MASKED_COLOR",
    "Heatmap",
    "as_numpy",
    "attention_grid",
    "attention_heatmap",
    "plot_gradient_norms",
    "plot_loss_curves",
    "plot_mask",
    "plot_positional_encoding",
    "visible_label",
]


def _curve(name: str, value: Any) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(value, tuple) and len(value) == 2:
        steps, values = (as_numpy(v, f"history[{name!r}]") for v in value)
        if steps.ndim != 1 or values.ndim != 1 or len(steps) != len(values):
            raise ValueError(
                f"history[{name!r}] as (steps, values) needs two 1-D sequences of equal "
                f"length, got shapes {steps.shape} and {values.shape}"
            )
        return steps, values.astype(np.float64)
    values = as_numpy(value, f"history[{name!r}]")
    if values.ndim != 1:
        raise ValueError(
            f"history[{name!r}] must be a 1-D sequence of values or a (steps, values) tuple, "
            f"got shape {values.shape}"
        )
    return np.arange(len(values)), values.astype(np.float64)


def _label(ax: Axes, xlabel: str, ylabel: str, title: str, *, log: bool) -> Axes:
    if log:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    return ax


def plot_loss_curves(
    history: Mapping[str, Any],
    ax: Axes | None = None,
    log: bool = False,
    title: str = "Loss curves",
    *,
    xlabel: str = "step",
    ylabel: str = "loss",
    reference: Mapping[str, float] | None = None,
) -> Axes:
    """One line per entry of ``history``: ``{"train": [values...], "val": (steps, values)}``.

    A plain sequence is plotted against 0, 1, 2, ...; a ``(steps, values)`` tuple against
    its steps. ``log`` puts the loss on a log scale. ``reference`` draws labelled
    horizontal lines, e.g. ``{"ln(65)": math.log(65)}``. Returns the axes.
    """
    if not isinstance(history, Mapping) or not history:
        raise ValueError(
            "history must be a non-empty dict {name: values or (steps, values)}, got "
            f"{type(history).__name__}"
        )
    ax = axes_or_new(ax)
    for name, value in history.items():
        steps, values = _curve(str(name), value)
        ax.plot(steps, values, label=str(name))
    for name, y in (reference or {}).items():
        ax.axhline(float(y), color="0.4", linestyle=":", linewidth=1.0, label=str(name))
    return _label(ax, xlabel, ylabel, title, log=log)


def plot_gradient_norms(
    distances: Any,
    norms: Mapping[str, Any],
    estimate: Any | Callable[[np.ndarray], Any] | Mapping[str, Any] | None = None,
    ax: Axes | None = None,
    *,
    title: str = "Gradient norm against distance",
    xlabel: str = "distance (time steps back)",
    ylabel: str = "gradient norm",
) -> Axes:
    """Gradient norms (log y) against how far back the gradient travelled.

    ``distances`` (N,); ``norms`` ``{label: values (N,)}``, one line each. ``estimate``
    draws dashed reference curves: values (N,), a function of the distances, or a dict
    ``{label: values or function}``. Non-positive norms cannot be shown on a log axis
    and are left out of the line. Returns the axes.
    """
    d = as_numpy(distances, "distances")
    if d.ndim != 1 or d.size == 0:
        raise ValueError(f"distances must be a non-empty 1-D sequence, got shape {d.shape}")
    if not isinstance(norms, Mapping) or not norms:
        raise ValueError(f"norms must be a non-empty dict {{label: values}}, got {norms!r}")

    def values_for(name: str, v: Any) -> np.ndarray:
        arr = as_numpy(v(d) if callable(v) else v, name).astype(np.float64)
        if arr.shape != d.shape:
            raise ValueError(f"{name} has shape {arr.shape}, expected {d.shape} like distances")
        return np.where(arr > 0, arr, np.nan)

    ax = axes_or_new(ax)
    for label, v in norms.items():
        ax.plot(d, values_for(f"norms[{label!r}]", v), marker="o", markersize=3, label=str(label))
    if estimate is not None:
        estimates = estimate if isinstance(estimate, Mapping) else {"estimate": estimate}
        for label, v in estimates.items():
            ax.plot(d, values_for(f"estimate[{label!r}]", v), linestyle="--", color="0.3",
                    linewidth=1.2, label=str(label))
    return _label(ax, xlabel, ylabel, title, log=True)


def plot_positional_encoding(
    pe: Any,
    ax: Axes | None = None,
    *,
    title: str = "Positional encoding",
    cmap: str = "RdBu_r",
) -> AxesImage:
    """Draw a positional encoding (T, d): x = embedding dimension, y = position.

    The colour scale is symmetric around 0 (at least [-1, 1], the range of sin/cos).
    Returns the ``AxesImage``.
    """
    arr = squeeze_to(as_numpy(pe, "pe"), 2, "pe", "(T, d)").astype(np.float64)
    if 0 in arr.shape:
        raise ValueError(f"pe must not be empty, got shape {arr.shape}")
    lim = max(1.0, float(np.nanmax(np.abs(arr))))
    ax = axes_or_new(ax)
    image = ax.imshow(arr, cmap=cmap, vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest")
    ax.set_xlabel("embedding dimension")
    ax.set_ylabel("position")
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, label="value")
    return image
