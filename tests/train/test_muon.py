"""minitx.train.muon: the batched Newton-Schulz iteration and a Muon equal to torch.optim.Muon."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from minitx.train import muon
from minitx.train.muon import Muon, ortho_dtype, orthogonalize, scaled_lr

COEFFICIENTS = (3.4445, -4.7750, 2.0315)  # torch.optim.Muon's defaults


def torch_newton_schulz(matrix, coefficients, steps, eps):
    """torch.optim.Muon's orthogonalisation of one matrix (m, n), through its public API
    only: one step from a zero weight, without momentum or decay, moves the weight by
    -lr' * O, with lr' = sqrt(max(1, m / n)) at lr 1 (bfloat16 O comes back exactly)."""
    weight = torch.nn.Parameter(torch.zeros_like(matrix))
    weight.grad = matrix.clone()
    torch.optim.Muon([weight], lr=1.0, weight_decay=0.0, momentum=0.0,
                     ns_coefficients=coefficients, ns_steps=steps, eps=eps).step()
    rows, cols = matrix.shape
    return (-weight.detach() / math.sqrt(max(1.0, rows / cols))).bfloat16()

# Same-shape groups as in a transformer (three of each), wide, tall and square.
SHAPES = [(16, 8)] * 3 + [(8, 24)] * 3 + [(12, 12)] * 2 + [(5, 7)]


DTYPES = [torch.bfloat16, torch.float32]


def newton_schulz_float64(g, coefficients=COEFFICIENTS, steps=5, eps=1e-7):
    """The same iteration in float64, matrix by matrix, written out."""
    a, b, c = coefficients
    out = []
    for m in g.double():
        X = m.mT if m.size(0) > m.size(1) else m
        X = X / X.norm().clamp(min=eps)
        for _ in range(steps):
            A = X @ X.mT
            X = a * X + (b * A + c * A @ A) @ X
        out.append(X.mT if m.size(0) > m.size(1) else X)
    return torch.stack(out)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 24, 8), (3, 8, 24), (2, 12, 12), (1, 5, 7)])
def test_orthogonalize_is_torch_muons_iteration_matrix_by_matrix(shape, dtype):
    g = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    ours = orthogonalize(g, dtype=dtype)
    assert ours.shape == g.shape and ours.dtype == dtype
    theirs = torch.stack([torch_newton_schulz(m, COEFFICIENTS, 5, 1e-7) for m in g])
    exact = newton_schulz_float64(g)
    if dtype == torch.bfloat16:
        torch.testing.assert_close(ours, theirs)  # bfloat16 tolerances
    else:  # float32's rounding of the same arithmetic, and closer to it than bfloat16 is
        torch.testing.assert_close(ours.double(), exact, rtol=1e-4, atol=1e-5)
        bf16_error = (theirs.double() - exact).abs().max()
        assert (ours.double() - exact).abs().max() < bf16_error / 10


def test_the_dtype_is_chosen_where_it_runs(monkeypatch):
    """MINITX_MUON_DTYPE forces either choice; unforced, a CPU is timed once and keeps its
    choice, and a bad value is named."""
    for name, dtype in muon.ORTHO_DTYPES.items():
        monkeypatch.setenv("MINITX_MUON_DTYPE", name)
        assert ortho_dtype("cpu") == dtype
        assert orthogonalize(torch.randn(2, 4, 6)).dtype == dtype
    monkeypatch.setenv("MINITX_MUON_DTYPE", "float16")
    with pytest.raises(ValueError, match=r"MINITX_MUON_DTYPE must be one of .*got 'float16'"):
        ortho_dtype("cpu")
    monkeypatch.delenv("MINITX_MUON_DTYPE")
    monkeypatch.setattr(muon, "_CHOSEN", {})
    timed = {}
    for slow, fast in ((torch.bfloat16, torch.float32), (torch.float32, torch.bfloat16)):
        monkeypatch.setattr(muon, "_CHOSEN", {})
        monkeypatch.setattr(muon, "_seconds", lambda d, X, slow=slow: 1.0 if d == slow else 0.1)
        timed[slow] = ortho_dtype("cpu")
        assert timed[slow] == fast
        monkeypatch.setattr(muon, "_seconds", lambda d, X: pytest.fail("timed twice"))
        assert ortho_dtype("cpu") == fast  # chosen once per process


def test_muon_in_float32_steps_as_torch_muon_does_within_bfloat16s_rounding(monkeypatch):
    """torch.optim.Muon iterates in bfloat16: our float32 steps differ from its steps by no
    more than its own steps differ from the same steps in float64."""
    runs = {}
    for dtype in ("float32", "torch", "float64"):
        monkeypatch.setenv("MINITX_MUON_DTYPE", "float32")
        params = [torch.nn.Parameter(p.detach().double() if dtype == "float64" else p.detach())
                  for p in make_params()]
        opt = (torch.optim.Muon if dtype == "torch" else Muon)(params, lr=0.05, momentum=0.9)
        if dtype == "float64":  # the iteration itself in float64
            monkeypatch.setattr(muon, "orthogonalize", lambda u, *a: newton_schulz_float64(u))
        g = torch.Generator().manual_seed(5)
        for _ in range(4):
            step_with(opt, params, [torch.randn(s, generator=g).to(params[0].dtype)
                                    for s in SHAPES])
        runs[dtype] = torch.cat([p.detach().double().flatten() for p in params])
    torch_error = (runs["torch"] - runs["float64"]).abs().max()
    assert (runs["float32"] - runs["float64"]).abs().max() < torch_error / 10
    assert (runs["float32"] - runs["torch"]).abs().max() <= 1.1 * torch_error


@pytest.mark.parametrize("scale", [1e-4, 1.0, 1e3])
def test_orthogonalize_pushes_singular_values_towards_one(scale):
    g = scale * torch.randn(4, 32, 96, generator=torch.Generator().manual_seed(1))
    s = torch.linalg.svdvals(orthogonalize(g).float())  # (4, 32)
    assert s.min() > 0.6 and s.max() < 1.25, (s.min(), s.max())
    # and it keeps the directions: close to U V^T of the SVD G = U S V^T
    U, _, Vh = torch.linalg.svd(g, full_matrices=False)
    cosine = torch.nn.functional.cosine_similarity(
        orthogonalize(g).float().flatten(1), (U @ Vh).flatten(1)
    )
    assert (cosine > 0.9).all(), cosine


def test_orthogonalize_rejects_what_is_not_a_stack_of_matrices():
    with pytest.raises(ValueError, match=r"\(k, m, n\) stack of matrices, got \(4, 4\)"):
        orthogonalize(torch.randn(4, 4))
    with pytest.raises(ValueError, match=r"steps must be an int in \[0, 100\), got 100"):
        orthogonalize(torch.randn(1, 4, 4), steps=100)


def test_scaled_lr_is_torch_muons_adjustment():
    assert scaled_lr(0.02, torch.Size([32, 8]), None) == pytest.approx(0.02 * 2)
    assert scaled_lr(0.02, torch.Size([8, 32]), "original") == pytest.approx(0.02)
    assert scaled_lr(0.02, torch.Size([8, 32]), "match_rms_adamw") == pytest.approx(
        0.02 * 0.2 * 32**0.5
    )
    with pytest.raises(ValueError, match="adjust_lr_fn must be None, 'original' or"):
        scaled_lr(0.02, torch.Size([8, 32]), "rms")


def make_params(seed: int = 0) -> list[torch.nn.Parameter]:
    g = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(0.1 * torch.randn(s, generator=g)) for s in SHAPES]


def step_with(optimizer: torch.optim.Optimizer, params, grads) -> None:
    for p, grad in zip(params, grads, strict=True):
        p.grad = grad.clone()
    optimizer.step()


def groups(params, **settings) -> list[dict]:
    """Two groups with different settings, so per-group settings are exercised."""
    return [{"params": params[:5], **settings},
            {"params": params[5:], "nesterov": False, "adjust_lr_fn": "match_rms_adamw",
             "weight_decay": 0.0}]


def test_muon_steps_as_torch_muon_does(monkeypatch):
    monkeypatch.setenv("MINITX_MUON_DTYPE", "bfloat16")  # torch.optim.Muon's own dtype
    ours_p, theirs_p = make_params(), make_params()
    ours = Muon(groups(ours_p), lr=0.05, weight_decay=0.1, momentum=0.9)
    theirs = torch.optim.Muon(groups(theirs_p), lr=0.05, weight_decay=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(2)
    start = [p.detach().clone() for p in ours_p]
    for _ in range(6):
        grads = [torch.randn(s, generator=g) for s in SHAPES]
        step_with(ours, ours_p, grads)
        step_with(theirs, theirs_p, grads)
    for p, q, p0 in zip(ours_p, theirs_p, start, strict=True):
        assert (p - p0).abs().max() > 0.05  # they moved, by much more than the tolerance
        torch.testing.assert_close(p, q, rtol=0, atol=2e-4)
    for p, q in zip(ours_p, theirs_p, strict=True):
        torch.testing.assert_close(ours.state[p]["momentum_buffer"],
                                   theirs.state[q]["momentum_buffer"], rtol=0, atol=1e-6)


def test_either_muon_resumes_the_others_run(monkeypatch):
    monkeypatch.setenv("MINITX_MUON_DTYPE", "bfloat16")
    params = make_params()
    theirs = torch.optim.Muon(params, lr=0.05)
    g = torch.Generator().manual_seed(3)
    for _ in range(3):
        step_with(theirs, params, [torch.randn(s, generator=g) for s in SHAPES])
    copied = [torch.nn.Parameter(p.detach().clone()) for p in params]
    ours = Muon(copied, lr=0.05)
    ours.load_state_dict(copy.deepcopy(theirs.state_dict()))
    for _ in range(3):
        grads = [torch.randn(s, generator=g) for s in SHAPES]
        step_with(theirs, params, grads)
        step_with(ours, copied, grads)
    for p, q in zip(copied, params, strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=2e-4)
    back = torch.optim.Muon(make_params(), lr=0.05)
    back.load_state_dict(ours.state_dict())  # and back again
    assert len(back.state) == len(SHAPES)


def test_muon_skips_parameters_without_gradients_and_takes_a_closure():
    params = make_params()
    before = [p.detach().clone() for p in params]
    opt = Muon(params, lr=0.05)
    params[0].grad = torch.ones(SHAPES[0])
    loss = opt.step(lambda: 1.5)
    assert loss == 1.5
    assert not torch.equal(params[0], before[0])
    assert all(torch.equal(p, b) for p, b in zip(params[1:], before[1:], strict=True))
    assert list(opt.state) == [params[0]]


def test_muon_refuses_a_vector_added_later():
    opt = Muon(make_params(), lr=0.05)
    gain = torch.nn.Parameter(torch.ones(8))
    opt.add_param_group({"params": [gain]})
    gain.grad = torch.ones(8)
    with pytest.raises(ValueError, match=r"matrices only, got a parameter of shape \(8,\)"):
        opt.step()


def test_muon_names_bad_settings_when_it_is_built():
    with pytest.raises(ValueError, match=r"matrices only, got a parameter of shape \(8,\)"):
        Muon([torch.nn.Parameter(torch.ones(8))])
    with pytest.raises(ValueError, match="need lr, momentum and weight_decay >= 0"):
        Muon(make_params(), lr=-1.0)
    with pytest.raises(ValueError, match="adjust_lr_fn must be None, 'original' or"):
        Muon(make_params(), adjust_lr_fn="rms")
    complex_matrix = torch.nn.Parameter(torch.ones(2, 2, dtype=torch.complex64))
    with pytest.raises(ValueError, match="real matrices with dense gradients"):
        Muon([complex_matrix])
