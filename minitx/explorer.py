"""Interactive attention explorers (ipywidgets).

An :class:`AttentionExplorer` is a few controls (a sentence, sliders, dropdowns) feeding
a *compute* function that returns attention weights; the explorer draws them as a
heatmap. Moving a control re-runs the compute function (its results are cached) and
redraws the **existing** image in place (``AxesImage.set_data``, new tick labels, new
extent when the sentence changes length), then shows the figure as PNG bytes in an
``ipywidgets.Image``. That needs no ipympl and no JupyterLab extension beyond
ipywidgets itself, and it renders (as a static figure) under nbconvert and nbval.

Everything is reachable from Python, so tests and notebooks can drive it::

    ex = explore_self_attention("the bank of the river")
    ex.controls["temperature"].value = 0.5   # redraws
    ex.weights                               # (T, T) numpy array now shown
    ex.image.get_array()                     # the same, as drawn
    ex.widget                                # display this in a notebook

Factories for the course: :func:`explore_self_attention` (04),
:func:`explore_masks` (05), :func:`explore_heads` (06, 08), :func:`explore_gpt` (08),
:func:`explore_alignments` (03).
"""

from __future__ import annotations

import io
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from torch import Tensor

from minitx import viz
from minitx.heatmap import HeatmapData, heatmap_data, layers_and_heads, visible_label
from minitx.masks import MASK_KINDS, causal_mask, mask_of_kind
from minitx.runtime import evaluating
from minitx.tokenizer import word_tokenize
from minitx.word_attention import embed_tokens, self_attention_weights

__all__ = [
    "AttentionExplorer",
    "Rendered",
    "explore_alignments",
    "explore_gpt",
    "explore_heads",
    "explore_masks",
    "explore_self_attention",
]

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
        self.heatmap = viz.attention_heatmap(
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
        viz.attention_heatmap(
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


# ---------------------------------------------------------------------------------------
# Self-attention over a sentence you type (notebook 04)
# ---------------------------------------------------------------------------------------


def _tokens_of(sentence: str, tokenizer: Callable[[str], Sequence[str]]) -> list[str]:
    tokens = list(tokenizer(sentence))
    if not tokens:
        raise ValueError("type a sentence: it has no tokens")
    if len(tokens) > MAX_TOKENS:
        raise ValueError(f"at most {MAX_TOKENS} tokens, got {len(tokens)}")
    return tokens


def _text(value: str, description: str = "sentence") -> widgets.Text:
    return widgets.Text(
        value=value, description=description, continuous_update=False,
        layout=widgets.Layout(width="26em"),
    )


def _temperature(value: float, bounds: tuple[float, float], step: float) -> widgets.FloatSlider:
    # A linear slider: values set from code on its grid (0.3, 2.5) stay exactly as set.
    # The browser snaps a value to the grid and would send a snapped one back.
    lo, hi = bounds
    if not 0 < lo <= value <= hi:
        raise ValueError(f"temperature {value} must lie in the range {bounds}, with 0 < min")
    return widgets.FloatSlider(
        value=value, min=lo, max=hi, step=step, description="temperature",
        readout_format=".2f",
    )


def explore_self_attention(
    sentence: str = "the bank of the river",
    *,
    d_model: int = 16,
    d_k: int = 8,
    d_k_options: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128),
    temperature: float = 1.0,
    temperature_range: tuple[float, float] = (0.05, 5.0),
    temperature_step: float = 0.05,
    n_heads: int = 1,
    scaled: bool | None = True,
    seed: int = 0,
    tokenizer: Callable[[str], Sequence[str]] = word_tokenize,
    embed: Callable[[list[str]], Tensor] | None = None,
    annotate: bool = False,
) -> AttentionExplorer:
    """Self-attention of one head over a sentence you type.

    Tokens come from ``tokenizer(sentence)`` (default: words and punctuation), the
    inputs X (T, d_model) from ``embed(tokens)`` (default: :func:`embed_tokens` with
    ``d_model`` and ``seed``), and A from :func:`self_attention_weights` with fixed
    random projections (W_Q, W_K, W_V depend on d_model, d_k, head and seed only).

    Controls: ``sentence`` (Text, applied on Enter), ``d_k`` (Dropdown of
    ``d_k_options``), ``temperature`` (slider over ``temperature_range`` in steps of
    ``temperature_step``), ``head`` (Dropdown, only when ``n_heads > 1``), ``scaled``
    (Checkbox "divide by sqrt(d_k)"; left out when ``scaled=None``, then always scaled).
    """
    if d_k not in d_k_options:
        raise ValueError(f"d_k={d_k} is not one of d_k_options {tuple(d_k_options)}")
    if n_heads < 1:
        raise ValueError(f"n_heads must be >= 1, got {n_heads}")
    embed = embed or (lambda tokens: embed_tokens(tokens, d_model, seed))

    controls: dict[str, widgets.ValueWidget] = {
        "sentence": _text(sentence),
        "d_k": widgets.Dropdown(options=list(d_k_options), value=d_k, description="d_k"),
        "temperature": _temperature(temperature, temperature_range, temperature_step),
    }
    if n_heads > 1:
        controls["head"] = widgets.Dropdown(options=list(range(n_heads)), value=0,
                                            description="head")
    if scaled is not None:
        controls["scaled"] = widgets.Checkbox(value=scaled, description="divide by √d_k")

    embedded: dict[str, tuple[list[str], Tensor]] = {}

    def compute(sentence: str, d_k: int, temperature: float, head: int = 0,
                scaled: bool = True) -> ComputeResult:
        if sentence not in embedded:
            tokens = _tokens_of(sentence, tokenizer)
            embedded[sentence] = (tokens, torch.as_tensor(embed(tokens)))
        tokens, X = embedded[sentence]
        A = self_attention_weights(X, d_k, temperature, head, seed, scaled=scaled)
        return A, tokens, tokens

    def title(v: dict[str, Any]) -> str:
        parts = [f"d_k={v['d_k']}", f"temperature {v['temperature']:.2f}"]
        if "head" in v:
            parts.append(f"head {v['head']}")
        if not v.get("scaled", True):
            parts.append("unscaled")
        return "Self-attention, " + ", ".join(parts)

    return AttentionExplorer(compute, controls, title=title, annotate=annotate)


# ---------------------------------------------------------------------------------------
# Masks (notebook 05)
# ---------------------------------------------------------------------------------------


def explore_masks(
    sentence: str = "the cat sat on the mat",
    *,
    mask_type: str = "causal",
    n_pad: int = 2,
    max_pad: int = 6,
    pad_token: str = "<pad>",
    d_model: int = 16,
    d_k: int = 8,
    temperature: float = 1.0,
    seed: int = 0,
    tokenizer: Callable[[str], Sequence[str]] = word_tokenize,
    annotate: bool = True,
) -> AttentionExplorer:
    """Self-attention over a sentence padded with ``n_pad`` pad tokens, under a mask.

    Controls: ``sentence`` (Text), ``mask_type`` (Dropdown of :data:`MASK_KINDS`),
    ``n_pad`` (IntSlider 0..``max_pad``). Weights come from
    :func:`self_attention_weights` with the mask of :func:`minitx.masks.mask_of_kind`; blocked cells
    show grey, and each row of allowed weights sums to 1.
    """
    if mask_type not in MASK_KINDS:
        raise ValueError(f"mask_type must be one of {MASK_KINDS}, got {mask_type!r}")
    if not 0 <= n_pad <= max_pad:
        raise ValueError(f"n_pad must be in [0, max_pad={max_pad}], got {n_pad}")
    controls = {
        "sentence": _text(sentence),
        "mask_type": widgets.Dropdown(options=list(MASK_KINDS), value=mask_type,
                                      description="mask"),
        "n_pad": widgets.IntSlider(value=n_pad, min=0, max=max_pad, description="padding"),
    }

    def compute(sentence: str, mask_type: str, n_pad: int) -> ComputeResult:
        tokens = _tokens_of(sentence, tokenizer)
        n_real = len(tokens)
        tokens = tokens + [pad_token] * n_pad
        X = embed_tokens(tokens, d_model, seed)
        mask = mask_of_kind(mask_type, len(tokens), n_real)
        A = self_attention_weights(X, d_k, temperature, 0, seed, mask=mask)
        return A, tokens, tokens, mask

    return AttentionExplorer(
        compute, controls, annotate=annotate,
        title=lambda v: f"Self-attention, mask: {v['mask_type']}",
    )


# ---------------------------------------------------------------------------------------
# Layers and heads (notebooks 06 and 08), alignments (notebook 03)
# ---------------------------------------------------------------------------------------


def _names(names: Sequence[str] | None, n: int, what: str) -> list[tuple[str, int]]:
    if names is None:
        return [(f"{what} {i}", i) for i in range(n)]
    names = [str(s) for s in names]
    if len(names) != n:
        raise ValueError(f"got {len(names)} {what} names for {n} {what}s")
    return [(s, i) for i, s in enumerate(names)]


def explore_heads(
    weights: Any,
    query_labels: Sequence[Any] | None = None,
    key_labels: Sequence[Any] | None = None,
    *,
    layer_names: Sequence[str] | None = None,
    head_names: Sequence[str] | None = None,
    mask: Any | None = None,
    title: str = "Attention",
    annotate: bool = False,
) -> AttentionExplorer:
    """Pick a layer and a head from stored attention weights.

    ``weights``: (L, H, T_q, T_k), or (H, T_q, T_k) for one layer (a leading batch of
    one, (L, 1, H, T_q, T_k), is accepted too). ``key_labels`` default to
    ``query_labels``; ``mask`` broadcasts to (T_q, T_k). Controls: ``layer`` and
    ``head`` (Dropdowns; values are indices).
    """
    arr = layers_and_heads(weights)
    L, H, T_q, T_k = arr.shape
    key_labels = query_labels if key_labels is None and T_q == T_k else key_labels
    controls = {
        "layer": widgets.Dropdown(options=_names(layer_names, L, "layer"), value=0,
                                  description="layer"),
        "head": widgets.Dropdown(options=_names(head_names, H, "head"), value=0,
                                 description="head"),
    }

    def compute(layer: int, head: int) -> ComputeResult:
        return arr[layer, head], query_labels, key_labels, mask

    return AttentionExplorer(
        compute, controls, annotate=annotate,
        title=lambda v: f"{title}: layer {v['layer']}, head {v['head']}",
    )


def explore_gpt(model: Any, tokenizer: Any, prompt: str = "ROMEO:", *, max_tokens: int = 32,
                annotate: bool = False) -> AttentionExplorer:
    """Attention of a GPT on a prompt you type: pick the prompt, layer and head.

    ``model.attention_maps(idx (1, T) long)`` must return (n_layer, 1, n_head, T, T)
    (a tensor or a list of (1, n_head, T, T)); ``tokenizer.encode(str) -> list[int]``
    and ``tokenizer.decode(list[int]) -> str``. The prompt is cut to its last
    ``max_tokens`` tokens (and to ``model.block_size`` / ``model.config.block_size`` when
    present). The model runs in eval mode without gradients; its mode is restored.
    Controls: ``prompt`` (Text), ``layer``, ``head``. The causal mask shows as grey.
    """
    if not hasattr(model, "attention_maps"):
        raise TypeError(
            f"model needs an attention_maps(idx) method; {type(model).__name__} has none"
        )
    for name in ("encode", "decode"):
        if not hasattr(tokenizer, name):
            raise TypeError(f"tokenizer needs {name}(); {type(tokenizer).__name__} has none")
    block = getattr(model, "block_size", None) or getattr(getattr(model, "config", None),
                                                          "block_size", None)
    limit = min(max_tokens, block) if block else max_tokens
    maps: dict[str, tuple[np.ndarray, list[str]]] = {}

    def attention(prompt: str) -> tuple[np.ndarray, list[str]]:
        if prompt not in maps:
            ids = list(tokenizer.encode(prompt))[-limit:]
            if not ids:
                raise ValueError("type a prompt: it encodes to no tokens")
            param = next(iter(model.parameters()), None) if hasattr(model, "parameters") else None
            idx = torch.tensor([ids], dtype=torch.long,
                               device=param.device if param is not None else None)
            with evaluating(model):
                out = model.attention_maps(idx)
            if isinstance(out, (list, tuple)):
                out = torch.stack([torch.as_tensor(a) for a in out])
            arr = viz.as_numpy(out, "attention_maps(idx)")
            T = len(ids)
            if arr.ndim != 5 or arr.shape[1] != 1 or arr.shape[-2:] != (T, T):
                raise ValueError(
                    f"attention_maps(idx) must return (n_layer, 1, n_head, {T}, {T}) for a "
                    f"prompt of {T} tokens, got shape {arr.shape}"
                )
            labels = [visible_label(tokenizer.decode([i])) for i in ids]
            maps[prompt] = (arr[:, 0], labels)
        return maps[prompt]

    arr0, _ = attention(prompt)
    n_layer, n_head = arr0.shape[:2]
    controls = {
        "prompt": _text(prompt, "prompt"),
        "layer": widgets.Dropdown(options=list(range(n_layer)), value=0, description="layer"),
        "head": widgets.Dropdown(options=list(range(n_head)), value=0, description="head"),
    }

    def compute(prompt: str, layer: int, head: int) -> ComputeResult:
        arr, labels = attention(prompt)
        return arr[layer, head], labels, labels, causal_mask(len(labels))

    return AttentionExplorer(
        compute, controls, annotate=annotate,
        title=lambda v: f"GPT attention: layer {v['layer']}, head {v['head']}",
    )


def explore_alignments(
    examples: Sequence[tuple[Any, Sequence[Any], Sequence[Any]]],
    names: Sequence[str] | None = None,
    *,
    title: str = "Alignment",
    annotate: bool = False,
) -> AttentionExplorer:
    """Pick one of several alignments (Bahdanau attention of a decoder over its input).

    ``examples``: a list of ``(weights (T_out, T_in), out_labels, in_labels)``; rows are
    output (decoder) steps, columns input tokens. ``names`` label the examples in the
    dropdown (default: the input sentence). Control: ``example`` (Dropdown of indices).
    """
    if not examples:
        raise ValueError("examples must hold at least one (weights, out_labels, in_labels)")
    checked = []
    for i, ex in enumerate(examples):
        if not isinstance(ex, (tuple, list)) or len(ex) != 3:
            raise ValueError(f"examples[{i}] must be (weights, out_labels, in_labels), got {ex!r}")
        try:
            checked.append(heatmap_data(*ex)[:3])  # (weights, out labels, in labels)
        except (ValueError, TypeError) as err:
            raise type(err)(f"examples[{i}] (weights, out_labels, in_labels): {err}") from err
    if names is None:
        names = [" ".join(c[2]) for c in checked]
    controls = {
        "example": widgets.Dropdown(options=_names(names, len(checked), "example"), value=0,
                                    description="example"),
    }

    def compute(example: int) -> ComputeResult:
        w, out_l, in_l = checked[example]
        return w, out_l, in_l

    explorer = AttentionExplorer(compute, controls, title=title, annotate=annotate)
    explorer.ax.set_xlabel("input token (attended to)")
    explorer.ax.set_ylabel("output step")
    explorer.redraw()
    return explorer
