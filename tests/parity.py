"""One harness for "our module computes what PyTorch's does": outputs and gradients.

``assert_same_outputs_and_grads(ours, theirs, inputs, param_pairs, rtol=..., atol=...)`` runs
both callables on the same inputs, compares every output, then sends one random upstream
gradient back through every output of both and compares the gradients with respect to each
input and each parameter pair. ``matched_parameters`` builds the pairs from a name mapping and
insists that it names every parameter of both modules, so none escapes the comparison.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor, nn


def flat(out: Any) -> list[Tensor | None]:
    """The tensors of an output, nested tuples and lists flattened in order (None kept)."""
    if isinstance(out, (tuple, list)):
        return [t for item in out for t in flat(item)]
    return [out]


def assert_same_outputs(got: Any, want: Any, *, rtol: float, atol: float) -> list[Tensor | None]:
    """Every tensor of ``got`` is close to its partner in ``want``, shapes equal and a None
    facing a None; returns ``got`` flattened."""
    got, want = flat(got), flat(want)
    assert [None if g is None else g.shape for g in got] == [
        None if w is None else w.shape for w in want
    ]
    for g, w in zip(got, want, strict=True):
        if g is not None:
            torch.testing.assert_close(g, w, rtol=rtol, atol=atol)
    return got


def matched_parameters(
    ours: nn.Module, theirs: nn.Module, names: Mapping[str, str]
) -> list[tuple[Tensor, Tensor]]:
    """(our parameter, their parameter) for each ``names`` entry, our name -> their name."""
    ours_p, theirs_p = dict(ours.named_parameters()), dict(theirs.named_parameters())
    assert set(names) == set(ours_p), "every parameter of ours must be compared"
    assert set(names.values()) == set(theirs_p), "every parameter of theirs must be compared"
    return [(ours_p[mine], theirs_p[their]) for mine, their in names.items()]


def assert_same_outputs_and_grads(
    ours: Callable[..., Any],
    theirs: Callable[..., Any],
    inputs: Sequence[Tensor],
    param_pairs: Sequence[tuple[Tensor, Tensor]] = (),
    *,
    rtol: float,
    atol: float,
) -> tuple[list[Tensor | None], list[Tensor | None]]:
    """``ours(*inputs)`` and ``theirs(*inputs)`` agree: outputs (a tensor or a nested tuple of
    tensors and Nones), and, for one random upstream gradient through every output, the
    gradients of every input (each must require grad) and of every parameter pair.
    Returns both outputs, flattened, for further checks."""
    got, want = flat(ours(*inputs)), flat(theirs(*inputs))
    assert_same_outputs(got, want, rtol=rtol, atol=atol)
    upstream = [None if w is None else torch.randn_like(w) for w in want]

    def project(outputs: list[Tensor | None]) -> Tensor:
        return sum((o * u).sum() for o, u in zip(outputs, upstream, strict=True) if o is not None)

    g_ours = torch.autograd.grad(project(got), [*inputs, *(p for p, _ in param_pairs)])
    g_theirs = torch.autograd.grad(project(want), [*inputs, *(q for _, q in param_pairs)])
    for a, b in zip(g_ours, g_theirs, strict=True):
        torch.testing.assert_close(a, b, rtol=rtol, atol=atol)
    return got, want
