"""The encoder-decoder transformer of "Attention Is All You Need", from the package's blocks.

    shift_right      the decoder's input: <s> followed by the target, one step late
    EncoderDecoder   encoder (TransformerBlocks + LayerNorm), decoder (DecoderBlocks +
                     LayerNorm): what ``nn.Transformer`` computes, checked by ``from_torch``
    DateTransformer  embeddings + sinusoidal positions + EncoderDecoder + output layer, for
                     the date task of :mod:`minitx.data.dates`: teacher-forced loss,
                     greedy decoding and beam search with a KV cache (those of
                     :mod:`minitx.nn.generation`), cross-attention maps

Masks follow the course: True = may attend. The padding masks here are *key* masks,
(B, S) or ``padding_mask``'s (B, 1, 1, S), True on real tokens; PyTorch's
``*_key_padding_mask`` is their negation. The decoder's causal mask is built in.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from minitx.data import IGNORE_INDEX, dates
from minitx.nn import generation
from minitx.nn.attention import MultiHeadAttention, merge_heads, scaled_dot_product_attention
from minitx.nn.generation import KVCache
from minitx.nn.modes import evaluating
from minitx.nn.transformer import DecoderBlock, LayerNorm, TransformerBlock, sinusoidal_positions


def _check_ids(ids: object, name: str) -> None:
    if not isinstance(ids, Tensor) or ids.dim() != 2 or ids.dtype != torch.long:
        got = f"{tuple(ids.shape)} {ids.dtype}" if isinstance(ids, Tensor) else type(ids).__name__
        raise ValueError(f"{name} must be a (B, T) int64 tensor of ids, got {got}")


def _key_mask(mask: Tensor | None, B: int, S: int, name: str) -> Tensor | None:
    """A key mask (B, S) or (B, 1, 1, S), True on real tokens -> (B, 1, 1, S)."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
        raise ValueError(f"{name} must be a bool tensor (True = real token), got {got}")
    if tuple(mask.shape) not in ((B, S), (B, 1, 1, S)):
        raise ValueError(
            f"{name} must be (B, S) = ({B}, {S}) or (B, 1, 1, S), True on real tokens; "
            f"got {tuple(mask.shape)}"
        )
    return mask.view(B, 1, 1, S)


def _memory_kv(attn: MultiHeadAttention, memory: Tensor) -> tuple[Tensor, Tensor]:
    """The cross-attention keys and values of the memory (B, S, C), each (B, nh, S, hs)."""
    return attn.project(memory, "k"), attn.project(memory, "v")


def _cross_attend(
    attn: MultiHeadAttention, x: Tensor, k: Tensor, v: Tensor, mask: Tensor | None
) -> tuple[Tensor, Tensor]:
    """``attn(x, memory, memory, mask, need_weights=True)`` with the memory's keys and
    values already projected: x (B, t, C) -> (B, t, C), weights (B, nh, t, S)."""
    q = attn.project(x, "q")  # (B, nh, t, hs)
    y, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, nh, t, hs), (B, nh, t, S)
    return attn.out_proj(merge_heads(y)), weights  # heads side by side again: (B, t, C)


def shift_right(tgt: Tensor, bos_id: int, pad_id: int = 0) -> Tensor:
    """The decoder's input under teacher forcing: ``<s>`` then the target, one step late.

    tgt (B, T) -> (B, T): column 0 is ``bos_id``, column t is ``tgt[:, t - 1]``. The
    last target token is dropped: nothing has to be predicted after it. Targets the loss
    leaves out (``IGNORE_INDEX``, e.g. ``DateBatch.tgt_out``'s padding) are fed as ``pad_id``.
    """
    _check_ids(tgt, "tgt")
    bos = torch.full_like(tgt[:, :1], bos_id)  # (B, 1)
    shifted = torch.cat([bos, tgt[:, :-1]], dim=1)  # (B, T)
    return shifted.masked_fill(shifted == IGNORE_INDEX, pad_id)


class EncoderDecoder(nn.Module):
    """Encoder stack, decoder stack and their final LayerNorms, as ``nn.Transformer``.

    ``encode(src (B, S, C))`` runs every encoder block (self-attention, feed-forward),
    then ``encoder_norm``: the *memory* (B, S, C). ``decode(tgt (B, T, C), memory)``
    runs every decoder block (causal self-attention, cross-attention to the memory,
    feed-forward), then ``decoder_norm``: (B, T, C). Inputs are vectors (embeddings
    plus positions), not ids. ``causal=False`` drops the decoder's causal mask (a
    mistake, kept for the experiment that shows why).
    """

    def __init__(self, d_model: int, n_heads: int, n_encoder_layers: int, n_decoder_layers: int,
                 d_ff: int, dropout: float = 0.0, activation: str = "relu",
                 norm_first: bool = False, bias: bool = True, eps: float = 1e-5,
                 causal: bool = True) -> None:
        super().__init__()
        for name, n in (("n_encoder_layers", n_encoder_layers),
                        ("n_decoder_layers", n_decoder_layers)):  # fmt: skip
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise ValueError(f"{name} must be an int >= 1, got {n!r}")
        kw = dict(dropout=dropout, activation=activation, norm_first=norm_first, bias=bias,
                  eps=eps)  # fmt: skip
        self.d_model, self.n_heads, self.causal = d_model, n_heads, causal
        self.encoder = nn.ModuleList(
            [TransformerBlock(d_model, n_heads, d_ff, **kw) for _ in range(n_encoder_layers)]
        )
        self.encoder_norm = LayerNorm(d_model, eps=eps, bias=bias)
        self.decoder = nn.ModuleList(
            [DecoderBlock(d_model, n_heads, d_ff, causal=causal, **kw)
             for _ in range(n_decoder_layers)]
        )  # fmt: skip
        self.decoder_norm = LayerNorm(d_model, eps=eps, bias=bias)

    def _check(self, x: Tensor, name: str) -> tuple[int, int, int]:
        if not isinstance(x, Tensor) or x.dim() != 3 or x.size(-1) != self.d_model:
            got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"{name} must be (B, T, d_model={self.d_model}), got {got}")
        return x.size()

    def encode(self, src: Tensor, src_key_mask: Tensor | None = None) -> Tensor:
        """src (B, S, C), src_key_mask (B, S) True on real tokens -> memory (B, S, C)."""
        B, S, _ = self._check(src, "src")
        mask = _key_mask(src_key_mask, B, S, "src_key_mask")  # (B, 1, 1, S): pads never keys
        x = src
        for block in self.encoder:
            x, _ = block(x, mask=mask)
        return self.encoder_norm(x)

    def decode(self, tgt: Tensor, memory: Tensor, memory_key_mask: Tensor | None = None,
               tgt_key_mask: Tensor | None = None, need_weights: bool = False,
               ) -> tuple[Tensor, Tensor | None]:
        """tgt (B, T, C), memory (B, S, C) -> ``(x, cross_weights)``: x (B, T, C), and the
        cross-attention weights of every layer, (n_layers, B, n_heads, T, S), when
        ``need_weights``, else None.

        ``memory_key_mask`` (B, S) hides padded source positions from the cross-attention,
        ``tgt_key_mask`` (B, T) padded target positions from the self-attention (the causal
        mask is always on).
        """
        B, T, _ = self._check(tgt, "tgt")
        S = self._check(memory, "memory")[1]
        if memory.size(0) != B:
            raise ValueError(f"tgt and memory batch sizes differ: {B} and {memory.size(0)}")
        mem_mask = _key_mask(memory_key_mask, B, S, "memory_key_mask")  # (B, 1, 1, S)
        self_mask = _key_mask(tgt_key_mask, B, T, "tgt_key_mask")  # (B, 1, 1, T), & causal inside
        x, cross = tgt, []
        for block in self.decoder:
            x, w = block(x, memory, self_mask, mem_mask, need_weights=need_weights)
            cross.append(w[1] if need_weights else None)  # (B, nh, T, S)
        x = self.decoder_norm(x)
        return x, (torch.stack(cross) if need_weights else None)

    def forward(self, src: Tensor, tgt: Tensor, src_key_mask: Tensor | None = None,
                tgt_key_mask: Tensor | None = None, memory_key_mask: Tensor | None = None,
                ) -> Tensor:
        """Encode ``src`` (B, S, C), decode ``tgt`` (B, T, C) -> (B, T, C).

        As in ``nn.Transformer`` the three masks are separate: ``src_key_mask`` for the
        encoder's self-attention, ``memory_key_mask`` for the cross-attention (usually the
        same tensor: no padded source position is read), ``tgt_key_mask`` for the decoder's.
        """
        memory = self.encode(src, src_key_mask)
        return self.decode(tgt, memory, memory_key_mask, tgt_key_mask)[0]

    def decode_cached(
        self, tgt: Tensor, memory: Tensor, memory_key_mask: Tensor | None, past: KVCache | None
    ) -> tuple[Tensor, KVCache, Tensor]:
        """``decode`` for new target positions, with a KV cache (generation, eval mode).

        Each layer caches four tensors (B, nh, *, hs) in a :class:`KVCache`: the
        self-attention keys and values of the earlier target positions (the causal mask
        means they never change), and the cross-attention keys and values of the memory
        (computed once, on the first call, ``past=None``). So tgt (B, t, C) holds only the
        new positions: each new token runs its own projections and feed-forward, and its
        attention reads the cached keys. Returns (B, t, C),
        the cache for the next call, and the cross-attention weights (n_layers, B, nh, t, S).
        """
        if not self.causal:
            raise ValueError("decode_cached needs a causal decoder, got causal=False")
        B = self._check(tgt, "tgt")[0]
        mask = _key_mask(memory_key_mask, B, memory.size(1), "memory_key_mask")  # (B,1,1,S)
        x, present, cross = tgt, [], []
        for i, blk in enumerate(self.decoder):
            if past is None:  # first call: nothing cached yet; project the memory once
                past_self, (k_mem, v_mem) = None, _memory_kv(blk.cross_attn, memory)
            else:
                past_self, (k_mem, v_mem) = past[i][:2], past[i][2:]
            # DecoderBlock.forward, with both attentions reading the cache
            if blk.norm_first:
                a, kv_self = blk.self_attn.forward_cached(blk.norm1(x), past_self)
                x = x + a
                c, w = _cross_attend(blk.cross_attn, blk.norm2(x), k_mem, v_mem, mask)
                x = x + c
                x = x + blk.ffn(blk.norm3(x))
            else:
                a, kv_self = blk.self_attn.forward_cached(x, past_self)
                x = blk.norm1(x + a)
                c, w = _cross_attend(blk.cross_attn, x, k_mem, v_mem, mask)
                x = blk.norm2(x + c)
                x = blk.norm3(x + blk.ffn(x))
            present.append((*kv_self, k_mem, v_mem))
            cross.append(w)  # (B, nh, t, S)
        return self.decoder_norm(x), KVCache(present), torch.stack(cross)

    @classmethod
    def from_torch(cls, module: nn.Transformer, causal: bool = True) -> EncoderDecoder:
        """Copy a ``batch_first`` ``nn.Transformer`` (relu or exact gelu, any norm_first).

        Each layer is copied by the blocks' own ``from_torch``. With ``causal=True``
        compare with PyTorch called with the causal ``tgt_mask`` (True = blocked above
        the diagonal) and ``tgt_is_causal=True``; with ``causal=False``, without them.
        """
        if not isinstance(module, nn.Transformer):
            raise TypeError(f"expected nn.Transformer, got {type(module).__name__}")
        enc, dec = module.encoder, module.decoder
        first = enc.layers[0]
        if not first.self_attn.batch_first:
            raise ValueError("expected nn.Transformer(batch_first=True), got batch_first=False")
        if enc.norm is None or dec.norm is None:
            raise ValueError("expected nn.Transformer's final encoder and decoder LayerNorms")
        ours = cls(
            module.d_model, first.self_attn.num_heads, len(enc.layers), len(dec.layers),
            first.linear1.out_features, norm_first=first.norm_first, eps=enc.norm.eps,
            bias=first.linear1.bias is not None, causal=causal,
        )  # fmt: skip
        ours.encoder = nn.ModuleList([TransformerBlock.from_torch(la) for la in enc.layers])
        ours.decoder = nn.ModuleList([DecoderBlock.from_torch(la, causal) for la in dec.layers])
        ours.encoder_norm = LayerNorm.from_torch(enc.norm)
        ours.decoder_norm = LayerNorm.from_torch(dec.norm)
        return ours.to(dtype=first.linear1.weight.dtype, device=first.linear1.weight.device)


class DateTransformer(nn.Module):
    """An encoder-decoder transformer over the characters of :mod:`minitx.data.dates`.

    Source and target ids get embeddings plus the sinusoidal positions, go through an
    :class:`EncoderDecoder` (pre-LN by default) and a linear layer to target logits.
    Its interface is :class:`minitx.nn.seq2seq.Seq2Seq`'s, so ``train_seq2seq``,
    ``translate`` and ``accuracy`` take it as they are: ``forward(src, src_lengths,
    tgt_in)`` returns ``(logits (B, T, V), None)``, ``greedy_decode`` returns ids and
    one alignment (B, L, S) per output (the last layer's cross-attention, mean over heads).
    The default sizes give 45,199 parameters, about as many as ``Seq2Seq.for_dates()``.
    """

    def __init__(self, d_model: int = 32, n_heads: int = 4, n_layers: int = 2, d_ff: int = 64,
                 *, dropout: float = 0.0, norm_first: bool = True, causal: bool = True,
                 max_len: int = 128) -> None:
        super().__init__()
        self.pad_id = dates.SOURCE_VOCAB.pad_id  # 0, padding in both vocabularies
        self.bos_id, self.eos_id = dates.BOS_ID, dates.EOS_ID
        self.max_len = max_len
        self.src_emb = nn.Embedding(len(dates.SOURCE_VOCAB), d_model, padding_idx=self.pad_id)
        self.tgt_emb = nn.Embedding(len(dates.TARGET_VOCAB), d_model)
        self.register_buffer("pe", sinusoidal_positions(max_len, d_model), persistent=False)
        self.transformer = EncoderDecoder(
            d_model, n_heads, n_layers, n_layers, d_ff, dropout=dropout,
            norm_first=norm_first, causal=causal,
        )  # fmt: skip
        self.out = nn.Linear(d_model, len(dates.TARGET_VOCAB))

    def _embed(self, emb: nn.Embedding, ids: Tensor, start: int = 0) -> Tensor:
        T = ids.size(1)
        if start + T > self.max_len:
            raise ValueError(f"sequences are limited to max_len={self.max_len}, got {start + T}")
        return emb(ids) + self.pe[start : start + T]  # (B, T, C): what, plus where

    def encode(self, src: Tensor, src_lengths: Tensor) -> tuple[Tensor, Tensor]:
        """src (B, S) right-padded ids, src_lengths (B,) -> memory (B, S, C) and the
        source mask (B, S), True on real characters."""
        _check_ids(src, "src")
        B, S = src.size()
        src_lengths = torch.as_tensor(src_lengths, device=src.device)
        if src_lengths.shape != (B,) or (src_lengths < 1).any() or (src_lengths > S).any():
            raise ValueError(
                f"src_lengths must be ({B},) with values in [1, {S}], got "
                f"{tuple(src_lengths.shape)} {src_lengths.tolist()}"
            )
        mask = torch.arange(S, device=src.device)[None, :] < src_lengths[:, None]  # (B, S)
        return self.transformer.encode(self._embed(self.src_emb, src), mask), mask

    def forward(
        self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """Teacher forcing: the decoder reads the whole shifted target ``tgt_in`` (B, T)
        at once. Returns logits (B, T, V), and with ``need_weights`` the cross-attention
        weights of every layer and head, (n_layers, B, n_heads, T, S), else None."""
        _check_ids(tgt_in, "tgt_in")
        if tgt_in.size(0) != src.size(0):
            raise ValueError(
                f"tgt_in must be (B, T) with B={src.size(0)}, got {tuple(tgt_in.shape)}"
            )
        memory, mask = self.encode(src, src_lengths)
        y, w = self.transformer.decode(self._embed(self.tgt_emb, tgt_in), memory, mask,
                                       need_weights=need_weights)  # fmt: skip
        return self.out(y), w

    def loss(self, src: Tensor, src_lengths: Tensor, tgt_out: Tensor) -> Tensor:
        """Teacher-forced cross-entropy of ``tgt_out`` (B, T) = target + </s>, padded with
        ``IGNORE_INDEX`` (as ``DateBatch.tgt_out``), which is left out: the decoder is fed
        ``shift_right(tgt_out)`` and predicts every position."""
        tgt_in = shift_right(tgt_out, self.bos_id, self.pad_id)
        logits, _ = self(src, src_lengths, tgt_in)  # (B, T, V)
        return F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=IGNORE_INDEX)

    def sequence_log_prob(self, src: Tensor, src_lengths: Tensor, tgt_out: Tensor) -> Tensor:
        """log p(tgt_out | src) (B,): the sum of the log-probabilities of every token of
        ``tgt_out`` (B, T) up to and including the first </s>; what follows (padding or
        ``IGNORE_INDEX``) does not count. Eval mode, no gradients."""
        with evaluating(self):
            logits, _ = self(src, src_lengths, shift_right(tgt_out, self.bos_id, self.pad_id))
        ignored = tgt_out == IGNORE_INDEX  # (B, T): no token there to score
        ids = tgt_out.masked_fill(ignored, self.pad_id)
        logp = torch.log_softmax(logits.double(), dim=-1).gather(-1, ids[..., None])[..., 0]
        eos = (ids == self.eos_id).long()  # (B, T)
        after = (eos.cumsum(dim=1) - eos) > 0  # positions after the first </s>
        return logp.masked_fill(after | ignored, 0.0).sum(dim=1)  # (B,)

    def _check_max_len(self, max_len: int) -> None:
        if not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 1:
            raise ValueError(f"max_len must be an int >= 1, got {max_len!r}")
        if max_len > self.max_len:
            raise ValueError(f"outputs are limited to max_len={self.max_len}, got {max_len}")

    def _finished(self, logits: Tensor, ended: Tensor) -> Tensor:
        """Rows whose output has ended may only write padding, at log-probability 0."""
        is_pad = torch.arange(logits.size(-1), device=logits.device) == self.pad_id  # (V,)
        logits = logits.masked_fill(ended[:, None], float("-inf"))  # (N, V)
        return logits.masked_fill(ended[:, None] & is_pad, 0.0)

    def _decoder(self, memory: Tensor, mask: Tensor, use_cache: bool,
                 align: list[Tensor] | None = None):  # fmt: skip
        """The model as :mod:`minitx.nn.generation` reads it: ``next_logits`` maps ids
        (N, 1 + t), <s> and t tokens, to the logits (N, V) of token t + 1 (only padding once
        an output has ended); ``reorder`` makes the KV cache follow beam search. ``align``
        collects each step's cross-attention (N, S) (last layer, mean over heads)."""
        cache: KVCache | None = None

        def next_logits(ids: Tensor) -> Tensor:
            nonlocal cache
            if use_cache:  # the newest token, at position t
                x = self._embed(self.tgt_emb, ids[:, -1:], start=ids.size(1) - 1)  # (N, 1, C)
                h, cache, w = self.transformer.decode_cached(x, memory, mask, cache)
            else:  # the whole prefix (N, 1 + t); its last position predicts
                h, w = self.transformer.decode(self._embed(self.tgt_emb, ids), memory, mask,
                                               need_weights=True)  # fmt: skip
            if align is not None:
                align.append(w[-1, :, :, -1].mean(dim=1))  # (N, S)
            return self._finished(self.out(h[:, -1]), (ids == self.eos_id).any(dim=1))

        def reorder(rows: Tensor) -> None:  # each new beam takes its parent's cache
            nonlocal cache
            if cache is not None:
                cache = cache.reorder(rows)

        return next_logits, reorder

    def greedy_decode(
        self, src: Tensor, src_lengths: Tensor, max_len: int, use_cache: bool | None = None
    ) -> tuple[Tensor, Tensor]:
        """Write up to ``max_len`` tokens, each the most likely next one; padding after
        </s>. Returns ids (B, L) and the alignments (B, L, S) (last layer, mean over
        heads), L <= max_len: it stops once every output has ended. ``use_cache=False``
        runs the decoder again on everything written so far at every step (same ids);
        the default uses the KV cache when the decoder is causal (it needs the mask).
        Runs in eval mode without gradients (:func:`minitx.nn.generation.generate`)."""
        self._check_max_len(max_len)
        use_cache = self.transformer.causal if use_cache is None else use_cache
        align: list[Tensor] = []
        with evaluating(self):
            memory, mask = self.encode(src, src_lengths)
            next_logits, _ = self._decoder(memory, mask, use_cache, align)
            start = torch.full_like(src[:, :1], self.bos_id)  # (B, 1): <s>
            seq = generation.generate(next_logits, start, max_len, greedy=True, stop_id=self.eos_id)
        return seq[:, 1:], torch.stack(align, dim=1)

    def beam_search(
        self, src: Tensor, src_lengths: Tensor, max_len: int, beam_width: int = 4
    ) -> tuple[Tensor, Tensor]:
        """Keep the ``beam_width`` most likely partial outputs at every step
        (:func:`minitx.nn.generation.beam_search`); an output that has written </s> is kept
        as it is, padded at no cost. Returns the best output of each source, ids
        (B, max_len), and its log-probability (B,). ``beam_width=1`` is greedy decoding."""
        generation.check_beam_width(beam_width)
        self._check_max_len(max_len)
        W = beam_width
        with evaluating(self):
            memory, mask = self.encode(src, src_lengths)
            memory, mask = memory.repeat_interleave(W, 0), mask.repeat_interleave(W, 0)  # B*W
            next_logits, reorder = self._decoder(memory, mask, self.transformer.causal)
            start = torch.full_like(src[:, :1], self.bos_id)  # (B, 1): <s>
            seqs, scores = generation.beam_search(next_logits, start, max_len, W, reorder=reorder)
        return seqs[:, 1:], scores


__all__ = ["DateTransformer", "EncoderDecoder", "shift_right"]
