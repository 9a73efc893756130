"""A recurrent layer and a one-layer attention mixer, side by side (chapter 3).

Both map a sequence ``x`` of shape (B, T, d_model) to outputs of the same length:

* :class:`LoopRNN` computes ``h_t = tanh(W_ih x_t + W_hh h_{t-1} + b)`` one step at a
  time in a Python loop, so output ``t`` depends on ``t`` sequential steps.
* :class:`AttentionMixer` computes every ``y_i = sum_j w_ij v_j`` at once with a few
  matrix products: no left-to-right links, only the all-to-all ("red") ones.

:mod:`beforeqkv.measure.steps` measures their sequential depth and their running time.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from ..attention import MultiHeadAttention
from .._validate import check_positive

__all__ = ["LoopRNN", "AttentionMixer"]



def _check_sequence(x, d_model: int) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != d_model:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x must have shape (B, T, d_model={d_model}), got {shape}")
    if x.shape[1] < 1:
        raise ValueError("x must hold at least one time step (T >= 1)")


class LoopRNN(nn.Module):
    """An Elman RNN unrolled in a Python loop: ``h_t = tanh(W_ih x_t + W_hh h_{t-1} + b)``.

    x: (B, T, d_model) -> hidden states (B, T, hidden). One ``nn.RNNCell`` call per
    step, so the autograd graph is a chain of T cells, each adding 3 operations to the
    longest path (the product with h_{t-1}, an add, a tanh): depth 3T + 2.
    Derived in chapter 3, book/03_red_connections.ipynb.

    The loop walks ``x.unbind(1)``: indexing ``x[:, t]`` instead would make the backward
    pass O(T^2) when x needs a gradient, as every index op scatters a full-size gradient.
    """

    def __init__(self, d_model: int = 32, hidden: int | None = None):
        super().__init__()
        hidden = d_model if hidden is None else hidden
        check_positive(d_model=d_model, hidden=hidden)
        self.d_model, self.hidden = d_model, hidden
        self.cell = nn.RNNCell(d_model, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_sequence(x, self.d_model)
        h = x.new_zeros(x.shape[0], self.hidden)  # (B, hidden)
        states = []
        for x_t in x.unbind(1):  # T tensors of shape (B, d_model)
            h = self.cell(x_t, h)  # (B, hidden): needs the previous h, so steps run in order
            states.append(h)
        return torch.stack(states, dim=1)  # (B, T, hidden)


class AttentionMixer(MultiHeadAttention):
    """One attention layer: ``y_i = W_O sum_j w_ij v_j`` with ``w_ij = softmax_j(q_i . k_j / sqrt(d))``.

    x: (B, T, d_model) -> (B, T, d_model). Every output is computed at once from all
    inputs (the "red connections" of chapter 3); how the weights ``w_ij`` are chosen is
    the subject of chapters 4-5. ``causal=True`` lets position i read only j <= i.
    It is a one-head, bias-free :class:`~beforeqkv.attention.MultiHeadAttention` with the
    mask fixed at construction; ``fast=False`` (default) runs the explicit teaching path.
    Derived in chapter 3, book/03_red_connections.ipynb.
    """

    def __init__(self, d_model: int = 32, causal: bool = True, fast: bool = False):
        check_positive(d_model=d_model)
        super().__init__(d_model, 1, bias=False, fast=fast)
        self.causal = causal

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, T, d_model) -> (B, T, d_model); the weights (B, 1, T, T) pass through ``self.tap``."""
        _check_sequence(x, self.d_model)
        return super().forward(x, causal=self.causal)
