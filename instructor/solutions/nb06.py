"""The instructor's answers to notebook 06's exercises, computed with the package."""

from __future__ import annotations

import copy

import torch
from torch import Tensor

from minitx.course.relations import RelationNet
from minitx.data.relations import RelationTask


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


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """(B, T, C) -> (B, n_heads, T, C // n_heads): head h gets features h*d_k .. (h+1)*d_k - 1."""
    B, T, C = x.shape
    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)


def merge_heads(z: Tensor) -> Tensor:
    """(B, n_heads, T, d_k) -> (B, T, n_heads * d_k): the heads side by side again."""
    B, n_heads, T, d_k = z.shape
    return z.transpose(1, 2).contiguous().view(B, T, n_heads * d_k)


SOLUTIONS = {
    "06.split_heads": lambda: split_heads,
    "06.merge_heads": lambda: merge_heads,
    "06.swap_heads": swap_truth,
}

MODEL_ANSWERS = {
    "06.why_heads": (
        "A head computes one softmax per query, so one weighted average of the values: a single "
        "head must choose one distribution over positions for each query. To serve both the "
        "previous token and the partner it has to split its weight between them and blend their "
        "values into one vector that the read-outs must pull apart again. It can learn some of "
        "both, but more slowly: in section 6 one head fell short on every seed after 200 steps, "
        "while two heads of the same total size learned both. Eight heads give each query "
        "eight separate distributions, so one can look one step back while another finds the "
        "partner, and W_O combines both. The price is that each head compares queries and keys "
        "in only d_k dimensions, so its score matrix has rank at most d_k and it can express "
        "fewer patterns; with too many heads d_k becomes too small to tell keys apart. (Two "
        "layers of one head each can also solve the task, one relation per layer.)"
    ),
}
