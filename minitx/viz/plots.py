"""The plots the course draws again and again.

The curves: losses (any curves, or the runs of a Trainer), gradient norms against distance,
and positional encodings. Attention heatmaps, their grids and mask pictures are in
:mod:`minitx.viz.heatmap`.

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
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from minitx.viz.arrays import as_numpy, squeeze_to
from minitx.viz.heatmap import (
    axes_or_new,
)

__all__ = [
    "plot_gradient_norms",
    "plot_loss_curves",
    "plot_positional_encoding",
    "plot_training_history",
]


def _curve(name: str, value: Any) -> tuple[np.ndarray, np.ndarray]:
    """(steps (N,), values (N,) or (runs, N)) from values or a (steps, values) tuple."""
    if isinstance(value, tuple) and len(value) == 2:
        steps, values = (as_numpy(v, f"history[{name!r}]") for v in value)
    else:
        values = as_numpy(value, f"history[{name!r}]")
        steps = np.arange(values.shape[-1]) if values.ndim else np.array([])
    if steps.ndim != 1 or values.ndim not in (1, 2) or values.shape[-1] != len(steps):
        raise ValueError(
            f"history[{name!r}] must be values (N,) or (runs, N), or a (steps (N,), values) "
            f"tuple, got steps of shape {steps.shape} and values of shape {values.shape}"
        )
    if values.size == 0:
        raise ValueError(f"history[{name!r}] is empty")
    return steps, values.astype(np.float64)


def _label(ax: Axes, xlabel: str, ylabel: str, title: str, *, log: bool) -> Axes:
    if log:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    return ax


_REFERENCE_COLORS = ("0.35", "tab:green", "tab:purple", "tab:brown")


def _finish_loss_plot(
    ax: Axes, reference: Mapping[str, float] | None, xlabel: str, ylabel: str, title: str,
    *, log: bool,
) -> Axes:
    """Reference lines (a colour each), labels and legend; log ticks read 0.5, 1, 2, not 10^0."""
    for (name, y), color in zip((reference or {}).items(), _REFERENCE_COLORS, strict=False):
        ax.axhline(float(y), color=color, linestyle=":", linewidth=1.5, label=str(name))
    _label(ax, xlabel, ylabel, title, log=log)
    low, high = ax.get_ylim()
    if log and high > 4 * low:  # else matplotlib's own ticks, which label a narrow range better
        wide = high > 300 * low  # more than 2.5 decades: 1, 2, 5 in each would crowd
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0,) if wide else (1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_locator(NullLocator())
    return ax


def _check_reference(reference: Mapping[str, float] | None) -> None:
    if reference is not None and len(reference) > len(_REFERENCE_COLORS):
        raise ValueError(f"reference takes at most {len(_REFERENCE_COLORS)} lines, "
                         f"got {len(reference)}")


def plot_loss_curves(
    history: Mapping[str, Any],
    ax: Axes | None = None,
    log: bool = False,
    title: str = "Loss curves",
    *,
    xlabel: str = "step",
    ylabel: str = "loss",
    reference: Mapping[str, float] | None = None,
    figsize: tuple[float, float] | None = None,
) -> Axes:
    """One line per entry of ``history``: ``{"train": [values...], "val": (steps, values)}``.

    A plain sequence is plotted against 0, 1, 2, ...; a ``(steps, values)`` tuple against
    its steps. Values of shape (runs, N), one row per run (e.g. per seed), draw their mean
    as the line and a band from the lowest run to the highest. ``log`` puts the loss on a
    log scale. ``reference`` draws labelled horizontal lines, e.g. ``{"ln(65)":
    math.log(65)}``, at most four. Returns the axes.
    """
    if not isinstance(history, Mapping) or not history:
        raise ValueError(
            "history must be a non-empty dict {name: values or (steps, values)}, got "
            f"{type(history).__name__}"
        )
    _check_reference(reference)
    ax = axes_or_new(ax, figsize)
    for name, value in history.items():
        steps, values = _curve(str(name), value)
        if values.ndim == 1:
            ax.plot(steps, values, label=str(name))
            continue
        (line,) = ax.plot(steps, values.mean(axis=0), label=str(name))  # (runs, N) -> (N,)
        ax.fill_between(steps, values.min(axis=0), values.max(axis=0), color=line.get_color(),
                        alpha=0.25, linewidth=0)
    return _finish_loss_plot(ax, reference, xlabel, ylabel, title, log=log)


_HISTORY_CURVES = {"train_loss": "step", "val_loss": "eval_step"}  # values: their steps


def plot_training_history(
    runs: Mapping[str, Mapping[str, Any]],
    ax: Axes | None = None,
    log: bool = False,
    title: str = "Training and validation loss",
    *,
    reference: Mapping[str, float] | None = None,
    figsize: tuple[float, float] | None = None,
) -> Axes:
    """The training and validation loss of one or more runs of
    :class:`minitx.train.trainer.Trainer`.

    ``runs`` maps a name to a run's history (what ``Trainer.train()`` returns). Each run
    gets one colour: its training loss (``train_loss`` at ``step``, the mean since the
    previous log) as a solid line, its validation loss (``val_loss`` at ``eval_step``) as
    a dashed line with a dot per evaluation. With one run, name it ``""`` to label the
    lines just "train" and "validation". ``log`` and ``reference`` as in
    :func:`plot_loss_curves`. Returns the axes.
    """
    if not isinstance(runs, Mapping) or not runs:
        raise ValueError(f"runs must be a non-empty dict {{name: history}}, got {runs!r}")
    _check_reference(reference)
    needed = [k for key, step_key in _HISTORY_CURVES.items() for k in (step_key, key)]
    curves = {}
    for name, history in runs.items():
        if not isinstance(history, Mapping):
            raise ValueError(f"runs[{name!r}] must be a Trainer history (a dict), "
                             f"got {type(history).__name__}")
        missing = [k for k in needed if k not in history]
        if missing:
            raise ValueError(f"runs[{name!r}] must be a Trainer history with the keys "
                             f"{needed}, missing {missing}")
        for key, step_key in _HISTORY_CURVES.items():
            steps, values = _curve(f"{name}: {key}", (history[step_key], history[key]))
            if values.ndim != 1:
                raise ValueError(f"runs[{name!r}][{key!r}] must be 1-D, got {values.shape}")
            curves[name, key] = steps, values
    ax = axes_or_new(ax, figsize)
    for name in runs:
        prefix = f"{name}: " if name else ""
        (line,) = ax.plot(*curves[name, "train_loss"], label=f"{prefix}train")
        ax.plot(*curves[name, "val_loss"], color=line.get_color(), linestyle="--", marker="o",
                markersize=4, label=f"{prefix}validation")
    return _finish_loss_plot(ax, reference, "step", "loss", title, log=log)


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
