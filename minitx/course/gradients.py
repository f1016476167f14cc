"""How much does the last hidden state still depend on an early input?

For a recurrent layer, ``gradient_norms_by_distance`` measures with autograd the
Frobenius norm of the Jacobian d h_T / d x_t for every step t, averaged over a batch,
and returns it against the distance T - t. A plain RNN's curve falls geometrically
(vanishing gradients); an LSTM's cell-state highway makes it fall much more slowly.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from minitx.nn.rnn import RNN

__all__ = ["gradient_norms_by_distance", "rnn_with_gain", "vanishing_estimate"]


def gradient_norms_by_distance(model: nn.Module, x: Tensor) -> Tensor:
    """||d h_T / d x_t|| for each distance T - t = 0, 1, ..., T-1.

    ``model(x)`` must return ``(output (B, T, H), state)`` like ``minitx.nn.rnn.RNN`` or
    ``nn.RNN(batch_first=True)``; h_T is ``output[:, -1]``. ``x`` is (B, T, C).
    All H rows of each (H, C) Jacobian come from one batched backward pass (one unit
    vector per hidden unit; the sequences of a batch do not interact, so it serves all).
    Returns a (T,) tensor: entry d is the mean over the batch of the norm at t = T-1-d.
    Use float64 for long sequences: the norms can go below float32's range.
    """
    if x.dim() != 3:
        raise ValueError(f"expected x of shape (B, T, C), got {tuple(x.shape)}")
    x = x.detach().requires_grad_(True)
    h_T = model(x)[0][:, -1]  # (B, H)
    B, H = h_T.size()
    rows = torch.eye(H, dtype=x.dtype, device=x.device)[:, None, :].expand(H, B, H)
    (J,) = torch.autograd.grad(h_T, x, grad_outputs=rows, is_grads_batched=True)  # (H, B, T, C)
    return J.pow(2).sum((0, 3)).sqrt().mean(0).flip(0)  # (T,), index = distance T - t


def vanishing_estimate(n: int | Tensor, slope: float = 0.5, gain: float = 0.9) -> Tensor:
    """Back-of-envelope gradient factor after ``n`` steps: (slope * gain) ** n, a float64
    tensor of ``n``'s shape (0-d for an int).

    Each step back multiplies by tanh'(a) (about ``slope``) and by the recurrent weight
    (about ``gain``), so with the defaults the factor is 0.45 ** n.
    """
    return torch.as_tensor(slope * gain, dtype=torch.float64) ** torch.as_tensor(n)


def rnn_with_gain(input_size: int, hidden_size: int, gain: float, *, seed: int = 0) -> RNN:
    """A float64 ``minitx.nn.rnn.RNN`` whose recurrent matrix is ``gain`` times a random
    orthogonal matrix, so every direction of h is scaled by exactly ``gain`` per step
    (before tanh). Other weights keep PyTorch's default initialisation."""
    torch.manual_seed(seed)
    rnn = RNN(input_size, hidden_size).double()
    with torch.no_grad():
        nn.init.orthogonal_(rnn.cell.weight_hh, gain=gain)
    return rnn
