"""minitx.nn.generation: temperature, top-k, top-p, sampling and beam search on plain logits."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from minitx.nn import generation


def _kept(filtered: torch.Tensor) -> set[int]:
    return set(torch.isfinite(filtered).nonzero().flatten().tolist())


# ----------------------------------------------------------------------------- temperature


def test_temperature_divides_and_changes_sharpness():
    logits = torch.tensor([[1.0, 2.0, 4.0]])
    torch.testing.assert_close(generation.apply_temperature(logits, 2.0), logits / 2)

    def entropy(t: float) -> float:
        p = torch.softmax(generation.apply_temperature(logits, t), -1)
        return float(-(p * p.log()).sum())

    assert entropy(0.5) < entropy(1.0) < entropy(2.0) < math.log(3)
    # Same ranking at every temperature: greedy decoding is unaffected.
    assert generation.apply_temperature(logits, 0.1).argmax() == logits.argmax()


# ----------------------------------------------------------------------------- top-k


@pytest.mark.parametrize("k", [1, 2, 5, 9])
def test_top_k_keeps_exactly_the_k_largest(k):
    torch.manual_seed(k)
    logits = torch.randn(4, 10)
    out = generation.top_k_filter(logits, k)
    for row in range(4):
        kept = _kept(out[row])
        assert kept == set(logits[row].topk(k).indices.tolist())
        assert torch.equal(out[row, list(kept)], logits[row, list(kept)])


def test_top_k_with_ties_keeps_exactly_k():
    logits = torch.tensor([[3.0, 1.0, 1.0, 1.0, 0.0]])
    assert len(_kept(generation.top_k_filter(logits, 2)[0])) == 2


def test_top_k_at_least_vocab_keeps_everything():
    logits = torch.randn(2, 5)
    assert torch.equal(generation.top_k_filter(logits, 5), logits)
    assert torch.equal(generation.top_k_filter(logits, 50), logits)


# ----------------------------------------------------------------------------- top-p


def test_top_p_on_a_small_example():
    probs = torch.tensor([0.05, 0.5, 0.15, 0.3])
    logits = probs.log()
    assert _kept(generation.top_p_filter(logits, 0.4)) == {1}  # 0.5 >= 0.4 already
    assert _kept(generation.top_p_filter(logits, 0.7)) == {1, 3}  # 0.5 + 0.3
    assert _kept(generation.top_p_filter(logits, 0.85)) == {1, 3, 2}  # + 0.15 = 0.95
    assert _kept(generation.top_p_filter(logits, 0.97)) == {0, 1, 2, 3}
    assert _kept(generation.top_p_filter(logits, 1.0)) == {0, 1, 2, 3}
    assert _kept(generation.top_p_filter(logits, 1e-6)) == {1}  # the top token always stays


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9, 0.99])
def test_top_p_keeps_the_smallest_nucleus(p):
    torch.manual_seed(0)
    logits = torch.randn(20, 12, dtype=torch.float64) * 2
    out = generation.top_p_filter(logits, p)
    for row in range(20):
        probs = torch.softmax(logits[row], -1)
        order = probs.argsort(descending=True).tolist()
        # Brute force: the shortest prefix of the sorted tokens with mass >= p.
        n = next(i for i in range(1, 13) if probs[order[:i]].sum() >= p)
        assert _kept(out[row]) == set(order[:n])
        assert float(probs[order[: n - 1]].sum()) < p  # one fewer would not be enough


# ----------------------------------------------------------------------------- sampling


def test_greedy_is_argmax_and_deterministic():
    torch.manual_seed(0)
    logits = torch.randn(6, 11)
    a = generation.sample_next(logits, greedy=True)
    b = generation.sample_next(logits, temperature=3.0, top_k=4, greedy=True)
    assert a.shape == (6, 1) and a.dtype == torch.long
    assert torch.equal(a[:, 0], logits.argmax(-1)) and torch.equal(a, b)


def test_sampling_is_reproducible_with_a_generator():
    logits = torch.randn(3, 20)
    draw = [generation.sample_next(logits, generator=torch.Generator().manual_seed(7))
            for _ in range(2)]
    assert torch.equal(draw[0], draw[1])


def test_top_k_sampling_only_draws_from_the_top_k():
    torch.manual_seed(1)
    logits = torch.randn(1, 30).expand(4000, 30)
    g = torch.Generator().manual_seed(0)
    tokens = generation.sample_next(logits, top_k=3, generator=g)
    top3 = set(logits[0].topk(3).indices.tolist())
    assert set(tokens.flatten().tolist()) == top3  # all three occur, nothing else


def test_top_p_sampling_only_draws_from_the_nucleus_with_renormalised_probs():
    probs = torch.tensor([0.05, 0.5, 0.15, 0.3])
    logits = probs.log().expand(20000, 4)
    g = torch.Generator().manual_seed(0)
    tokens = generation.sample_next(logits, top_p=0.7, generator=g).flatten()
    assert set(tokens.tolist()) == {1, 3}
    freq_1 = (tokens == 1).double().mean().item()
    assert freq_1 == pytest.approx(0.5 / 0.8, abs=0.02)  # renormalised within the nucleus


def test_sampling_follows_the_softmax():
    logits = torch.tensor([0.0, 1.0, 2.0]).expand(30000, 3)
    g = torch.Generator().manual_seed(0)
    tokens = generation.sample_next(logits, temperature=2.0, generator=g).flatten()
    freq = torch.bincount(tokens, minlength=3).double() / tokens.numel()
    expected = torch.softmax(torch.tensor([0.0, 0.5, 1.0], dtype=torch.float64), -1)
    torch.testing.assert_close(freq, expected, atol=0.015, rtol=0)


# ----------------------------------------------------------------------------- beam search


def _bigram_model(V: int, seed: int):
    """A toy model: next-token logits depend on the last token only (a random table)."""
    table = torch.randn(V, V, generator=torch.Generator().manual_seed(seed)) * 2

    def next_logits(idx: torch.Tensor) -> torch.Tensor:
        return table[idx[:, -1]]  # (N, V)

    return table, next_logits


def _log_prob(table: torch.Tensor, seq: list[int]) -> float:
    logp = torch.log_softmax(table.double(), -1)
    return float(sum(logp[a, b] for a, b in itertools.pairwise(seq)))


def test_beam_step_on_a_small_example():
    log_probs = torch.tensor([[[-0.1, -2.0, -3.0], [-0.5, -0.7, -4.0]]])  # (1, 2, 3)
    beam_scores = torch.tensor([[-1.0, -0.2]])
    scores, parent, token = generation.beam_step(log_probs, beam_scores, 2)
    # Candidates: beam 0 -> -1.1, -3, -4; beam 1 -> -0.7, -0.9, -4.2.
    torch.testing.assert_close(scores, torch.tensor([[-0.7, -0.9]]))
    assert parent.tolist() == [[1, 1]] and token.tolist() == [[0, 1]]


def test_beam_width_one_is_greedy():
    _, next_logits = _bigram_model(7, seed=0)
    idx = torch.tensor([[0], [3], [5]])
    seq, _ = generation.beam_search(next_logits, idx, 6, beam_width=1)
    greedy = idx
    for _ in range(6):
        greedy = torch.cat([greedy, generation.sample_next(next_logits(greedy), greedy=True)], 1)
    assert torch.equal(seq, greedy)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_wide_beam_finds_the_most_likely_sequence(seed):
    V, n = 4, 3
    table, next_logits = _bigram_model(V, seed)
    idx = torch.tensor([[1], [2]])
    seq, score = generation.beam_search(next_logits, idx, n, beam_width=V ** (n - 1))
    for b in range(2):
        start = idx[b].tolist()
        best = max(itertools.product(range(V), repeat=n),
                   key=lambda cont, s=start: _log_prob(table, s + list(cont)))
        assert seq[b].tolist() == start + list(best)
        assert score[b].item() == pytest.approx(_log_prob(table, seq[b].tolist()), abs=1e-5)


def test_beam_search_crops_to_block_size():
    seen = []

    def next_logits(idx):
        seen.append(idx.size(1))
        return torch.zeros(idx.size(0), 5)

    seq, _ = generation.beam_search(next_logits, torch.zeros(1, 4, dtype=torch.long), 5,
                                  beam_width=2, block_size=6)
    assert seq.shape == (1, 9) and seen == [4, 5, 6, 6, 6]


def test_beam_search_zero_new_tokens_returns_the_prompt():
    _, next_logits = _bigram_model(5, 0)
    idx = torch.tensor([[1, 2, 3]])
    seq, score = generation.beam_search(next_logits, idx, 0, beam_width=3)
    assert torch.equal(seq, idx) and score.tolist() == [0.0]


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("t", [0, -1.0, 0.0])
def test_bad_temperature(t):
    with pytest.raises(ValueError, match=f"temperature must be > 0, got {t}"):
        generation.apply_temperature(torch.zeros(1, 3), t)


@pytest.mark.parametrize("k", [0, -2, 1.5])
def test_bad_top_k(k):
    with pytest.raises(ValueError, match=f"top_k must be None or an int >= 1, got {k}"):
        generation.top_k_filter(torch.zeros(1, 3), k)


@pytest.mark.parametrize("p", [0, 0.0, 1.5, -0.2])
def test_bad_top_p(p):
    with pytest.raises(ValueError, match=rf"top_p must be None or a number in \(0, 1\], got {p}"):
        generation.top_p_filter(torch.zeros(1, 3), p)


@pytest.mark.parametrize("w", [0, -1])
def test_bad_beam_width(w):
    with pytest.raises(ValueError, match=f"beam_width must be an int >= 1, got {w}"):
        generation.beam_search(lambda i: torch.zeros(i.size(0), 3), torch.zeros(1, 1).long(), 2, w)


def test_bad_max_new_tokens():
    with pytest.raises(ValueError, match="max_new_tokens must be an int >= 0, got -1"):
        generation.beam_search(lambda i: torch.zeros(i.size(0), 3), torch.zeros(1, 1).long(), -1)


def test_integer_logits_are_rejected():
    with pytest.raises(TypeError, match=r"floating-point torch\.Tensor, got torch\.int64"):
        generation.sample_next(torch.zeros(2, 3, dtype=torch.long))


def test_sample_next_needs_2d_logits():
    with pytest.raises(ValueError, match=r"\(B, V\), got \(3,\)"):
        generation.sample_next(torch.zeros(3))


def test_sample_next_validates_even_when_greedy():
    with pytest.raises(ValueError, match="temperature must be > 0"):
        generation.sample_next(torch.zeros(1, 3), temperature=0.0, greedy=True)


def test_half_precision_logits_are_sampled_in_float32():
    logits = torch.tensor([[0.0, 5.0, -3.0]], dtype=torch.bfloat16).expand(200, 3)
    tokens = generation.sample_next(logits, top_k=2, generator=torch.Generator().manual_seed(0))
    assert tokens.dtype == torch.long and set(tokens.flatten().tolist()) <= {0, 1}
