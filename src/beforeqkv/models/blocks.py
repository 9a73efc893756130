"""The parts of a Transformer block besides attention: norms and the MLP (chapter 8).

Names follow the book: the MLP's weights are ``W_in`` (d_model -> d_mlp) and ``W_out``
(d_mlp -> d_model), plus ``W_gate`` for SwiGLU. The same classes hold the weights of
the real models of Part IV (MiniLM: LayerNorm + GELU; SmolLM2: RMSNorm + SwiGLU).
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from .._validate import check_positive

__all__ = ["RMSNorm", "MLP", "make_norm", "NORMS", "ACTIVATIONS"]

NORMS = ("layernorm", "rmsnorm", "none")
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "swiglu")


class RMSNorm(nn.Module):
    """``x / sqrt(mean(x^2) + eps) * weight``: LayerNorm without centring or bias.

    x: (..., d) -> (..., d). Used by Llama-style models (chapter 11).
    """

    def __init__(self, d: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # torch's rms_norm is this formula in one call (tests/test_blocks.py checks the two agree)
        if x.dtype == self.weight.dtype == torch.float32:
            return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)  # x / sqrt(mean(x^2) + eps) * weight
        # in float32 even when x is bf16/fp16: the mean of squares needs the range
        h = F.rms_norm(x.float(), (x.shape[-1],), eps=self.eps)
        return h.to(x.dtype) * self.weight


def make_norm(kind: str, d: int, eps: float = 1e-5, bias: bool = True) -> nn.Module:
    """A normalisation layer by name: ``"layernorm"``, ``"rmsnorm"`` or ``"none"`` (identity)."""
    if kind == "layernorm":
        return nn.LayerNorm(d, eps=eps, bias=bias)
    if kind == "rmsnorm":
        return RMSNorm(d, eps=eps)
    if kind == "none":
        return nn.Identity()
    raise ValueError(f"unknown norm {kind!r}: choose one of {NORMS}")


class MLP(nn.Module):
    """The position-wise MLP, ``W_out act(W_in x)``; SwiGLU: ``W_out (silu(W_gate x) * W_in x)``.

    x: (..., d_model) -> (..., d_model). ``activation`` is one of ``ACTIVATIONS``;
    ``"gelu"`` is the exact (erf) GELU of BERT, ``"gelu_tanh"`` GPT-2's approximation.
    Introduced in chapter 8; read as a key-value memory in chapter 9.
    """

    def __init__(self, d_model: int, d_mlp: int, activation: str = "gelu", bias: bool = True):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown MLP activation {activation!r}: choose one of {ACTIVATIONS}")
        check_positive(d_model=d_model, d_mlp=d_mlp)
        self.activation = activation
        self.W_in = nn.Linear(d_model, d_mlp, bias=bias)
        self.W_gate = nn.Linear(d_model, d_mlp, bias=bias) if activation == "swiglu" else None
        self.W_out = nn.Linear(d_mlp, d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.activation == "swiglu":
            return self.W_out(F.silu(self.W_gate(x)) * self.W_in(x))  # (..., d_model)
        h = self.W_in(x)  # (..., d_mlp)
        if self.activation == "relu":
            h = F.relu(h)
        elif self.activation == "gelu":
            h = F.gelu(h)
        elif self.activation == "gelu_tanh":
            h = F.gelu(h, approximate="tanh")
        return self.W_out(h)  # (..., d_model)
