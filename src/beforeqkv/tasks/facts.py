"""Random facts to store in an MLP: the task of chapter 9."""
from __future__ import annotations

import torch

from ._util import check_generator, check_positive, move

__all__ = ["random_facts"]


def random_facts(n_facts: int, d_model: int = 32, n_classes: int = 16,
                 generator: torch.Generator | None = None, device=None):
    """``n_facts`` random facts ``(keys, target)``: a unit-length key in R^d_model -> a class.

    Keys point in uniformly random directions; each class is drawn uniformly at
    random, so nothing generalises: a model can only *memorise* the list. Chance
    recall is ``1/n_classes``.

    Example (n_facts=2, d_model=3): keys [[0.27, -0.80, 0.53], [0.91, 0.41, 0.06]],
    target [11, 4].

    Returns keys (n_facts, d_model) float32 with unit rows, target (n_facts,) int64.
    Used in chapter 9 (the MLP as a key-value memory).
    """
    check_positive(n_facts=n_facts, d_model=d_model, n_classes=n_classes)
    g = check_generator(generator)
    keys = torch.randn(n_facts, d_model, generator=g)  # (N, d)
    keys = keys / keys.norm(dim=-1, keepdim=True)  # (N, d), unit rows
    target = torch.randint(n_classes, (n_facts,), generator=g)  # (N,)
    keys, target = move((keys, target), device)
    return keys, target
