"""minitx.course.leak: the measurements that expose a model trained without the causal mask."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from minitx.course.leak import (
    HONEST,
    LEAKING,
    corpus_words,
    future_blind_losses,
    position_losses,
    real_word_fraction,
    text_nll,
    train_with_and_without_mask,
)
from minitx.nn.gpt import GPT, GPTConfig
from minitx.train.config import TrainConfig

V, T = 11, 6


def make_gpt(causal: bool = True, seed: int = 0, n_layer: int = 2) -> GPT:
    torch.manual_seed(seed)
    cfg = GPTConfig(vocab_size=V, block_size=T, n_layer=n_layer, n_head=2, n_embd=16,
                    causal=causal)
    return GPT(cfg).double()


def batch(seed: int = 1, B: int = 3, length: int = T) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    data = torch.randint(V, (B, length + 1), generator=g)
    return data[:, :-1].contiguous(), data[:, 1:].contiguous()


def test_position_losses_average_to_the_model_loss():
    model = make_gpt()
    x, y = batch()
    per_pos = position_losses(model, x, y)
    _, loss = model(x, y)
    assert per_pos.shape == (T,)
    assert torch.allclose(per_pos.mean(), loss, atol=1e-12)


def test_future_blind_equals_teacher_forced_for_a_causal_model():
    model = make_gpt(causal=True)
    x, y = batch()
    assert torch.allclose(future_blind_losses(model, x, y), position_losses(model, x, y),
                          atol=1e-6)


@pytest.mark.parametrize("n_layer", [1, 2])
def test_future_blind_differs_for_a_model_without_the_mask(n_layer):
    causal = make_gpt(causal=True, n_layer=n_layer)
    leaky = make_gpt(causal=False, n_layer=n_layer)
    leaky.load_state_dict(causal.state_dict())  # same weights, only the mask differs
    x, y = batch()
    blind = future_blind_losses(leaky, x, y)
    forced = position_losses(leaky, x, y)
    # Only the last position reads the same input both ways (the whole window).
    assert torch.allclose(blind[-1], forced[-1], atol=1e-6)
    assert not torch.allclose(blind[:-1], forced[:-1], atol=1e-4)
    # With one layer, the last position of a prefix sees exactly what a causal model's
    # would: blind, the two compute the same. Deeper, the earlier positions of the prefix
    # still look at each other's futures inside the prefix, so they differ.
    same = torch.allclose(blind, future_blind_losses(causal, x, y), atol=1e-9)
    assert same == (n_layer == 1)


def test_future_blind_uses_only_the_prefix():
    model = make_gpt(causal=False)
    x, y = batch()
    x2 = x.clone()
    x2[:, -1] = (x2[:, -1] + 1) % V  # change only the last input token
    a, b = future_blind_losses(model, x, y), future_blind_losses(model, x2, y)
    assert torch.allclose(a[:-1], b[:-1])
    assert not torch.allclose(a[-1], b[-1])


def test_losses_restore_training_mode_and_need_no_grad():
    model = make_gpt()
    model.train()
    x, y = batch()
    out = future_blind_losses(model, x, y)
    assert model.training
    assert not out.requires_grad
    model.eval()
    position_losses(model, x, y)
    assert not model.training


def test_loss_input_errors():
    model = make_gpt()
    x, y = batch()
    with pytest.raises(ValueError, match=r"x must be a \(B, T\) torch.long"):
        position_losses(model, x.float(), y)
    with pytest.raises(ValueError, match="same shape"):
        future_blind_losses(model, x, y[:, :-1])
    with pytest.raises(ValueError, match=r"y must be a \(B, T\)"):
        future_blind_losses(model, x, y[0])
    with pytest.raises(TypeError, match=r"nn\.Module"):
        position_losses(lambda idx: idx, x, y)


def test_corpus_words_and_real_word_fraction():
    words = corpus_words("The cat, the DOG; o'er the hill.\n")
    assert words == {"the", "cat", "dog", "o'er", "hill"}
    assert real_word_fraction("the cat", words) == pytest.approx(6 / 7)
    assert real_word_fraction("The Cat", words) == pytest.approx(6 / 7)  # case-insensitive
    assert real_word_fraction("thw cat", words) == pytest.approx(3 / 7)
    assert real_word_fraction("\n\n\n", words) == 0.0
    assert real_word_fraction("o'er", ["o'er"]) == 1.0


def test_word_errors():
    with pytest.raises(TypeError, match="str"):
        corpus_words(["the"])
    with pytest.raises(ValueError, match="non-empty"):
        real_word_fraction("", {"a"})
    with pytest.raises(TypeError, match="collection of words"):
        real_word_fraction("the", "the")


def test_text_nll_matches_the_model_loss_on_one_window():
    model = make_gpt()
    ids = torch.randint(V, (T + 1,), generator=torch.Generator().manual_seed(3))
    _, loss = model(ids[None, :-1], ids[None, 1:])
    assert text_nll(model, ids) == pytest.approx(loss.item(), abs=1e-9)
    assert text_nll(model, ids.tolist()) == pytest.approx(loss.item(), abs=1e-9)


def test_text_nll_scores_every_token_once_over_windows():
    model = make_gpt()
    ids = torch.randint(V, (2 * T + 3,), generator=torch.Generator().manual_seed(4))
    total, count = 0.0, 0
    for s in range(0, ids.numel() - 1, T):
        y = ids[s + 1 : s + 1 + T]
        logits, _ = model(ids[s : s + y.numel()][None])
        total += F.cross_entropy(logits[0], y, reduction="sum").item()
        count += y.numel()
    assert count == ids.numel() - 1
    assert text_nll(model, ids) == pytest.approx(total / count, abs=1e-9)


def test_text_nll_of_a_uniform_model_is_log_vocab():
    model = make_gpt()
    with torch.no_grad():
        model.tok_emb.weight.zero_()  # tied with the head: every logit is 0
    ids = torch.arange(V).repeat(3)
    assert text_nll(model, ids) == pytest.approx(math.log(V), abs=1e-9)


def test_text_nll_errors():
    with pytest.raises(ValueError, match="causal"):
        text_nll(make_gpt(causal=False), torch.arange(5))
    model = make_gpt()
    with pytest.raises(ValueError, match="at least 2 tokens"):
        text_nll(model, torch.tensor([1]))
    with pytest.raises(ValueError, match="1-D"):
        text_nll(model, torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="block_size"):
        text_nll(model, torch.arange(5), block_size=0)
    with pytest.raises(ValueError, match="pass block_size"):
        text_nll(torch.nn.Linear(2, 2), torch.arange(5))


def random_batches(split: str, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    data = torch.randint(V, (3, T + 1), generator=generator)
    return data[:, :-1], data[:, 1:]


def tiny_pair(learning_rate: float, steps: int = 2):
    config = GPTConfig(vocab_size=V, block_size=T, n_layer=1, n_head=2, n_embd=16)
    train_config = TrainConfig(max_steps=steps, batch_size=3, learning_rate=learning_rate,
                               min_lr=0.0, warmup_steps=0, eval_interval=steps, eval_steps=1,
                               log_interval=1, seed=1)
    return config, train_config


def test_train_with_and_without_mask_differs_only_in_the_mask():
    config, train_config = tiny_pair(learning_rate=1e-12)  # the weights barely move
    models, histories = train_with_and_without_mask(config, train_config, random_batches)
    assert list(models) == list(histories) == [HONEST, LEAKING]
    assert [m.config.causal for m in models.values()] == [True, False]
    assert not any(m.training for m in models.values())
    assert all(len(h["train_loss"]) == 2 for h in histories.values())
    torch.manual_seed(0)
    fresh = GPT(config)
    for model in models.values():  # both started from the seed's weights
        for a, b in zip(model.parameters(), fresh.parameters(), strict=True):
            assert torch.allclose(a, b, atol=1e-9)
    assert config.causal  # the caller's config is left as it was


def test_train_with_and_without_mask_only_the_leak_beats_random_tokens():
    config, train_config = tiny_pair(learning_rate=2e-2, steps=300)
    _, histories = train_with_and_without_mask(config, train_config, random_batches)
    honest, leak = (sum(histories[name]["train_loss"][-20:]) / 20 for name in (HONEST, LEAKING))
    # Random tokens: nothing in the past predicts the next one, but the input holds it.
    assert honest > 0.9 * math.log(V)
    assert leak < 0.6 * honest


def test_train_with_and_without_mask_errors():
    config, train_config = tiny_pair(learning_rate=1e-3)
    with pytest.raises(TypeError, match="GPTConfig"):
        train_with_and_without_mask({"n_layer": 1}, train_config, random_batches)
    with pytest.raises(TypeError, match="TrainConfig"):
        train_with_and_without_mask(config, {"max_steps": 1}, random_batches)
