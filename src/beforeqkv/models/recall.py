"""Models for associative recall: a fixed-memory LSTM and one attention read (Part I)."""
from __future__ import annotations

import math

import torch
import torch.nn as nn

from ..attention import attend, linear_attention

__all__ = ["PairEmbedding", "RecallLSTM", "RecallAttention"]


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
        if keys.shape != values.shape or keys.dim() != 2 or query.shape != keys.shape[:1]:
            raise ValueError(
                f"expected keys, values (B, N) and query (B,), got {tuple(keys.shape)}, "
                f"{tuple(values.shape)}, {tuple(query.shape)}"
            )
        if keys.max() >= self.n_keys or values.max() >= self.n_values or query.max() >= self.n_keys:
            raise ValueError(f"ids out of range: n_keys={self.n_keys}, n_values={self.n_values}")
        return self.E_k(keys) + self.E_v(values), self.E_q(query)  # (B, N, d), (B, d)


class RecallLSTM(nn.Module):
    """Fixed memory: an LSTM reads the pair tokens then the query; a linear readout of its
    last state predicts the value. Everything it knows lives in ``hidden`` numbers (chapter 1)."""

    def __init__(self, d_model: int = 32, hidden: int = 64, n_keys: int = 64, n_values: int = 16):
        super().__init__()
        self.embed = PairEmbedding(d_model, n_keys, n_values)
        self.lstm = nn.LSTM(d_model, hidden, batch_first=True)
        self.readout = nn.Linear(hidden, n_values)

    def forward(self, keys, values, query):
        pairs, q = self.embed(keys, values, query)  # (B, N, d), (B, d)
        seq = torch.cat([pairs, q.unsqueeze(1)], dim=1)  # (B, N+1, d)
        out, _ = self.lstm(seq)  # (B, N+1, hidden)
        return self.readout(out[:, -1])  # (B, n_values)


class RecallAttention(nn.Module):
    """One attention read over the pair tokens (chapters 1, 2 and 7).

    ``kind="softmax"``: ``r = sum_j softmax_j(q . k_j * scale) v_j`` (memory grows with N).
    ``kind="linear"``: ``r = M q`` with ``M = sum_j v_j k_j^T`` (fixed d_head x d_head memory).
    ``scaled=False`` drops the 1/sqrt(d_head) (chapter 7); ``init_std`` sets the init of
    W_Q, W_K, W_V (default: PyTorch's).
    """

    def __init__(self, d_model: int = 32, d_head: int = 32, n_keys: int = 64, n_values: int = 16,
                 kind: str = "softmax", scaled: bool = True, init_std: float | None = None):
        super().__init__()
        if kind not in ("softmax", "linear"):
            raise ValueError(f"kind must be 'softmax' or 'linear', got {kind!r}")
        self.kind, self.scaled, self.d_head = kind, scaled, d_head
        self.embed = PairEmbedding(d_model, n_keys, n_values)
        self.W_Q = nn.Linear(d_model, d_head, bias=False)
        self.W_K = nn.Linear(d_model, d_head, bias=False)
        self.W_V = nn.Linear(d_model, d_head, bias=False)
        self.readout = nn.Linear(d_head, n_values)
        if init_std is not None:
            for lin in (self.W_Q, self.W_K, self.W_V):
                nn.init.normal_(lin.weight, std=init_std)

    def forward(self, keys, values, query, return_weights: bool = False):
        """keys, values (B, N), query (B,) -> logits (B, n_values) [, weights (B, N)].

        ``return_weights=True`` (softmax only) also returns the read's weights over the pairs.
        """
        if return_weights and self.kind == "linear":
            raise ValueError("linear attention has no normalised weights to return (kind='linear')")
        pairs, q = self.embed(keys, values, query)  # (B, N, d), (B, d)
        q = self.W_Q(q).unsqueeze(1)  # (B, 1, d_head)
        k, v = self.W_K(pairs), self.W_V(pairs)  # (B, N, d_head)
        if self.kind == "linear":
            read = linear_attention(q, k, v, via_memory=True)  # (B, 1, d_head)
        else:
            scale = 1.0 / math.sqrt(self.d_head) if self.scaled else 1.0
            read, weights = attend(q, k, v, scale=scale)  # (B, 1, d_head), (B, 1, N)
        logits = self.readout(read[:, 0])  # (B, n_values)
        return (logits, weights[:, 0]) if return_weights else logits
