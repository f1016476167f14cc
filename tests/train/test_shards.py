"""Row shards: the whole batch's gradient from shards that run on their own threads."""

import pytest
import torch
from torch import nn

from minitx.data.batches import BlockBatches
from minitx.nn.gpt import GPT, GPTConfig
from minitx.train.presets import get_preset
from minitx.train.runtime import plan_runtime
from minitx.train.shards import ShardedGradients, can_shard, has_dropout, split_rows
from minitx.train.trainer import Trainer, language_model_loss

CFG = GPTConfig(vocab_size=17, block_size=12, n_layer=2, n_head=2, n_embd=16, bias=False)


def lm_batch(rows: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, CFG.vocab_size, (rows, CFG.block_size), generator=g),
            torch.randint(0, CFG.vocab_size, (rows, CFG.block_size), generator=g))


def whole_batch_gradient(model: nn.Module, batch) -> tuple[torch.Tensor, list[torch.Tensor]]:
    model.zero_grad(set_to_none=True)
    loss = language_model_loss(model, batch)
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters()]


def test_split_rows_keeps_every_row_once_in_order():
    x, y = lm_batch(5)
    pieces = split_rows((x, y), 2)
    assert [piece[0].size(0) for piece in pieces] == [3, 2]
    torch.testing.assert_close(torch.cat([p[0] for p in pieces]), x, rtol=0, atol=0)
    torch.testing.assert_close(torch.cat([p[1] for p in pieces]), y, rtol=0, atol=0)
    assert len(split_rows((x, y), 5)) == 5


@pytest.mark.parametrize("shards", [0, -1, 1.5, True, None])
def test_split_rows_rejects_a_bad_shard_count(shards):
    with pytest.raises(ValueError, match="shards must be an int >= 1"):
        split_rows(lm_batch(4), shards)


def test_split_rows_names_what_does_not_fit():
    x, y = lm_batch(4)
    with pytest.raises(ValueError, match=r"a batch of 4 rows cannot make 5 shards"):
        split_rows((x, y), 5)
    with pytest.raises(ValueError, match=r"same rows, got \[3, 4\]"):
        split_rows((x, y[:3]), 2)


def test_can_shard_wants_tensors_with_enough_rows():
    x, y = lm_batch(4)
    assert can_shard((x, y), 2) and can_shard([x, y], 4)
    assert not can_shard((x, y), 1)  # one shard is the whole batch
    assert not can_shard((x, y), 5)  # more shards than rows
    assert not can_shard((x, y[:3]), 2)
    assert not can_shard((x, "labels"), 2)
    assert not can_shard({"x": x}, 2)
    assert not can_shard((), 2)
    assert not can_shard((torch.tensor(1.0),), 2)  # no rows at all


def test_has_dropout_sees_any_dropout_module_with_p_above_zero():
    assert not has_dropout(GPT(CFG))
    with_dropout = GPT(GPTConfig(**{**CFG.__dict__, "dropout": 0.1}))
    assert has_dropout(with_dropout)
    assert has_dropout(with_dropout.eval())  # the Trainer trains it, so eval mode is no excuse


@pytest.mark.parametrize(("rows", "shards"), [(4, 2), (5, 2), (7, 3)])
def test_sharded_gradient_is_the_whole_batch_gradient(rows, shards):
    torch.manual_seed(0)
    model = GPT(CFG)  # tied head: one tensor gets gradient from two places
    batch = lm_batch(rows)
    loss, grads = whole_batch_gradient(model, batch)
    model.zero_grad(set_to_none=True)
    with ShardedGradients(shards) as sharded:
        sharded_loss = sharded.backward(model, language_model_loss, batch)
    torch.testing.assert_close(sharded_loss, loss, rtol=1e-6, atol=1e-6)
    assert not sharded_loss.requires_grad
    for p, g in zip(model.parameters(), grads, strict=True):
        torch.testing.assert_close(p.grad, g, rtol=1e-5, atol=1e-7)


def test_sharded_gradients_replace_old_ones_and_repeat_exactly():
    torch.manual_seed(0)
    model = GPT(CFG)
    batch = lm_batch(6)
    for p in model.parameters():
        p.grad = torch.full_like(p, 100.0)  # stale: must not be added to
    with ShardedGradients(2) as sharded:
        sharded.backward(model, language_model_loss, batch)
        first = [p.grad.clone() for p in model.parameters()]
        sharded.backward(model, language_model_loss, batch)
    assert all(torch.equal(p.grad, g) for p, g in zip(model.parameters(), first, strict=True))
    assert max(float(g.abs().max()) for g in first) < 10


def test_a_parameter_no_shard_uses_gets_no_gradient():
    class WithSpare(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.used = nn.Linear(3, 1)
            self.spare = nn.Linear(3, 1)

    model = WithSpare()
    batch = (torch.randn(4, 3), torch.randn(4, 1))
    with ShardedGradients(2) as sharded:
        sharded.backward(model, lambda m, b: ((m.used(b[0]) - b[1]) ** 2).mean(), batch)
    assert model.used.weight.grad is not None
    assert model.spare.weight.grad is None and model.spare.bias.grad is None


def test_an_error_in_a_shard_reaches_the_caller_and_the_thread_count_comes_back():
    model = GPT(CFG)
    x, y = lm_batch(4)
    x[3, 0] = CFG.vocab_size  # a bad token id in the second shard, run by the pool
    before = torch.get_num_threads()
    # whichever names the bad id: GPT's own check, or the embedding it leaves ids to
    bad_id = pytest.raises((ValueError, IndexError), match=r"outside|out of range")
    with ShardedGradients(2) as sharded, bad_id:
        sharded.backward(model, language_model_loss, (x, y))
    assert torch.get_num_threads() == before


@pytest.mark.parametrize("shards", [1, 0, True])
def test_sharded_gradients_need_two_shards(shards):
    with pytest.raises(ValueError, match="shards >= 2"):
        ShardedGradients(shards)


def test_plan_runtime_shards_a_cpu_batch_over_its_threads_only():
    assert plan_runtime("cpu", threads=2).shards == 2
    assert plan_runtime("cpu", threads=1).shards == 1
    assert plan_runtime("cpu", threads=2, shards=1).shards == 1
    gpu = plan_runtime("cuda", cuda_available=True, bf16_supported=True)
    assert gpu.shards == 1
    with pytest.raises(ValueError, match="splits batches over CPU cores, but the device is cuda"):
        plan_runtime("cuda", cuda_available=True, bf16_supported=True, shards=2)
    for bad in (0, True, 2.0):
        with pytest.raises(ValueError, match="shards must be None or an int >= 1"):
            plan_runtime("cpu", shards=bad)


def tiny_trainer(shards: int, dropout: float = 0.0, loss_fn=None) -> Trainer:
    torch.manual_seed(0)
    tokens = torch.randint(0, CFG.vocab_size, (4000,), generator=torch.Generator().manual_seed(1))
    preset = get_preset("tiny").with_overrides(
        model={"block_size": CFG.block_size, "dropout": dropout},
        train={"max_steps": 6, "eval_interval": 6},
    )
    source = BlockBatches(tokens[:3000], tokens[3000:], CFG.block_size, preset.train.batch_size)
    return Trainer(GPT(preset.gpt_config(CFG.vocab_size)), preset.train, source,
                   loss_fn=loss_fn, runtime=plan_runtime("cpu", threads=2, shards=shards),
                   progress=False)


def test_trainer_shards_only_what_it_can_shard_exactly():
    assert tiny_trainer(2).shards == 2
    assert tiny_trainer(1).shards == 1
    assert tiny_trainer(2, dropout=0.1).shards == 1  # masks from one generator, two threads
    custom = tiny_trainer(2, loss_fn=lambda m, b: m(*b)[1])  # a loss the Trainer cannot see into
    assert custom.shards == 1


def test_trainer_with_shards_trains_like_without_and_repeats_exactly():
    before = torch.get_num_threads()
    runs = {}
    for name, shards in (("sharded", 2), ("whole", 1), ("sharded again", 2)):
        trainer = tiny_trainer(shards)
        history = trainer.train()
        runs[name] = (history, [p.detach().clone() for p in trainer.model.parameters()])
    assert torch.get_num_threads() == before
    (h2, p2), (h1, p1), (h2b, p2b) = runs["sharded"], runs["whole"], runs["sharded again"]
    assert h2["train_loss"] == h2b["train_loss"] and h2["val_loss"] == h2b["val_loss"]
    assert all(torch.equal(a, b) for a, b in zip(p2, p2b, strict=True))
    for a, b in zip(p2, p1, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert h2["val_loss"] == pytest.approx(h1["val_loss"], rel=1e-5)
