"""RMSNorm: layer normalisation without the mean (Zhang and Sennrich, 2019; Llama, Qwen...).

    y = x / sqrt(mean(x^2) + eps) * weight

LayerNorm centres each position (subtracts the mean) and then scales it; RMSNorm only
scales, by the root mean square of the features. It has no bias, one reduction instead of
two, and in practice trains as well: the re-centring was not what made LayerNorm work.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from minitx.nn.positions import _check_positive_int
from minitx.nn.weights import copy_weights


def default_eps(dtype: torch.dtype) -> float:
    """The eps ``nn.RMSNorm(eps=None)`` uses for inputs of ``dtype``: the machine epsilon
    of the type it computes in (float64 for float64 inputs, float32 for all others)."""
    return torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).eps


class RMSNorm(nn.Module):
    """Root-mean-square normalisation over the last dimension, written out.

        y = x / sqrt(mean(x^2) + eps) * weight

    ``mean`` is over the last dimension (``dim``) of each position. ``eps=None`` (PyTorch's
    default) takes the machine epsilon of the computation type (:func:`default_eps`);
    ``elementwise_affine=False`` drops the gain ``weight``. 16-bit inputs are computed in
    float32 and cast back, as PyTorch does. Input (..., dim) -> output the same shape.

    ``fused=True`` computes the same thing with ``F.rms_norm`` (one kernel); the tests
    check both agree.
    """

    def __init__(self, dim: int, eps: float | None = None, elementwise_affine: bool = True,
                 fused: bool = False) -> None:
        super().__init__()
        _check_positive_int("dim", dim)
        if eps is not None and not eps > 0:
            raise ValueError(f"eps must be None or > 0, got {eps!r}")
        self.dim, self.eps, self.fused = dim, eps, fused
        self.weight = nn.Parameter(torch.ones(dim)) if elementwise_affine else None

    def forward(self, x: Tensor) -> Tensor:
        if x.size(-1) != self.dim:
            raise ValueError(f"RMSNorm expects (..., dim={self.dim}), got {tuple(x.shape)}")
        if self.fused:
            return F.rms_norm(x, (self.dim,), self.weight, self.eps)
        eps = default_eps(x.dtype) if self.eps is None else self.eps
        # 16-bit floats lose too much in a sum of squares: compute in float32.
        h = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
        rms = torch.sqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)  # (..., 1)
        y = h / rms
        if self.weight is not None:
            y = y * self.weight
        return y.to(x.dtype)

    def extra_repr(self) -> str:
        return (f"{self.dim}, eps={self.eps}, elementwise_affine={self.weight is not None}, "
                f"fused={self.fused}")

    @classmethod
    def from_torch(cls, module: nn.RMSNorm, fused: bool = False) -> RMSNorm:
        """Copy an ``nn.RMSNorm`` over one (last) dimension, with its gain if it has one."""
        if not isinstance(module, nn.RMSNorm):
            raise TypeError(f"expected nn.RMSNorm, got {type(module).__name__}")
        if len(module.normalized_shape) != 1:
            raise ValueError(
                "expected nn.RMSNorm over one dimension, got normalized_shape="
                f"{tuple(module.normalized_shape)}"
            )
        ours = cls(module.normalized_shape[0], eps=module.eps,
                   elementwise_affine=module.elementwise_affine, fused=fused)
        return copy_weights(ours, module, {"weight": "weight"})


__all__ = ["RMSNorm", "default_eps"]
