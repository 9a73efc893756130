"""Linears that read the same input, joined into one matrix product (one-token decoding on a CPU).

W_Q, W_K, W_V all read x; so do SwiGLU's W_gate and W_in. :func:`join` stores their
weights side by side in one buffer (in, out_1 + out_2 + ...) and makes each weight a
view of its block: the numbers, names and shapes stay, no memory is added. :func:`outputs`
then computes all of them with one ``x @ buffer``: one weight read and one call instead
of three, which is what a memory-bound decoding step pays for. It falls back to the
separate linears (returns ``None``) when a weight was replaced (a deep copy's weights are
replaced too) or when autograd records.
"""
from __future__ import annotations

import torch
import torch.nn as nn

__all__ = ["join", "outputs"]


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
