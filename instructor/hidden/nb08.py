"""Hidden cases of notebook 08."""

from __future__ import annotations

from . import Hidden


def _wsd_cases() -> list[tuple]:
    runs = [  # (max_steps, peak, warmup_steps, cooldown_steps)
        (1000, 0.003, 50, 200),
        (60, 0.1, 1, 30),  # a warmup of one step
        (30, 2.5, 0, 30),  # no warmup, decay from the first step
        (200, 0.01, 40, 0),  # no cooldown
        (12, 1e-3, 4, 8),  # warmup ends where the decay starts
        (7, 0.3, 2, 1),  # a cooldown of one step
    ]
    cases = []
    for max_steps, peak, warmup, cooldown in runs:
        start = max_steps - cooldown
        steps = {0, warmup - 1, warmup, warmup + 1, start - 1, start, start + 1,
                 (warmup + start) // 2, max_steps - 1, max_steps // 3}  # fmt: skip
        cases += [(s, max_steps, peak, warmup, cooldown) for s in sorted(steps)
                  if 0 <= s < max_steps]
    return cases


HIDDEN = {
    "08.wsd": Hidden(_wsd_cases, atol=1e-6, points=2, forbid=(
        "minitx.train.config.TrainConfig.lr_at",
        "torch.optim.lr_scheduler.SequentialLR.step",
        "torch.optim.lr_scheduler.ConstantLR.get_lr",
    )),
    "08.flops": Hidden(atol=0.0, forbid=(
        "minitx.nn.gpt.GPT",
        "minitx.nn.gpt.GPT.num_parameters",
        "minitx.train.trainer.count_parameters",
        "minitx.course.tokenization.flops_per_token",
    )),
}
