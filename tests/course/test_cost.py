"""minitx.course.cost: timing (with a fake clock), saved memory, FLOP formulas, graph depth."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from minitx.course.cost import (
    attention_flops,
    count_flops,
    graph_depth,
    loglog_slope,
    measure_time,
    rnn_flops,
    saved_bytes,
)
from minitx.nn.attention import MultiHeadAttention, scaled_dot_product_attention
from minitx.nn.rnn import RNN


class FakeClock:
    """A clock that advances by the next duration of a list each time fn runs."""

    def __init__(self, durations):
        self.now = 0.0
        self.durations = iter(durations)
        self.calls = 0

    def __call__(self) -> float:
        return self.now

    def work(self) -> None:
        self.calls += 1
        self.now += next(self.durations)


def test_measure_time_takes_the_smallest_timed_call_after_warmup():
    clock = FakeClock([100.0, 3.0, 1.5, 2.0])  # the first call is the warm-up
    assert measure_time(clock.work, repeats=3, warmup=1, clock=clock) == 1.5
    assert clock.calls == 4


def test_measure_time_without_warmup_counts_every_call():
    clock = FakeClock([0.5, 4.0])
    assert measure_time(clock.work, repeats=2, warmup=0, clock=clock) == 0.5


def test_measure_time_pauses_the_garbage_collector_and_restores_it():
    import gc

    states = []
    assert gc.isenabled()
    measure_time(lambda: states.append(gc.isenabled()), repeats=2, warmup=1)
    assert states == [True, False, False] and gc.isenabled()
    with pytest.raises(ZeroDivisionError):
        measure_time(lambda: 1 / 0, warmup=0)
    assert gc.isenabled()


def test_measure_time_passes_arguments():
    seen = []
    measure_time(lambda a, b: seen.append((a, b)), 1, "x", repeats=2, warmup=1)
    assert seen == [(1, "x")] * 3


def test_measure_time_default_clock_is_thread_cpu_time():
    # A sleeping thread uses no CPU: wall time 50 ms, CPU time about 0.
    import time

    assert measure_time(lambda: time.sleep(0.05), repeats=1, warmup=0) < 0.02


@pytest.mark.parametrize("kwargs", [{"repeats": 0}, {"repeats": 1.5}, {"warmup": -1},
                                    {"repeats": True}])
def test_measure_time_rejects_bad_counts(kwargs):
    with pytest.raises(ValueError, match="must be an int"):
        measure_time(lambda: None, **kwargs)


def test_measure_time_rejects_non_callables():
    with pytest.raises(TypeError, match="fn must be callable, got int"):
        measure_time(3)


def test_saved_bytes_of_a_product_counts_both_inputs_once():
    a = torch.randn(3, 4, requires_grad=True)
    b = torch.randn(4, 5, requires_grad=True)
    # mm saves a and b; the second product saves them again: still counted once.
    assert saved_bytes(lambda: (a @ b).sum() + (a @ b).sum()) == (12 + 20) * 4
    assert saved_bytes(lambda: a @ b, exclude=[a]) == 20 * 4
    assert saved_bytes(lambda: a @ b, exclude=[a, b]) == 0


def test_saved_bytes_is_zero_without_grad():
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    assert saved_bytes(lambda: a @ b) == 0
    a.requires_grad_(True)
    with torch.no_grad():
        assert saved_bytes(lambda: a @ b) == 0


def test_saved_bytes_of_explicit_attention_holds_the_weights_matrix():
    fused = {}
    for T in (32, 64):
        q, k, v = (torch.randn(2, 3, T, 4, dtype=torch.float64, requires_grad=True)
                   for _ in range(3))
        extra = saved_bytes(scaled_dot_product_attention, q, k, v, exclude=[q, k, v])
        assert extra == 2 * 3 * T * T * 8  # exactly the (B, h, T, T) weights, float64
        fused[T] = saved_bytes(F.scaled_dot_product_attention, q, k, v, exclude=[q, k, v])
    # PyTorch's fused kernel keeps no T x T matrix: what it adds grows like T.
    assert 0 < fused[32] < 2 * 3 * 32 * 32 * 8
    assert fused[64] == 2 * fused[32]


def test_saved_bytes_rejects_bad_input():
    with pytest.raises(TypeError, match="fn must be callable"):
        saved_bytes(None)
    with pytest.raises(TypeError, match="exclude must hold tensors"):
        saved_bytes(lambda: None, exclude=[1.0])
    m = torch.empty(3, device="meta", requires_grad=True)
    with pytest.raises(ValueError, match="meta"):
        saved_bytes(lambda: m * m)


@pytest.mark.parametrize("T, d, B", [(1, 1, 1), (5, 8, 2), (16, 12, 3)])
def test_attention_flops_match_pytorchs_counter(T, d, B):
    q, k, v = (torch.randn(B, T, d) for _ in range(3))
    assert count_flops(scaled_dot_product_attention, q, k, v) == attention_flops(T, d, B)
    # split into heads: the same number
    qh, kh, vh = (t.view(B, T, 2, d // 2).transpose(1, 2) for t in (q, k, v)) if d % 2 == 0 \
        else (q, k, v)
    assert count_flops(lambda: scaled_dot_product_attention(qh, kh, vh)) == attention_flops(T, d, B)


@pytest.mark.parametrize("T, C, H, B", [(1, 1, 1, 1), (7, 3, 5, 2), (20, 8, 16, 1)])
def test_rnn_flops_match_pytorchs_counter(T, C, H, B):
    rnn = RNN(C, H)
    x = torch.randn(B, T, C)
    assert count_flops(lambda: rnn(x)) == rnn_flops(T, C, H, B)
    ref = nn.RNN(C, H, batch_first=True)
    assert count_flops(lambda: ref(x)) in (0, rnn_flops(T, C, H, B))  # fused: may be unknown


def test_attention_flops_grow_like_T_squared_and_rnn_flops_like_T():
    assert attention_flops(200, 64) == 4 * attention_flops(100, 64)
    assert rnn_flops(200, 64, 64) == 2 * rnn_flops(100, 64, 64)


@pytest.mark.parametrize("fn, args", [(attention_flops, (0, 4)), (attention_flops, (4, 2.0)),
                                      (rnn_flops, (3, 0, 4)), (rnn_flops, (3, 4, 4, 0))])
def test_flop_formulas_reject_bad_sizes(fn, args):
    with pytest.raises(ValueError, match="must be an int >= 1"):
        fn(*args)


def test_graph_depth_of_a_chain_and_of_parallel_branches():
    x = torch.randn(3, requires_grad=True)
    assert graph_depth(x * 2) == 1
    y = x
    for _ in range(10):
        y = torch.tanh(y)
    assert graph_depth(y) == 10
    # ten independent branches summed: wide, but only three operations deep
    z = sum(torch.tanh(x * i) for i in range(10))
    assert graph_depth(z) == 2 + 10  # mul, tanh, then sum()'s ten additions (from 0) in a row
    w = torch.stack([torch.tanh(x * i) for i in range(10)]).sum(0)
    assert graph_depth(w) == 4  # mul, tanh, stack, sum


def test_graph_depth_of_rnn_grows_with_T_and_of_attention_does_not():
    depths_rnn, depths_att = [], []
    for T in (4, 8, 16, 32):
        x = torch.randn(1, T, 4, requires_grad=True)
        depths_rnn.append(graph_depth(RNN(4, 6)(x)[0]))
        depths_att.append(graph_depth(MultiHeadAttention(4, 2)(x, need_weights=True)[0]))
    Ts = (4, 8, 16, 32)
    per_step = [(b - a) / (t2 - t1) for (a, b), (t1, t2)
                in zip(itertools.pairwise(depths_rnn), itertools.pairwise(Ts), strict=True)]
    assert per_step[0] >= 1 and per_step == [per_step[0]] * 3  # a fixed number of ops per step
    assert len(set(depths_att)) == 1


def test_graph_depth_handles_long_chains_without_recursion():
    x = torch.randn(2, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y + 1.0
    assert graph_depth(y) == 5000


def test_graph_depth_errors():
    with pytest.raises(TypeError, match=r"torch\.Tensor"):
        graph_depth([1, 2])
    with pytest.raises(ValueError, match="grad_fn is None"):
        graph_depth(torch.randn(3))


def test_loglog_slope_recovers_exponents():
    n = [64, 128, 256, 512]
    assert loglog_slope(n, [3.0 * m**2 for m in n]) == pytest.approx(2.0)
    assert loglog_slope(n, [0.1 * m for m in n]) == pytest.approx(1.0)
    assert loglog_slope(torch.tensor(n), torch.tensor(n, dtype=torch.float32) ** 1.5) \
        == pytest.approx(1.5)
    noisy = [m**2 * f for m, f in zip(n, (1.1, 0.9, 1.05, 0.95), strict=True)]
    assert abs(loglog_slope(n, noisy) - 2.0) < 0.1
    assert math.isfinite(loglog_slope([1, 2], [5, 5]))


@pytest.mark.parametrize("x, y, match", [([1], [1], "length >= 2"), ([1, 2], [1, 2, 3], "same"),
                                         ([1, 0], [1, 2], "positive"),
                                         ([1, 2], [-1, 2], "positive"),
                                         ([3, 3], [1, 2], "two different")])
def test_loglog_slope_errors(x, y, match):
    with pytest.raises(ValueError, match=match):
        loglog_slope(x, y)
