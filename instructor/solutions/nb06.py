"""The instructor's answers to notebook 06's exercises, computed with the package."""

from __future__ import annotations

import copy
import math

import torch
from torch import Tensor

from minitx.course.exercises.nb06 import TWO_HEADS_X
from minitx.course.relations import RelationNet
from minitx.data.relations import RelationTask
from minitx.nn.attention import MultiHeadAttention


def swap_heads(model: RelationNet, layer: int, i: int, j: int) -> RelationNet:
    """A copy of ``model`` whose heads ``i`` and ``j`` of ``layer`` trade places: their rows
    of W_Q, W_K, W_V and their columns of W_O."""
    swapped = copy.deepcopy(model)
    attn = swapped.layers[layer]
    C, d = attn.d_model, attn.d_head
    order = torch.arange(attn.n_heads)
    order[i], order[j] = j, i
    feats = torch.cat([torch.arange(int(h) * d, (int(h) + 1) * d) for h in order])  # (C,)
    rows = torch.cat([feats, feats + C, feats + 2 * C])  # the same heads in W_Q, W_K, W_V
    with torch.no_grad():
        attn.in_proj.weight.copy_(attn.in_proj.weight[rows])
        attn.in_proj.bias.copy_(attn.in_proj.bias[rows])
        attn.out_proj.weight.copy_(attn.out_proj.weight[:, feats])
    return swapped


def swap_truth() -> str:
    """The choice the experiment gives ('a' the same outputs, else 'b'), run on a random
    (untrained) model: the answer does not depend on the weights."""
    task = RelationTask()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = RelationNet.for_task(task).double().eval()
    x = task.sample(8, seed=0).x
    with torch.no_grad():
        before, after = model(x), swap_heads(model, 0, 0, 1)(x)
    same = all(torch.allclose(a, b, atol=1e-10) for a, b in zip(before[:2], after[:2], strict=True))
    return "a" if same else "b"


def _last_row(n_heads: int, q_gain: float) -> list[float]:
    """The last row of the package's multi-head attention (no biases, W_O = I, so the
    concatenation of the heads) on ``TWO_HEADS_X`` with W_Q = q_gain * I and W_K = W_V = I,
    rounded to 2 decimals."""
    x = torch.tensor(TWO_HEADS_X, dtype=torch.float64)[None]  # (1, T, 2)
    mha = MultiHeadAttention(2, n_heads, bias=False).double()
    eye = torch.eye(2, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj.weight.copy_(torch.cat([q_gain * eye, eye, eye]))
        mha.out_proj.weight.copy_(eye)
        y, _ = mha(x, need_weights=True)
    return [round(float(v), 2) for v in y[0, -1]]


def two_heads() -> list[float]:
    """06.two_heads: [head_0, head_1] at the last position of ``TWO_HEADS_X``, 2 heads of
    d_k = 1, W_Q = ln 2 * I."""
    return _last_row(2, math.log(2))


def two_heads_mistakes() -> dict[str, list[float]]:
    """The known wrong answers of 06.two_heads, each with the key of its hint."""
    right = two_heads()
    return {
        "swapped": right[::-1],
        "sqrt(d_model)": _last_row(2, math.log(2) / math.sqrt(2)),  # scaled by sqrt(2), not 1
        "no ln 2": _last_row(2, 1.0),
        "one wide head": _last_row(1, math.log(2)),  # one softmax over both features
        "one wide head, unscaled": _last_row(1, math.log(2) * math.sqrt(2)),
        "zero query": [0.0, right[1]],  # a query of 0 read as weights of 0
    }


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """(B, T, C) -> (B, n_heads, T, C // n_heads): head h gets features h*d_k .. (h+1)*d_k - 1."""
    B, T, C = x.shape
    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)


def merge_heads(z: Tensor) -> Tensor:
    """(B, n_heads, T, d_k) -> (B, T, n_heads * d_k): the heads side by side again."""
    B, n_heads, T, d_k = z.shape
    return z.transpose(1, 2).contiguous().view(B, T, n_heads * d_k)


SOLUTIONS = {
    "06.two_heads": two_heads,
    "06.split_heads": lambda: split_heads,
    "06.merge_heads": lambda: merge_heads,
    "06.swap_heads": swap_truth,
}

MODEL_ANSWERS = {
    "06.why_heads": (
        "At the brackets, the only positions that have a partner. A head computes one softmax "
        "per query: at a bracket the single head must put its weight on the partner to answer "
        "the partner question, which leaves little on the previous token; at a letter there is "
        "no partner to find, so it can look one step back. Measured for that run (seed 2, "
        "learning rate 1e-2, 1,000 steps, the 2,000 test sequences): previous-token accuracy "
        "1.00 at positions without a partner and 0.24 at brackets, and the head's mean weight "
        "on the partner at bracket queries 0.99 (relation_scores). To check: "
        "relation_accuracy split into bracket and other positions, or relation_scores and the "
        "heatmap of that head on an example (section 5's measurements). Two heads give each "
        "query two softmaxes, one free to look back while the other finds the partner, and "
        "W_O adds what both write; two layers give the same freedom one after the other. At "
        "a smaller rate (3e-3) the one head did learn both on every seed, so a single head "
        "can share its weight between the two at a bracket, but it is harder to learn."
    ),
}
