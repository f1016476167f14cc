"""Named recipes: a model size plus a training configuration.

    tiny   a few seconds, for tests and smoke runs (no claim about quality)
    cpu    a laptop / 2-core CPU in two minutes: beats the usual 4x128 laptop recipe
    large  the shipped model: 4 layers x 256, about 100 minutes on one CPU core
    gpu    nanoGPT's "baby GPT" for Shakespeare: 6 layers x 384 wide, block 256

``get_preset(name)`` returns a fresh copy; ``Preset.with_overrides`` changes a few
fields (the tests run the gpu recipe at a reduced size on the CPU that way).
``auto_preset_name()`` is 'gpu' when CUDA is present, else 'cpu'.

The model part leaves out ``vocab_size``, which comes from the tokenizer:
``preset.gpt_config(tokenizer.vocab_size)``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from minitx.train.runtime import select_device
from minitx.train.trainer import TrainConfig

if TYPE_CHECKING:
    from minitx.nn.gpt import GPTConfig

MODEL_KEYS = ("block_size", "n_layer", "n_head", "n_embd", "dropout", "bias")
# GPTConfig fields a preset may set; left out, GPTConfig's defaults apply (GPT-2's block:
# LayerNorm, learned positions, a GELU MLP, a key and value head per query head; tied head).
OPTIONAL_MODEL_KEYS = ("activation", "tied_head", "norm", "positions", "mlp", "n_kv_heads")

# The two architectures of a preset's blocks (``Preset.with_arch``, ``minitx train --arch``).
ARCHS: dict[str, dict[str, Any]] = {
    "gpt2": {"norm": "layer", "positions": "learned", "mlp": "gelu", "n_kv_heads": None},
    "modern": {"norm": "rms", "positions": "rope", "mlp": "swiglu"},
}


@dataclass(frozen=True)
class Preset:
    """A named recipe: GPT sizes (without ``vocab_size``) and a ``TrainConfig``."""

    name: str
    description: str
    model: dict[str, Any] = field(default_factory=dict)
    train: TrainConfig = field(default_factory=TrainConfig)

    def __post_init__(self) -> None:
        unknown = set(self.model) - set(MODEL_KEYS) - set(OPTIONAL_MODEL_KEYS)
        missing = set(MODEL_KEYS) - set(self.model)
        if unknown or missing:
            raise ValueError(
                f"preset {self.name!r}: model needs {list(MODEL_KEYS)} and may set "
                f"{list(OPTIONAL_MODEL_KEYS)}; "
                f"unknown {sorted(unknown)}, missing {sorted(missing)}"
            )

    def gpt_config(self, vocab_size: int) -> GPTConfig:
        """The ``GPTConfig`` of this preset for a vocabulary of ``vocab_size`` tokens."""
        from minitx.nn.gpt import GPTConfig

        return GPTConfig(vocab_size=vocab_size, **self.model)

    def with_overrides(
        self, model: dict[str, Any] | None = None, train: dict[str, Any] | None = None
    ) -> Preset:
        """A copy with some model and/or train fields replaced (same name)."""
        new_model = {**self.model, **(model or {})}
        new_train = replace(self.train, **(train or {}))
        return Preset(self.name, self.description, new_model, new_train)

    def with_arch(self, arch: str) -> Preset:
        """A copy whose blocks are ``arch``: 'gpt2' (LayerNorm, learned positions, GELU MLP,
        a key/value head per query head) or 'modern' (notebook 11: RMSNorm, rotary positions,
        SwiGLU, and half as many key/value heads as query heads when the heads pair up)."""
        if arch not in ARCHS:
            raise ValueError(f"arch must be one of {list(ARCHS)}, got {arch!r}")
        model = dict(ARCHS[arch])
        if arch == "modern":
            n_head = self.model["n_head"]
            model["n_kv_heads"] = n_head // 2 if n_head % 2 == 0 else n_head
        return self.with_overrides(model=model)

    @property
    def tokens_per_step(self) -> int:
        """B * T: tokens in one optimisation step."""
        return self.train.batch_size * self.model["block_size"]


# Every recipe uses weight decay 0.1 on matrices, AdamW betas (0.9, 0.99) and gradients
# clipped at norm 1. Why cpu and large look as they do: benchmarks/bench_presets.py.
PRESETS: dict[str, Preset] = {
    "tiny": Preset(
        name="tiny",
        description="2 layers x 32 wide, 50 steps: seconds on any CPU; for tests",
        model={"block_size": 32, "n_layer": 2, "n_head": 2, "n_embd": 32,
               "dropout": 0.0, "bias": True},
        train=TrainConfig(max_steps=50, batch_size=8, learning_rate=3e-3, min_lr=3e-4,
                          warmup_steps=5, eval_interval=25, eval_steps=2, log_interval=5),
    ),
    "cpu": Preset(
        name="cpu",
        description=(
            "4 layers x 128 wide, block 64, no biases; batch 32 x 520 steps of Muon (matrices, "
            "lr 0.02) + AdamW (embeddings and gains, lr 6e-3), warmup-stable-decay: the "
            "laptop recipe's wall time, a much lower validation loss"
        ),
        model={"block_size": 64, "n_layer": 4, "n_head": 4, "n_embd": 128,
               "dropout": 0.0, "bias": False},
        train=TrainConfig(max_steps=520, batch_size=32, learning_rate=6e-3, min_lr=0.0,
                          warmup_steps=50, optimizer="muon", muon_lr=0.02, schedule="wsd",
                          cooldown_frac=0.5, eval_interval=250, eval_steps=20,
                          log_interval=10),
    ),
    "large": Preset(
        name="large",
        description=(
            "4 layers x 256 wide, block 128, batch 64, dropout 0.1, 2000 steps of Muon "
            "(matrices, lr 0.02) + AdamW (embeddings and gains, lr 3e-3), warmup-stable-"
            "decay: the shipped model, about 100 minutes on one CPU core"
        ),
        model={"block_size": 128, "n_layer": 4, "n_head": 4, "n_embd": 256,
               "dropout": 0.1, "bias": False},
        train=TrainConfig(max_steps=2000, batch_size=64, learning_rate=3e-3, min_lr=0.0,
                          warmup_steps=100, optimizer="muon", muon_lr=0.02, schedule="wsd",
                          cooldown_frac=0.5, eval_interval=100, eval_steps=20,
                          log_interval=10),
    ),
    "gpu": Preset(
        name="gpu",
        description=(
            "nanoGPT's baby GPT (6 layers x 384 wide, 6 heads, block 256, dropout 0.2, batch "
            "64) trained with the cpu preset's recipe: 3000 steps of Muon (matrices, lr 0.02) "
            "+ AdamW (embeddings and gains, lr 1e-3), warmup-stable-decay; bf16 autocast and "
            "torch.compile on CUDA"
        ),
        model={"block_size": 256, "n_layer": 6, "n_head": 6, "n_embd": 384,
               "dropout": 0.2, "bias": False},
        train=TrainConfig(max_steps=3000, batch_size=64, learning_rate=1e-3, min_lr=0.0,
                          warmup_steps=100, optimizer="muon", muon_lr=0.02, schedule="wsd",
                          cooldown_frac=0.5, eval_interval=250, eval_steps=200,
                          log_interval=10),
    ),
}


def preset_names() -> list[str]:
    """The known preset names."""
    return list(PRESETS)


def get_preset(name: str) -> Preset:
    """A fresh copy of preset ``name`` ('auto' means ``auto_preset_name()``)."""
    if not isinstance(name, str):
        raise TypeError(f"preset name must be a str, got {type(name).__name__}")
    if name == "auto":
        name = auto_preset_name()
    if name not in PRESETS:
        raise ValueError(
            f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)} (or 'auto')"
        )
    return copy.deepcopy(PRESETS[name])


def auto_preset_name(cuda_available: bool | None = None) -> str:
    """'gpu' when CUDA is available, else 'cpu'."""
    device = select_device("auto", cuda_available=cuda_available, mps_available=False)
    return "gpu" if device.type == "cuda" else "cpu"


__all__ = ["ARCHS", "PRESETS", "Preset", "auto_preset_name", "get_preset", "preset_names"]
