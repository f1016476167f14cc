"""Row shards or one thread: a training run times both and keeps the faster.

Row shards (``minitx.train.shards``) give each core its own rows of a batch. On a quiet
2-core machine that makes a step of the laptop-sized GPT much faster than one thread. On
a busy one it can go either way: the shards meet at the end of every step, so a step waits
for a shard whose core another process holds, while the operating system's scheduler gives
a process with more threads a larger share of busy cores. Which wins depends on the
machine and on what else runs (``benchmarks/bench_cpu_recipe.py`` measures it), so no rule
decides it in advance: :class:`ShardTrial` times a few steps of each way, uses the faster,
and times both again every ``every`` steps, so a load that comes or goes during a run is
followed. Both ways compute the same gradient up to float rounding.

``TIME_SHARDS = False`` turns the trials off (a run with shards then uses them on every
step): the test suite does that, so that a run is the same float path every time.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

TIME_SHARDS = True


@dataclass
class ShardTrial:
    """Chooses, step by step, between row shards (True) and one thread (False).

    Call :meth:`use_shards` before a step and :meth:`record` after it with the mode used
    and the seconds its forward and backward pass took. A trial runs ``trial_steps`` steps
    each way (which goes first alternates) and keeps the way whose median step, the first
    of each way left out as a warm-up, was shorter; ``every`` steps later the next trial
    starts.
    """

    trial_steps: int = 4
    every: int = 100
    choice: bool = True
    steps: int = 0
    shard_steps: int = 0
    trials: int = 0
    shard_wins: int = 0
    _plan: list[bool] = field(default_factory=list)
    _times: dict[bool, list[float]] = field(default_factory=dict)
    _since: int = 0

    def __post_init__(self) -> None:
        if self.trial_steps < 2 or self.every < 1:
            raise ValueError(f"ShardTrial needs trial_steps >= 2 and every >= 1, got "
                             f"{self.trial_steps} and {self.every}")
        self._start()

    def _start(self) -> None:
        first = self.trials % 2 == 0  # shards first, then one thread first, ...
        self._plan = [first] * self.trial_steps + [not first] * self.trial_steps
        self._times = {True: [], False: []}

    def use_shards(self) -> bool:
        """Whether the next step should run in row shards."""
        return self._plan[0] if self._plan else self.choice

    def record(self, shards: bool, seconds: float) -> None:
        """The step just done ran in shards (or not) and took ``seconds``."""
        self.steps += 1
        self.shard_steps += shards
        if not self._plan:
            self._since += 1
            if self._since >= self.every:
                self._start()
            return
        if shards != self._plan.pop(0):
            raise ValueError(f"the trial asked for shards={not shards}, the step ran {shards}")
        self._times[shards].append(seconds)
        if not self._plan:
            median = {m: statistics.median(t[1:]) for m, t in self._times.items()}
            self.choice = median[True] <= median[False]
            self.trials += 1
            self.shard_wins += self.choice
            self._since = 0

    def summary(self) -> str:
        """What the trials decided, in words for a log line."""
        return (f"row shards on {self.shard_steps} of {self.steps} steps (faster in "
                f"{self.shard_wins} of {self.trials} timed trials)")


__all__ = ["TIME_SHARDS", "ShardTrial"]
