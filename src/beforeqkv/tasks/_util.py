"""Helpers shared by the task generators."""
from __future__ import annotations

import torch

from .._validate import check_positive, move  # noqa: F401  (re-exported for the task modules)


def check_generator(generator) -> torch.Generator:
    """Return ``generator``, or without one a generator of the task's own seeded from torch's
    global stream (so ``seed_everything(s)`` makes a task called without ``generator=`` draw the
    same data each time; the global generator is read, never reseeded); reject anything else
    with a clear error."""
    if generator is None:
        return torch.Generator().manual_seed(int(torch.randint(0, 2**62, (1,))))
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    return generator


def distinct_ids(batch_size: int, n: int, n_ids: int, generator: torch.Generator) -> torch.Tensor:
    """(batch_size, n) ids drawn without replacement from range(n_ids), per row."""
    return torch.rand(batch_size, n_ids, generator=generator).argsort(dim=-1)[:, :n]  # (B, n)
