"""The toy tasks' embedding tables (chapters 1-6), named as in book/notation.md.

* :class:`PairEmbedding` (recall tasks, chapters 1, 2, 7, 8): ``E_k[key] + E_v[value]``
  for each stored pair and ``E_q[key*]`` for the question.
* :class:`ItemPayloadEmbedding` (triads and ring tasks, chapters 5, 6):
  ``E_item[item] + E_pay[payload]`` for each token.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from .._validate import check_ids

__all__ = ["PairEmbedding", "ItemPayloadEmbedding"]


class PairEmbedding(nn.Module):
    """Embed (key, value) pair tokens as ``E_k[k] + E_v[v]`` and the query as ``E_q[k*]``."""

    def __init__(self, d_model: int = 32, n_keys: int = 64, n_values: int = 16):
        super().__init__()
        self.E_k = nn.Embedding(n_keys, d_model)
        self.E_v = nn.Embedding(n_values, d_model)
        self.E_q = nn.Embedding(n_keys, d_model)
        self.n_keys, self.n_values = n_keys, n_values

    def forward(self, keys, values, query):
        """keys, values: (B, N) ints; query: (B,) -> pairs (B, N, d), q (B, d)."""
        check_ids("keys", keys, self.n_keys, dim=2)
        check_ids("values", values, self.n_values, dim=2)
        check_ids("query", query, self.n_keys, dim=1)
        if keys.shape != values.shape or query.shape != keys.shape[:1]:
            raise ValueError(
                f"expected keys, values (B, N) and query (B,), got {tuple(keys.shape)}, "
                f"{tuple(values.shape)}, {tuple(query.shape)}"
            )
        return self.E_k(keys) + self.E_v(values), self.E_q(query)  # (B, N, d), (B, d)


class ItemPayloadEmbedding(nn.Module):
    """``x_i = E_item[item_i] + E_pay[payload_i]``: items, payloads (B, T) ints -> x (B, T, d_model)."""

    def __init__(self, n_items: int, n_payloads: int, d_model: int):
        super().__init__()
        self.n_items, self.n_payloads = n_items, n_payloads
        self.E_item = nn.Embedding(n_items, d_model)
        self.E_pay = nn.Embedding(n_payloads, d_model)

    def forward(self, items: torch.Tensor, payloads: torch.Tensor) -> torch.Tensor:
        check_ids("items", items, self.n_items, dim=2)
        check_ids("payloads", payloads, self.n_payloads, dim=2)
        if items.shape != payloads.shape:
            raise ValueError(f"items and payloads must both be (B, T), got {tuple(items.shape)} and "
                             f"{tuple(payloads.shape)}")
        return self.E_item(items) + self.E_pay(payloads)  # (B, T, d_model)
