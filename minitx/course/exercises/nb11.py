"""Exercises of notebook 11 (the modern block): what RMSNorm drops, rotary positions in the
other pairing convention, and how many sequences a KV cache budget holds with and without
grouped heads.

Expected answers are computed with :mod:`minitx.nn.rmsnorm`, :mod:`minitx.nn.transformer`,
:mod:`minitx.nn.rope` and :func:`minitx.nn.gpt.kv_cache_numel`, never typed in. Random inputs
are drawn from their own generators, so that checking an answer does not move the learner's
random numbers.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from minitx.course.exercises import teaching_notes, think
from minitx.course.exercises.checks import compare, compute, implement, predict

SHIFT = 100.0  # added to every feature in the prediction
SHIFT_CHOICES = {
    "a": "both outputs stay close to their outputs for x",
    "b": "LayerNorm's output stays close to its output for x; RMSNorm's becomes close to a "
    "vector of ones",
    "c": "RMSNorm's output stays close to its output for x; LayerNorm's becomes close to a "
    "vector of ones",
    "d": "both outputs become close to a vector of ones",
}
# The KV cache of the compute exercise: Llama 2 70B's shape (80 layers, 64 query heads of
# size 128, 8 key/value heads), bfloat16 (2 bytes a number), sequences of KV_TOKENS, and
# KV_BUDGET bytes of GPU memory left for the cache.
KV_MODEL = {"n_layer": 80, "n_head": 64, "n_embd": 8192, "n_kv_heads": 8}
KV_TOKENS = 4096
KV_BYTES = 2
KV_BUDGET = 90 * 2**30


# ---- predict: a shift of every feature -----------------------------------------------------


def shift_inputs() -> Tensor:
    """(8, 64) float64 inputs, from their own generator."""
    return torch.randn(8, 64, generator=torch.Generator().manual_seed(11), dtype=torch.float64)


def shift_outputs() -> dict[str, tuple[Tensor, Tensor]]:
    """For each norm (gain 1, no bias), its output for x and for x + SHIFT."""
    from minitx.nn.rmsnorm import RMSNorm
    from minitx.nn.transformer import LayerNorm

    x = shift_inputs()
    norms = {"LayerNorm": LayerNorm(64, bias=False).double(), "RMSNorm": RMSNorm(64).double()}
    with torch.no_grad():
        return {name: (norm(x), norm(x + SHIFT)) for name, norm in norms.items()}


def shift_truth() -> str:
    """The letter of :data:`SHIFT_CHOICES` the package's two norms give (within 0.1)."""
    near = {}
    for name, (plain, shifted) in shift_outputs().items():
        if (shifted - plain).abs().max() < 0.1:
            near[name] = "same"
        elif (shifted - 1).abs().max() < 0.1:
            near[name] = "ones"
        else:
            near[name] = "other"
    table = {("same", "same"): "a", ("same", "ones"): "b", ("ones", "same"): "c",
             ("ones", "ones"): "d"}  # fmt: skip
    return table.get((near["LayerNorm"], near["RMSNorm"]), "none")


predict(
    "11.shift",
    "Give LayerNorm and RMSNorm (gain 1, no bias, over 64 features) a batch of random "
    "vectors x, then the same vectors with 100 added to every feature. Predict what the "
    "shift does to their outputs:",
    SHIFT_CHOICES,
    shift_truth,
    "write out what each norm computes from x + c: which one subtracts the mean of the "
    "features first, and what is the root mean square of a vector whose features are all "
    "close to 100?",
    hints={
        "a": "one of the two does not subtract the mean: divide x + 100 by its own root mean "
             "square and see what is left",
        "c": "which of the two subtracts the mean of the features before it scales?",
        "d": "LayerNorm subtracts the mean of the features first: what is left of the 100?",
    },
)


# ---- implement: RoPE, rotate-half convention -----------------------------------------------


def interleave(x: Tensor) -> Tensor:
    """(..., hs) -> (..., hs): feature i and i + hs/2 side by side as pair i."""
    h = x.size(-1) // 2
    return torch.stack([x[..., :h], x[..., h:]], dim=-1).flatten(-2)


def deinterleave(x: Tensor) -> Tensor:
    """The inverse of :func:`interleave`."""
    return torch.cat([x[..., 0::2], x[..., 1::2]], dim=-1)


def rope_half_reference(x: Tensor, base: float = 10000.0) -> Tensor:
    """RoPE in the rotate-half convention: the package's interleaved rotation applied to
    pairs (i, i + hs/2)."""
    from minitx.nn.rope import apply_rope

    return deinterleave(apply_rope(interleave(x), base))


def _rope_cases() -> list[tuple[str, tuple[Tensor, float]]]:
    g = torch.Generator().manual_seed(11)
    cases = []
    for shape, base in (((1, 1, 1, 4), 10000.0), ((1, 1, 6, 4), 10000.0),
                        ((2, 3, 7, 8), 10000.0), ((2, 2, 9, 16), 100.0),
                        ((3, 5, 6), 500000.0)):  # fmt: skip
        x = torch.randn(*shape, generator=g, dtype=torch.float64)
        cases.append((f"for x of shape {shape} and base={base:g}", (x, base)))
    return cases


def _rope_hint(name: str, got: dict, want: dict, args: tuple) -> str | None:
    """Name the likely mistake: neighbours paired, the wrong direction, the wrong angles."""
    from minitx.nn.rope import apply_rope

    x, base = args
    hs = x.size(-1)
    if x.dim() >= 2 and torch.allclose(got[name], apply_rope(x, base), atol=1e-6):
        return ("you paired neighbouring features (2i, 2i+1); in this convention feature i "
                "is paired with feature i + hs/2")
    sign = torch.tensor([1.0, -1.0], dtype=x.dtype).repeat(hs // 2)  # conjugate the pairs
    back = deinterleave(apply_rope(interleave(x) * sign, base) * sign)  # turned by -m theta_i
    if torch.allclose(got[name], back, atol=1e-6):
        return "you turned the pairs the wrong way: (a + jb) e^{j phi}, not e^{-j phi}"
    if not torch.allclose(got[name].norm(dim=-1), x.norm(dim=-1), atol=1e-6):
        return "a rotation keeps each vector's length, and yours changes it"
    if torch.allclose(got[name][..., :1, :], x[..., :1, :], atol=1e-9):
        return (f"position 0 is right, later ones are not: check theta_i = base^(-2i/hs) for "
                f"i = 0 .. {hs // 2 - 1}, and that position m turns by m * theta_i")
    return "position 0 must come out unchanged (its angle is 0)"




@implement(
    "11.rope_half",
    "Write rope_half(x, base) for queries or keys x (..., T, hs), hs even, at positions 0 .. "
    "T-1: rotary positions in the rotate-half convention of GPT-NeoX and Hugging Face's "
    "Llama, where feature i (i < hs/2) and feature i + hs/2 form pair i, the real and "
    "imaginary parts of one complex number, turned by the angle m * theta_i at position m, "
    "theta_i = base^(-2i/hs). Return a new tensor of x's shape, without the package's "
    "apply_rope or rope_angles. Answer with the function.",
    forbid=("minitx.nn.rope.apply_rope", "minitx.nn.rope.rope_angles"),
)
def _rope_half(answer: Any) -> str | None:
    return compare(
        answer,
        _rope_cases(),
        rope_half_reference,
        inputs=("x",),
        atol=1e-6,
        about={"your result": "the rotated x, the same shape as x"},
        diagnose=_rope_hint,
    )


# ---- compute: the KV cache of a grouped-query model ----------------------------------------


def kv_sequence_bytes() -> tuple[int, int]:
    """The cache of one sequence of :data:`KV_TOKENS` in bytes: (with a key/value head per
    query head, with :data:`KV_MODEL`'s key/value heads)."""
    from minitx.nn.gpt import GPTConfig, kv_cache_numel

    sizes = []
    for kv_heads in (KV_MODEL["n_head"], KV_MODEL["n_kv_heads"]):
        config = GPTConfig(vocab_size=1, block_size=KV_TOKENS,
                           **{**KV_MODEL, "n_kv_heads": kv_heads})
        sizes.append(kv_cache_numel(config, KV_TOKENS) * KV_BYTES)
    return sizes[0], sizes[1]


def kv_sequences() -> tuple[int, int]:
    """How many whole sequences fit in :data:`KV_BUDGET` bytes of cache, in the two cases of
    :func:`kv_sequence_bytes`."""
    every_head, grouped = kv_sequence_bytes()
    return KV_BUDGET // every_head, KV_BUDGET // grouped


@compute(
    "11.kv_cache",
    "A model has 80 layers and 64 query heads of size 128 (the shape of Llama 2 70B), and "
    "keeps its KV cache in bfloat16 (2 bytes a number). Its GPUs have 90 GiB (90 x 2^30 "
    "bytes) left for the cache. How many whole sequences of 4,096 tokens fit at once (a) "
    "with a key/value head for every query head, (b) with 8 key/value heads, as Llama 2 70B "
    "has? Answer with a pair (a, b).",
    expect=(tuple, list),
    expected="a pair of whole numbers (a, b)",
)
def _kv_cache(answer: tuple[int, int]) -> str | None:
    numbers = [a for a in answer if isinstance(a, int | float) and not isinstance(a, bool)]
    if len(answer) != 2 or len(numbers) != 2:
        return f"answer with a pair of whole numbers (a, b), got {answer!r}"
    if any(a != int(a) for a in numbers):
        return "count whole sequences: a sequence whose cache does not fit in full does not fit"
    got, (a, b) = (int(numbers[0]), int(numbers[1])), kv_sequences()
    hints = {
        (a, b): None,
        (b, a): "swapped: fewer key/value heads make each cache smaller, so more fit",
        (a, a): "(b) keeps keys and values for 8 heads, not for all 64",
        (b, b): "(a) keeps a key and a value for every one of the 64 heads",
        (2 * a, 2 * b): "each layer keeps a key and a value for every position and head",
        (a // 2, b // 2): "bfloat16 takes 2 bytes a number, not 4",
        tuple(90 * 10**9 // size for size in kv_sequence_bytes()):
            "90 GiB is 90 x 2^30 bytes, not 90 x 10^9",
    }
    if got in hints:
        return hints[got]
    return ("work out one sequence's cache first: a key and a value, per layer, per key/value "
            "head, per token, each as long as a head, at 2 bytes a number; then how many of "
            "those fit in 90 x 2^30 bytes")


# ---- open question -------------------------------------------------------------------------


think(
    "11.small_scale",
    "At 2 layers x 64 wide and 150 steps, some swaps in this notebook made no "
    "difference that the seeds could separate. Give two reasons why the same swap could "
    "matter in a model of 7 billion parameters trained on a trillion tokens, and for one of "
    "them an experiment you could run on a laptop to test it.",
)


teaching_notes(
    "11",
    75,
    "shift rope_half kv_cache small_scale",
    goals=(
        "Write RMSNorm, rotary positions, SwiGLU and grouped-query attention from their "
        "equations, and check each against PyTorch or its own definition.",
        "Explain why a rotary score depends only on the offset between two positions, and "
        "what that buys when the context grows past the training length.",
        "Run an ablation that swaps one piece at a time with several seeds, and conclude "
        "only what the spread supports.",
        "Work out from a configuration how many sequences a KV-cache budget holds, with "
        "and without grouped heads.",
    ),
    misconceptions=(
        "Every piece of the modern block makes a small model better; at this size several "
        "make no measurable difference.",
        "RoPE adds a position vector to the embeddings; it turns queries and keys, and "
        "values not at all.",
        "Grouped-query attention saves compute; it mostly saves the memory of the KV cache.",
        "SwiGLU has a hidden layer 4 times as wide as the model; it has 8/3 for the same "
        "number of weights.",
    ),
)
