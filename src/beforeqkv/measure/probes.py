"""Measurements of trained models of chapter 6: ring accuracy and what each head routes.

These evaluate a model on a fixed batch; they do not build one, so they live outside
:mod:`beforeqkv.models`. Both run in eval mode and restore the model's mode.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from ..recorder import with_weights
from ..tasks.ring import ring_neighbors
from ..train import _per_chunk

__all__ = ["ring_accuracy", "routing_profile", "neighbour_word"]


def ring_accuracy(model: nn.Module, batch, batch_size: int = 1000) -> dict:
    """Accuracy on the ring task: ``successor``, ``predecessor`` and ``both`` (per position)."""

    def score(logits, target):  # logits (b, T, 2, n_payloads), target (b, T, 2)
        hit = logits.argmax(-1) == target  # (b, T, 2)
        sums = torch.stack([hit[..., 0].sum(), hit[..., 1].sum(), hit.all(dim=-1).sum()])  # (3,)
        return sums.double().cpu(), hit[..., 0].numel()

    succ, pred, both = _per_chunk(model, batch, batch_size, None, score).tolist()
    return {"successor": succ, "predecessor": pred, "both": both}


@torch.no_grad()
def routing_profile(model: nn.Module, batch, ring_size: int = 8) -> torch.Tensor:
    """Mean attention weight each head puts on the successor, the predecessor and the token itself.

    ``model(items, payloads)`` must form one set of weights (B, H, T, T), as
    :class:`~beforeqkv.models.RingHeads` does. Returns (n_heads, 3): columns successor,
    predecessor, self. Chapter 6.
    """
    (items, payloads), _ = batch
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        _, (w,) = with_weights(model, items.to(device), payloads.to(device))  # (B, H, T, T)
    finally:
        model.train(was_training)
    succ, pred = ring_neighbors(items, ring_size)  # (B, T)
    cols = []
    for target_ids in (succ, pred, items):
        pick = (items.unsqueeze(1) == target_ids.unsqueeze(2)).to(device)  # (B, T_i, T_j): j is i's target
        cols.append((w * pick.unsqueeze(1)).sum(-1).mean(dim=(0, 2)))  # (H,)
    return torch.stack(cols, dim=-1).cpu()  # (H, 3)


def neighbour_word(name: str) -> str:
    """``"successor"`` or ``"predecessor"`` in the reader's language, for the prose (chapter 6)."""
    from ..i18n import _
    words = {"successor": _("successor"), "predecessor": _("predecessor")}
    if name not in words:
        raise ValueError(f"name must be 'successor' or 'predecessor', got {name!r}")
    return words[name]
