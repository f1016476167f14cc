"""An encoder-decoder RNN, with or without attention (Cho et al. 2014; Bahdanau et al. 2015).

The encoder reads the source characters x_1..x_T with a GRU, by default in both
directions (H/2 features each), and keeps every state h_1..h_T (B, T_in, H). Its summary
h_T (the forward GRU's last state beside the backward GRU's last) starts the decoder, a
GRU cell that writes y_1, y_2, ... one character at a time. At step i it is fed the
previous character and a context vector c_i, and predicts from [s_i; c_i]:

- ``attention=None``: c_i = h_T at every step, one fixed-size vector for the whole
  source (the bottleneck);
- ``attention="additive"``: c_i = sum_j a_ij h_j, a_i = softmax_j(v^T tanh(W s_{i-1} + U h_j))
  (:class:`minitx.nn.attention.AdditiveAttention`);
- ``attention="dot"``: the same with the score s_{i-1} . h_j / sqrt(H)
  (:class:`minitx.nn.attention.DotProductAttention`).

The recurrences use ``torch.nn.GRU`` / ``nn.GRUCell``, whose loops run in C++; notebook 02
checks ``minitx.nn.rnn``'s GRU, written from its equations, equal to them (and notebook 03
checks this encoder against two ``minitx.nn.rnn.GRU`` runs).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from minitx.data import dates
from minitx.data.dates import DateExample
from minitx.data.tokenizer import CharTokenizer
from minitx.nn import generation
from minitx.nn.attention import AdditiveAttention, DotProductAttention
from minitx.nn.modes import evaluating, model_device

__all__ = ["ATTENTION_KINDS", "Seq2Seq", "exact_match", "translate"]

ATTENTION_KINDS = (None, "additive", "dot")


class Seq2Seq(nn.Module):
    """GRU encoder-decoder over character ids.

    Args:
        src_vocab_size, tgt_vocab_size: vocabulary sizes; id ``pad_id`` is padding.
        emb_size: size of the character embeddings.
        hidden_size: H, the size of the encoder states h_j and of the decoder state s_i.
        attention: None (fixed context vector), "additive" or "dot".
        attn_size: hidden size of the additive score's tanh layer (default H / 2).
        bos_id: the target id the decoder is fed at its first step.
        eos_id: the target id that ends an output.
        bidirectional: read the source both ways, H / 2 features per direction, as
            Bahdanau et al. do: h_j then describes the characters on both sides of j.

    ``Seq2Seq.for_dates(...)`` builds one for :mod:`minitx.data.dates`.
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
        eos_id: int = 2,
        bidirectional: bool = True,
    ) -> None:
        super().__init__()
        if attention not in ATTENTION_KINDS:
            raise ValueError(f"attention must be one of {ATTENTION_KINDS}, got {attention!r}")
        for name, value in (("src_vocab_size", src_vocab_size), ("tgt_vocab_size", tgt_vocab_size),
                            ("emb_size", emb_size), ("hidden_size", hidden_size)):  # fmt: skip
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        self.attention_kind = attention
        self.pad_id, self.bos_id, self.eos_id = pad_id, bos_id, eos_id
        self.hidden_size = H = hidden_size

        self.src_emb = nn.Embedding(src_vocab_size, emb_size, padding_idx=pad_id)
        if bidirectional and H % 2:
            raise ValueError(f"a bidirectional encoder needs an even hidden_size, got {H}")
        self.bidirectional = bidirectional
        # Bidirectional: H/2 per direction, so the states still have H features.
        self.encoder = nn.GRU(
            emb_size, H // 2 if bidirectional else H, batch_first=True, bidirectional=bidirectional
        )
        self.tgt_emb = nn.Embedding(tgt_vocab_size, emb_size)
        self.decoder = nn.GRUCell(emb_size + H, H)  # input: [previous char; context]
        if attention == "additive":
            self.attention = AdditiveAttention(H, H, attn_size or max(1, H // 2))
        elif attention == "dot":
            self.attention = DotProductAttention(H, scaled=True)
        else:
            self.attention = None
        self.out = nn.Linear(2 * H, tgt_vocab_size)  # from [s_i; c_i]

    @classmethod
    def for_dates(cls, attention: str | None = "additive", **kwargs: int | bool) -> Seq2Seq:
        """A model with the vocabularies and special ids of :mod:`minitx.data.dates`;
        ``kwargs`` go to the constructor (emb_size, hidden_size, ...)."""
        return cls(
            len(dates.SOURCE_VOCAB), len(dates.TARGET_VOCAB), attention=attention,
            pad_id=dates.SOURCE_VOCAB.pad_id, bos_id=dates.BOS_ID, eos_id=dates.EOS_ID,
            **kwargs,
        )  # fmt: skip

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
        x = self.src_emb(src)  # (B, T_in, E)
        if self.bidirectional:
            # Packing makes the backward GRU start at each sequence's last real character.
            packed = nn.utils.rnn.pack_padded_sequence(
                x, src_lengths.cpu(), batch_first=True, enforce_sorted=False
            )
            out, h_n = self.encoder(packed)  # h_n (2, B, H/2)
            states, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=T)
            last = torch.cat([h_n[0], h_n[1]], dim=-1)  # (B, H): forward end, backward start
            return states, last, mask
        # Right padding comes after the real characters, so a one-directional GRU's
        # state at the last real character is not touched by it.
        states, _ = self.encoder(x)  # (B, T_in, H)
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
        s = self.decoder(torch.cat([self.tgt_emb(y_prev), context], dim=-1), s_prev)  # (B, H)
        return self.out(torch.cat([s, context], dim=-1)), s, weights  # (B, V), (B, H), ...

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
        """Write up to ``max_len`` characters, each time feeding back the most likely one;
        stop early once every output has written ``eos_id``.

        Returns ids (B, L) and attention weights (B, L, T_in), or None without attention,
        with L <= max_len (ids after an output's end are meaningless). Row i of the
        weights says where the decoder looked while writing character i; padded source
        positions get weight 0.
        """
        if not isinstance(max_len, int) or max_len < 1:
            raise ValueError(f"max_len must be an int >= 1, got {max_len!r}")
        states, s, mask = self.encode(src, src_lengths)
        last, state, weights = s, {"s": s}, []

        def next_logits(ids: Tensor) -> Tensor:  # ids (B, 1 + t): <s> and t characters
            logits, state["s"], w = self.step(ids[:, -1], state["s"], states, last, mask)
            weights.append(w)
            return logits  # (B, V)

        start = torch.full((src.size(0), 1), self.bos_id, dtype=torch.long, device=src.device)
        ids = generation.generate(next_logits, start, max_len, greedy=True, stop_id=self.eos_id)
        stacked = None if self.attention is None else torch.stack(weights, dim=1)
        return ids[:, 1:], stacked


def translate(
    model: Seq2Seq,
    sources: Sequence[str],
    src_vocab: CharTokenizer | None = None,
    tgt_vocab: CharTokenizer | None = None,
    max_len: int = 50,
) -> list[tuple[str, Tensor | None]]:
    """Greedy translations of ``sources`` with their alignments.

    Returns one ``(output, weights)`` per source; ``weights`` is (len(output), len(source))
    (rows: output characters, columns: input characters; rows of special symbols such as
    the end symbol are left out), or None without attention. Vocabularies default to those of
    :mod:`minitx.data.dates`.
    """
    src_vocab = dates.SOURCE_VOCAB if src_vocab is None else src_vocab
    tgt_vocab = dates.TARGET_VOCAB if tgt_vocab is None else tgt_vocab
    if isinstance(sources, str):
        raise TypeError("translate expects a list of strings, got a single str")
    device = model_device(model)
    src, lengths = src_vocab.encode_batch(list(sources))
    with evaluating(model):
        ids, weights = model.greedy_decode(src.to(device), lengths.to(device), max_len)
    results = []
    for b, n in enumerate(lengths.tolist()):
        row = ids[b].tolist()
        end = row.index(model.eos_id) if model.eos_id in row else len(row)
        # Rows of characters only (an untrained model may also emit <s> or padding).
        keep = [i for i in range(end) if row[i] >= tgt_vocab.n_special]
        w = None if weights is None else weights[b, keep, :n].cpu()
        results.append((tgt_vocab.decode(row[:end]), w))
    return results


@torch.no_grad()
def exact_match(model: Seq2Seq, examples: Sequence[DateExample], batch_size: int = 500) -> float:
    """Fraction of ``examples`` whose whole target is written exactly (greedy decoding):
    a sequence-level score, stricter than the per-character accuracy of
    :func:`minitx.train.evaluate.accuracy`."""
    if len(examples) == 0:
        raise ValueError("exact_match needs at least one example")
    correct = 0
    for i in range(0, len(examples), batch_size):
        chunk = examples[i : i + batch_size]
        max_len = max(len(e.target) for e in chunk) + 1
        outputs = translate(model, [e.source for e in chunk], max_len=max_len)
        correct += sum(out == e.target for (out, _), e in zip(outputs, chunk, strict=True))
    return correct / len(examples)
