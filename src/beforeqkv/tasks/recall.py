"""Associative recall: the task of Part I (chapters 1, 2 and 7)."""
from __future__ import annotations

import torch

from ._util import check_generator, check_positive, distinct_ids, move

__all__ = ["associative_recall"]


def associative_recall(batch_size: int, n_pairs: int, n_keys: int = 64, n_values: int = 16,
                       generator: torch.Generator | None = None, device=None):
    """A batch of associative-recall problems: ``((keys, values, query), target)``.

    Each example holds ``n_pairs`` distinct keys (ids < n_keys), each with a value
    (id < n_values); each (key, value) pair is *one* token. A query names one of the
    keys; the target is its value. Chance accuracy is ``1/n_values``.

    Example (n_pairs=3): keys [12, 40, 7], values [3, 3, 9], query 40 -> target 3.

    Returns keys (B, N), values (B, N), query (B,), target (B,), all int64.
    """
    check_positive(batch_size=batch_size, n_pairs=n_pairs, n_keys=n_keys, n_values=n_values)
    if n_pairs > n_keys:
        raise ValueError(f"n_pairs={n_pairs} distinct keys cannot be drawn from n_keys={n_keys}")
    g = check_generator(generator)
    keys = distinct_ids(batch_size, n_pairs, n_keys, g)  # (B, N)
    values = torch.randint(n_values, (batch_size, n_pairs), generator=g)  # (B, N)
    pick = torch.randint(n_pairs, (batch_size,), generator=g)  # (B,)
    rows = torch.arange(batch_size)
    query, target = keys[rows, pick], values[rows, pick]  # (B,), (B,)
    keys, values, query, target = move((keys, values, query, target), device)
    return (keys, values, query), target
