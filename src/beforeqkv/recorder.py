"""Reading attention weights from outside a model, so the models never return them.

Every layer that computes attention weights hands them to a :class:`WeightsTap`, which
returns them unchanged. :func:`record_weights` puts a forward hook on each tap of a model
for the length of a ``with`` block and collects what passes; :func:`with_weights` runs the
model once under it. The teaching classes stay as plain as the chapters that derive them:
their ``forward`` returns its output and nothing else.

    with record_weights(model) as weights:
        logits = model(tokens)
    # weights: one tensor per attention layer, in the order they ran

A module with a fused fast path (``fast=True``; torch's kernel never forms the weights)
runs its explicit path while it is recorded, then gets its setting back.
"""
from __future__ import annotations

import contextlib

import torch
import torch.nn as nn

__all__ = ["WeightsTap", "record_weights", "with_weights"]


class WeightsTap(nn.Identity):
    """Where a layer hands over the attention weights it formed; returns them unchanged."""


@contextlib.contextmanager
def record_weights(model: nn.Module):
    """Inside the block, every attention weight tensor ``model`` computes is appended to a list.

    Yields the list: one tensor per tap call, in call order (for a Transformer, one
    (B, n_heads, T, T_k) per layer and call). The hooks are removed and every ``fast``
    setting restored when the block ends, also on an error.
    """
    if not isinstance(model, nn.Module):
        raise ValueError(f"record_weights needs a torch module, got {type(model).__name__}")
    taps = [m for m in model.modules() if isinstance(m, WeightsTap)]
    if not taps:
        raise ValueError(f"{type(model).__name__} has no attention weights to record (no WeightsTap inside)")
    weights: list[torch.Tensor] = []
    fused = [m for m in model.modules() if getattr(m, "fast", None) is True]
    hooks = [tap.register_forward_hook(lambda _tap, _inputs, a: weights.append(a)) for tap in taps]
    for m in fused:
        m.fast = False
    try:
        yield weights
    finally:
        for hook in hooks:
            hook.remove()
        for m in fused:
            m.fast = True


def with_weights(model: nn.Module, *inputs, **kwargs):
    """``model(*inputs, **kwargs)`` and the attention weights it computed: ``(output, [a, ...])``.

    Unpack one layer's weights with ``out, (a,) = with_weights(layer, x)``. A ``ValueError``
    if the call formed no weights (linear attention has no normalised weights).
    """
    with record_weights(model) as weights:
        out = model(*inputs, **kwargs)
    if not weights:
        raise ValueError(f"{type(model).__name__} formed no attention weights in this call "
                         f"(linear attention never normalises its scores into weights)")
    return out, weights
