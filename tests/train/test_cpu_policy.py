"""Row shards or one thread: the timed trials that choose, and the trainer that uses them."""

from __future__ import annotations

import pytest
import torch

from minitx.data.batches import BlockBatches
from minitx.nn.gpt import GPT, GPTConfig
from minitx.train import cpu_policy
from minitx.train.cpu_policy import ShardTrial
from minitx.train.runtime import describe, plan_runtime
from minitx.train.trainer import TrainConfig, Trainer


def run(trial: ShardTrial, seconds: dict[bool, float], steps: int) -> list[bool]:
    """``steps`` steps where a step in shards takes seconds[True], on one thread [False]."""
    modes = []
    for _ in range(steps):
        mode = trial.use_shards()
        trial.record(mode, seconds[mode])
        modes.append(mode)
    return modes


def test_a_trial_times_both_ways_and_keeps_the_faster_until_the_next():
    trial = ShardTrial(trial_steps=3, every=5)
    fast_shards = {True: 0.1, False: 0.2}
    assert run(trial, fast_shards, 6) == [True] * 3 + [False] * 3
    assert trial.choice and trial.trials == trial.shard_wins == 1
    assert run(trial, fast_shards, 5) == [True] * 5
    # the next trial starts with one thread; now the machine favours it
    fast_thread = {True: 0.3, False: 0.2}
    assert run(trial, fast_thread, 6) == [False] * 3 + [True] * 3
    assert not trial.choice and (trial.trials, trial.shard_wins) == (2, 1)
    assert run(trial, fast_thread, 2) == [False, False]
    assert trial.summary() == "row shards on 11 of 19 steps (faster in 1 of 2 timed trials)"


def test_the_first_step_of_each_way_is_a_warm_up_left_out():
    trial = ShardTrial(trial_steps=3)
    for mode, seconds in [(True, 9.0), (True, 0.1), (True, 0.1),
                          (False, 0.05), (False, 0.2), (False, 0.2)]:
        trial.record(mode, seconds)
    assert trial.choice  # 0.1 against 0.2; the 9 s and 0.05 s first steps do not count


def test_a_step_that_did_not_follow_the_trial_is_an_error():
    trial = ShardTrial()
    with pytest.raises(ValueError, match="the trial asked for shards=True"):
        trial.record(False, 0.1)
    with pytest.raises(ValueError, match="trial_steps >= 2 and every >= 1"):
        ShardTrial(trial_steps=1)


def test_plan_runtime_times_shards_only_when_it_chose_them(monkeypatch):
    monkeypatch.setattr(cpu_policy, "TIME_SHARDS", True)
    timed = plan_runtime("cpu", threads=2)
    assert timed.timed_shards and timed.shards == 2
    assert describe(timed, 2) == ("cpu (float32, 2 threads, each batch in 2 row shards or on "
                                  "one thread, whichever timed trials find faster)")
    assert not plan_runtime("cpu", threads=2, shards=2).timed_shards  # asked: always shards
    assert not plan_runtime("cpu", threads=1).timed_shards
    cuda = plan_runtime("cuda", cuda_available=True, mps_available=False, bf16_supported=True)
    assert not cuda.timed_shards
    monkeypatch.setattr(cpu_policy, "TIME_SHARDS", False)
    assert not plan_runtime("cpu", threads=2).timed_shards


def train_tiny(runtime) -> Trainer:
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=16,
                          dropout=0.0, bias=False))
    data = torch.randint(0, 11, (400,), generator=torch.Generator().manual_seed(1))
    config = TrainConfig(max_steps=14, batch_size=4, learning_rate=1e-2, warmup_steps=0,
                         eval_interval=100, eval_steps=1, log_interval=7)
    trainer = Trainer(model, config, BlockBatches(data[:300], data[300:], 8, 4),
                      runtime=runtime, progress=False)
    trainer.train()
    return trainer


def test_the_trainer_follows_its_trials_and_computes_the_same_run(monkeypatch):
    monkeypatch.setattr(cpu_policy, "TIME_SHARDS", True)
    timed = train_tiny(plan_runtime("cpu", threads=2))
    trial = timed.shard_trial
    assert trial is not None and trial.steps == 14 and trial.trials >= 1
    assert 4 <= trial.shard_steps <= 10  # 4 of each way in the first trial, then the winner
    plain = train_tiny(plan_runtime("cpu", threads=1))
    assert plain.shard_trial is None
    for a, b in zip(timed.model.parameters(), plain.model.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)  # float rounding only
