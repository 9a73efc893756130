"""Decoding speed on a CPU, kept apart from the teaching classes (chapter 11).

Generating text runs the model on one new token at a time: every step reads every weight
once for a handful of multiply-adds, so on a CPU the matrix-vector products are bound by
memory. :func:`decode_layout` (which :func:`beforeqkv.pretrained.smollm2.load_smollm2`
applies) changes how the weights sit in memory, never their numbers, shapes or names:

* each linear weight (out, in) is stored transposed, (in, out) in memory, so ``x @ W.T``
  reads W row after row;
* linears that read the same input (``W_Q``, ``W_K``, ``W_V``; SwiGLU's ``W_gate`` and
  ``W_in``) are stored side by side in one buffer, each weight a view of its block
  (:func:`join`), and the module becomes a :class:`JoinedAttention` or :class:`JoinedMLP`,
  which computes them with one product (:func:`outputs`): one call and one pass over memory
  instead of three.

The logits change only by float rounding (sums in another order). A joined module falls
back to the separate linears when a weight was replaced (a deep copy's weights are
replaced too) or while autograd records. :class:`beforeqkv.attention.MultiHeadAttention`
and :class:`beforeqkv.models.blocks.MLP` know nothing of this.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import MultiHeadAttention
from .models.blocks import MLP

__all__ = ["decode_layout", "join", "outputs", "JoinedAttention", "JoinedMLP"]


def _pointers(module: nn.Module, names) -> tuple:
    return tuple((getattr(module, n).weight.data_ptr(), tuple(getattr(module, n).weight.shape)) for n in names)


def join(module: nn.Module, names: tuple[str, ...]) -> bool:
    """Make the bias-free linears ``names`` of ``module`` views of one (in, sum of out) buffer.

    Returns False (and changes nothing) if they do not all read the same width, have a
    bias, or are not float tensors on the same device.
    """
    linears = [getattr(module, n, None) for n in names]
    if not all(isinstance(m, nn.Linear) and m.bias is None for m in linears):
        return False
    ws = [m.weight for m in linears]
    if len({(w.shape[1], w.dtype, w.device) for w in ws}) != 1 or not ws[0].is_floating_point():
        return False
    buffer = torch.cat([w.detach().t() for w in ws], dim=1).contiguous()  # (in, out_1 + out_2 + ...)
    start = 0
    for m, w in zip(linears, ws):
        block = buffer[:, start:start + w.shape[0]].t()  # (out, in), stored (in, out)
        m.weight = nn.Parameter(block, requires_grad=w.requires_grad)
        start += w.shape[0]
    module._joined = (names, buffer, _pointers(module, names), [w.shape[0] for w in ws])
    return True


def outputs(module: nn.Module, x: torch.Tensor):
    """The joined linears' outputs for input x (..., in), a tuple in ``names`` order; or None."""
    joined = getattr(module, "_joined", None)
    if joined is None:
        return None
    names, buffer, pointers, sizes = joined
    if _pointers(module, names) != pointers:  # a weight was replaced: the buffer no longer holds it
        module._joined = None
        return None
    if torch.is_grad_enabled() and any(getattr(module, n).weight.requires_grad for n in names):
        return None  # gradients must reach the separate Parameters
    return torch.split(x @ buffer, sizes, dim=-1)


class JoinedAttention(MultiHeadAttention):
    """:class:`MultiHeadAttention` whose queries, keys and values of one input come from one product."""

    def project(self, x: torch.Tensor, src: torch.Tensor):
        qkv = outputs(self, x) if src is x else None
        return qkv if qkv is not None else super().project(x, src)


class JoinedMLP(MLP):
    """SwiGLU :class:`MLP` whose ``W_gate x`` and ``W_in x`` come from one product."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate_in = outputs(self, x)
        if gate_in is None:
            return super().forward(x)
        g, h = gate_in  # (..., d_mlp) each
        return self.W_out(F.silu(g) * h)  # (..., d_model)


def decode_layout(model: nn.Module) -> nn.Module:
    """Lay every linear weight of ``model`` out for decoding one token at a time, in place.

    A weight keeps its shape (out, in) and its numbers, but is stored transposed, (in, out)
    in memory: ``x @ W.T`` then reads W row after row, which on a CPU runs the
    matrix-vector products of one-token decoding about 1.5x faster. Attention's W_Q, W_K,
    W_V and SwiGLU's W_gate, W_in are joined (:func:`join`) and their modules become
    :class:`JoinedAttention`, :class:`JoinedMLP`. A model not on the CPU comes back unchanged.
    """
    if next(model.parameters()).device.type != "cpu":
        return model
    for module in model.modules():
        if type(module) is MultiHeadAttention and join(module, ("W_Q", "W_K", "W_V")):
            module.__class__ = JoinedAttention
        elif type(module) is MLP and module.W_gate is not None and join(module, ("W_gate", "W_in")):
            module.__class__ = JoinedMLP
    for module in model.modules():  # the joined weights are (in, out) views already: not contiguous
        if isinstance(module, nn.Linear) and module.weight.is_contiguous():
            w = module.weight
            module.weight = nn.Parameter(w.detach().t().contiguous().t(), requires_grad=w.requires_grad)
    tied = getattr(model, "W_U", None) is not None and getattr(model, "W_E", None) is not None
    if tied and getattr(getattr(model, "config", None), "tie_embeddings", False):
        model.W_E.weight = model.W_U.weight  # one tensor again
    return model
