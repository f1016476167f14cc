"""The plots the course draws again and again.

Attention heatmaps put the **keys** (the tokens attended to) on the x axis and the
**queries** (the tokens doing the attending) on the y axis, so row ``i`` of the picture
is row ``i`` of the weight matrix A and sums to one. Cells blocked by a mask are drawn
in grey (matplotlib's "bad" colour), never as a zero weight, so a learner can tell
"not allowed" from "allowed but ignored".

Every function accepts torch tensors or numpy arrays, validates shapes (``ValueError``
naming what was expected and what was given), labels its axes, and draws into ``ax``
when one is passed, else into a new figure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import Colormap, ListedColormap
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.legend import Legend
from matplotlib.patches import Patch

__all__ = [
    "MASKED_COLOR",
    "as_numpy",
    "attention_grid",
    "attention_heatmap",
    "mask_legend",
    "plot_gradient_norms",
    "plot_loss_curves",
    "plot_mask",
    "plot_positional_encoding",
    "set_heatmap",
]

MASKED_COLOR = "#c8c8c8"  # light grey: far from every colour viridis gives a weight
ALLOWED_COLOR = "#3b8bc2"


def as_numpy(x: Any, name: str = "array") -> np.ndarray:
    """A numpy copy of a torch tensor (detached, on the CPU), numpy array or nested list."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        torch = None
    if torch is not None and isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.dtype == torch.bool:
            return x.numpy().copy()
        return x.to(torch.float64).numpy().copy()
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"{name} must be a torch tensor or numpy array, got {type(x).__name__}"
        ) from e
    if arr.dtype != bool and not np.issubdtype(arr.dtype, np.number):
        raise TypeError(
            f"{name} must be numeric (a tensor or array), got dtype {arr.dtype} from "
            f"{type(x).__name__}"
        )
    return arr


def _squeeze_to(arr: np.ndarray, ndim: int, name: str, expected: str) -> np.ndarray:
    """Drop leading size-1 dims (a batch of one) until ``arr`` has ``ndim`` dims."""
    shape = arr.shape
    while arr.ndim > ndim and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D {expected}, got shape {shape}")
    return arr


def _weights_2d(weights: Any, name: str = "weights") -> np.ndarray:
    arr = _squeeze_to(as_numpy(weights, name), 2, name, "(T_q, T_k)")
    if arr.dtype == bool:
        arr = arr.astype(np.float64)
    if 0 in arr.shape:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    return arr.astype(np.float64)


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


def _labels(labels: Sequence[Any] | None, n: int, name: str) -> list[str]:
    if labels is None:
        return [str(i) for i in range(n)]
    if isinstance(labels, str):
        raise TypeError(
            f"{name} must be a sequence of {n} labels, got the string {labels!r}; "
            "pass list(text) for one label per character"
        )
    labels = [str(lab) for lab in labels]
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


def _cmap(cmap: str | Colormap | None) -> Colormap:
    return plt.get_cmap(cmap if cmap is not None else "viridis").with_extremes(bad=MASKED_COLOR)


def _axes(ax: Axes | None, figsize: tuple[float, float] | None = None) -> Axes:
    if ax is not None:
        return ax
    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _set_ticks(ax: Axes, query_labels: list[str], key_labels: list[str]) -> None:
    ax.set_xticks(range(len(key_labels)))
    long = max((len(s) for s in key_labels), default=0) > 2
    ax.set_xticklabels(
        key_labels,
        rotation=45 if long else 0,
        ha="right" if long else "center",
        rotation_mode="anchor",
    )
    ax.set_yticks(range(len(query_labels)))
    ax.set_yticklabels(query_labels)


def _annotate(image: AxesImage, data: np.ma.MaskedArray, fmt: str) -> None:
    for text in getattr(image, "_minitx_texts", []):
        text.remove()
    ax = image.axes
    vmin, vmax = image.get_clim()
    mid = vmin + 0.5 * (vmax - vmin)
    texts = []
    for i in range(data.shape[0]):
        for j in range(data.shape[1]):
            if data.mask[i, j] or not np.isfinite(data.data[i, j]):
                continue
            value = data.data[i, j]
            texts.append(
                ax.text(
                    j, i, format(value, fmt), ha="center", va="center", fontsize=8,
                    color="white" if value < mid else "black",
                )
            )
    image._minitx_texts = texts


def set_heatmap(
    image: AxesImage,
    weights: Any,
    query_labels: Sequence[Any] | None = None,
    key_labels: Sequence[Any] | None = None,
    mask: Any | None = None,
    *,
    vmax: float | None = None,
    annotate: bool | None = None,
) -> np.ma.MaskedArray:
    """Redraw an existing heatmap in place (no new figure): data, extent, ticks, colour limits.

    ``weights`` (T_q, T_k) may have a different shape from the image's current data (a
    longer sentence); ``mask`` broadcasts to (T_q, T_k), True = may attend. ``vmax=None``
    keeps the image's upper colour limit unless a weight exceeds it. Returns the masked
    array now shown.
    """
    arr = _weights_2d(weights)
    T_q, T_k = arr.shape
    q_labels, k_labels = _label_pair(query_labels, key_labels, T_q, T_k)
    blocked = np.zeros_like(arr, dtype=bool) if mask is None else ~_mask_2d(mask, arr.shape)
    data = np.ma.masked_array(arr, mask=blocked)
    image.set_data(data)
    image.set_extent((-0.5, T_k - 0.5, T_q - 0.5, -0.5))
    ax = image.axes
    ax.set_xlim(-0.5, T_k - 0.5)
    ax.set_ylim(T_q - 0.5, -0.5)
    _set_ticks(ax, q_labels, k_labels)
    vmin, old_vmax = image.get_clim()
    shown = arr[~blocked & np.isfinite(arr)]
    if vmax is None:
        vmax = old_vmax
        if shown.size and shown.max() > vmax:
            vmax = float(shown.max())
    image.set_clim(vmin, vmax)
    if annotate is None:
        annotate = bool(getattr(image, "_minitx_annotate", False))
    image._minitx_annotate = annotate
    if annotate or getattr(image, "_minitx_texts", None):
        _annotate(image, data if annotate else np.ma.masked_all(arr.shape), ".2f")
    _show_mask_legend(image, bool(blocked.any()))
    return data


def _show_mask_legend(image: AxesImage, show: bool) -> None:
    """A "masked" key under the colour bar (or beside the axes), shown while cells are."""
    legend = getattr(image, "_minitx_mask_legend", None)
    if legend is None:
        if not show:
            return
        handles = [Patch(facecolor=MASKED_COLOR, edgecolor="0.4", label="masked")]
        cbar = getattr(image, "colorbar", None)
        if cbar is not None:
            legend = cbar.ax.legend(handles=handles, loc="upper center",
                                    bbox_to_anchor=(0.5, -0.02), fontsize=8, frameon=False,
                                    handlelength=1.0)
        else:
            legend = image.axes.legend(handles=handles, loc="upper left",
                                       bbox_to_anchor=(1.0, -0.02), fontsize=8,
                                       frameon=False, handlelength=1.0)
        image._minitx_mask_legend = legend
    legend.set_visible(show)


def mask_legend(image: AxesImage) -> Legend | None:
    """The "masked" legend of a heatmap (a ``Legend``), or None if it never had a mask."""
    return getattr(image, "_minitx_mask_legend", None)


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
) -> AxesImage:
    """Draw attention weights (T_q, T_k) as a heatmap: row i = what query i attends to.

    ``weights``: tensor or array (T_q, T_k) (leading size-1 dims, a batch of one, are
    dropped). ``query_labels`` (T_q) and ``key_labels`` (T_k) label the rows and columns
    (default: positions; for square weights the key labels default to the query labels).
    ``mask`` bool, broadcastable to (T_q, T_k), True = may attend:
    blocked cells are drawn grey (NaN weights too), distinct from a weight of 0.
    ``vmax`` defaults to 1 for weights in [0, 1], else to their maximum. ``annotate``
    writes each weight in its cell. Returns the ``AxesImage`` (its colour bar is
    ``image.colorbar``).
    """
    arr = _weights_2d(weights)
    T_q, T_k = arr.shape
    q_labels, k_labels = _label_pair(query_labels, key_labels, T_q, T_k)
    if mask is not None:
        _mask_2d(mask, arr.shape)  # validate before drawing anything
    if vmax is None:
        finite = arr[np.isfinite(arr)]
        vmax = 1.0 if finite.size == 0 or finite.max() <= 1.0 else float(finite.max())
    big = max(T_q, T_k) > 10
    ax = _axes(ax, figsize=(min(12.0, 2.0 + 0.4 * T_k), min(10.0, 1.5 + 0.35 * T_q))
               if big else None)
    image = ax.imshow(
        np.ma.masked_array(arr, mask=np.zeros_like(arr, dtype=bool)),
        cmap=_cmap(cmap), vmin=vmin, vmax=vmax, interpolation="nearest", aspect="equal",
    )
    if colorbar:
        ax.figure.colorbar(image, ax=ax, label="attention weight", shrink=0.9)
    set_heatmap(image, arr, q_labels, k_labels, mask, vmax=vmax, annotate=annotate)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title if title is not None else "Attention weights")
    return image


def attention_grid(
    weights: Any,
    query_labels: Sequence[Any] | None = None,
    key_labels: Sequence[Any] | None = None,
    layer_names: Sequence[str] | None = None,
    *,
    head_names: Sequence[str] | None = None,
    mask: Any | None = None,
    title: str | None = None,
    cell_size: float = 2.4,
) -> Figure:
    """A grid of heatmaps, one row per layer and one column per head.

    ``weights``: (L, H, T_q, T_k), or (H, T_q, T_k) for a single layer. Labels as in
    :func:`attention_heatmap`; ``mask`` broadcasts to (T_q, T_k). One shared colour bar.
    Returns the new figure.
    """
    arr = as_numpy(weights, "weights")
    if arr.ndim == 3:
        arr = arr[None]
    if arr.ndim != 4 or 0 in arr.shape:
        raise ValueError(
            f"weights must be (L, H, T_q, T_k) or (H, T_q, T_k), got shape {arr.shape}"
        )
    arr = arr.astype(np.float64)
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
    image = None
    for layer in range(L):
        for head in range(H):
            ax = axes[layer, head]
            image = attention_heatmap(
                arr[layer, head], q_labels, k_labels, ax=ax, mask=mask, vmax=vmax,
                title=f"{layer_names[layer]}, {head_names[head]}" if L > 1 else head_names[head],
                colorbar=False, xlabel="key" if layer == L - 1 else "",
                ylabel="query" if head == 0 else "",
            )
            if ax.get_legend() is not None:
                ax.get_legend().remove()
            if head > 0:
                ax.set_yticklabels([])
            if layer < L - 1:
                ax.set_xticklabels([])
    fig.colorbar(image, ax=axes, label="attention weight", shrink=0.8)
    fig.suptitle(title if title is not None else "Attention weights per layer and head")
    return fig


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
    ax = _axes(ax)
    for name, value in history.items():
        steps, values = _curve(str(name), value)
        ax.plot(steps, values, label=str(name))
    for name, y in (reference or {}).items():
        ax.axhline(float(y), color="0.4", linestyle=":", linewidth=1.0, label=str(name))
    if log:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    return ax


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

    ax = _axes(ax)
    for label, v in norms.items():
        ax.plot(d, values_for(f"norms[{label!r}]", v), marker="o", markersize=3, label=str(label))
    if estimate is not None:
        estimates = estimate if isinstance(estimate, Mapping) else {"estimate": estimate}
        for label, v in estimates.items():
            ax.plot(d, values_for(f"estimate[{label!r}]", v), linestyle="--", color="0.3",
                    linewidth=1.2, label=str(label))
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    return ax


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
    arr = _squeeze_to(as_numpy(pe, "pe"), 2, "pe", "(T, d)").astype(np.float64)
    if 0 in arr.shape:
        raise ValueError(f"pe must not be empty, got shape {arr.shape}")
    lim = max(1.0, float(np.nanmax(np.abs(arr))))
    ax = _axes(ax)
    image = ax.imshow(arr, cmap=cmap, vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest")
    ax.set_xlabel("embedding dimension")
    ax.set_ylabel("position")
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, label="value")
    return image


def plot_mask(
    mask: Any,
    query_labels: Sequence[Any] | None = None,
    key_labels: Sequence[Any] | None = None,
    ax: Axes | None = None,
    *,
    title: str = "Mask (True = may attend)",
    annotate: bool = True,
) -> AxesImage:
    """Draw a boolean mask (T_q, T_k): blue = may attend, grey = blocked.

    Leading size-1 dims are dropped, so a (1, 1, T, T) mask is fine. ``annotate`` writes
    the additive form in each cell (0 allowed, -inf blocked). Returns the ``AxesImage``.
    """
    arr = as_numpy(mask, "mask")
    if arr.dtype != bool:
        raise ValueError(f"mask must be boolean (True = may attend), got dtype {arr.dtype}")
    arr = _squeeze_to(arr, 2, "mask", "(T_q, T_k)")
    T_q, T_k = arr.shape
    q_labels, k_labels = _label_pair(query_labels, key_labels, T_q, T_k)
    ax = _axes(ax)
    image = ax.imshow(
        arr.astype(np.float64), cmap=ListedColormap([MASKED_COLOR, ALLOWED_COLOR]),
        vmin=0, vmax=1, interpolation="nearest", aspect="equal",
    )
    _set_ticks(ax, q_labels, k_labels)
    if annotate:
        for i in range(T_q):
            for j in range(T_k):
                ax.text(j, i, "0" if arr[i, j] else "-inf", ha="center", va="center",
                        fontsize=8, color="white" if arr[i, j] else "black")
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.set_title(title)
    ax.legend(
        handles=[
            Patch(facecolor=ALLOWED_COLOR, label="may attend (True)"),
            Patch(facecolor=MASKED_COLOR, label="blocked (False)"),
        ],
        loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False,
    )
    return image
