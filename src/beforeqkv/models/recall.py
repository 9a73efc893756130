"""Models for associative recall: a fixed-memory LSTM, one attention read (Part I), a block stack (chapter 8)."""
from __future__ import annotations

import math

import torch
import torch.nn as nn

from ..attention import attend, linear_attention
from ..recorder import WeightsTap
from .blocks import make_norm
from .embeddings import PairEmbedding
from .transformer import TransformerBlock

__all__ = ["RecallLSTM", "RecallAttention", "RecallTransformer"]


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
        self.tap = WeightsTap()
        if init_std is not None:
            for lin in (self.W_Q, self.W_K, self.W_V):
                nn.init.normal_(lin.weight, std=init_std)

    def forward(self, keys, values, query):
        """keys, values (B, N), query (B,) -> logits (B, n_values).

        The softmax read's weights over the pairs, (B, N), pass through ``self.tap``
        (:func:`beforeqkv.attention.with_weights`); linear attention forms none.
        """
        pairs, q = self.embed(keys, values, query)  # (B, N, d), (B, d)
        q = self.W_Q(q).unsqueeze(1)  # (B, 1, d_head)
        k, v = self.W_K(pairs), self.W_V(pairs)  # (B, N, d_head)
        if self.kind == "linear":
            read = linear_attention(q, k, v, via_memory=True)  # (B, 1, d_head)
        else:
            scale = 1.0 / math.sqrt(self.d_head) if self.scaled else 1.0
            read, weights = attend(q, k, v, scale=scale)  # (B, 1, d_head), (B, 1, N)
            self.tap(weights[:, 0])  # (B, N): where record_weights reads them
        return self.readout(read[:, 0])  # (B, n_values)


class RecallTransformer(nn.Module):
    """Associative recall with a stack of blocks: pair tokens then the query, read at the end.

    ``model(keys, values, query)`` -> logits (B, n_values); the residual experiment of chapter 8.
    ``block_options`` go to every :class:`~beforeqkv.models.TransformerBlock` (e.g. ``residual=False``).
    """

    def __init__(self, d_model: int = 32, n_heads: int = 2, n_layers: int = 6, n_keys: int = 64,
                 n_values: int = 16, **block_options):
        super().__init__()
        self.embed = PairEmbedding(d_model, n_keys, n_values)
        self.blocks = nn.ModuleList([TransformerBlock(d_model, n_heads, **block_options) for _ in range(n_layers)])
        self.norm_final = make_norm(block_options.get("norm", "layernorm"), d_model)
        self.readout = nn.Linear(d_model, n_values)

    def residual_stream(self, keys, values, query) -> list:
        """The stream (B, N + 1, d_model) after the embedding and after each block: n_layers + 1 tensors."""
        pairs, q = self.embed(keys, values, query)  # (B, N, d), (B, d)
        x = torch.cat([pairs, q.unsqueeze(1)], dim=1)  # (B, N + 1, d)
        stream = [x]
        for block in self.blocks:
            x = block(x, causal=False)  # (B, N + 1, d)
            stream.append(x)
        return stream

    def forward(self, keys, values, query):
        x = self.residual_stream(keys, values, query)[-1]  # (B, N + 1, d)
        return self.readout(self.norm_final(x[:, -1]))  # (B, n_values)
