"""The from-scratch parts, in the order the course teaches them. Imports :mod:`minitx.data`
only; every part is proven equal to PyTorch's own with copied weights.

    rnn              RNN, LSTM and GRU cells and layers from their equations (notebook 02)
    attention        scaled dot-product, additive and multi-head attention (03-06)
    word_attention   self-attention over word vectors with no training (04)
    masks            causal, padding and sliding-window masks, True = may attend (05)
    positions        sinusoidal and learned positions (07)
    activations      the feed-forward's activations
    transformer      LayerNorm, feed-forward, the transformer block (pre- or post-LN) (07)
    gpt              a small GPT (08)
    gpt_config       the GPT's sizes and switches (GPT-2 or modern block), its KV-cache size
    rmsnorm          RMSNorm, LayerNorm without the mean (11)
    rope             rotary position embeddings (11)
    swiglu           the gated SwiGLU feed-forward (11)
    grouped_attention  grouped-query attention, with RoPE and a KV cache (11)
    generation       one sampler and one KV cache: temperature, top-k, top-p, greedy, beam (09)
    seq2seq          the RNN encoder-decoder, with or without attention (03)
    encoder_decoder  the transformer encoder-decoder (10)
    modes            eval mode for a block of code, and where a module lives
    weights          copying weights from PyTorch's modules
"""

from minitx.nn.attention import (
    AdditiveAttention,
    DotProductAttention,
    MultiHeadAttention,
    scaled_dot_product_attention,
)
from minitx.nn.encoder_decoder import EncoderDecoder
from minitx.nn.gpt import GPT, GPTConfig
from minitx.nn.grouped_attention import GroupedQueryAttention, grouped_query_attention
from minitx.nn.masks import causal_mask, padding_mask
from minitx.nn.rmsnorm import RMSNorm
from minitx.nn.rnn import GRU, LSTM, RNN
from minitx.nn.rope import apply_rope
from minitx.nn.seq2seq import Seq2Seq
from minitx.nn.swiglu import SwiGLU
from minitx.nn.transformer import LayerNorm, TransformerBlock

__all__ = [
    "GPT",
    "GRU",
    "LSTM",
    "RNN",
    "AdditiveAttention",
    "DotProductAttention",
    "EncoderDecoder",
    "GPTConfig",
    "GroupedQueryAttention",
    "LayerNorm",
    "MultiHeadAttention",
    "RMSNorm",
    "Seq2Seq",
    "SwiGLU",
    "TransformerBlock",
    "apply_rope",
    "causal_mask",
    "grouped_query_attention",
    "padding_mask",
    "scaled_dot_product_attention",
]
