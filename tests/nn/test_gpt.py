"""minitx.nn.gpt: structure, causality, initial loss, attention maps, decoding, bad input."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from minitx.data import IGNORE_INDEX
from minitx.nn.gpt import GPT, GPTConfig

V = 13


def _model(seed: int = 0, **overrides) -> GPT:
    torch.manual_seed(seed)
    cfg = {"vocab_size": V, "block_size": 8, "n_layer": 2, "n_head": 2, "n_embd": 16}
    cfg.update(overrides)
    return GPT(GPTConfig(**cfg))


def _idx(B: int, T: int, seed: int = 0, vocab: int = V) -> torch.Tensor:
    return torch.randint(0, vocab, (B, T), generator=torch.Generator().manual_seed(seed))


# ----------------------------------------------------------------------------- structure


def test_forward_shapes_and_loss():
    model = _model()
    idx = _idx(3, 8)
    logits, loss = model(idx)
    assert logits.shape == (3, 8, V) and loss is None
    targets = _idx(3, 8, seed=1)
    logits, loss = model(idx, targets)
    torch.testing.assert_close(loss, F.cross_entropy(logits.reshape(-1, V), targets.flatten()))


def test_targets_ignore_index_are_ignored():
    model = _model()
    idx, targets = _idx(2, 6), _idx(2, 6, seed=1)
    logits, _ = model(idx)
    masked = targets.clone()
    masked[:, :3] = IGNORE_INDEX
    _, loss = model(idx, masked)
    expected = F.cross_entropy(logits[:, 3:].reshape(-1, V), targets[:, 3:].flatten())
    torch.testing.assert_close(loss, expected)


def test_blocks_are_pre_ln_causal_gelu_with_fused_norms():
    model = _model(n_layer=3)
    assert len(model.blocks) == 3
    for block in model.blocks:
        assert block.norm_first and block.causal and block.ffn.activation == "gelu"
        assert block.ffn.fc1.out_features == 4 * 16
        assert block.norm1.fused and block.norm2.fused
    assert model.ln_f.fused


def test_fused_norms_give_the_same_logits_as_the_explicit_ones():
    model = _model().double()
    idx, targets = _idx(2, 8), _idx(2, 8, seed=1)
    logits_fused, loss_fused = model(idx, targets)
    loss_fused.backward()
    grads_fused = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    for module in model.modules():
        if hasattr(module, "fused"):
            module.fused = False
    logits, loss = model(idx, targets)
    loss.backward()
    torch.testing.assert_close(logits, logits_fused, rtol=1e-10, atol=1e-12)
    for p, g in zip(model.parameters(), grads_fused, strict=True):
        torch.testing.assert_close(p.grad, g, rtol=1e-10, atol=1e-12)


def test_weights_are_tied():
    model = _model()
    assert model.lm_head.weight is model.tok_emb.weight
    _, loss = model(_idx(2, 8), _idx(2, 8, seed=1))
    loss.backward()
    # One tensor, one gradient: the sum of the embedding's and the head's contributions.
    assert model.tok_emb.weight.grad is model.lm_head.weight.grad
    distinct = {id(p) for p in model.parameters()}
    assert len(distinct) == len(list(model.parameters()))


def test_num_parameters():
    model = _model()
    C, L, block = 16, 2, 8
    per_block = (
        2 * 2 * C  # two LayerNorms
        + 3 * C * C + 3 * C  # in_proj
        + C * C + C  # out_proj
        + C * 4 * C + 4 * C + 4 * C * C + C  # feed-forward
    )
    expected = V * C + block * C + L * per_block + 2 * C  # + final LayerNorm
    assert model.num_parameters() == expected
    assert model.num_parameters(non_embedding=True) == expected - block * C
    assert model.num_parameters(non_embedding=False) == sum(p.numel() for p in model.parameters())


def test_no_bias_config():
    model = _model(bias=False)
    assert all(not name.endswith("bias") for name, _ in model.named_parameters())
    assert model(_idx(1, 4))[0].shape == (1, 4, V)


def test_gpt2_initialisation():
    model = _model(n_layer=4, n_embd=64, n_head=4, vocab_size=500, block_size=64)
    assert model.tok_emb.weight.std().item() == pytest.approx(0.02, rel=0.05)
    assert model.blocks[0].attn.in_proj.weight.std().item() == pytest.approx(0.02, rel=0.05)
    residual_std = 0.02 / math.sqrt(2 * 4)
    for block in model.blocks:
        assert block.attn.out_proj.weight.std().item() == pytest.approx(residual_std, rel=0.1)
        assert block.ffn.fc2.weight.std().item() == pytest.approx(residual_std, rel=0.1)
        assert torch.all(block.attn.in_proj.bias == 0) and torch.all(block.ffn.fc1.bias == 0)


@pytest.mark.parametrize("vocab", [13, 65, 300])
def test_initial_loss_is_about_ln_vocab(vocab):
    for seed in range(2):
        model = _model(seed, vocab_size=vocab, block_size=32, n_embd=32, n_head=4)
        _, loss = model(_idx(8, 32, seed, vocab), _idx(8, 32, seed + 100, vocab))
        assert loss.item() == pytest.approx(math.log(vocab), abs=0.1)


# ----------------------------------------------------------------------------- causality


@pytest.mark.parametrize("t", [0, 3, 6])
def test_changing_later_tokens_leaves_earlier_logits_unchanged(t):
    model = _model(n_layer=3).double()
    idx = _idx(2, 8)
    changed = idx.clone()
    changed[:, t + 1 :] = (changed[:, t + 1 :] + 1) % V
    before, after = model(idx)[0], model(changed)[0]
    torch.testing.assert_close(after[:, : t + 1], before[:, : t + 1], rtol=0, atol=1e-12)
    assert not torch.allclose(after[:, t + 1 :], before[:, t + 1 :])


def test_without_the_causal_mask_the_future_leaks():
    model = _model(causal=False).double()
    assert not any(block.causal for block in model.blocks)
    idx = _idx(2, 8)
    changed = idx.clone()
    changed[:, 5:] = (changed[:, 5:] + 1) % V
    assert not torch.allclose(model(changed)[0][:, :5], model(idx)[0][:, :5])


# ----------------------------------------------------------------------------- attention maps


def test_attention_maps_are_causal_distributions():
    model = _model(n_layer=3, dropout=0.2)
    model.train()
    idx = _idx(2, 7)
    maps = model.attention_maps(idx)
    assert maps.shape == (3, 2, 2, 7, 7)
    torch.testing.assert_close(maps.sum(-1), torch.ones(3, 2, 2, 7))
    assert torch.all(maps.triu(1) == 0)
    assert torch.all(maps[..., 0, 0] == 1)  # the first token can only look at itself
    assert not maps.requires_grad
    assert model.training  # mode restored
    torch.testing.assert_close(model.attention_maps(idx), maps)  # dropout was off


def test_attention_maps_path_gives_the_same_logits():
    model = _model().eval()
    idx = _idx(2, 8)
    with torch.no_grad():
        x_fast, _ = model._hidden(idx)
        x_maps, maps = model._hidden(idx, need_weights=True)
    torch.testing.assert_close(x_fast, x_maps, rtol=1e-5, atol=1e-6)
    assert len(maps) == 2


# ----------------------------------------------------------------------------- decoding


def test_generate_lengths_and_prompt_kept():
    model = _model()
    idx = _idx(3, 5)
    out = model.generate(idx, 20, generator=torch.Generator().manual_seed(0))
    assert out.shape == (3, 25) and out.dtype == torch.long
    assert torch.equal(out[:, :5], idx)
    assert out.min() >= 0 and out.max() < V
    assert torch.equal(model.generate(idx, 0), idx)


def test_generate_crops_the_context_to_block_size():
    model = _model()  # block_size 8
    long_prompt = _idx(2, 20)
    out = model.generate(long_prompt, 12, greedy=True)
    assert out.shape == (2, 32)
    # Only the last block_size tokens are seen: the older ones do not change anything.
    cropped = model.generate(long_prompt[:, -8:], 12, greedy=True)
    assert torch.equal(out[:, 20:], cropped[:, 8:])


def test_next_token_logits_sees_only_the_last_block():
    model = _model()  # block_size 8
    long_prompt = _idx(2, 20)
    with torch.no_grad():
        logits = model.next_token_logits(long_prompt)
        assert logits.shape == (2, model.config.vocab_size)
        changed = long_prompt.clone()
        changed[:, :12] = (changed[:, :12] + 1) % model.config.vocab_size  # beyond the window
        assert torch.equal(model.next_token_logits(changed), logits)
        full, _ = model(long_prompt[:, -8:])
        assert torch.equal(logits, full[:, -1])


def test_greedy_is_deterministic_and_follows_the_argmax():
    model = _model()
    idx = _idx(2, 3)
    out = model.generate(idx, 6, greedy=True)
    assert torch.equal(out, model.generate(idx, 6, greedy=True))
    with torch.no_grad():
        for t in range(3, 9):
            logits, _ = model(out[:, :t])
            assert torch.equal(out[:, t], logits[:, -1].argmax(-1))


def test_sampling_is_reproducible_with_a_generator():
    model = _model()
    idx = _idx(2, 3)
    a = model.generate(idx, 10, top_p=0.9, generator=torch.Generator().manual_seed(3))
    b = model.generate(idx, 10, top_p=0.9, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a, b)


def test_top_k_one_is_greedy():
    model = _model()
    idx = _idx(2, 3)
    out = model.generate(idx, 8, top_k=1, generator=torch.Generator().manual_seed(0))
    assert torch.equal(out, model.generate(idx, 8, greedy=True))


def test_top_k_generation_only_uses_the_top_k_tokens():
    model = _model()
    idx = _idx(1, 4).expand(500, 4)
    out = model.generate(idx, 1, top_k=3, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        top3 = set(model(idx[:1])[0][0, -1].topk(3).indices.tolist())
    assert set(out[:, -1].tolist()) == top3


def test_beam_width_one_equals_greedy():
    model = _model()
    idx = _idx(3, 4)
    greedy = model.generate(idx, 10, greedy=True)
    assert torch.equal(model.beam_search(idx, 10, beam_width=1), greedy)


def test_beam_search_shape():
    model = _model()
    idx = _idx(2, 3)
    out = model.beam_search(idx, 12, beam_width=4)  # longer than block_size: crops too
    assert out.shape == (2, 15) and torch.equal(out[:, :3], idx)


def test_wide_beam_search_finds_the_most_likely_two_tokens():
    model = _model().double()
    prompt = _idx(1, 3)
    out = model.beam_search(prompt, 2, beam_width=V)  # V beams: exact for two steps
    # Score all V * V continuations with the model itself.
    pairs = torch.cartesian_prod(torch.arange(V), torch.arange(V))  # (V*V, 2)
    seqs = torch.cat([prompt.expand(V * V, 3), pairs], dim=1)  # (V*V, 5)
    with torch.no_grad():
        logp = torch.log_softmax(model(seqs)[0], -1)  # (V*V, 5, V)
    total = logp[:, 2].gather(1, pairs[:, :1]) + logp[:, 3].gather(1, pairs[:, 1:])
    assert out[0, 3:].tolist() == pairs[total.argmax()].tolist()


# ----------------------------------------------------------------------------- bad input


def test_config_d_model_not_divisible_by_heads():
    with pytest.raises(ValueError, match="n_embd=30, n_head=4"):
        GPTConfig(vocab_size=10, block_size=8, n_layer=1, n_head=4, n_embd=30)


@pytest.mark.parametrize("field", ["vocab_size", "block_size", "n_layer", "n_head", "n_embd"])
def test_config_sizes_must_be_positive(field):
    cfg = {"vocab_size": 10, "block_size": 8, "n_layer": 1, "n_head": 2, "n_embd": 8, field: 0}
    with pytest.raises(ValueError, match=f"GPTConfig.{field} must be an int >= 1, got 0"):
        GPTConfig(**cfg)


def test_config_bad_dropout():
    with pytest.raises(ValueError, match="dropout must be in"):
        GPTConfig(vocab_size=10, block_size=8, n_layer=1, n_head=2, n_embd=8, dropout=1.0)


def test_gpt_needs_a_config():
    with pytest.raises(TypeError, match="expected a GPTConfig, got dict"):
        GPT({"vocab_size": 10})


def test_sequence_longer_than_block_size():
    with pytest.raises(ValueError, match="T=9 is longer than block_size=8"):
        _model()(_idx(1, 9))


@pytest.mark.parametrize(
    "entry",
    [
        lambda m, idx: m.generate(idx, 2),
        lambda m, idx: m.beam_search(idx, 2),
        lambda m, idx: m.attention_maps(idx),
        lambda m, idx: m.forward_cached(idx),
    ],
    ids=["generate", "beam_search", "attention_maps", "forward_cached"],
)
def test_token_ids_are_checked_where_users_arrive(entry):
    model = _model()
    idx = _idx(1, 4)
    idx[0, 2] = V
    with pytest.raises(ValueError, match=rf"outside \[0, vocab_size={V}\): min \d+, max {V}"):
        entry(model, idx)
    idx[0, 2], idx[0, 0] = 1, -3
    with pytest.raises(ValueError, match=r"outside .* min -3"):
        entry(model, idx)


def test_forward_leaves_token_ids_to_the_embedding(monkeypatch):
    """No range check in forward (it would sync the device every training step): an
    out-of-range id still fails loudly, in the embedding."""
    model = _model()
    monkeypatch.setattr(torch.Tensor, "any", _no_sync)
    monkeypatch.setattr(torch.Tensor, "__bool__", _no_sync)
    idx, targets = _idx(2, 8), _idx(2, 8, seed=1)
    model(idx, targets)[1].backward()  # a training step: nothing reads a tensor back
    monkeypatch.undo()
    for bad in (V, -3):
        idx = _idx(1, 4)
        idx[0, 2] = bad
        with pytest.raises(IndexError):
            model(idx)


def _no_sync(*args, **kwargs):
    raise AssertionError("forward read a tensor's value back to the host")


def test_non_long_idx():
    with pytest.raises(ValueError, match=r"torch\.long tensor of token ids, got torch\.int32"):
        _model()(_idx(1, 4).int())


def test_idx_must_be_2d():
    with pytest.raises(ValueError, match=r"\(B, T\) with T >= 1, got \(4,\)"):
        _model()(torch.zeros(4, dtype=torch.long))


def test_bad_targets_shape():
    with pytest.raises(ValueError, match=r"shape of idx \(1, 4\), got \(1, 3\)"):
        _model()(_idx(1, 4), _idx(1, 3))


@pytest.mark.parametrize("temperature", [0.0, -1.0])
def test_generate_bad_temperature(temperature):
    with pytest.raises(ValueError, match=f"temperature must be > 0, got {temperature}"):
        _model().generate(_idx(1, 2), 3, temperature=temperature)


def test_generate_bad_top_k():
    with pytest.raises(ValueError, match="top_k must be None or an int >= 1, got 0"):
        _model().generate(_idx(1, 2), 3, top_k=0)


@pytest.mark.parametrize("top_p", [0.0, 1.2])
def test_generate_bad_top_p(top_p):
    msg = rf"top_p must be None or a number in \(0, 1\], got {top_p}"
    with pytest.raises(ValueError, match=msg):
        _model().generate(_idx(1, 2), 3, top_p=top_p)


def test_generate_bad_max_new_tokens():
    with pytest.raises(ValueError, match="max_new_tokens must be an int >= 0, got -2"):
        _model().generate(_idx(1, 2), -2)


def test_generate_bad_prompt_ids():
    with pytest.raises(ValueError, match="outside"):
        _model().generate(torch.full((1, 2), V), 3)


def test_beam_search_bad_width():
    with pytest.raises(ValueError, match="beam_width must be an int >= 1, got 0"):
        _model().beam_search(_idx(1, 2), 3, beam_width=0)
