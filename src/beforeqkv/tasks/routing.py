"""Routing tasks: which token should a query read? (chapters 4 and 5)

Chapter 4 compares a static, position-indexed mixer with content attention on three
tasks that share one format, ``((tokens, query), target)``:

* :func:`fixed_position` - always read position 5 (the query is noise);
* :func:`salient_token` - read the one token that is marked by its own content;
* :func:`pointer` - the query *names* the position to read.

Chapter 5 uses :func:`triads`, a rock-paper-scissors world where every token must
read the token it "beats": a directional relation that symmetric scores cannot express.
"""
from __future__ import annotations

import torch

from ._util import check_generator, check_positive, distinct_ids, move

__all__ = ["fixed_position", "salient_token", "pointer", "ROUTING_TASKS", "triads", "triad_successor"]


def _check_routing(batch_size, T, d_vocab):
    check_positive(batch_size=batch_size, T=T, d_vocab=d_vocab)


def fixed_position(batch_size: int, T: int = 16, d_vocab: int = 16, position: int = 5,
                   generator: torch.Generator | None = None, device=None):
    """Read the token at a fixed position: ``((tokens, query), target)``.

    tokens are i.i.d. uniform ids < d_vocab; the query is a random id < T that
    carries no information; the target is ``tokens[:, position]``. Chance is 1/d_vocab.

    Example (T=6, position=2): tokens [3, 9, 14, 0, 9, 5], query 4 -> target 14.

    Returns tokens (B, T), query (B,), target (B,), all int64. Chapter 4.
    """
    _check_routing(batch_size, T, d_vocab)
    if not isinstance(position, int) or not 0 <= position < T:
        raise ValueError(f"position must be an int in [0, {T}), got {position!r}")
    g = check_generator(generator)
    tokens = torch.randint(d_vocab, (batch_size, T), generator=g)  # (B, T)
    query = torch.randint(T, (batch_size,), generator=g)  # (B,) noise
    target = tokens[:, position]  # (B,)
    return move((tokens, query), device), move((target,), device)[0]


def salient_token(batch_size: int, T: int = 16, d_vocab: int = 16,
                  generator: torch.Generator | None = None, device=None):
    """Read the one *marked* token, wherever it is: ``((tokens, query), target)``.

    The lower half of the vocabulary is background, the upper half is marked: every
    sequence holds background tokens and exactly one marked token, at a random
    position. The target is the marked token's id (so chance is 2/d_vocab). The query
    is noise. The marked token identifies itself by its content.

    Example (T=6, d_vocab=16): tokens [3, 0, 7, 12, 5, 1], query 0 -> target 12.

    Returns tokens (B, T), query (B,), target (B,), all int64. Chapter 4.
    """
    _check_routing(batch_size, T, d_vocab)
    if d_vocab < 2 or d_vocab % 2:
        raise ValueError(f"d_vocab must be even and >= 2 (background + marked halves), got {d_vocab}")
    g = check_generator(generator)
    half = d_vocab // 2
    tokens = torch.randint(half, (batch_size, T), generator=g)  # (B, T) background
    where = torch.randint(T, (batch_size,), generator=g)  # (B,)
    marked = half + torch.randint(half, (batch_size,), generator=g)  # (B,)
    rows = torch.arange(batch_size)
    tokens[rows, where] = marked
    query = torch.randint(T, (batch_size,), generator=g)  # (B,) noise
    return move((tokens, query), device), move((marked,), device)[0]


def pointer(batch_size: int, T: int = 16, d_vocab: int = 16,
            generator: torch.Generator | None = None, device=None):
    """The query names the position to read: ``((tokens, query), target)``.

    tokens are i.i.d. uniform ids < d_vocab; the query is a position p < T;
    the target is ``tokens[:, p]``. Where to look changes with every question.

    Example (T=6): tokens [3, 9, 14, 0, 9, 5], query 3 -> target 0.

    Returns tokens (B, T), query (B,), target (B,), all int64. Chapter 4.
    """
    _check_routing(batch_size, T, d_vocab)
    g = check_generator(generator)
    tokens = torch.randint(d_vocab, (batch_size, T), generator=g)  # (B, T)
    query = torch.randint(T, (batch_size,), generator=g)  # (B,)
    target = tokens[torch.arange(batch_size), query]  # (B,)
    return move((tokens, query), device), move((target,), device)[0]


ROUTING_TASKS = {"fixed": fixed_position, "salient": salient_token, "pointer": pointer}


def triad_successor(items: torch.Tensor) -> torch.Tensor:
    """The item each triad item beats: ``3t + (r+1) % 3`` for item ``3t + r``.

    items: (...) int ids -> (...) int64 ids. Chapter 5.
    """
    if not isinstance(items, torch.Tensor) or items.is_floating_point():
        raise ValueError("items must be an integer torch.Tensor of triad ids")
    return 3 * (items // 3) + (items + 1) % 3


def triads(batch_size: int, n_triads: int = 8, per_sequence: int = 2, n_payloads: int = 8,
           generator: torch.Generator | None = None, device=None):
    """Rock-paper-scissors triads: ``((items, payloads), target)``. Chapter 5.

    There are ``n_triads`` triads of three items (ids ``3t, 3t+1, 3t+2``; 24 ids by
    default); inside a triad, item ``3t+r`` *beats* item ``3t+(r+1)%3``: a 3-cycle,
    like rock > scissors > paper > rock. A sequence holds ``per_sequence`` distinct
    whole triads, shuffled (T = 3 * per_sequence), and every token carries a random
    payload class < n_payloads. The target at each position is the payload of the
    item that this token beats. Chance is 1/n_payloads.

    Example (one triad, ids 0, 1, 2): items [2, 0, 1], payloads [6, 3, 3]
    -> target [3, 3, 6]: 2 beats 0 (payload 3), 0 beats 1 (3), 1 beats 2 (6).

    Returns items (B, T), payloads (B, T), target (B, T), all int64.
    """
    check_positive(batch_size=batch_size, n_triads=n_triads, per_sequence=per_sequence, n_payloads=n_payloads)
    if per_sequence > n_triads:
        raise ValueError(f"per_sequence={per_sequence} distinct triads cannot be drawn from n_triads={n_triads}")
    g = check_generator(generator)
    n = 3 * per_sequence
    which = distinct_ids(batch_size, per_sequence, n_triads, g)  # (B, k)
    items = (3 * which.unsqueeze(-1) + torch.arange(3)).reshape(batch_size, n)  # (B, k, 3) -> (B, T)
    order = torch.rand(batch_size, n, generator=g).argsort(dim=-1)  # (B, T): a shuffle
    items = items.gather(1, order)  # (B, T)
    payloads = torch.randint(n_payloads, (batch_size, n), generator=g)  # (B, T)
    succ = triad_successor(items)  # (B, T) ids
    where = (succ.unsqueeze(-1) == items.unsqueeze(-2)).float().argmax(dim=-1)  # (B, T): position of succ
    target = payloads.gather(1, where)  # (B, T)
    items, payloads, target = move((items, payloads, target), device)
    return (items, payloads), target
