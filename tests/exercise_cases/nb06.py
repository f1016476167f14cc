"""Exercise cases of notebook 06: see tests/course/test_exercise_answers.py."""

from __future__ import annotations

import importlib
import math

import numpy as np
import torch

from exercise_cases import Case, prediction, solution, wrong, wrong_answers
from minitx.course.exercises import answers
from minitx.course.exercises.seal import canonical, seal
from minitx.course.relations import RelationNet
from minitx.data.relations import RelationTask
from minitx.nn.attention import MultiHeadAttention, merge_heads, split_heads

# ---- split_heads: right and wrong, written by hand --------------------------------------


def split_by_reshape(x, n_heads):
    B, T, _ = x.shape
    return x.reshape(B, T, n_heads, -1).permute(0, 2, 1, 3)


def split_by_chunks(x, n_heads):
    return torch.stack(x.chunk(n_heads, dim=-1), dim=1)


def split_in_numpy(x, n_heads):
    """A NumPy array back (the checker reads arrays)."""
    B, T, C = x.shape
    return np.asarray(x).reshape(B, T, n_heads, C // n_heads).transpose(0, 2, 1, 3)


def split_by_unflatten(x, n_heads):
    return x.unflatten(-1, (n_heads, -1)).movedim(2, 1)


@wrong("06.split_heads", "that is (B, n_heads, T, d_k)")
def split_without_transpose(x, n_heads):
    B, T, C = x.shape
    return x.view(B, T, n_heads, C // n_heads)  # (B, T, h, d_k): axes in the wrong order


@wrong("06.split_heads", "first entry that differs")
def split_by_view_only(x, n_heads):
    B, T, C = x.shape
    return x.view(B, n_heads, T, C // n_heads)  # the right shape, positions and features mixed


@wrong("06.split_heads", "differs from the package's")
def split_interleaved(x, n_heads):
    B, T, C = x.shape
    return x.view(B, T, C // n_heads, n_heads).permute(0, 3, 1, 2)  # feature c to head c % h


@wrong("06.split_heads", "raised IndexError")
def split_with_a_typo(x, n_heads):
    return x.view(x.size(0), x.size(1), n_heads, x.size(3))


# ---- merge_heads -------------------------------------------------------------------------


def merge_by_reshape(z):
    B, h, T, d = z.shape
    return z.transpose(1, 2).reshape(B, T, h * d)


def merge_by_cat(z):
    return torch.cat(z.unbind(dim=1), dim=-1)


def merge_in_numpy(z):
    B, h, T, d = z.shape
    return np.asarray(z).transpose(0, 2, 1, 3).reshape(B, T, h * d)


def merge_by_flatten(z):
    return z.movedim(1, 2).flatten(-2)


@wrong("06.merge_heads", "first entry that differs")
def merge_without_transpose(z):
    B, h, T, d = z.shape
    return z.reshape(B, T, h * d)  # the right shape, heads and positions mixed


@wrong("06.merge_heads", "raised RuntimeError")
def merge_view_of_transposed(z):
    B, h, T, d = z.shape
    return z.transpose(1, 2).view(B, T, h * d)  # view of a non-contiguous tensor


@wrong("06.merge_heads", "that is (B, T, d_model)")
def merge_keeps_four_axes(z):
    return z.transpose(1, 2)


@wrong("06.merge_heads", "return a tensor")
def merge_to_a_word(z):
    return "heads"


@wrong("06.split_heads", "ZeroDivisionError")
def divide_by_zero(*args):
    return 1 / 0


CASES: dict[str, Case] = {
    # last position: head 0's query is 0, so uniform weights over values (1, 2, 0): 1; head 1's
    # scores are ln 2 * (-1) * (0, 1, -1), exps (1, 1/2, 2), weights (2, 1, 4) / 7 over values
    # (0, 1, -1): -3/7
    "06.two_heads": Case(
        right=((1.0, -0.43), [1, -3 / 7], np.array([1.0, -0.4286]), torch.tensor([1.0, -0.43]),
               (np.float64(1.0), torch.tensor(-0.428, dtype=torch.float32))),
        wrong=(
            ([1.0, -0.42], "for each head alone"),  # -3/7 cut, not rounded: graded wrong too
            ((-0.43, 1.0), "swapped"),
            ((1.0, -0.31), "sqrt(d_k) = sqrt(1)"),
            ((1.0, -0.58), "multiply by ln 2"),
            ((0.69, -0.31), "one wide head"),
            ((0.57, -0.43), "one wide head"),
            ((0.0, -0.43), "softmax of equal scores is uniform"),
            ((1.0, 0.43), "for each head alone"),
            ((1.0,), "give 2 numbers"),
            ("1, -0.43", "answer with numbers"),
        ),
        never=("0.43", "3/7", "3 / 7"),
    ),
    "06.split_heads": Case(
        right=(split_by_reshape, split_by_chunks, split_in_numpy, split_by_unflatten),
        wrong=wrong_answers("06.split_heads", ("x.view(B, T, h, d)", "function")),
        never=("transpose(1, 2)", "permute"),
    ),
    "06.merge_heads": Case(
        right=(merge_by_reshape, merge_by_cat, merge_in_numpy, merge_by_flatten),
        wrong=wrong_answers("06.merge_heads", (42, "function")),
        never=("transpose(1, 2)",),
    ),
    "06.swap_heads": prediction(
        ("(a)", "A."),
        {"b": "not what the experiment shows", "(c)": "one term per head"},
        never=("same", "unchanged"),
    ),
}


# ---- answers that only hand the work to the package: each must be refused ----------------


def split_two_lines(x, n_heads):
    heads = split_heads(x, n_heads)
    return heads


def split_cloned(x, n_heads):
    return split_heads(x.clone(), int(n_heads)).clone() + 0


def split_by_getattr(x, n_heads):
    return getattr(importlib.import_module("minitx.nn.attention"), "split_" + "heads")(x, n_heads)


def split_by_the_modules_projection(x, n_heads):
    """MultiHeadAttention.project with W_Q = I and no bias is split_heads."""
    C = x.size(-1)
    mha = MultiHeadAttention(C, n_heads, bias=False).double()
    with torch.no_grad():
        mha.in_proj.weight.copy_(torch.eye(C, dtype=torch.float64).repeat(3, 1))
    return mha.project(x, "q")


def merge_two_lines(z):
    merged = merge_heads(z)
    return merged


def merge_cloned(z):
    return merge_heads(z.clone()).clone().double() + 0


def merge_by_getattr(z):
    return getattr(importlib.import_module("minitx.nn.attention"), "merge_" + "heads")(z)


CHEATS = {
    "06.split_heads": (split_heads, lambda x, h: split_heads(x, h), split_two_lines,
                       split_cloned, split_by_getattr, split_by_the_modules_projection),
    "06.merge_heads": (merge_heads, lambda z: merge_heads(z), merge_two_lines, merge_cloned,
                       merge_by_getattr),
}


def loop_over_heads(mha, x):
    """Multi-head self-attention as a loop over heads, written from the formula."""
    C, h = mha.d_model, mha.n_heads
    d = C // h
    W, b = mha.in_proj.weight, mha.in_proj.bias
    outs = []
    for i in range(h):
        rows = slice(i * d, (i + 1) * d)
        q = x @ W[:C][rows].T + b[:C][rows]
        k = x @ W[C : 2 * C][rows].T + b[C : 2 * C][rows]
        v = x @ W[2 * C :][rows].T + b[2 * C :][rows]
        a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), dim=-1)
        outs.append(a @ v)
    return torch.cat(outs, dim=-1) @ mha.out_proj.weight.T + mha.out_proj.bias


def check_nb06_split_and_merge_agree_with_a_loop_over_heads():
    """The package's split and merge (the checkers' references) and the instructor's."""
    mine = (solution("06.split_heads"), solution("06.merge_heads"))
    for split, merge in ((split_heads, merge_heads), mine):
        _split_and_merge_agree_with_a_loop_over_heads(split, merge)


def _split_and_merge_agree_with_a_loop_over_heads(split_heads, merge_heads):
    torch.manual_seed(0)
    for B, T, C, h in ((2, 5, 8, 2), (1, 1, 12, 3), (3, 4, 16, 4)):
        mha = MultiHeadAttention(C, h).double()
        x = torch.randn(B, T, C, dtype=torch.float64)
        q, k, v = (x @ mha.in_proj.weight.T + mha.in_proj.bias).split(C, dim=-1)
        qh, kh, vh = split_heads(q, h), split_heads(k, h), split_heads(v, h)
        assert qh.shape == (B, h, T, C // h)
        assert torch.equal(qh[:, 1 % h, :, 0], q[:, :, (1 % h) * (C // h)])  # head 1, feature 0
        z = torch.softmax(qh @ kh.transpose(-2, -1) / math.sqrt(C // h), dim=-1) @ vh
        out = merge_heads(z) @ mha.out_proj.weight.T + mha.out_proj.bias
        assert torch.allclose(out, loop_over_heads(mha, x), atol=1e-12)
        assert torch.equal(merge_heads(split_heads(q, h)), q)


def check_nb06_swapping_heads_changes_nothing_and_the_letter_says_so():
    key = answers.key("06")  # the instructor's experiment
    swap_heads, swap_truth = key.swap_heads, key.swap_truth
    task = RelationTask()
    torch.manual_seed(3)
    model = RelationNet.for_task(task).double().eval()
    swapped = swap_heads(model, 1, 0, 1)
    assert not torch.equal(swapped.layers[1].in_proj.weight, model.layers[1].in_proj.weight)
    x = task.sample(4, seed=1).x
    with torch.no_grad():
        a, b = model(x), swapped(x)
    assert torch.allclose(a.prev_logits, b.prev_logits, atol=1e-10)
    assert torch.allclose(a.partner_logits, b.partner_logits, atol=1e-10)
    assert swap_truth() == "a"


def two_heads_by_hand():
    """The instructor's answer (the package's attention) and the seals the checker keeps,
    against the fractions worked out by hand: (0 + 1 + 2) / 3 and (1 - 4) / 7."""
    from minitx.course.exercises import nb06

    key = answers.key("06")
    assert solution("06.two_heads") == [round(3 / 3, 2), round(-3 / 7, 2)]
    assert seal("06.two_heads", canonical([1.0, -3 / 7], 2)) == nb06._TWO_HEADS
    mistakes = key.two_heads_mistakes()
    assert mistakes["swapped"] == [-0.43, 1.0] and mistakes["zero query"] == [0.0, -0.43]
    # head 1 scaled by sqrt(2): exps 2 ** (0, -1/sqrt 2, 1/sqrt 2) over values (0, 1, -1)
    e = [2 ** (s / math.sqrt(2)) for s in (0, -1, 1)]
    assert mistakes["sqrt(d_model)"] == [1.0, round((e[1] - e[2]) / sum(e), 2)]
    assert set(nb06._TWO_HEADS_MISTAKES) == {
        seal("06.two_heads", canonical(v, 2)) for v in mistakes.values()}


VALUE_CHECKS = [
    two_heads_by_hand,
    check_nb06_split_and_merge_agree_with_a_loop_over_heads,
    check_nb06_swapping_heads_changes_nothing_and_the_letter_says_so,
]
