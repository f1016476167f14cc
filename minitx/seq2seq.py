"""An encoder-decoder RNN, with or without attention (Cho et al. 2014; Bahdanau et al. 2015).

The encoder reads the source characters x_1..x_T with a GRU and keeps every state
h_1..h_T (B, T_in, H). The decoder writes y_1, y_2, ... one character at a time with a
GRU cell whose state s_i starts from the encoder's last state h_T. At each step it is fed
the previous character and a context vector c_i:

- ``attention=None``: c_i = h_T at every step, one fixed-size vector for the whole
  source (the bottleneck);
- ``attention="additive"``: c_i = sum_j a_ij h_j with a_i = softmax_j(v^T tanh(W s_{i-1} + U h_j))
  (:class:`minitx.attention.AdditiveAttention`);
- ``attention="dot"``: the same with score s_{i-1} . h_j / sqrt(H)
  (:class:`minitx.attention.DotProductAttention`).

The recurrences use ``torch.nn.GRU`` / ``nn.GRUCell`` for speed; ``minitx.rnn`` holds the
same GRU written from its equations, checked equal to PyTorch's in notebook 02.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from minitx.attention import AdditiveAttention, DotProductAttention

ATTENTION_KINDS = (None, "additive", "dot")


class Seq2Seq(nn.Module):
    """GRU encoder-decoder over character ids.

    Args:
        src_vocab_size, tgt_vocab_size: vocabulary sizes; id ``pad_id`` is padding.
        emb_size: size of the character embeddings.
        hidden_size: H, the size of the encoder and decoder states.
        attention: None (fixed context vector), "additive" or "dot".
        attn_size: hidden size of the additive score's tanh layer (default H).
        bos_id: the target id the decoder is fed at its first step.
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        *,
        emb_size: int = 32,
        hidden_size: int = 64,
        attention: str | None = "additive",
        attn_size: int | None = None,
        pad_id: int = 0,
        bos_id: int = 1,
    ) -> None:
        super().__init__()
        if attention not in ATTENTION_KINDS:
            raise ValueError(f"attention must be one of {ATTENTION_KINDS}, got {attention!r}")
        for name, value in (("src_vocab_size", src_vocab_size), ("tgt_vocab_size", tgt_vocab_size),
                            ("emb_size", emb_size), ("hidden_size", hidden_size)):  # fmt: skip
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        self.attention_kind = attention
        self.pad_id, self.bos_id = pad_id, bos_id
        self.hidden_size = H = hidden_size

        self.src_emb = nn.Embedding(src_vocab_size, emb_size, padding_idx=pad_id)
        self.encoder = nn.GRU(emb_size, H, batch_first=True)
        self.tgt_emb = nn.Embedding(tgt_vocab_size, emb_size)
        self.decoder = nn.GRUCell(emb_size + H, H)  # input: [previous char; context]
        if attention == "additive":
            self.attention = AdditiveAttention(H, H, attn_size or H)
        elif attention == "dot":
            self.attention = DotProductAttention(H, scaled=True)
        else:
            self.attention = None
        self.out = nn.Linear(2 * H, tgt_vocab_size)  # from [s_i; c_i]

    def encode(self, src: Tensor, src_lengths: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Read the source.

        src (B, T_in) right-padded ids, src_lengths (B,). Returns the encoder states
        (B, T_in, H), the last real state h_T of each sequence (B, H), and the source mask
        (B, T_in), True on real characters.
        """
        if src.dim() != 2 or src.dtype != torch.long:
            raise ValueError(f"src must be (B, T_in) int64 ids, got {tuple(src.shape)} {src.dtype}")
        B, T = src.size()
        src_lengths = torch.as_tensor(src_lengths, device=src.device)
        if src_lengths.shape != (B,):
            raise ValueError(f"src_lengths must have shape ({B},), got {tuple(src_lengths.shape)}")
        if (src_lengths < 1).any() or (src_lengths > T).any():
            raise ValueError(f"src_lengths must lie in [1, {T}], got {src_lengths.tolist()}")
        mask = torch.arange(T, device=src.device)[None, :] < src_lengths[:, None]  # (B, T_in)
        # Right padding comes after the real characters, so a one-directional GRU's
        # state at the last real character is not touched by it.
        states, _ = self.encoder(self.src_emb(src))  # (B, T_in, H)
        last = states[torch.arange(B, device=src.device), src_lengths - 1]  # (B, H)
        return states, last, mask

    def step(
        self, y_prev: Tensor, s_prev: Tensor, states: Tensor, last: Tensor, mask: Tensor
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """One decoder step: previous ids (B,), state (B, H) -> logits (B, V), new state
        (B, H), attention weights (B, T_in) or None."""
        if self.attention is None:
            context, weights = last, None
        else:
            context, weights = self.attention(s_prev, states, mask=mask)  # (B, H), (B, T_in)
        s = self.decoder(torch.cat([self.tgt_emb(y_prev), context], dim=-1), s_prev)
        return self.out(torch.cat([s, context], dim=-1)), s, weights

    def forward(
        self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor
    ) -> tuple[Tensor, Tensor | None]:
        """Teacher forcing: the decoder is fed the true previous characters ``tgt_in``
        (B, T_out). Returns logits (B, T_out, V) and weights (B, T_out, T_in) or None."""
        if tgt_in.dim() != 2 or tgt_in.size(0) != src.size(0):
            raise ValueError(
                f"tgt_in must be (B, T_out) with B={src.size(0)}, got {tuple(tgt_in.shape)}"
            )
        states, s, mask = self.encode(src, src_lengths)
        last = s
        logits, weights = [], []
        for i in range(tgt_in.size(1)):
            step_logits, s, w = self.step(tgt_in[:, i], s, states, last, mask)
            logits.append(step_logits)
            weights.append(w)
        stacked = None if self.attention is None else torch.stack(weights, dim=1)
        return torch.stack(logits, dim=1), stacked

    @torch.no_grad()
    def greedy_decode(
        self, src: Tensor, src_lengths: Tensor, max_len: int
    ) -> tuple[Tensor, Tensor | None]:
        """Write ``max_len`` characters, each time feeding back the most likely one.

        Returns ids (B, max_len) and attention weights (B, max_len, T_in), or None
        without attention. Row i of the weights says where the decoder looked while
        writing character i; padded source positions get weight 0.
        """
        if not isinstance(max_len, int) or max_len < 1:
            raise ValueError(f"max_len must be an int >= 1, got {max_len!r}")
        states, s, mask = self.encode(src, src_lengths)
        last = s
        y = torch.full((src.size(0),), self.bos_id, dtype=torch.long, device=src.device)
        ids, weights = [], []
        for _ in range(max_len):
            logits, s, w = self.step(y, s, states, last, mask)
            y = logits.argmax(dim=-1)
            ids.append(y)
            weights.append(w)
        stacked = None if self.attention is None else torch.stack(weights, dim=1)
        return torch.stack(ids, dim=1), stacked


def translate(
    model: Seq2Seq, sources: Sequence[str], src_vocab=None, tgt_vocab=None, max_len: int = 10
) -> list[tuple[str, Tensor | None]]:
    """Greedy translations of ``sources`` with their alignments.

    Returns one ``(output, weights)`` per source; ``weights`` is (len(output), len(source))
    (rows: output characters, columns: input characters), or None without attention.
    Vocabularies default to those of :mod:`minitx.tasks.dates`.
    """
    from minitx.tasks import dates

    src_vocab = dates.SOURCE_VOCAB if src_vocab is None else src_vocab
    tgt_vocab = dates.TARGET_VOCAB if tgt_vocab is None else tgt_vocab
    if isinstance(sources, str):
        raise TypeError("translate expects a list of strings, got a single str")
    device = next(model.parameters()).device
    src, lengths = src_vocab.encode_batch(list(sources))
    was_training = model.training
    model.eval()
    ids, weights = model.greedy_decode(src.to(device), lengths.to(device), max_len)
    model.train(was_training)
    results = []
    for b, n in enumerate(lengths.tolist()):
        w = None if weights is None else weights[b, :, :n].cpu()
        results.append((tgt_vocab.decode(ids[b].cpu()), w))
    return results


@torch.no_grad()
def accuracy(model: Seq2Seq, examples: Sequence, batch_size: int = 512) -> float:
    """Fraction of ``examples`` (DateExample-like: .source, .target) translated exactly."""
    if len(examples) == 0:
        raise ValueError("accuracy needs at least one example")
    correct = 0
    for i in range(0, len(examples), batch_size):
        chunk = examples[i : i + batch_size]
        outputs = translate(model, [e.source for e in chunk], max_len=len(chunk[0].target))
        correct += sum(out == e.target for (out, _), e in zip(outputs, chunk, strict=True))
    return correct / len(examples)


def train_seq2seq(
    model: Seq2Seq,
    train: Sequence,
    *,
    steps: int = 600,
    batch_size: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
    val: Sequence | None = None,
    eval_every: int = 100,
    clip: float = 1.0,
) -> dict[str, list[float]]:
    """Train with teacher forcing and cross-entropy, Adam, gradient clipping.

    ``train``/``val`` are lists of :class:`minitx.tasks.dates.DateExample`. Batches are drawn
    at random from ``train`` with a generator seeded by ``seed``.

    Returns a history dict: "step" and "loss" (mean training loss over each
    ``eval_every`` steps), "val_acc" (exact-match accuracy on ``val``, when given) and
    "seconds" (wall time so far).
    """
    from minitx.tasks.dates import make_batch

    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be an int >= 1, got {steps!r}")
    if len(train) == 0:
        raise ValueError("train must not be empty")
    rng = random.Random(seed)
    device = next(model.parameters()).device
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    history: dict[str, list[float]] = {"step": [], "loss": [], "val_acc": [], "seconds": []}
    start, running = time.perf_counter(), []
    model.train()
    for step in range(1, steps + 1):
        batch = make_batch([train[rng.randrange(len(train))] for _ in range(batch_size)])
        logits, _ = model(batch.src.to(device), batch.src_lengths.to(device), batch.tgt_in.to(device))
        loss = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.to(device).flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        running.append(loss.item())
        if step % eval_every == 0 or step == steps:
            history["step"].append(step)
            history["loss"].append(sum(running) / len(running))
            running = []
            if val is not None:
                history["val_acc"].append(accuracy(model, val))
                model.train()
            history["seconds"].append(time.perf_counter() - start)
    model.eval()
    return history
