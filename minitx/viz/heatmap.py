"""Attention heatmaps: one object that owns its picture, and the grids and masks drawn with it.

Keys (the tokens attended to) run along the x axis and queries (the tokens attending)
down the y axis, so row ``i`` of the picture is row ``i`` of the weight matrix A and sums
to one. Cells blocked by a mask are grey (matplotlib's "bad" colour), never a weight of
0, so "not allowed" and "allowed but ignored" look different.

A :class:`Heatmap` keeps everything it drew (the image, the colour bar, the numbers in
the cells, the "masked" legend) as its own attributes, so :meth:`Heatmap.show` can redraw
it in place for new weights: that is how the explorers animate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colorbar import Colorbar
from matplotlib.colors import Colormap, ListedColormap
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.legend import Legend
from matplotlib.patches import Patch
from matplotlib.text import Text

from minitx.viz.arrays import as_numpy, squeeze_to

MASKED_COLOR = "#c8c8c8"  # light grey: far from every colour viridis gives a weight
ALLOWED_COLOR = "#3b8bc2"


class HeatmapData(NamedTuple):
    """Checked inputs of a heatmap: ``weights`` float64 (T_q, T_k), one label per row
    and per column, and ``mask`` bool (T_q, T_k) (True = may attend) or None."""

    weights: np.ndarray
    query_labels: list[str]
    key_labels: list[str]
    mask: np.ndarray | None


VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥"}


def visible_label(token: Any) -> str:
    """A token as a tick label: each space, newline or tab as a visible sign ('␣', '↵',
    '⇥'), and an empty token as '∅', so that no tick is blank. Every figure of the course
    labels tokens this way."""
    return "".join(VISIBLE.get(ch, ch) for ch in str(token)) or "∅"


def _labels(labels: Sequence[Any] | None, n: int, name: str) -> list[str]:
    if labels is None:
        return [str(i) for i in range(n)]
    if isinstance(labels, str):
        raise TypeError(
            f"{name} must be a sequence of {n} labels, got the string {labels!r}; "
            "pass list(text) for one label per character"
        )
    labels = [visible_label(lab) for lab in labels]
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} labels, expected {n} (one per row/column)")
    return labels


def _label_pair(
    query_labels: Sequence[Any] | None, key_labels: Sequence[Any] | None, T_q: int, T_k: int
) -> tuple[list[str], list[str]]:
    """Row and column labels; for square weights the key labels default to the query ones."""
    if key_labels is None and query_labels is not None and T_q == T_k:
        key_labels = query_labels
    return _labels(query_labels, T_q, "query_labels"), _labels(key_labels, T_k, "key_labels")


def _mask_2d(mask: Any, shape: tuple[int, int]) -> np.ndarray:
    """A bool (T_q, T_k) mask from anything that broadcasts to it (True = may attend)."""
    arr = as_numpy(mask, "mask")
    if arr.dtype != bool:
        raise ValueError(f"mask must be boolean (True = may attend), got dtype {arr.dtype}")
    orig = arr.shape
    while arr.ndim > 2 and arr.shape[0] == 1:
        arr = arr[0]
    try:
        return np.broadcast_to(arr, shape).copy()
    except ValueError:
        raise ValueError(
            f"mask of shape {orig} does not broadcast to the weights' shape {shape}"
        ) from None


def heatmap_data(
    weights: Any,
    query_labels: Sequence[Any] | None = None,
    key_labels: Sequence[Any] | None = None,
    mask: Any | None = None,
    *,
    name: str = "weights",
) -> HeatmapData:
    """Check and convert what a heatmap shows. ``weights``: tensor or array (T_q, T_k)
    (leading size-1 dims, a batch of one, are dropped); labels default to positions, and
    for square weights the key labels to the query labels; ``mask`` broadcasts to
    (T_q, T_k). Bad input raises ``ValueError``/``TypeError`` saying what was expected."""
    arr = squeeze_to(as_numpy(weights, name), 2, name, "(T_q, T_k)").astype(np.float64)
    if 0 in arr.shape:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    T_q, T_k = arr.shape
    q_labels, k_labels = _label_pair(query_labels, key_labels, T_q, T_k)
    return HeatmapData(arr, q_labels, k_labels, None if mask is None else _mask_2d(mask, arr.shape))


def axes_or_new(ax: Axes | None, figsize: tuple[float, float] | None = None) -> Axes:
    """``ax`` itself, or the axes of a new figure."""
    if ax is not None:
        return ax
    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _cmap(cmap: str | Colormap | None) -> Colormap:
    return plt.get_cmap(cmap if cmap is not None else "viridis").with_extremes(bad=MASKED_COLOR)


def _set_ticks(ax: Axes, query_labels: list[str], key_labels: list[str]) -> None:
    ax.set_xticks(range(len(key_labels)))
    long = max((len(s) for s in key_labels), default=0) > 2
    ax.set_xticklabels(key_labels, rotation=45 if long else 0,
                       ha="right" if long else "center", rotation_mode="anchor")
    ax.set_yticks(range(len(query_labels)))
    ax.set_yticklabels(query_labels)


class Heatmap:
    """A heatmap of attention weights on ``ax`` that can be redrawn in place.

    Attributes: ``ax``, ``image`` (the ``AxesImage``), ``colorbar`` (or None),
    ``texts`` (the numbers written in the cells when ``annotate``), ``legend`` (the
    "masked" key, created the first time a mask blocks a cell; None before), and
    ``data`` (the :class:`HeatmapData` shown now).
    """

    def __init__(
        self,
        ax: Axes,
        *,
        vmin: float = 0.0,
        vmax: float = 1.0,
        cmap: str | Colormap | None = None,
        colorbar: bool = True,
        annotate: bool = False,
    ) -> None:
        self.ax = ax
        self.annotate = annotate
        self.image: AxesImage = ax.imshow(
            np.ma.masked_all((1, 1)), cmap=_cmap(cmap), vmin=vmin, vmax=vmax,
            interpolation="nearest", aspect="equal",
        )
        self.colorbar: Colorbar | None = (
            ax.figure.colorbar(self.image, ax=ax, label="attention weight", shrink=0.9)
            if colorbar else None
        )
        self.texts: list[Text] = []
        self.legend: Legend | None = None
        self.data: HeatmapData | None = None

    @property
    def legend_shown(self) -> bool:
        """Whether the "masked" key is visible (some cell is blocked)."""
        return self.legend is not None and self.legend.get_visible()

    def show(self, data: HeatmapData, *, vmax: float | None = None) -> None:
        """Draw ``data`` (see :func:`heatmap_data`) in place: cells, extent, ticks, colour
        limits, cell numbers and the mask key. ``vmax=None`` keeps the upper colour limit
        unless a weight exceeds it."""
        arr = data.weights
        T_q, T_k = arr.shape
        blocked = np.zeros_like(arr, dtype=bool) if data.mask is None else ~data.mask
        self.image.set_data(np.ma.masked_array(arr, mask=blocked))
        self.image.set_extent((-0.5, T_k - 0.5, T_q - 0.5, -0.5))
        self.ax.set_xlim(-0.5, T_k - 0.5)
        self.ax.set_ylim(T_q - 0.5, -0.5)
        _set_ticks(self.ax, data.query_labels, data.key_labels)
        vmin, old_vmax = self.image.get_clim()
        if vmax is None:
            shown = arr[~blocked & np.isfinite(arr)]
            vmax = max(old_vmax, float(shown.max())) if shown.size else old_vmax
        self.image.set_clim(vmin, vmax)
        self._write_numbers(arr, blocked)
        self._show_mask_legend(bool(blocked.any()))
        self.data = data

    def _write_numbers(self, arr: np.ndarray, blocked: np.ndarray) -> None:
        for text in self.texts:
            text.remove()
        self.texts = []
        if not self.annotate:
            return
        vmin, vmax = self.image.get_clim()
        mid = vmin + 0.5 * (vmax - vmin)
        for (i, j), value in np.ndenumerate(arr):
            if blocked[i, j] or not np.isfinite(value):
                continue
            self.texts.append(self.ax.text(
                j, i, f"{value:.2f}", ha="center", va="center", fontsize=9,
                color="white" if value < mid else "black",
            ))

    def _show_mask_legend(self, show: bool) -> None:
        if self.legend is None:
            if not show:
                return
            handles = [Patch(facecolor=MASKED_COLOR, edgecolor="0.4", label="masked")]
            if self.colorbar is not None:
                self.legend = self.colorbar.ax.legend(
                    handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.02),
                    fontsize=9, frameon=False, handlelength=1.0)
            else:
                self.legend = self.ax.legend(
                    handles=handles, loc="upper left", bbox_to_anchor=(1.0, -0.02),
                    fontsize=9, frameon=False, handlelength=1.0)
        self.legend.set_visible(show)


def attention_heatmap(
    weights: Any,
    query_labels: Sequence[Any] | None = None,
    key_labels: Sequence[Any] | None = None,
    ax: Axes | None = None,
    mask: Any | None = None,
    title: str | None = None,
    vmin: float = 0.0,
    vmax: float | None = None,
    annotate: bool = False,
    *,
    cmap: str | Colormap | None = None,
    colorbar: bool = True,
    xlabel: str = "key (attended to)",
    ylabel: str = "query (attending)",
) -> Heatmap:
    """Draw attention weights (T_q, T_k) as a heatmap: row i = what query i attends to.

    Inputs as in :func:`heatmap_data`; blocked cells (``mask`` False) and NaN weights are
    grey, distinct from a weight of 0. ``vmax`` defaults to 1 for weights in [0, 1], else
    to their maximum. ``annotate`` writes each weight in its cell. Draws into ``ax`` if
    given, else into a new figure. Returns the :class:`Heatmap`.
    """
    data = heatmap_data(weights, query_labels, key_labels, mask)
    T_q, T_k = data.weights.shape
    if vmax is None:
        finite = data.weights[np.isfinite(data.weights)]
        vmax = 1.0 if finite.size == 0 or finite.max() <= 1.0 else float(finite.max())
    big = max(T_q, T_k) > 10
    ax = axes_or_new(ax, figsize=(min(12.0, 2.0 + 0.4 * T_k), min(10.0, 1.5 + 0.35 * T_q))
                     if big else None)
    heatmap = Heatmap(ax, vmin=vmin, vmax=vmax, cmap=cmap, colorbar=colorbar, annotate=annotate)
    heatmap.show(data, vmax=vmax)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title if title is not None else "Attention weights")
    return heatmap


def layers_and_heads(weights: Any) -> np.ndarray:
    """Attention weights of every layer and head as float64 (L, H, T_q, T_k): accepts
    (L, H, T_q, T_k), (H, T_q, T_k) for one layer, or (L, 1, H, T_q, T_k) (a batch of one)."""
    arr = as_numpy(weights, "weights")
    if arr.ndim == 5 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim == 3:
        arr = arr[None]
    if arr.ndim != 4 or 0 in arr.shape:
        raise ValueError(
            f"weights must be (L, H, T_q, T_k) or (H, T_q, T_k), got shape {arr.shape}"
        )
    return arr.astype(np.float64)


def attention_grid(weights: Any, query_labels: Sequence[Any] | None = None,
                   key_labels: Sequence[Any] | None = None,
                   layer_names: Sequence[str] | None = None, *,
                   head_names: Sequence[str] | None = None, mask: Any | None = None,
                   title: str | None = None, cell_size: float = 2.4) -> Figure:
    """A grid of heatmaps, one row per layer and one column per head.

    ``weights``: (L, H, T_q, T_k), or (H, T_q, T_k) for a single layer. Labels as in
    :func:`attention_heatmap`; ``mask`` broadcasts to (T_q, T_k). One shared colour bar.
    Returns the new figure.
    """
    arr = layers_and_heads(weights)
    L, H, T_q, T_k = arr.shape
    q_labels, k_labels = _label_pair(query_labels, key_labels, T_q, T_k)
    layer_names = (
        [f"layer {i}" for i in range(L)] if layer_names is None
        else _labels(layer_names, L, "layer_names")
    )
    head_names = (
        [f"head {h}" for h in range(H)] if head_names is None
        else _labels(head_names, H, "head_names")
    )
    vmax = 1.0 if np.nanmax(arr) <= 1.0 else float(np.nanmax(arr))
    fig, axes = plt.subplots(
        L, H, figsize=(cell_size * H + 1.0, cell_size * L + 0.6), squeeze=False,
        layout="constrained",
    )
    heatmap = None
    for layer in range(L):
        for head in range(H):
            ax = axes[layer, head]
            heatmap = attention_heatmap(
                arr[layer, head], q_labels, k_labels, ax=ax, mask=mask, vmax=vmax,
                title=f"{layer_names[layer]}, {head_names[head]}" if L > 1 else head_names[head],
                colorbar=False, xlabel="key" if layer == L - 1 else "",
                ylabel="query" if head == 0 else "",
            )
            if heatmap.legend is not None:
                heatmap.legend.remove()
            if head > 0:
                ax.set_yticklabels([])
            if layer < L - 1:
                ax.set_xticklabels([])
    fig.colorbar(heatmap.image, ax=axes, label="attention weight", shrink=0.8)
    fig.suptitle(title if title is not None else "Attention weights per layer and head")
    return fig


def plot_mask(mask: Any, query_labels: Sequence[Any] | None = None,
              key_labels: Sequence[Any] | None = None, ax: Axes | None = None, *,
              title: str = "Mask (True = may attend)", annotate: bool = True) -> AxesImage:
    """Draw a boolean mask (T_q, T_k): blue = may attend, grey = blocked.

    Leading size-1 dims are dropped, so a (1, 1, T, T) mask is fine. ``annotate`` writes
    the additive form in each cell (0 allowed, -inf blocked). Returns the ``AxesImage``.
    """
    arr = as_numpy(mask, "mask")
    if arr.dtype != bool:
        raise ValueError(f"mask must be boolean (True = may attend), got dtype {arr.dtype}")
    arr = squeeze_to(arr, 2, "mask", "(T_q, T_k)")
    T_q, T_k = arr.shape
    q_labels, k_labels = _label_pair(query_labels, key_labels, T_q, T_k)
    ax = axes_or_new(ax)
    image = ax.imshow(
        arr.astype(np.float64), cmap=ListedColormap([MASKED_COLOR, ALLOWED_COLOR]),
        vmin=0, vmax=1, interpolation="nearest", aspect="equal",
    )
    _set_ticks(ax, q_labels, k_labels)
    if annotate:
        for (i, j), allowed in np.ndenumerate(arr):
            ax.text(j, i, "0" if allowed else "-inf", ha="center", va="center",
                    fontsize=9, color="white" if allowed else "black")
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.set_title(title)
    ax.legend(
        handles=[
            Patch(facecolor=ALLOWED_COLOR, label="may attend (True)"),
            Patch(facecolor=MASKED_COLOR, label="blocked (False)"),
        ],
        loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=9, frameon=False,
    )
    return image


__all__ = [
    "ALLOWED_COLOR",
    "MASKED_COLOR",
    "Heatmap",
    "HeatmapData",
    "attention_grid",
    "attention_heatmap",
    "axes_or_new",
    "heatmap_data",
    "layers_and_heads",
    "plot_mask",
    "visible_label",
]
