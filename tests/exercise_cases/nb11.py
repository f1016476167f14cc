"""Exercise cases of notebook 11: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import cmath
import importlib

import numpy as np
import torch

from exercise_cases import Case, prediction, solution, wrong, wrong_answers
from minitx.course.exercises import answers
from minitx.course.exercises.seal import canonical, seal
from minitx.nn import rope
from minitx.nn.rope import apply_rope, rope_angles

# ---- 11.rope_half: learner functions, right and wrong --------------------------------------


def rope_half_complex(x, base):
    """Right, with complex numbers: pair i is x[i] + j x[i + hs/2]."""
    h = x.size(-1) // 2
    z = torch.complex(x[..., :h], x[..., h:])  # (..., T, hs/2)
    m = torch.arange(x.size(-2), dtype=x.dtype)[:, None]
    theta = base ** (-2 * torch.arange(h, dtype=x.dtype) / x.size(-1))
    turned = z * torch.polar(torch.ones_like(m * theta), m * theta)
    return torch.cat([turned.real, turned.imag], dim=-1)


def rope_half_loops(x, base):
    """Right, one number at a time with Python's cmath."""
    out = x.clone()
    T, hs = x.shape[-2:]
    h = hs // 2
    flat, res = x.reshape(-1, T, hs), out.view(-1, T, hs)
    for b in range(flat.size(0)):
        for m in range(T):
            for i in range(h):
                z = complex(flat[b, m, i], flat[b, m, i + h])
                z *= cmath.exp(1j * m * base ** (-2 * i / hs))
                res[b, m, i], res[b, m, i + h] = z.real, z.imag
    return out


def rope_half_numpy(x, base):
    """Right, in NumPy: cos and sin of the angles, the two halves turned."""
    a = x.numpy()
    T, hs = a.shape[-2:]
    h = hs // 2
    angle = np.arange(T)[:, None] * base ** (-2.0 * np.arange(h) / hs)  # (T, hs/2)
    re, im = a[..., :h], a[..., h:]
    out = np.concatenate([re * np.cos(angle) - im * np.sin(angle),
                          re * np.sin(angle) + im * np.cos(angle)], axis=-1)
    return torch.from_numpy(out)


def rope_half_float32(x, base):
    """Right, with the angles in float64 and the rotation in float32 (within 1e-6)."""
    T, hs = x.shape[-2:]
    h = hs // 2
    theta = torch.pow(torch.tensor(float(base), dtype=torch.float64),
                      -torch.arange(h, dtype=torch.float64) * 2 / hs)
    angle = torch.arange(T, dtype=torch.float64)[:, None] * theta
    cos, sin = angle.cos().float(), angle.sin().float()
    re, im = x[..., :h].float(), x[..., h:].float()
    return torch.cat([re * cos - im * sin, re * sin + im * cos], dim=-1)


@wrong("11.rope_half", "neighbouring features")
def pairs_neighbours(x, base):
    """The interleaved convention: pairs (2i, 2i + 1)."""
    re, im = x[..., 0::2], x[..., 1::2]
    h = x.size(-1) // 2
    m = torch.arange(x.size(-2), dtype=x.dtype)[:, None]
    angle = m * base ** (-2 * torch.arange(h, dtype=x.dtype) / x.size(-1))
    return torch.stack([re * angle.cos() - im * angle.sin(),
                        re * angle.sin() + im * angle.cos()], dim=-1).flatten(-2)


@wrong("11.rope_half", "wrong way")
def turns_backwards(x, base):
    """Multiplies by e^{-j m theta}."""
    return rope_half_complex(x * torch.cat([torch.ones(x.size(-1) // 2),
                                            -torch.ones(x.size(-1) // 2)]).to(x.dtype), base) \
        * torch.cat([torch.ones(x.size(-1) // 2), -torch.ones(x.size(-1) // 2)]).to(x.dtype)


@wrong("11.rope_half", "theta_i")
def theta_without_the_two(x, base):
    """theta_i = base^(-i/hs): the angles fall too slowly."""
    h = x.size(-1) // 2
    z = torch.complex(x[..., :h], x[..., h:])
    m = torch.arange(x.size(-2), dtype=x.dtype)[:, None]
    theta = base ** (-torch.arange(h, dtype=x.dtype) / x.size(-1))
    turned = z * torch.polar(torch.ones_like(m * theta), m * theta)
    return torch.cat([turned.real, turned.imag], dim=-1)


@wrong("11.rope_half", "length")
def adds_the_angle(x, base):
    """Adds a position signal instead of turning."""
    return x + torch.arange(x.size(-2), dtype=x.dtype)[:, None] * 0.1


@wrong("11.rope_half", "shape")
def drops_the_imaginary_half(x, base):
    return rope_half_complex(x, base)[..., : x.size(-1) // 2]


@wrong("11.rope_half", "uses apply_rope")
def permutes_around_the_package(x, base):
    """Right numbers, but the package's interleaved rotation does the work."""
    from minitx.nn.rope import apply_rope

    order = torch.arange(x.size(-1)).view(2, -1).T.flatten()  # i and i + hs/2 side by side
    return apply_rope(x[..., order], base)[..., order.argsort()]


@wrong("11.rope_half", "uses rope_angles")
def borrows_the_angles(x, base):
    """Turns the pairs itself but takes the angles from the package."""
    from minitx.nn import rope

    h = x.size(-1) // 2
    angle = rope.rope_angles(x.size(-2), x.size(-1), base).to(x.dtype)
    re, im = x[..., :h], x[..., h:]
    return torch.cat([re * angle.cos() - im * angle.sin(),
                      re * angle.sin() + im * angle.cos()], dim=-1)


# ---- cheats: the package's own pieces, however reached; each must be refused ----------


def _order(x):
    return torch.arange(x.size(-1)).view(2, -1).T.flatten()  # i and i + hs/2 side by side


def rope_by_apply_rope(x, base):
    order = _order(x)
    out = apply_rope(x[..., order], base)
    return out[..., order.argsort()]


def rope_plus_zero(x, base):
    order = _order(x)
    return apply_rope(x[..., order].clone(), float(base))[..., order.argsort()] + 0


def rope_by_getattr(x, base):
    module = importlib.import_module("minitx.nn." + "rope")
    order = _order(x)
    return getattr(module, "apply" + "_rope")(x[..., order], base)[..., order.argsort()].double()


def rope_by_angles(x, base):
    h = x.size(-1) // 2
    angle = rope_angles(x.size(-2), x.size(-1), base).to(x.dtype)
    re, im = x[..., :h], x[..., h:]
    return torch.cat([re * angle.cos() - im * angle.sin(),
                      re * angle.sin() + im * angle.cos()], dim=-1).clone()


def rope_by_the_checkers_reference(x, base):
    from minitx.course.exercises import nb11

    return nb11._rope_half_reference(x, base)


def rope_by_module(x, base):
    order = _order(x)
    turned = rope.apply_rope(x[..., order], base)
    return tuple([turned[..., order.argsort()]])[-1]


CHEATS = {
    "11.rope_half": (apply_rope, rope_by_apply_rope, rope_plus_zero, rope_by_getattr,
                     rope_by_angles, rope_by_the_checkers_reference, rope_by_module),
}


CASES = {
    "11.shift": prediction(
        ("B", " (b) ", "LayerNorm's output stays close to its output for x; RMSNorm's "
         "becomes close to a vector of ones"),
        {"a": "does not subtract the mean", "c": "subtracts the mean", "d": "what is left"},
    ),
    "11.rope_half": Case(
        right=(rope_half_complex, rope_half_loops, rope_half_numpy, rope_half_float32),
        wrong=wrong_answers("11.rope_half", (5, "a function")),
    ),
    "11.kv_cache": Case(
        right=((9, 72), [9, 72], (9.0, 72.0), (np.int64(9), np.int64(72)), np.array([9, 72]),
               torch.tensor([9, 72]), torch.tensor([9.0, 72.0], dtype=torch.float32),
               (torch.tensor(9), np.float64(72.0))),
        wrong=(
            ((72, 9), "swapped"),
            ((9, 9), "8 heads"),
            ((72, 72), "every one of the 64 heads"),
            ((18, 144), "a key and a value"),
            ((4, 36), "2 bytes"),
            ((8, 67), "2^30 bytes"),
            ((9.5, 72), "whole sequences"),
            ((10, 80), "one sequence's cache first"),
            ((9, 72, 0), "a pair of whole numbers"),
            ("9, 72", "answer with numbers"),
            (9, "a pair of whole numbers"),
        ),
    ),
}


def shift_by_hand():
    """x + 100: the mean moves by 100 and the spread stays, so LayerNorm's output is the
    same; the root mean square is about 100, so RMSNorm's is 1 + (x - mean) / 100."""
    from minitx.course.exercises import nb11

    x = torch.randn(8, 64, generator=torch.Generator().manual_seed(11), dtype=torch.float64)
    assert torch.equal(x, answers.key("11").shift_inputs())  # the instructor's inputs
    shifted = x + nb11.SHIFT
    centred = shifted - shifted.mean(-1, keepdim=True)
    layer = centred / (centred.pow(2).mean(-1, keepdim=True) + 1e-5).sqrt()
    rms = shifted / shifted.pow(2).mean(-1, keepdim=True).sqrt()
    assert (rms - 1).abs().max() < 0.05
    plain = (x - x.mean(-1, keepdim=True)) / (x.var(-1, unbiased=False, keepdim=True)
                                              + 1e-5).sqrt()
    assert (layer - plain).abs().max() < 1e-6
    assert solution("11.shift") == "b"
    assert seal("11.shift", "b") == nb11._SHIFT


def kv_cache_by_hand():
    """One sequence: 2 (key and value) x 80 layers x 4096 tokens x heads x 128 numbers x 2
    bytes, 10 GiB with 64 heads and 1.25 GiB with 8; 90 GiB holds 9 and 72 of them."""
    from minitx.course.exercises import nb11

    every_head, grouped = 2 * 80 * 4096 * 64 * 128 * 2, 2 * 80 * 4096 * 8 * 128 * 2
    key = answers.key("11")
    assert key.kv_sequence_bytes() == (every_head, grouped) == (10 * 2**30, 5 * 2**28)
    assert tuple(solution("11.kv_cache")) == (9, 72)
    assert seal("11.kv_cache", canonical([9, 72])) == nb11._KV_CACHE
    mistakes = key.kv_mistakes()
    assert mistakes == {"swapped": (72, 9), "every head in (b)": (9, 9), "8 heads in (a)": (72, 72),
                        "key or value": (18, 144), "4 bytes": (4, 36),
                        "10^9": (90 * 10**9 // every_head, 90 * 10**9 // grouped)}
    assert set(nb11._KV_MISTAKES) == {
        seal("11.kv_cache", canonical(list(v))) for v in mistakes.values()}


def rope_half_reference_by_hand():
    """The checker's reference turns pair (x[i], x[i + hs/2]) at position m by m theta_i."""
    from minitx.course.exercises import nb11

    x = torch.randn(2, 5, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(nb11._rope_half_reference(x, 10000.0),
                               rope_half_loops(x, 10000.0))
    torch.testing.assert_close(solution("11.rope_half")(x, 50.0), rope_half_loops(x, 50.0))


VALUE_CHECKS = [shift_by_hand, kv_cache_by_hand, rope_half_reference_by_hand]
