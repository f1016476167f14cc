"""Exercises of notebook 04 (self-attention).

Two predictions (a shifted key, a repeated word), one implementation (attention itself,
tested against :func:`minitx.nn.attention.scaled_dot_product_attention`), two pieces of
calculator work and one open question. Expected answers are computed with the package,
never typed in.
"""

from __future__ import annotations

from typing import Any

import torch

from minitx.course.exercises import close, exercise, teaching_notes, think
from minitx.course.exercises.checks import compare_attention, implement, predict
from minitx.nn.attention import scaled_dot_product_attention
from minitx.nn.word_attention import embed_tokens, random_projections

DT = torch.float64
SHAPE_NAMES = ("X", "W_Q", "W_K", "W_V", "Q", "K", "V", "S", "A", "Z")

SHIFT_CHOICES = {
    "a": "unchanged",
    "b": "every row sharper",
    "c": "every row flatter",
    "d": "changed, not in one direction",
}
REPEAT_CHOICES = {
    "a": "unchanged",
    "b": "moves straight towards v_river",
    "c": "moves straight away from v_river",
    "d": "moves in some other direction",
}
REPEAT_SENTENCE = ("the", "bank", "of", "the", "river")


def _entropy(weights: torch.Tensor) -> torch.Tensor:
    return -(weights * weights.clamp_min(1e-300).log()).sum(-1)


def shift_keys_outcome() -> str:
    """Add one vector c to every key, on random Q, K, V: how do the rows of A change?"""
    g = torch.Generator().manual_seed(4)
    Q, K, V = (torch.randn(6, 4, generator=g, dtype=DT) for _ in range(3))
    c = 3.0 * torch.randn(4, generator=g, dtype=DT)
    _, A = scaled_dot_product_attention(Q, K, V)
    _, A_shifted = scaled_dot_product_attention(Q, K + c, V)
    if torch.allclose(A, A_shifted, rtol=0, atol=1e-12):
        return SHIFT_CHOICES["a"]
    change = _entropy(A_shifted) - _entropy(A)
    if (change < 0).all():
        return SHIFT_CHOICES["b"]
    if (change > 0).all():
        return SHIFT_CHOICES["c"]
    return SHIFT_CHOICES["d"]


def repeat_word_outcome(d_model: int = 16) -> str:
    """Append a second 'river' to 'the bank of the river': where does the output of
    'bank' go, relative to the value vector of 'river'? (Notebook 04's fixed embeddings
    and projections.)"""
    W_Q, W_K, W_V = random_projections(d_model, d_k=16)

    def bank_output(words: tuple[str, ...]) -> torch.Tensor:
        X = embed_tokens(list(words), d_model)
        return scaled_dot_product_attention(X @ W_Q, X @ W_K, X @ W_V)[0][words.index("bank")]

    before = bank_output(REPEAT_SENTENCE)
    after = bank_output((*REPEAT_SENTENCE, "river"))
    v_river = (embed_tokens(["river"], d_model) @ W_V)[0]
    step, towards = after - before, v_river - before
    if step.norm() < 1e-9:
        return REPEAT_CHOICES["a"]
    cos = torch.cosine_similarity(step, towards, dim=0).item()
    if cos > 1 - 1e-9:
        return REPEAT_CHOICES["b"]
    if cos < -1 + 1e-9:
        return REPEAT_CHOICES["c"]
    return REPEAT_CHOICES["d"]


def expected_shapes(n: int = 4, d_model: int = 6, d_k: int = 3, d_v: int = 3) -> dict:
    """Run self-attention on tensors of these sizes and read off every shape.

    (Ones, not random numbers: only the shapes matter.)"""
    X = torch.ones(n, d_model)
    W_Q, W_K, W_V = torch.ones(d_model, d_k), torch.ones(d_model, d_k), torch.ones(d_model, d_v)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    S = Q @ K.T
    Z, A = scaled_dot_product_attention(Q, K, V)
    tensors = dict(X=X, W_Q=W_Q, W_K=W_K, W_V=W_V, Q=Q, K=K, V=V, S=S, A=A, Z=Z)
    return {name: tuple(t.shape) for name, t in tensors.items()}


def expected_tiny() -> torch.Tensor:
    """Weights of q = [2, 0] over k1 = [1, 0], k2 = [0, 1] (d_k = 2)."""
    q = torch.tensor([[2.0, 0.0]], dtype=DT)
    K = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=DT)
    return scaled_dot_product_attention(q, K, K)[1][0]


# ---- predict -----------------------------------------------------------------------------


predict(
    "04.shift_keys",
    "Take any self-attention and add the same vector c to every key (queries and values "
    "stay as they are). What happens to the attention weights A? (a) unchanged; (b) every "
    "row gets sharper; (c) every row gets flatter; (d) they change, but not in one "
    "direction. Answer with the letter.",
    SHIFT_CHOICES,
    shift_keys_outcome,
    "not what happens: write the new score q . (k_j + c) as two terms, and ask "
    "which of them differs from key to key",
    whole=True,
)

predict(
    "04.repeat_word",
    "In 'the bank of the river' (no positions), 'bank' leaves attention with a vector z. "
    "Append a second 'river': 'the bank of the river river'. What happens to z? "
    "(a) unchanged, since the same words surround 'bank'; (b) it moves straight towards "
    "v_river, the value vector of 'river'; (c) it moves straight away from v_river; (d) it "
    "moves in some other direction. Answer with the letter.",
    REPEAT_CHOICES,
    repeat_word_outcome,
    "not what happens: write z as a sum of e^(score) * value over the keys, divided "
    "by the sum of e^(score); then add one more term for the new key",
    whole=True,
)


# ---- implement ---------------------------------------------------------------------------


def attention_inputs() -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Random test inputs (seeded): one sentence, a batch of heads with n_q != n_k and
    d_k != d_v, large scores, a single token and a batch of one."""
    g = torch.Generator().manual_seed(404)

    def randn(*shape: int, scale: float = 1.0) -> torch.Tensor:
        return scale * torch.randn(*shape, generator=g, dtype=DT)

    return [
        (randn(5, 4), randn(5, 4), randn(5, 3)),
        (randn(2, 3, 6, 8), randn(2, 3, 7, 8), randn(2, 3, 7, 5)),
        (randn(4, 16, scale=2.0), randn(4, 16, scale=2.0), randn(4, 2)),
        (randn(1, 3), randn(1, 3), randn(1, 2)),
        (randn(1, 3, 2), randn(1, 3, 2), randn(1, 3, 2)),
    ]


def _diagnose_weights(name: str, got: dict, want: dict, args: tuple) -> str | None:
    """What is wrong with weights A that differ from the expected ones (None: not A, or no
    likely mistake found)."""
    if name != "A":
        return None
    A, (Q, K, _) = got["A"], args
    if not torch.allclose(A.sum(-1), torch.ones(A.shape[:-1], dtype=DT), atol=1e-6):
        if torch.allclose(A.sum(-2), torch.ones(A.shape[:-2] + A.shape[-1:], dtype=DT), atol=1e-6):
            return "your columns of A sum to 1, not its rows: check the softmax's axis"
        return "the rows of your A do not sum to 1"
    raw = Q @ K.transpose(-2, -1)
    for wrong_scale, what in (
        (1.0, "you did not scale the scores"),
        (Q.size(-1), "you divided the scores by d_k"),
    ):
        if torch.allclose(A, torch.softmax(raw / wrong_scale, -1), atol=1e-6):
            return f"{what}: the scale is 1 / sqrt(d_k)"
    return None


@implement(
    "04.attention",
    "Write attention(Q, K, V) that returns (Z, A): A = softmax(Q K^T / sqrt(d_k)) and "
    "Z = A V, for Q of shape (..., n_q, d_k), K (..., n_k, d_k), V (..., n_k, d_v), where "
    "'...' is any number of batch dimensions (none, or batch and heads).",
)
def _attention(fn: Any) -> str | None:
    return compare_attention(
        fn, attention_inputs(), scaled_dot_product_attention, diagnose=_diagnose_weights
    )


# ---- compute -----------------------------------------------------------------------------


@exercise(
    "04.shapes",
    "Self-attention with n = 4 tokens, d_model = 6, d_k = d_v = 3: give the shape of each of "
    "X, W_Q, W_K, W_V, Q, K, V, S, A, Z as a dict of tuples, e.g. {'X': (rows, cols), ...}.",
    kind="compute",
)
def _shapes(answer: Any) -> str | None:
    if not isinstance(answer, dict):
        return f"answer with a dict name -> shape tuple, got a {type(answer).__name__}"
    missing = [name for name in SHAPE_NAMES if name not in answer]
    if missing:
        return f"missing: {', '.join(missing)}"
    expected = expected_shapes()
    wrong = [name for name in SHAPE_NAMES if tuple(answer[name]) != expected[name]]
    if wrong:
        return (
            f"check {', '.join(wrong)}; a product (a x b)(b x c) is a x c, and a weight "
            "matrix maps d_model features to d_k (or d_v) features"
        )
    return None


@exercise(
    "04.tiny",
    "One query q = [2, 0] and two keys k1 = [1, 0], k2 = [0, 1] (d_k = 2). Give the two "
    "attention weights to two decimals, as a list.",
    kind="compute",
)
def _tiny(answer: Any) -> str | None:
    expected = expected_tiny()
    if len(answer) != len(expected):
        return f"give {len(expected)} weights, one per key; got {len(answer)}"
    raw = torch.softmax(torch.tensor([2.0, 0.0], dtype=DT), -1)
    if close(answer, raw, atol=0.0051):
        return "close: you forgot to divide the scores by sqrt(d_k)"
    if not close(answer, expected, atol=0.0051):
        return "score_j = q . k_j / sqrt(d_k), then a softmax over the two scores"
    return None


# ---- think -------------------------------------------------------------------------------

think(
    "04.why_scale",
    "The factor 1/sqrt(d_k) was derived for queries and keys whose entries have mean 0 and "
    "variance 1, which is roughly true when training starts. Training then changes W_Q and "
    "W_K freely. After training, does the scale still keep the scores at variance 1? If "
    "not, why is it still worth having?",
)


teaching_notes(
    "04",
    50,
    "shift_keys attention tiny why_scale",
    goals=(
        "Compute Q = XW_Q, K = XW_K, V = XW_V and softmax(QK^T / sqrt(d_k)) V by hand on "
        "small cases, and give the shape of every matrix.",
        "Explain with measurements why the scores are divided by sqrt(d_k): the softmax "
        "saturates and its gradient vanishes without it.",
        "Show that self-attention ignores word order (permutation equivariance) yet makes "
        "the same word's vector depend on its context.",
        "Use the temperature to sharpen or flatten the weights, and catch a softmax taken "
        "over the wrong axis.",
    ),
    misconceptions=(
        "Attention weights change whenever the keys change (adding one vector to every "
        "key changes nothing).",
        "Without positions only the set of surrounding words matters (how often a word "
        "occurs matters too).",
        "The sqrt(d_k) keeps trained scores at variance 1 (it only does so at the start).",
        "A softmax over the wrong axis would raise an error (it runs silently on a square S).",
    ),
)
