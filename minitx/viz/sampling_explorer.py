"""A widget to resample a trained model's continuation with other decoding settings.

    ex = SamplingExplorer(model, tokenizer, "JULIET:\n", temperature=0.8)
    ex.widget                          # display this in a notebook
    ex.controls["top_k"].value = 5     # resamples
    ex.text                            # the continuation now shown

Notebook 08 uses it after the decoding rules (``minitx.nn.generation``) are taught.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import torch
from torch import nn

from minitx.data.text_stats import repeated_ngram_fraction
from minitx.nn import generation
from minitx.nn.generation import next_token_probs
from minitx.nn.modes import model_device


class SamplingExplorer:
    """A widget to resample a continuation with other decoding settings.

    Controls: ``temperature`` (slider), ``top_k`` (slider; 0 = off), ``top_p`` (slider;
    1.0 = off), ``seed`` (int) and a *resample* button (next seed). Every change runs
    ``model.generate`` on ``prompt`` with a ``torch.Generator`` seeded with ``seed``, so
    a setting always gives the same text. The text, its repeated-10-gram fraction and
    how many tokens the first step could choose from are shown under the controls.

    Attributes: ``controls`` (dict name -> widget), ``button``, ``output`` (HTML),
    ``text`` (the last continuation, prompt excluded), ``widget`` (the box to display),
    ``n_samples`` (how many samples were drawn).
    """

    def __init__(
        self,
        model: nn.Module,
        tokenizer: Any,
        prompt: str = "ROMEO:",
        *,
        num_tokens: int = 200,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        seed: int = 0,
    ) -> None:
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
        if not prompt:
            raise ValueError("prompt must hold at least one character")
        generation.check_temperature(temperature)
        generation.check_top_k(top_k)
        generation.check_top_p(top_p)
        self.model = model
        self.tokenizer = tokenizer
        self.prompt = prompt
        self.num_tokens = num_tokens
        self.idx = torch.tensor([tokenizer.encode(prompt)], dtype=torch.long)  # (1, T)
        V = model.config.vocab_size
        self.controls: dict[str, widgets.ValueWidget] = {
            "temperature": widgets.FloatSlider(
                value=temperature, min=0.1, max=2.0, step=0.05, description="temperature",
                readout_format=".2f", continuous_update=False,
            ),
            "top_k": widgets.IntSlider(
                value=0 if top_k is None else min(top_k, V), min=0, max=V,
                description="top-k (0 = off)", continuous_update=False,
            ),
            "top_p": widgets.FloatSlider(
                value=1.0 if top_p is None else top_p, min=0.05, max=1.0, step=0.05,
                description="top-p (1 = off)", readout_format=".2f", continuous_update=False,
            ),
            "seed": widgets.BoundedIntText(value=seed, min=0, max=2**31 - 1,
                                           description="seed"),
        }
        for control in self.controls.values():
            control.style.description_width = "initial"
        self.button = widgets.Button(description="resample (next seed)")
        self.output = widgets.HTML()
        self.n_samples = 0
        self.text = ""
        self.widget = widgets.VBox(
            [widgets.HBox(list(self.controls.values()),
                          layout=widgets.Layout(flex_flow="row wrap")),
             self.button, self.output]
        )
        self.update()
        for control in self.controls.values():
            control.observe(lambda change: self.update(), names="value")
        self.button.on_click(self._next_seed)

    @property
    def settings(self) -> dict[str, Any]:
        """The decoding settings as ``generate`` takes them (None = filter off)."""
        v = {name: c.value for name, c in self.controls.items()}
        return {
            "temperature": float(v["temperature"]),
            "top_k": int(v["top_k"]) or None,
            "top_p": None if v["top_p"] >= 1.0 else float(v["top_p"]),
            "seed": int(v["seed"]),
        }

    def sample(self, temperature: float, top_k: int | None, top_p: float | None,
               seed: int) -> str:
        """The continuation (prompt excluded) for these settings; the same settings give
        the same text."""
        device = model_device(self.model)
        generator = torch.Generator(device=device).manual_seed(seed)
        out = self.model.generate(
            self.idx.to(device), self.num_tokens, temperature=temperature, top_k=top_k,
            top_p=top_p, generator=generator,
        )  # (1, T + num_tokens)
        self.n_samples += 1
        return self.tokenizer.decode(out[0, self.idx.size(1):])

    def update(self) -> None:
        """Draw a sample for the current settings and show it."""
        s = self.settings
        self.text = self.sample(**s)
        probs = next_token_probs(self.model, self.idx, s["temperature"], s["top_k"], s["top_p"])
        kept = int((probs > 0).sum())
        rep = repeated_ngram_fraction(self.text, 10)
        self.output.value = (
            f"<pre style='white-space: pre-wrap'>{html.escape(self.prompt + self.text)}</pre>"
            f"<div>first step chooses among {kept} of {probs.numel()} tokens | "
            f"repeated 10-grams: {rep:.0%}</div>"
        )

    def _next_seed(self, _button: Any = None) -> None:
        self.controls["seed"].value += 1  # observe() redraws

    def __repr__(self) -> str:
        return f"SamplingExplorer(prompt={self.prompt!r}, settings={self.settings})"


__all__ = ["SamplingExplorer"]
