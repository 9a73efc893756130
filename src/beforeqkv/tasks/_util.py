"""Helpers shared by the task generators."""
from __future__ import annotations

import torch

from .._validate import check_positive, move  # noqa: F401  (re-exported for the task modules)


def check_generator(generator) -> torch.Generator:
    """Return ``generator`` or a fresh unseeded one; reject anything else with a clear error."""
    if generator is None:
        return torch.Generator().manual_seed(torch.seed() % 2**63)
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    return generator


def distinct_ids(batch_size: int, n: int, n_ids: int, generator: torch.Generator) -> torch.Tensor:
    """(batch_size, n) ids drawn without replacement from range(n_ids), per row."""
    return torch.rand(batch_size, n_ids, generator=generator).argsort(dim=-1)[:, :n]  # (B, n)
