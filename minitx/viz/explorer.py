"""Interactive attention explorers (ipywidgets).

Each factory below builds a :class:`minitx.viz.attention_explorer.AttentionExplorer`: a few
controls (a sentence, sliders, dropdowns) feeding a *compute* function that returns
attention weights, drawn as a heatmap that is redrawn in place when a control moves.

Everything is reachable from Python, so tests and notebooks can drive it::

    ex = explore_self_attention("the bank of the river")
    ex.controls["temperature"].value = 0.5   # redraws
    ex.weights                               # (T, T) numpy array now shown
    ex.image.get_array()                     # the same, as drawn
    ex.widget                                # display this in a notebook

Factories for the course: :func:`explore_self_attention` (04),
:func:`explore_masks` (05), :func:`explore_heads` (06, 09), :func:`explore_gpt` (09),
:func:`explore_alignments` (03).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as widgets
import numpy as np
import torch
from torch import Tensor

from minitx.data.tokenizer import word_tokenize
from minitx.nn.masks import MASK_KINDS, causal_mask, mask_of_kind
from minitx.nn.modes import evaluating
from minitx.nn.word_attention import embed_tokens, self_attention_weights
from minitx.viz.arrays import as_numpy
from minitx.viz.attention_explorer import MAX_TOKENS, AttentionExplorer, ComputeResult
from minitx.viz.heatmap import heatmap_data, layers_and_heads, visible_label

__all__ = [
    "explore_alignments",
    "explore_gpt",
    "explore_heads",
    "explore_masks",
    "explore_self_attention",
]

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
    :func:`self_attention_weights` with the mask of :func:`minitx.nn.masks.mask_of_kind`;
    blocked cells
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
            arr = as_numpy(out, "attention_maps(idx)")
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
