"""Loss estimates, repetition, verbatim matches, occlusion, generation timing and the
sampling widget."""

from __future__ import annotations

import math
import random

import pytest
import torch
import torch.nn.functional as F

from minitx.course import analysis as A
from minitx.data.text_stats import longest_verbatim_match, match_lengths, repeated_ngram_fraction
from minitx.data.tokenizer import CharTokenizer
from minitx.nn.generation import continuation_log_probs, next_token_probs
from minitx.nn.gpt import GPT, GPTConfig
from minitx.train.evaluate import estimate_loss, split_loss
from minitx.viz.sampling_explorer import SamplingExplorer


def brute_match_lengths(sample: str, corpus: str) -> list[int]:
    out = []
    for i in range(len(sample)):
        L = 0
        for j in range(i + 1, len(sample) + 1):
            if sample[i:j] in corpus:
                L = j - i
        out.append(L)
    return out


@pytest.fixture(scope="module")
def tiny():
    tok = CharTokenizer.from_text("abcdefgh \n")
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=8, n_layer=2, n_head=2,
                          n_embd=16))
    return model, tok


# ---------------------------------------------------------------- repetition
def test_repeated_ngram_fraction_by_hand():
    assert repeated_ngram_fraction("abcdef", 2) == 0.0
    # "abababab": 2-grams ab ba ab ba ab ba ab -> 7 in all, 2 distinct
    assert repeated_ngram_fraction("abababab", 2) == pytest.approx(1 - 2 / 7)
    assert repeated_ngram_fraction("aaaa", 1) == pytest.approx(0.75)
    assert repeated_ngram_fraction("abc", 5) == 0.0


def test_repeated_ngram_fraction_loop_scores_high():
    loop = "the state of " * 20
    assert repeated_ngram_fraction(loop, 10) > 0.9


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_repeated_ngram_fraction_rejects_bad_n(bad):
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        repeated_ngram_fraction("abc", bad)


def test_repeated_ngram_fraction_rejects_non_str():
    with pytest.raises(TypeError, match="text must be a str"):
        repeated_ngram_fraction(["a", "b"], 1)


# ---------------------------------------------------------------- verbatim matches
def test_match_lengths_by_hand():
    corpus = "the cat sat"
    assert match_lengths("a cat", corpus).tolist() == [1, 4, 3, 2, 1]  # no "a " in corpus
    assert match_lengths("xyz", corpus).tolist() == [0, 0, 0]
    assert match_lengths("", corpus).tolist() == []


def test_match_lengths_equals_brute_force_on_random_strings():
    rng = random.Random(0)
    for _ in range(40):
        corpus = "".join(rng.choice("abc ") for _ in range(rng.randint(0, 60)))
        sample = "".join(rng.choice("abcd ") for _ in range(rng.randint(0, 30)))
        assert match_lengths(sample, corpus).tolist() == brute_match_lengths(sample, corpus)


def test_longest_verbatim_match_reports_position_and_text():
    corpus = "To be, or not to be: that is the question"
    sample = "xx not to be: yy"
    m = longest_verbatim_match(sample, corpus)
    assert m.text == " not to be: "
    assert m.length == len(m.text) == 12
    assert sample[m.sample_start : m.sample_start + m.length] == m.text
    assert corpus[m.corpus_start : m.corpus_start + m.length] == m.text


def test_longest_verbatim_match_of_nothing():
    m = longest_verbatim_match("qqq", "abc")
    assert (m.length, m.corpus_start, m.text) == (0, -1, "")
    assert longest_verbatim_match("", "abc").length == 0


def test_whole_sample_copied_is_found():
    corpus = "".join(random.Random(1).choice("abcdefg ") for _ in range(2000))
    sample = corpus[500:620]
    assert longest_verbatim_match(sample, corpus).length == 120


def test_match_lengths_rejects_non_str():
    with pytest.raises(TypeError, match="corpus must be a str"):
        match_lengths("abc", None)


# ---------------------------------------------------------------- loss
def test_estimate_loss_is_mean_of_fixed_batches(tiny):
    model, _ = tiny
    data = torch.randint(0, model.config.vocab_size, (500,), generator=torch.Generator()
                         .manual_seed(3))
    a = estimate_loss(model, data, 8, batch_size=4, n_batches=3, seed=5)
    b = estimate_loss(model, data, 8, batch_size=4, n_batches=3, seed=5)
    assert a == b
    # the same windows, scored by hand
    from minitx.data.batches import random_blocks

    gen = torch.Generator().manual_seed(5)
    losses = []
    with torch.no_grad():
        for _ in range(3):
            x, y = random_blocks(data, 8, 4, gen)
            logits, _ = model(x)
            losses.append(F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1)).item())
    assert a == pytest.approx(sum(losses) / 3, abs=1e-6)
    # an untrained model is near ln(V)
    assert abs(a - math.log(model.config.vocab_size)) < 0.3


def test_estimate_loss_restores_training_mode(tiny):
    model, _ = tiny
    data = torch.arange(100) % model.config.vocab_size
    model.train()
    estimate_loss(model, data, 8, batch_size=2, n_batches=1)
    assert model.training
    model.eval()


def test_estimate_loss_rejects_bad_n_batches(tiny):
    model, _ = tiny
    with pytest.raises(ValueError, match="n_batches"):
        estimate_loss(model, torch.arange(50) % 10, 8, n_batches=0)


# ---------------------------------------------------------------- next-token distribution
def test_next_token_probs_follow_filters(tiny):
    model, tok = tiny
    idx = torch.tensor([tok.encode("abcabc")])
    p = next_token_probs(model, idx)
    logits, _ = model(idx)
    assert torch.allclose(p, torch.softmax(logits[0, -1], -1), atol=1e-6)
    assert p.sum().item() == pytest.approx(1.0, abs=1e-6)
    p3 = next_token_probs(model, idx, top_k=3)
    assert int((p3 > 0).sum()) == 3
    assert set(p3.nonzero().flatten().tolist()) == set(p.topk(3).indices.tolist())
    cold = next_token_probs(model, idx, temperature=0.1)
    assert cold.max() > p.max()


def test_next_token_probs_crops_to_block_size(tiny):
    model, tok = tiny
    long = torch.tensor([tok.encode("hgfedcba" * 3)])  # 24 > block_size 8
    p = next_token_probs(model, long)
    q = next_token_probs(model, long[:, -8:])
    assert torch.equal(p, q)


def test_next_token_probs_rejects_batch(tiny):
    model, _ = tiny
    with pytest.raises(ValueError, match=r"\(1, T\)"):
        next_token_probs(model, torch.zeros(2, 3, dtype=torch.long))


# ---------------------------------------------------------------- occlusion
def test_occlusion_importance_by_hand(tiny):
    model, tok = tiny
    idx = torch.tensor([tok.encode("abcdef")])
    rep = tok.encode(" ")[0]
    imp = A.occlusion_importance(model, idx, rep)
    assert imp.shape == (6,)
    with torch.no_grad():
        logits, _ = model(idx)
        logp = torch.log_softmax(logits[0, -1], -1)
        top = int(logp.argmax())
        for j in (0, 3, 5):
            x = idx.clone()
            x[0, j] = rep
            lj = torch.log_softmax(model(x)[0][0, -1], -1)
            assert imp[j].item() == pytest.approx((logp[top] - lj[top]).item(), abs=1e-5)


def test_occlusion_of_a_token_equal_to_replacement_is_zero(tiny):
    model, tok = tiny
    idx = torch.tensor([tok.encode("a a")])
    imp = A.occlusion_importance(model, idx, tok.encode(" ")[0])
    assert imp[1].item() == 0.0


# ---------------------------------------------------------------- generation timing
def test_generation_ms_per_token_times_both_versions(tiny, monkeypatch):
    """One entry per length and version; every call generates the asked number of tokens,
    the versions alternated; the model's thread setting comes back."""
    model, tok = tiny
    calls = []
    generate = model.generate

    def counted(idx, n, **kw):
        calls.append((n, kw["use_cache"]))
        return generate(idx, n, **kw)

    monkeypatch.setattr(model, "generate", counted)
    before = torch.get_num_threads()
    ms = A.generation_ms_per_token(model, torch.tensor([tok.encode("ab")]), [3, 10], repeats=2)
    assert set(ms) == {"without cache", "with cache"}
    assert all(len(v) == 2 and all(t > 0 for t in v) for v in ms.values())
    assert calls == [(3, True), (3, False), (3, False), (3, True),
                     (10, True), (10, False), (10, False), (10, True)]
    assert torch.get_num_threads() == before


def test_generation_ms_per_token_rejects_bad_input(tiny):
    model, tok = tiny
    idx = torch.tensor([tok.encode("ab")])
    with pytest.raises(ValueError, match="lengths must be ints >= 1"):
        A.generation_ms_per_token(model, idx, [0])
    with pytest.raises(ValueError, match="repeats must be an int >= 1"):
        A.generation_ms_per_token(model, idx, [2], repeats=0)


# ---------------------------------------------------------------- sampling widget
def test_sampling_explorer_default_matches_generate(tiny):
    model, tok = tiny
    ex = SamplingExplorer(model, tok, "abc", num_tokens=20, temperature=0.8, top_k=5, seed=3)
    out = model.generate(torch.tensor([tok.encode("abc")]), 20, temperature=0.8, top_k=5,
                         generator=torch.Generator().manual_seed(3))
    assert ex.text == tok.decode(out[0, 3:])
    assert len(ex.text) == 20
    assert ex.settings == {"temperature": 0.8, "top_k": 5, "top_p": None, "seed": 3}
    assert "abc" in ex.output.value and "first step chooses among 5 of" in ex.output.value


def test_sampling_explorer_controls_resample(tiny):
    model, tok = tiny
    ex = SamplingExplorer(model, tok, "abc", num_tokens=30)
    first, n = ex.text, ex.n_samples
    ex.controls["top_k"].value = 1  # top-1 sampling is greedy
    greedy = model.generate(torch.tensor([tok.encode("abc")]), 30, greedy=True)
    assert ex.text == tok.decode(greedy[0, 3:])
    assert ex.n_samples == n + 1
    ex.controls["top_k"].value = 0
    assert ex.text == first  # same settings, same seed, same text
    ex.button.click()
    assert ex.controls["seed"].value == 1
    assert ex.n_samples == n + 3
    ex.controls["top_p"].value = 0.5
    assert ex.settings["top_p"] == 0.5


def test_sampling_explorer_rejects_bad_settings(tiny):
    model, tok = tiny
    with pytest.raises(ValueError, match="temperature"):
        SamplingExplorer(model, tok, "abc", temperature=0)
    with pytest.raises(ValueError, match="prompt"):
        SamplingExplorer(model, tok, "")
    with pytest.raises(ValueError, match="not in the vocabulary"):
        SamplingExplorer(model, tok, "xyz")


# ---------------------------------------------------------------- continuation log-probs
def test_continuation_log_probs_match_step_by_step_scoring(tiny):
    model, tok = tiny
    g = torch.Generator().manual_seed(0)
    out = model.generate(torch.tensor([tok.encode("abc")]), 17, generator=g)  # 20 > block 8
    lp = continuation_log_probs(model, out, 3)
    assert lp.shape == (17,)
    with torch.no_grad():
        for t in range(3, 20):
            logits, _ = model(out[:, max(0, t - 8) : t])
            want = torch.log_softmax(logits[0, -1], -1)[out[0, t]]
            assert lp[t - 3].item() == pytest.approx(want.item(), abs=1e-5)
    assert (lp <= 0).all()


def test_continuation_log_probs_short_sequence(tiny):
    model, tok = tiny
    ids = torch.tensor(tok.encode("abcd"))
    lp = continuation_log_probs(model, ids, 1)
    assert lp.shape == (3,)


def test_continuation_log_probs_rejects_bad_start(tiny):
    model, tok = tiny
    with pytest.raises(ValueError, match="start"):
        continuation_log_probs(model, torch.tensor(tok.encode("abcd")), 0)
    with pytest.raises(TypeError, match="tensor"):
        continuation_log_probs(model, [1, 2, 3], 1)


@pytest.mark.parametrize("length", [7, 8, 9, 10])
def test_continuation_log_probs_around_block_size(tiny, length):
    model, tok = tiny
    ids = torch.tensor(tok.encode("abcdefgh\n "[:length]))
    lp = continuation_log_probs(model, ids, 2)
    assert lp.shape == (length - 2,)
    with torch.no_grad():
        for t in range(2, length):
            logits, _ = model(ids[max(0, t - 8) : t][None])
            want = torch.log_softmax(logits[0, -1], -1)[ids[t]]
            assert lp[t - 2].item() == pytest.approx(want.item(), abs=1e-5)


def test_split_loss_scores_every_window_once(tiny):
    model, _ = tiny
    data = torch.randint(0, model.config.vocab_size, (203,), generator=torch.Generator()
                         .manual_seed(4))
    # 203 tokens -> (203 - 1) // 8 = 25 windows of 8 predictions; the last 2 tokens unused
    total = 0.0
    with torch.no_grad():
        for start in range(0, 25 * 8, 8):
            x, y = data[start : start + 8], data[start + 1 : start + 9]
            logits, _ = model(x[None])
            total += F.cross_entropy(logits[0], y, reduction="sum").item()
    expected = total / (25 * 8)
    # batch size must not matter, including a last batch smaller than the others
    for batch_size in (1, 7, 64):
        assert split_loss(model, data, 8, batch_size=batch_size) == pytest.approx(
            expected, abs=1e-5)
    subset = split_loss(model, data, 8, max_tokens=80)  # windows 0..9 only
    assert subset == pytest.approx(split_loss(model, data[:81], 8), abs=1e-6)
    assert subset != pytest.approx(expected, abs=1e-6)


def test_split_loss_restores_mode_and_rejects_bad_input(tiny):
    model, _ = tiny
    data = torch.randint(0, model.config.vocab_size, (100,))
    model.train()
    split_loss(model, data, 8)
    assert model.training
    with pytest.raises(ValueError, match=r"1-D tensor of token ids \(N,\), got \(2, 50\)"):
        split_loss(model, data.view(2, 50), 8)
    with pytest.raises(ValueError, match="max_tokens must exceed block_size=8, got 8"):
        split_loss(model, data, 8, max_tokens=8)
