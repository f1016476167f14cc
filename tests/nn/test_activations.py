"""minitx.nn.activations: ReLU² against PyTorch's own ops, and the GPT options that use it."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from minitx.nn.activations import relu_squared
from minitx.nn.gpt import GPT, GPTConfig


def test_relu_squared_matches_torch_forward_and_backward():
    x = torch.randn(4, 7, 33, dtype=torch.float64, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()
    grad = torch.randn_like(x)
    out = relu_squared(x)
    ref = F.relu(x_ref).pow(2)
    torch.testing.assert_close(out, ref, rtol=0, atol=0)
    out.backward(grad)
    ref.backward(grad)
    torch.testing.assert_close(x.grad, x_ref.grad, rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(relu_squared, (x.detach()[:1, :2, :5].requires_grad_(),))


def test_gpt_activation_and_head_options():
    cfg = dict(vocab_size=13, block_size=8, n_layer=2, n_head=2, n_embd=16)
    relu2 = GPT(GPTConfig(**cfg, activation="relu2"))
    assert {b.ffn.activation for b in relu2.blocks} == {"relu2"}
    tied, untied = GPT(GPTConfig(**cfg)), GPT(GPTConfig(**cfg, tied_head=False))
    assert tied.lm_head.weight is tied.tok_emb.weight
    assert untied.lm_head.weight is not untied.tok_emb.weight
    assert untied.num_parameters() - tied.num_parameters() == 13 * 16  # one more (V, C) matrix
    with pytest.raises(ValueError, match=r"activation must be one of \['gelu', 'relu', 'relu2'\], "
                                         r"got 'swish'"):
        GPTConfig(**cfg, activation="swish")
