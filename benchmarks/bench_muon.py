"""Muon's step: minitx.train.muon.Muon against its previous version and torch.optim.Muon.

    .venv/bin/python benchmarks/bench_muon.py [--preset cpu] [--rounds 10] [--steps 5]
        [--threads N]

Three optimisers train a copy of the preset's GPT (same initial weights) on the same
batches, through ``minitx.train.optim.make_optimizer`` (Muon for the block matrices,
AdamW for the rest); only the Muon part differs:

  torch.optim.Muon   torch's, one matrix at a time
  minitx Muon @HEAD  the previous minitx Muon, copied below as ``ReferenceMuon``: a
                     ``torch.optim.Muon`` subclass whose step called the private
                     ``Optimizer._init_group`` (kept here only as the reference)
  minitx Muon        today's, on the public ``torch.optim.Optimizer`` API

They take turns in short rounds, the order rotating from round to round, since this shared
machine's speed drifts. Printed: the optimiser's step alone and the whole training step
(batch, forward, backward, clipping, optimiser), median ms over the rounds, and how far
each model's weights are from today's minitx Muon's at the end (to the bit, or the largest
difference).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable

import torch
from torch import Tensor

from minitx.nn.gpt import GPT
from minitx.train.muon import Muon
from minitx.train.optim import MuonWithAdamW, make_optimizer
from minitx.train.presets import get_preset
from minitx.train.runtime import activated, plan_runtime


# ------------------------------------------------- the reference: minitx/train/muon.py at 438c189
def reference_orthogonalize(
    updates: Tensor,
    coefficients: tuple[float, float, float] = (3.4445, -4.7750, 2.0315),
    steps: int = 5,
    eps: float = 1e-7,
) -> Tensor:
    """The previous ``minitx.train.muon.orthogonalize``, as it was."""
    if not isinstance(updates, Tensor) or updates.dim() != 3:
        got = tuple(updates.shape) if isinstance(updates, Tensor) else type(updates).__name__
        raise ValueError(f"updates must be a (k, m, n) stack of matrices, got {got}")
    if isinstance(steps, bool) or not isinstance(steps, int) or not 0 <= steps < 100:
        raise ValueError(f"steps must be an int in [0, 100), got {steps!r}")
    a, b, c = coefficients
    X = updates.bfloat16()
    tall = X.size(1) > X.size(2)
    if tall:
        X = X.mT  # (k, n, m): iterate on the wide side
    # One norm per matrix, each computed on its own, as torch.optim.Muon computes it.
    norms = torch.stack([x.norm() for x in X]).clamp(min=eps)  # (k,)
    X = X / norms[:, None, None]
    for _ in range(steps):
        A = X @ X.mT  # (k, m, m) with m the smaller side
        B = torch.baddbmm(A, A, A, beta=b, alpha=c)  # b A + c A^2
        X = torch.baddbmm(X, B, X, beta=a)  # a X + B X
    return X.mT if tall else X


def reference_scaled_lr(lr: float, shape: torch.Size, adjust_lr_fn: str | None) -> float:
    """The previous ``minitx.train.muon.scaled_lr``, as it was."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1.0, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    raise ValueError(
        f"adjust_lr_fn must be None, 'original' or 'match_rms_adamw', got {adjust_lr_fn!r}"
    )


class ReferenceMuon(torch.optim.Muon):
    """The previous ``minitx.train.muon.Muon``, as it was (private ``_init_group`` and all)."""

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params: list[Tensor] = []
            grads: list[Tensor] = []
            buffers: list[Tensor] = []
            self._init_group(group, params, grads, buffers)
            lr = float(group["lr"])
            momentum, decay, nesterov = group["momentum"], group["weight_decay"], group["nesterov"]
            by_shape: dict[tuple, list[int]] = {}
            for i, p in enumerate(params):
                if p.dim() != 2:
                    raise ValueError(f"Muon trains matrices only, got a parameter of shape "
                                     f"{tuple(p.shape)}")
                by_shape.setdefault((p.shape, p.device, p.dtype), []).append(i)
            for members in by_shape.values():
                looks = []
                for i in members:
                    buffers[i].lerp_(grads[i], 1 - momentum)
                    looks.append(grads[i].lerp(buffers[i], momentum) if nesterov else buffers[i])
                ortho = reference_orthogonalize(torch.stack(looks), group["ns_coefficients"],
                                                group["ns_steps"], group["eps"])  # (k, m, n)
                for i, update in zip(members, ortho, strict=True):
                    p = params[i]
                    p.mul_(1 - lr * decay)
                    p.add_(update, alpha=-reference_scaled_lr(lr, p.shape, group["adjust_lr_fn"]))
        return loss


# ------------------------------------------------- the benchmark
KINDS = {  # name -> the Muon class its MuonWithAdamW uses
    "torch.optim.Muon": torch.optim.Muon,
    "minitx Muon @HEAD": ReferenceMuon,
    "minitx Muon": Muon,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="cpu", help="whose model and optimiser settings")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=5, help="steps per optimiser per round")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads (default: every core; the Trainer steps with 1 "
                        "when it shards a batch over the cores)")
    args = parser.parse_args()

    preset = get_preset(args.preset)
    runtime = plan_runtime(args.device, compile=False, threads=args.threads)
    cfg, train = preset.gpt_config(65), preset.train
    device = runtime.device
    g = torch.Generator().manual_seed(0)
    batches = torch.randint(0, 65, (args.rounds * args.steps + 3, train.batch_size,
                                    cfg.block_size + 1), generator=g)

    kinds = list(KINDS)
    models, optimizers = {}, {}
    for name, muon_class in KINDS.items():
        torch.manual_seed(0)
        models[name] = GPT(cfg).to(device)
        opt = make_optimizer(
            models[name], learning_rate=train.learning_rate, weight_decay=train.weight_decay,
            betas=train.betas, fused=runtime.fused_adamw, optimizer=train.optimizer,
            muon_lr=train.muon_lr)
        if not isinstance(opt, MuonWithAdamW) or not isinstance(opt.muon, Muon):
            raise SystemExit(f"preset {preset.name!r} does not train with Muon")
        if muon_class is not Muon:  # the same matrices and settings, another step
            matrices = [p for group in opt.muon.param_groups for p in group["params"]]
            opt = MuonWithAdamW(muon_class(matrices, lr=train.muon_lr,
                                           weight_decay=train.weight_decay), opt.adamw)
        optimizers[name] = opt

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()

    def run(name: str, first: int, n: int) -> tuple[float, float]:
        """Batches first .. first + n - 1: mean seconds per whole step, per optimiser step."""
        model, opt = models[name], optimizers[name]
        total = in_opt = 0.0
        for i in range(first, first + n):
            sync()
            start = time.perf_counter()
            block = batches[i].to(device)
            torch.manual_seed(i)  # the same dropout masks for every model
            _, loss = model(block[:, :-1], block[:, 1:])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), train.grad_clip)
            sync()
            mid = time.perf_counter()
            opt.step()
            opt.zero_grad(set_to_none=True)
            sync()
            end = time.perf_counter()
            total, in_opt = total + end - start, in_opt + end - mid
        return total / n, in_opt / n

    step_s: dict[str, list[float]] = {name: [] for name in kinds}
    opt_s: dict[str, list[float]] = {name: [] for name in kinds}
    with activated(runtime):
        for name in kinds:  # warm-up, on the same batches for all
            run(name, 0, 3)
        for r in range(args.rounds):
            order = kinds[r % len(kinds):] + kinds[: r % len(kinds)]
            for name in order:
                whole, in_opt = run(name, 3 + r * args.steps, args.steps)
                step_s[name].append(whole)
                opt_s[name].append(in_opt)

    ours = models["minitx Muon"].state_dict()
    print(f"torch {torch.__version__}, {device}, {runtime.num_threads} thread(s); preset "
          f"{preset.name}: {cfg.n_layer} layers x {cfg.n_embd}, batch {train.batch_size} x "
          f"{cfg.block_size}; {args.rounds} rounds x {args.steps} steps, interleaved")
    ours_opt = statistics.median(opt_s["minitx Muon"])
    ours_step = statistics.median(step_s["minitx Muon"])
    for name in kinds:
        opt_ms, step_ms = (1e3 * statistics.median(s[name]) for s in (opt_s, step_s))
        theirs = models[name].state_dict()
        worst = max((ours[k].float() - theirs[k].float()).abs().max().item() for k in ours)
        same = "equal to the bit" if worst == 0 else f"largest difference {worst:.2e}"
        print(f"  {name:18s} optimiser step {opt_ms:7.2f} ms (x{opt_ms / 1e3 / ours_opt:.2f})"
              f"   whole step {step_ms:7.2f} ms (x{step_ms / 1e3 / ours_step:.2f})"
              f"   weights vs minitx Muon: {same}")
    print("(xN: that time over minitx Muon's; above 1 means minitx Muon is faster)")


if __name__ == "__main__":
    main()
