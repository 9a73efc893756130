"""Items on a ring: every token must read two *different* tokens at once (chapter 6)."""
from __future__ import annotations

import torch

from ._util import check_generator, check_positive, move

__all__ = ["ring_neighbors", "ring_routing"]


def ring_neighbors(items: torch.Tensor, ring_size: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """Successor and predecessor ids of ring items: ``r*n + (k +- 1) % n`` for item ``r*n + k``.

    items: (...) int ids -> (successor, predecessor), both (...) int64. Chapter 6.
    """
    if not isinstance(items, torch.Tensor) or items.is_floating_point():
        raise ValueError("items must be an integer torch.Tensor of ring ids")
    check_positive(ring_size=ring_size)
    ring, k = items // ring_size, items % ring_size
    return ring * ring_size + (k + 1) % ring_size, ring * ring_size + (k - 1) % ring_size


def ring_routing(batch_size: int, n_rings: int = 4, ring_size: int = 8, n_payloads: int = 8,
                 generator: torch.Generator | None = None, device=None):
    """A batch of ring problems: ``((items, payloads), target)``; every token needs two neighbours.

    There are ``n_rings`` rings of ``ring_size`` items; item ``k`` of ring ``r`` has the
    id ``r*ring_size + k`` (32 ids by default), its successor is item ``k+1`` and its
    predecessor item ``k-1`` (cyclically). Each example is one whole ring, shuffled
    (T = ring_size), and every item carries a random payload class (< n_payloads).
    For each position the target holds two classes: the payload of the item's
    **successor** (``target[..., 0]``) and of its **predecessor** (``target[..., 1]``).
    Positions carry no information (the ring is shuffled), so only content can route.
    Chance is ``1/n_payloads`` per target.

    Example (ring_size=4, one ring, ids 0-3): items [2, 0, 3, 1], payloads [5, 1, 7, 7]
    -> target [[7, 7], [7, 7], [1, 5], [5, 1]]: item 2's successor 3 carries 7, its
    predecessor 1 carries 7; item 3's successor 0 carries 1, its predecessor 2 carries 5.

    Returns items (B, T), payloads (B, T) and target (B, T, 2), all int64.
    """
    check_positive(batch_size=batch_size, n_rings=n_rings, ring_size=ring_size, n_payloads=n_payloads)
    if ring_size < 3:
        raise ValueError(f"ring_size must be >= 3 so that successor and predecessor differ, got {ring_size}")
    g = check_generator(generator)
    ring = torch.randint(n_rings, (batch_size, 1), generator=g)  # (B, 1)
    order = torch.rand(batch_size, ring_size, generator=g).argsort(dim=-1)  # (B, T): a shuffle
    items = ring * ring_size + order  # (B, T)
    payloads = torch.randint(n_payloads, (batch_size, ring_size), generator=g)  # (B, T)
    # payload of ring slot k, for each example: invert the shuffle
    by_slot = torch.empty_like(payloads).scatter_(1, order, payloads)  # (B, T): by_slot[b, order[b,t]] = pay[b,t]
    succ = (order + 1) % ring_size  # (B, T) ring slot of each successor
    pred = (order - 1) % ring_size  # (B, T)
    target = torch.stack([by_slot.gather(1, succ), by_slot.gather(1, pred)], dim=-1)  # (B, T, 2)
    items, payloads, target = move((items, payloads, target), device)
    return (items, payloads), target
