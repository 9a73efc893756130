"""Token sequences for language-model experiments (chapter 8)."""
from __future__ import annotations

import torch

from ._util import check_generator, check_positive, move

__all__ = ["random_tokens"]


def random_tokens(batch_size: int, T: int = 16, d_vocab: int = 16, generator: torch.Generator | None = None,
                  device=None):
    """I.i.d. uniform tokens for next-token prediction: ``(tokens, target)``.

    ``tokens`` (B, T) and ``target`` (B, T) int64 with ``target[:, t] = tokens[:, t + 1]``
    (a sequence of T + 1 tokens, shifted). Every token is independent of the past, so
    no model can beat a loss of ``ln d_vocab`` nats, unless it peeks at the future.

    Example (T=4, d_vocab=16): tokens [3, 11, 0, 7], target [11, 0, 7, 5].
    """
    check_positive(batch_size=batch_size, T=T, d_vocab=d_vocab)
    g = check_generator(generator)
    seq = torch.randint(d_vocab, (batch_size, T + 1), generator=g)  # (B, T + 1)
    tokens, target = seq[:, :-1], seq[:, 1:]  # (B, T), (B, T)
    return move((tokens, target), device)
