"""minitx.data.batches: random (B, T) windows for next-token prediction."""

from __future__ import annotations

import pytest
import torch

from minitx.data.batches import BlockBatches, random_blocks, sequential_blocks


def test_targets_are_inputs_shifted_by_one():
    data = torch.arange(100)
    x, y = random_blocks(
        data, block_size=8, batch_size=5, generator=torch.Generator().manual_seed(0)
    )
    assert x.shape == y.shape == (5, 8)
    assert x.dtype == y.dtype == torch.long
    # data[i] == i, so every row is a run of consecutive numbers and y = x + 1
    assert torch.equal(y, x + 1)
    assert torch.equal(x[:, 1:] - x[:, :-1], torch.ones(5, 7, dtype=torch.long))


def test_same_generator_state_same_batches_and_state_advances():
    data = torch.arange(1000)
    g = torch.Generator().manual_seed(3)
    state = g.get_state()
    x1, _ = random_blocks(data, 16, 4, g)
    x2, _ = random_blocks(data, 16, 4, g)
    assert not torch.equal(x1, x2)
    g.set_state(state)
    x1_again, _ = random_blocks(data, 16, 4, g)
    assert torch.equal(x1, x1_again)


def test_every_valid_window_can_be_drawn_and_none_overflows():
    data = torch.arange(12)  # T=8: starts 0..3 are valid (the target needs one more token)
    g = torch.Generator().manual_seed(0)
    starts = set()
    for _ in range(50):
        x, y = random_blocks(data, 8, 4, g)
        starts.update(x[:, 0].tolist())
        assert int(y.max()) <= 11
    assert starts == {0, 1, 2, 3}


def test_sequential_blocks_cover_the_data_once():
    data = torch.arange(103)
    xs, ys = zip(*sequential_blocks(data, block_size=10, batch_size=4), strict=True)
    x, y = torch.cat(xs), torch.cat(ys)
    assert [len(b) for b in xs] == [4, 4, 2]
    assert torch.equal(x.flatten(), torch.arange(100))
    assert torch.equal(y, x + 1)


@pytest.mark.parametrize(
    ("data", "T", "B", "error"),
    [
        (torch.arange(10).view(2, 5), 2, 1, ValueError),  # not 1-D
        (torch.rand(20), 2, 1, TypeError),  # not token ids
        (torch.arange(8), 8, 1, ValueError),  # too short for one block plus its target
        (torch.arange(20), 0, 1, ValueError),
        (torch.arange(20), 4, 0, ValueError),
        ([1, 2, 3], 1, 1, TypeError),
    ],
)
def test_bad_input(data, T, B, error):
    with pytest.raises(error):
        random_blocks(data, T, B)


def test_block_batches_source():
    train, val = torch.arange(500), torch.arange(1000, 1100)
    batches = BlockBatches(train, val, block_size=6, batch_size=3)
    g = torch.Generator().manual_seed(0)
    x, _ = batches("train", g)
    assert x.shape == (3, 6) and int(x.max()) < 500
    xv, _ = batches("val", g)
    assert int(xv.min()) >= 1000
    with pytest.raises(ValueError, match="split"):
        batches("test", g)
    assert "block_size=6" in repr(batches)


def test_block_batches_check_the_ids_once_when_built():
    """Token ids are checked here, once, not by the model at every step."""
    train, val = torch.arange(50), torch.arange(20)
    assert BlockBatches(train, val, 4, 2, vocab_size=50).vocab_size == 50
    with pytest.raises(ValueError, match=r"token id 49 .*position 40.*vocab_size is 40"):
        BlockBatches(train, val, 4, 2, vocab_size=40)
    with pytest.raises(ValueError, match=r"negative token id -3 .*position 7"):
        BlockBatches(train, torch.cat([val[:7], torch.tensor([-3]), val]), 4, 2)
    with pytest.raises(TypeError, match=r"int64.*int32.*train\.long\(\)"):
        BlockBatches(train.int(), val, 4, 2)
    with pytest.raises(ValueError, match="1-D"):
        BlockBatches(train.view(5, 10), val, 4, 2)
    with pytest.raises(ValueError, match="vocab_size"):
        BlockBatches(train, val, 4, 2, vocab_size=0)
