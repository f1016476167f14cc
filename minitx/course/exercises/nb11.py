"""Exercises of notebook 11 (the modern block): what RMSNorm drops, rotary positions in the
other pairing convention, and how many sequences a KV cache budget holds with and without
grouped heads.

The module holds no answer and no function that computes one: the prediction and the count
are checked against seals (:mod:`~minitx.course.exercises.seal`) made from the instructor's
solutions, which measure with :mod:`minitx.nn.rmsnorm`, :mod:`minitx.nn.transformer` and
:func:`minitx.nn.gpt.kv_cache_numel`. The learner's rotary positions are compared with the
package's :func:`~minitx.nn.rope.apply_rope` on re-paired features, bound when this module
is imported; the answer may not call it. Random inputs are drawn from their own generators,
so that checking an answer does not move the learner's random numbers.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from minitx.course.exercises import teaching_notes, think
from minitx.course.exercises.checks import compare, compute, implement, predict
from minitx.course.exercises.plain import numbers, plain_int
from minitx.course.exercises.seal import canonical, seal
from minitx.nn.rope import apply_rope

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


# The seal of the right letter, measured on the package's two norms by the instructor's
# solution.
_SHIFT = "92c913595fc6ed977688fea35fdedeaf345c77ff"


predict(
    "11.shift",
    "Give LayerNorm and RMSNorm (gain 1, no bias, over 64 features) a batch of random "
    "vectors x, then the same vectors with 100 added to every feature. Predict what the "
    "shift does to their outputs:",
    SHIFT_CHOICES,
    _SHIFT,
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


def _interleave(x: Tensor) -> Tensor:
    """(..., hs) -> (..., hs): feature i and i + hs/2 side by side as pair i."""
    h = x.size(-1) // 2
    return torch.stack([x[..., :h], x[..., h:]], dim=-1).flatten(-2)


def _deinterleave(x: Tensor) -> Tensor:
    """The inverse of :func:`_interleave`."""
    return torch.cat([x[..., 0::2], x[..., 1::2]], dim=-1)


def _rope_half_reference(x: Tensor, base: float = 10000.0, _rope: Any = apply_rope) -> Tensor:
    """RoPE in the rotate-half convention: the package's interleaved rotation (bound when
    this module is imported) applied to pairs (i, i + hs/2)."""
    return _deinterleave(_rope(_interleave(x), base))


def _rope_cases() -> list[tuple[str, tuple[Tensor, float]]]:
    g = torch.Generator().manual_seed(11)
    cases = []
    for shape, base in (((1, 1, 1, 4), 10000.0), ((1, 1, 6, 4), 10000.0),
                        ((2, 3, 7, 8), 10000.0), ((2, 2, 9, 16), 100.0),
                        ((3, 5, 6), 500000.0)):  # fmt: skip
        x = torch.randn(*shape, generator=g, dtype=torch.float64)
        cases.append((f"for x of shape {shape} and base={base:g}", (x, base)))
    return cases


def _rope_hint(name: str, got: dict, want: dict, args: tuple,
               apply_rope: Any = apply_rope) -> str | None:
    """Name the likely mistake: neighbours paired, the wrong direction, the wrong angles."""
    x, base = args
    hs = x.size(-1)
    if x.dim() >= 2 and torch.allclose(got[name], apply_rope(x, base), atol=1e-6):
        return ("you paired neighbouring features (2i, 2i+1); in this convention feature i "
                "is paired with feature i + hs/2")
    sign = torch.tensor([1.0, -1.0], dtype=x.dtype).repeat(hs // 2)  # conjugate the pairs
    back = _deinterleave(apply_rope(_interleave(x) * sign, base) * sign)  # turned by -m theta_i
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
    forbid=(
        "minitx.nn.rope.apply_rope",
        "minitx.nn.rope.rope_angles",
        "minitx.nn.grouped_attention.GroupedQueryAttention",
    ),
)
def _rope_half(answer: Any, _reference: Any = _rope_half_reference) -> str | None:
    return compare(
        answer,
        _rope_cases(),
        _reference,
        inputs=("x",),
        atol=1e-6,
        about={"your result": "the rotated x, the same shape as x"},
        diagnose=_rope_hint,
    )


# ---- compute: the KV cache of a grouped-query model ----------------------------------------


# The seal of the right pair, ``seal("11.kv_cache", canonical([a, b]))``, and of known
# mistakes, made from the instructor's solution (with ``kv_cache_numel``).
_KV_CACHE = "f3c628cfc667c3249ba35a362684ced371767194"
_KV_MISTAKES = {
    "977cd2db4207ad74dbdb87aa06ed2840d043f015":
        "swapped: fewer key/value heads make each cache smaller, so more fit",
    "821cb432394ee64ba299e8f7b742c8f41ffb0a7d":
        "(b) keeps keys and values for 8 heads, not for all 64",
    "7d35f031fe89613f7023088629846d07e40d5260":
        "(a) keeps a key and a value for every one of the 64 heads",
    "31fc44278abb00c6353ee81ab860aba2e650f206":
        "each layer keeps a key and a value for every position and head",
    "c96c35c074a42a97c00de5288b0d60e48de2c8c2": "bfloat16 takes 2 bytes a number, not 4",
    "363be050af3f28de32e1f787b894f503f9caa4df": "90 GiB is 90 x 2^30 bytes, not 90 x 10^9",
}


@compute(
    "11.kv_cache",
    "A model has 80 layers and 64 query heads of size 128 (the shape of Llama 2 70B), and "
    "keeps its KV cache in bfloat16 (2 bytes a number). Its GPUs have 90 GiB (90 x 2^30 "
    "bytes) left for the cache. How many whole sequences of 4,096 tokens fit at once (a) "
    "with a key/value head for every query head, (b) with 8 key/value heads, as Llama 2 70B "
    "has? Answer with a pair (a, b).",
)
def _kv_cache(answer: Any) -> str | None:
    pair = "answer with a pair of whole numbers (a, b)"
    values = numbers(answer, 2)
    if isinstance(values, str):
        return f"{pair}: {values}"
    whole = [plain_int(v) for v in values]
    if any(w is None for w in whole):
        return "count whole sequences: a sequence whose cache does not fit in full does not fit"
    found = seal("11.kv_cache", canonical(whole))
    if found == _KV_CACHE:
        return None
    return _KV_MISTAKES.get(found) or (
        "work out one sequence's cache first: a key and a value, per layer, per key/value "
        "head, per token, each as long as a head, at 2 bytes a number; then how many of "
        "those fit in 90 x 2^30 bytes")


# ---- open question -------------------------------------------------------------------------


think(
    "11.small_scale",
    "At 2 layers x 64 wide and 120 steps, some swaps in this notebook made no "
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
