"""The sizes and switches of a GPT: ``GPTConfig``, and what its KV cache costs.

The defaults give the GPT-2 block; four switches turn it, one piece at a time, into the
modern (Llama) block: ``norm="rms"``, ``positions="rope"`` (or ``"none"``),
``mlp="swiglu"`` and ``n_kv_heads`` < ``n_head``. A checkpoint stores the config as a plain
dict; one saved before the switches existed loads with their defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

from minitx.nn.transformer import check_block_options

POSITIONS = ("learned", "rope", "none")  # a table added to the embeddings, rotary, none


@dataclass
class GPTConfig:
    """Sizes of a GPT.

    ``block_size`` is the context window (longest sequence the model can read);
    ``n_embd`` must be divisible by ``n_head``. ``activation`` is the feed-forward
    non-linearity ('gelu', 'relu' or 'relu2'); ``tied_head`` makes the output layer
    reuse the token embedding matrix. ``causal=False`` removes the causal
    mask: such a model can look at the very token it is asked to predict, which only
    serves to show that leak (notebook 05); never train a real language model so.

    The modern block, one switch at a time (the defaults are GPT-2's): ``norm`` 'layer' or
    'rms'; ``positions`` 'learned', 'rope' (rotary, in attention) or 'none'; ``mlp`` 'gelu'
    (the GPT-2 MLP with ``activation``, hidden 4 n_embd) or 'swiglu' (hidden about
    8/3 n_embd, as many weights); ``n_kv_heads`` key/value heads, None = n_head.
    """

    vocab_size: int
    block_size: int
    n_layer: int
    n_head: int
    n_embd: int
    dropout: float = 0.0
    bias: bool = True
    activation: str = "gelu"
    tied_head: bool = True
    causal: bool = True
    norm: str = "layer"
    positions: str = "learned"
    mlp: str = "gelu"
    n_kv_heads: int | None = None

    def __post_init__(self) -> None:
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"GPTConfig.{name} must be an int >= 1, got {value!r}")
        if self.n_embd % self.n_head != 0:
            raise ValueError(
                f"n_embd (d_model) must be divisible by n_head: got n_embd={self.n_embd}, "
                f"n_head={self.n_head}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"GPTConfig.dropout must be in [0, 1), got {self.dropout!r}")
        check_block_options(self.norm, self.mlp, self.activation)
        if self.positions not in POSITIONS:
            raise ValueError(
                f"GPTConfig.positions must be one of {list(POSITIONS)}, got {self.positions!r}"
            )
        kv = self.n_kv_heads
        if kv is not None and (isinstance(kv, bool) or not isinstance(kv, int) or kv < 1
                               or self.n_head % kv != 0):
            raise ValueError(f"GPTConfig.n_kv_heads must be None or an int >= 1 that divides "
                             f"n_head={self.n_head}, got {kv!r}")
        if self.positions == "rope" and (self.n_embd // self.n_head) % 2 != 0:
            raise ValueError(f"positions='rope' needs an even head size, got n_embd / n_head = "
                             f"{self.n_embd // self.n_head}")


def kv_cache_numel(config: GPTConfig, T: int, batch: int = 1) -> int:
    """How many numbers the KV cache of a GPT holds for ``batch`` sequences of T positions.

    Every layer keeps one key and one value vector per key/value head and position:
    2 * n_layer * T * n_kv_heads * head_size per sequence, 2 * n_layer * T * n_embd without
    grouping. T is at most ``block_size`` (the cache never holds more than the window).
    """
    if not isinstance(config, GPTConfig):
        raise TypeError(f"expected a GPTConfig, got {type(config).__name__}")
    if isinstance(T, bool) or not isinstance(T, int) or not 0 <= T <= config.block_size:
        raise ValueError(f"T must be an int in [0, block_size={config.block_size}], got {T!r}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be an int >= 1, got {batch!r}")
    n_kv = config.n_head if config.n_kv_heads is None else config.n_kv_heads
    return 2 * config.n_layer * batch * T * n_kv * (config.n_embd // config.n_head)


__all__ = ["POSITIONS", "GPTConfig", "kv_cache_numel"]
