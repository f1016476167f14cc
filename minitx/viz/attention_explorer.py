"""The attention explorer widget: controls feeding a compute function, drawn as a heatmap.

An :class:`AttentionExplorer` is a few controls (a sentence, sliders, dropdowns) feeding
a *compute* function that returns attention weights; the explorer draws them as a
heatmap. Moving a control re-runs the compute function (its results are cached) and
redraws the **existing** image in place (``AxesImage.set_data``, new tick labels, new
extent when the sentence changes length), then shows the figure as PNG bytes in an
``ipywidgets.Image``. That needs no ipympl and no JupyterLab extension beyond
ipywidgets itself, and it renders (as a static figure) under nbconvert and nbval.

The course's explorers (:mod:`minitx.viz.explorer`) are built on it.
"""

from __future__ import annotations

import io
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.image import AxesImage

from minitx.viz.heatmap import HeatmapData, attention_heatmap, heatmap_data

# (weights (T_q, T_k), query_labels, key_labels) or the same with a mask
ComputeResult = tuple[Any, ...]
MAX_TOKENS = 40


@dataclass(frozen=True)
class Rendered:
    """One render of an explorer: the control values it was drawn for, its PNG bytes and
    the weights (T_q, T_k) it shows.

    A control's ``value`` changes before its observers run, and ipykernel may answer an
    execute request while a widget message is still being handled; so ``controls[...]``
    and ``png`` read one after the other can belong to two different renders. This record
    cannot: it is replaced whole, after the PNG exists."""

    values: dict[str, Any]
    png: bytes
    weights: np.ndarray


class AttentionExplorer:
    """A heatmap of attention weights driven by ipywidgets controls.

    ``compute(**values)`` is called with the current value of every control (keyword =
    the control's name in ``controls``) and returns ``(weights (T_q, T_k), query_labels,
    key_labels)`` or ``(weights, query_labels, key_labels, mask)`` with ``mask`` bool,
    broadcastable to (T_q, T_k), True = may attend. Results are cached per combination
    of values (``cache_size`` of them). If ``compute`` raises ``ValueError`` or
    ``TypeError`` (say, an empty sentence), the message is shown under the image and the
    previous picture stays.

    ``title``: a string, or a function of the values dict returning one. The PNG is
    drawn at ``dpi * png_scale`` and shown at ``figsize * dpi`` CSS pixels (sharp on
    high-density screens). Controls whose description width is unset get "initial",
    so their labels are not cut.

    Attributes: ``controls`` (dict name -> widget), ``figure``, ``ax``, ``image``
    (the ``AxesImage``), ``weights`` (numpy (T_q, T_k)), ``query_labels``,
    ``key_labels``, ``mask`` (numpy bool or None; both arrays read-only), ``png``
    (bytes of the last render), ``rendered`` (a :class:`Rendered`: the control values
    and PNG of the last render, replaced in one assignment so that a reader in another
    thread never sees the values of one render with the picture of another),
    ``image_widget`` (``ipywidgets.Image``), ``status``
    (``ipywidgets.HTML``), ``widget`` (the box to display), ``n_computes`` and
    ``n_renders`` (counters).
    """

    def __init__(
        self,
        compute: Callable[..., ComputeResult],
        controls: Mapping[str, widgets.ValueWidget],
        *,
        title: str | Callable[[dict[str, Any]], str] | None = None,
        figsize: tuple[float, float] = (5.6, 4.6),
        dpi: int = 100,
        png_scale: float = 1.5,
        vmax: float = 1.0,
        annotate: bool = False,
        cache_size: int = 128,
    ) -> None:
        if not callable(compute):
            raise TypeError(f"compute must be callable, got {type(compute).__name__}")
        for name, control in controls.items():
            if not isinstance(control, widgets.ValueWidget):
                raise TypeError(
                    f"controls[{name!r}] must be an ipywidgets value widget, "
                    f"got {type(control).__name__}"
                )
        self.compute = compute
        self.controls: dict[str, widgets.ValueWidget] = dict(controls)
        self.title = title
        self.annotate = annotate
        self.cache_size = cache_size
        self.png_dpi = dpi * png_scale
        self._cache: OrderedDict[tuple, tuple] = OrderedDict()
        self.n_computes = 0
        self.n_renders = 0

        data = self._compute(self.values)  # errors in the default state are real errors
        self.figure = Figure(figsize=figsize, dpi=dpi, layout="constrained")
        FigureCanvasAgg(self.figure)
        self.ax = self.figure.add_subplot()
        self.heatmap = attention_heatmap(
            data.weights, data.query_labels, data.key_labels, ax=self.ax, mask=data.mask,
            vmax=vmax, annotate=annotate, title=self._title(self.values),
        )
        self._store(data)

        width, height = (round(x * dpi) for x in figsize)
        self.image_widget = widgets.Image(
            format="png", width=width, height=height,
            layout=widgets.Layout(width=f"{width}px", height=f"{height}px",
                                  align_self="flex-start"),
        )
        for control in self.controls.values():
            style = getattr(control, "style", None)
            if style is not None and getattr(style, "description_width", None) == "":
                style.description_width = "initial"
        self.status = widgets.HTML(value="")
        self.widget = widgets.VBox(
            [widgets.HBox(list(self.controls.values()),
                          layout=widgets.Layout(flex_flow="row wrap")),
             self.image_widget, self.status]
        )
        # CSS classes let a browser test find the parts: .minitx-control-temperature, ...
        self.widget.add_class("minitx-explorer")
        self.image_widget.add_class("minitx-explorer-image")
        for name, control in self.controls.items():
            control.add_class("minitx-control-" + re.sub(r"[^A-Za-z0-9_-]", "-", name))
        self._render(self.values)
        for control in self.controls.values():
            control.observe(self._on_change, names="value")

    # -- state ---------------------------------------------------------------------------
    @property
    def values(self) -> dict[str, Any]:
        """The current value of every control, by name."""
        return {name: control.value for name, control in self.controls.items()}

    def _title(self, values: dict[str, Any]) -> str:
        if callable(self.title):
            return self.title(values)
        return self.title if self.title is not None else "Attention weights"

    @property
    def image(self) -> AxesImage:
        """The heatmap's ``AxesImage``."""
        return self.heatmap.image

    def _compute(self, values: dict[str, Any]) -> HeatmapData:
        key = tuple(values.items())
        try:
            hash(key)
        except TypeError:
            key = None
        if key is not None and key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        result = self.compute(**values)
        self.n_computes += 1
        if not isinstance(result, tuple) or len(result) not in (3, 4):
            raise TypeError(
                "compute must return a tuple (weights, query_labels, key_labels[, mask]), "
                f"got {type(result).__name__} {result!r:.80}"
            )
        out = heatmap_data(*result)
        for array in (out.weights, out.mask):
            if array is not None:
                array.setflags(write=False)  # cached and shown: copy before changing it
        if key is not None:
            self._cache[key] = out
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return out

    def _store(self, data: HeatmapData) -> None:
        self.weights, self.query_labels, self.key_labels, self.mask = data

    # -- drawing -------------------------------------------------------------------------
    def _on_change(self, change: dict[str, Any]) -> None:
        self.update()

    def update(self) -> bool:
        """Recompute for the current control values and redraw; False if compute refused."""
        values = self.values
        try:
            data = self._compute(values)
        except (ValueError, TypeError) as e:
            self.status.value = f"<span style='color:#b00'>{_escape(str(e))}</span>"
            return False
        self.status.value = ""
        legend_before = self.heatmap.legend_shown
        self.heatmap.show(data)
        relayout = (data.query_labels, data.key_labels) != (
            self.query_labels, self.key_labels
        ) or self.heatmap.legend_shown != legend_before
        self.ax.set_title(self._title(values))
        self._store(data)
        self._render(values, relayout=relayout)
        return True

    def redraw(self) -> None:
        """Draw the current state again, e.g. after changing the axes' labels."""
        self._render(self.values)

    def _render(self, values: dict[str, Any], relayout: bool = True) -> None:
        # Constrained layout costs about as much as drawing: run it only when the tick
        # labels change, and keep the axes where it put them otherwise.
        if relayout:
            self.figure.set_layout_engine("constrained")
        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", dpi=self.png_dpi)
        self.figure.set_layout_engine("none")
        self.png = buf.getvalue()
        self.rendered = Rendered(dict(values), self.png, self.weights)
        self.image_widget.value = self.png
        self.n_renders += 1

    def static_figure(self, figsize: tuple[float, float] | None = None) -> Figure:
        """The current state drawn in a new pyplot figure (for ``plt.show()``), e.g. the
        default view under the widget, for readers where widgets do not render."""
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=figsize or self.figure.get_size_inches(),
                               layout="constrained")
        attention_heatmap(
            self.weights, self.query_labels, self.key_labels, ax=ax, mask=self.mask,
            vmax=self.image.get_clim()[1], annotate=self.annotate,
            title=self._title(self.values),
            xlabel=self.ax.get_xlabel(), ylabel=self.ax.get_ylabel(),
        )
        return fig

    # -- display -------------------------------------------------------------------------
    def __repr__(self) -> str:
        T_q, T_k = self.weights.shape
        return (
            f"AttentionExplorer(controls={list(self.controls)}, weights {T_q}x{T_k})"
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict, dict] | dict:
        """Display the widget; the text fallback is a short, stable description."""
        bundle = self.widget._repr_mimebundle_(**kwargs)
        data, meta = bundle if isinstance(bundle, tuple) else (bundle, {})
        data = dict(data or {})
        data["text/plain"] = repr(self)
        return data, meta


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


__all__ = ["MAX_TOKENS", "AttentionExplorer", "ComputeResult", "Rendered"]
