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

__all__ = ["Embedding", "PairEmbedding", "ItemPayloadEmbedding"]


class Embedding(nn.Embedding):
    """``nn.Embedding`` whose lookup ``E[ids]`` is written as ``index_select``.

    The same numbers, forward and backward (``tests/test_models_recall.py`` checks training
    runs are bit-identical), but on a CPU the backward pass is about 2.4x faster: torch's
    embedding backward sorts the ids first, ``index_select``'s adds the rows in the same
    order without sorting. On other devices, and with ``nn.Embedding``'s extra options
    (``padding_idx``, ``max_norm``, ``sparse``), torch's own lookup runs.
    """

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        w = self.weight
        if w.device.type != "cpu" or self.padding_idx is not None or self.max_norm is not None or self.sparse:
            return super().forward(ids)
        return w.index_select(0, ids.reshape(-1)).view(*ids.shape, w.shape[1])  # (..., d)


class PairEmbedding(nn.Module):
    """Embed (key, value) pair tokens as ``E_k[k] + E_v[v]`` and the query as ``E_q[k*]``."""

    def __init__(self, d_model: int = 32, n_keys: int = 64, n_values: int = 16):
        super().__init__()
        self.E_k = Embedding(n_keys, d_model)
        self.E_v = Embedding(n_values, d_model)
        self.E_q = Embedding(n_keys, d_model)
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
        self.E_item = Embedding(n_items, d_model)
        self.E_pay = Embedding(n_payloads, d_model)

    def forward(self, items: torch.Tensor, payloads: torch.Tensor) -> torch.Tensor:
        check_ids("items", items, self.n_items, dim=2)
        check_ids("payloads", payloads, self.n_payloads, dim=2)
        if items.shape != payloads.shape:
            raise ValueError(f"items and payloads must both be (B, T), got {tuple(items.shape)} and "
                             f"{tuple(payloads.shape)}")
        return self.E_item(items) + self.E_pay(payloads)  # (B, T, d_model)
