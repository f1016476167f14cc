"""Exercises of notebook 07 (the transformer block): positions, sizes, losses, windows.

Expected answers are computed with :mod:`minitx.transformer`, :mod:`minitx.attention`
and :mod:`minitx.gpt`, never typed in. Modules are built under
``torch.random.fork_rng`` (or on the meta device) so that checking an answer does not
move the learner's random numbers.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from minitx.attention import scaled_dot_product_attention
from minitx.exercises import close, exercise
from minitx.gpt import GPT, GPTConfig
from minitx.transformer import TransformerBlock, sinusoidal_positions

PE_QUESTION = {"pos": 50, "column": 3, "d_model": 4}
BLOCK_QUESTION = {"d_model": 48, "n_heads": 4, "d_ff": 192}
LOSS_VOCAB = 50257  # GPT-2's vocabulary
MEMORY_QUESTION = {"B": 8, "n_heads": 6, "T": 256}  # float32
WINDOW_QUESTION = {"block_size": 8, "prompt_length": 12, "vocab_size": 11}


def _as_number(answer: Any) -> float | None:
    if isinstance(answer, bool):
        return None
    try:
        value = float(answer)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _as_int(answer: Any) -> int | None:
    if isinstance(answer, bool) or not isinstance(answer, int):
        return None
    return answer


def expected_pe(pos: int = 50, column: int = 3, d_model: int = 4) -> float:
    """PE(pos, column) read off :func:`minitx.transformer.sinusoidal_positions`."""
    return float(sinusoidal_positions(pos + 1, d_model, dtype=torch.float64)[pos, column])


def expected_block_params(d_model: int = 48, n_heads: int = 4, d_ff: int = 192) -> int:
    """Parameters of a ``TransformerBlock`` with biases, counted on the meta device."""
    with torch.device("meta"):
        block = TransformerBlock(d_model, n_heads, d_ff)
    return sum(p.numel() for p in block.parameters())


def expected_initial_loss(vocab_size: int = LOSS_VOCAB) -> float:
    """Cross-entropy when every one of ``vocab_size`` tokens gets the same logit."""
    logits = torch.zeros(1, vocab_size, dtype=torch.float64)
    target = torch.zeros(1, dtype=torch.long)
    return float(torch.nn.functional.cross_entropy(logits, target))


def expected_memory_bytes(B: int = 8, n_heads: int = 6, T: int = 256) -> int:
    """Bytes of the float32 attention weights (B, n_heads, T, T) that attention returns,
    computed with the package on the meta device (shapes only, no memory used)."""
    d_head = 4  # does not matter for the weights
    q = torch.empty(B, n_heads, T, d_head, device="meta")
    _, weights = scaled_dot_product_attention(q, q, q)
    return weights.numel() * weights.element_size()


def expected_window(block_size: int = 8, prompt_length: int = 12, vocab_size: int = 11) -> list:
    """Positions of a prompt whose token changes the next-token logits of a GPT, found by
    changing each token in turn."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(7)
        cfg = GPTConfig(vocab_size=vocab_size, block_size=block_size, n_layer=1, n_head=2,
                        n_embd=8)
        model = GPT(cfg).double().eval()
        prompt = torch.randint(0, vocab_size, (1, prompt_length))
    with torch.no_grad():
        base = model.next_token_logits(prompt)  # (1, V): what generate() samples from
        seen = []
        for pos in range(prompt_length):
            changed = prompt.clone()
            changed[0, pos] = (changed[0, pos] + 1) % vocab_size
            if not torch.equal(model.next_token_logits(changed), base):
                seen.append(pos)
    return seen


@exercise(
    "07.pe_value",
    "With d_model = 4, what is the sinusoidal encoding PE(pos=50, column 3)? Columns count "
    "from 0. Answer with a float (3 decimals are enough).",
)
def _pe_value(answer: Any) -> str | None:
    value = _as_number(answer)
    if value is None:
        return f"answer with a number, got {answer!r:.40}"
    q = PE_QUESTION
    expected = expected_pe(**q)
    if close(value, expected, atol=1e-3):
        return None
    pos, col, d = q["pos"], q["column"], q["d_model"]
    pair = col // 2
    angle = pos / 10000 ** (2 * pair / d)
    if close(value, math.sin(angle), atol=1e-3):
        return "odd columns hold cosines, even columns sines"
    if close(value, math.cos(pos / 10000 ** (col / d)), atol=1e-3):
        return "the exponent uses 2i, where i is the index of the (sin, cos) pair: " \
               "column // 2, not the column itself"
    if close(value, math.cos(math.radians(angle)), atol=1e-3):
        return "the angle is in radians"
    return "PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model)); find i for column 3 first"


@exercise(
    "07.block_params",
    "How many parameters (weights and biases) does TransformerBlock(d_model=48, n_heads=4, "
    "d_ff=192) have? Count attention, feed-forward and the two LayerNorms. Answer with an int.",
)
def _block_params(answer: Any) -> str | None:
    value = _as_int(answer)
    if value is None:
        return f"answer with an int, got {type(answer).__name__}"
    q = BLOCK_QUESTION
    d, f = q["d_model"], q["d_ff"]
    expected = expected_block_params(**q)
    if value == expected:
        return None
    attn, ffn = 4 * d * d + 4 * d, 2 * d * f + f + d
    if value == 4 * d * d + 2 * d * f:
        return "close: every Linear has a bias, and each LayerNorm a weight and a bias"
    if value == attn + ffn:
        return "you left out the two LayerNorms (a weight and a bias of size d_model each)"
    if value == attn + ffn + 2 * d:
        return "each of the two LayerNorms has d_model weights and d_model biases"
    if value == q["n_heads"] * attn + ffn + 4 * d:
        return "the heads share W_Q, W_K, W_V, W_O: the number of heads does not change the count"
    return "attention: W_Q, W_K, W_V, W_O with biases; feed-forward: d -> d_ff -> d with " \
           "biases; plus two LayerNorms"


@exercise(
    "07.initial_loss",
    "A freshly initialised language model with GPT-2's vocabulary of 50257 tokens gives almost "
    "equal logits to every token. What cross-entropy loss do you expect at step 0? Answer with "
    "a float (2 decimals are enough).",
)
def _initial_loss(answer: Any) -> str | None:
    value = _as_number(answer)
    if value is None:
        return f"answer with a number, got {answer!r:.40}"
    expected = expected_initial_loss()
    if close(value, expected, atol=0.01):
        return None
    if close(value, math.log2(LOSS_VOCAB), atol=0.01):
        return "cross-entropy in PyTorch uses the natural logarithm, not log base 2"
    if close(value, math.log10(LOSS_VOCAB), atol=0.01):
        return "cross-entropy in PyTorch uses the natural logarithm, not log base 10"
    if close(value, 1 / LOSS_VOCAB, atol=1e-4):
        return "that is the probability of the right token; the loss is -log of it"
    return "with equal logits, softmax gives every token the same probability; the loss is " \
           "-log of the probability of the right token"


@exercise(
    "07.attn_memory",
    "Explicit attention with B=8 sequences, n_heads=6 and T=256 tokens stores a weights tensor "
    "(B, n_heads, T, T) in float32 (4 bytes each). How many bytes is that, for one layer? "
    "Answer with an int.",
)
def _attn_memory(answer: Any) -> str | None:
    value = _as_int(answer)
    if value is None:
        return f"answer with an int, got {type(answer).__name__}"
    q = MEMORY_QUESTION
    expected = expected_memory_bytes(**q)
    if value == expected:
        return None
    B, h, T = q["B"], q["n_heads"], q["T"]
    if value == expected // 4:
        return "that is the number of entries; each float32 takes 4 bytes"
    if value in (B * h * T * 4, B * h * T):
        return "one weight per (query, key) pair: the matrix is T x T per head"
    if value in (h * T * T * 4, B * T * T * 4):
        return "every sequence of the batch and every head has its own T x T matrix"
    if value == expected * 2:
        return "float32 is 4 bytes, not 8"
    return "count the entries of (B, n_heads, T, T), then multiply by the bytes per entry"


@exercise(
    "07.window",
    "A GPT with block_size = 8 gets a prompt of 12 tokens (positions 0 to 11) and generates the "
    "next token with generate(). Which prompt positions can change the prediction? Answer with "
    "a list of ints.",
)
def _window(answer: Any) -> str | None:
    if isinstance(answer, (str, bytes)) or not hasattr(answer, "__iter__"):
        return f"answer with a list of positions, got {type(answer).__name__}"
    try:
        positions = sorted(int(p) for p in answer)
    except (TypeError, ValueError):
        return "answer with a list of int positions"
    expected = expected_window(**WINDOW_QUESTION)
    if positions == expected:
        return None
    bs, n = WINDOW_QUESTION["block_size"], WINDOW_QUESTION["prompt_length"]
    if positions == list(range(n)):
        return "the model reads at most block_size tokens; the rest of the prompt is dropped"
    if positions == list(range(bs)):
        return "generate() keeps the most recent block_size tokens, not the first ones"
    if len(positions) != len(expected):
        return f"the model sees exactly block_size = {bs} positions, you gave {len(positions)}"
    return "which block_size tokens does generate() keep: idx[:, -block_size:]"
