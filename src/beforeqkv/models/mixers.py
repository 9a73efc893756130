"""Token mixers: where do the weights ``w_ij`` come from? (chapters 4 and 5)

* :class:`StaticMixer` - one learned weight per *position*, ``softmax(w)``: the
  "random synthesizer" of Tay et al. (2021). The same weights for every input.
* :class:`ContentMixer` - weights computed from the inputs,
  ``a_j = softmax_j(W_Q x_q . W_K x_j / sqrt(d))``; learned positions optional.
* :class:`TriadModel` - one attention layer with a pluggable score
  (:mod:`beforeqkv.models.scores`) for the rock-paper-scissors task of chapter 5.

Every model passes its attention weights through ``self.tap``: read them with
:func:`beforeqkv.attention.with_weights`.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn

from . import scores as _scores
from .embeddings import Embedding, ItemPayloadEmbedding
from .._validate import check_ids, check_positive
from ..recorder import WeightsTap

__all__ = ["StaticMixer", "ContentMixer", "TriadModel"]


class _QueryMixer(nn.Module):
    """Shared parts: token/query/position embeddings, W_V, and the readout MLP.

    ``forward(tokens (B, T), query (B,)) -> logits (B, d_vocab)`` with
    ``out = MLP(x_q + sum_j a_j W_V x_j)``, ``x_j = W_E[tokens_j] (+ W_pos[j])``, ``x_q = E_q[query]``.
    """

    def __init__(self, n_ctx: int = 16, d_vocab: int = 16, n_queries: int = 16, d_model: int = 32,
                 d_mlp: int = 64, positions: bool = True):
        super().__init__()
        check_positive(n_ctx=n_ctx, d_vocab=d_vocab, n_queries=n_queries, d_model=d_model, d_mlp=d_mlp)
        self.n_ctx, self.d_vocab, self.n_queries, self.d_model = n_ctx, d_vocab, n_queries, d_model
        self.positions = positions
        self.W_E = Embedding(d_vocab, d_model)
        self.E_q = Embedding(n_queries, d_model)
        self.W_pos = Embedding(n_ctx, d_model) if positions else None
        self.W_V = nn.Linear(d_model, d_model, bias=False)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_mlp), nn.ReLU(), nn.Linear(d_mlp, d_vocab))
        self.tap = WeightsTap()

    def embed(self, tokens: torch.Tensor, query: torch.Tensor):
        """tokens (B, T), query (B,) -> x (B, T, d), x_q (B, d)."""
        check_ids("tokens", tokens, self.d_vocab, 2)
        check_ids("query", query, self.n_queries, 1)
        if query.shape[0] != tokens.shape[0]:
            raise ValueError(f"tokens {tuple(tokens.shape)} and query {tuple(query.shape)} disagree on B")
        self._check_length(tokens.shape[1])
        x = self.W_E(tokens)  # (B, T, d)
        if self.W_pos is not None:
            x = x + self.W_pos.weight[: tokens.shape[1]]  # (B, T, d) + (T, d)
        return x, self.E_q(query)  # (B, T, d), (B, d)

    def _check_length(self, t: int) -> None:
        if self.W_pos is not None and t > self.n_ctx:
            raise ValueError(f"sequence of length {t} is longer than the {self.n_ctx} learned positions")

    def _mix_weights(self, x: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, tokens: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        """-> logits (B, d_vocab); the weights a (B, T) pass through ``self.tap``."""
        x, x_q = self.embed(tokens, query)  # (B, T, d), (B, d)
        a = self.tap(self._mix_weights(x, x_q))  # (B, T)
        read = torch.einsum("bj,bjd->bd", a, self.W_V(x))  # (B, d)
        return self.mlp(x_q + read)  # (B, d_vocab)


class StaticMixer(_QueryMixer):
    """Static, position-indexed weights ``a = softmax(w)``, w in R^T, the same for every input.

    The "random synthesizer" of Tay et al. (2021) for a single query. It has one weight
    per position, so it only runs on sequences of exactly ``n_ctx`` tokens.
    forward(tokens (B, T), query (B,)) -> logits (B, d_vocab). Derived in chapter 4
    (book/04_dynamic_weights.ipynb).
    """

    def __init__(self, n_ctx: int = 16, d_vocab: int = 16, n_queries: int = 16, d_model: int = 32,
                 d_mlp: int = 64, positions: bool = True):
        super().__init__(n_ctx, d_vocab, n_queries, d_model, d_mlp, positions)
        self.w = nn.Parameter(torch.zeros(n_ctx))

    def _check_length(self, t: int) -> None:
        if t != self.n_ctx:
            raise ValueError(f"a static mixer has one weight per position, learned for T={self.n_ctx}; "
                             f"it cannot mix a sequence of length {t}")

    def _mix_weights(self, x, x_q):
        return torch.softmax(self.w, dim=0).expand(x.shape[0], -1)  # (B, T)


class ContentMixer(_QueryMixer):
    """Content attention ``a_j = softmax_j(W_Q x_q . W_K x_j / sqrt(d))``. Derived in chapter 4.

    forward(tokens (B, T), query (B,)) -> logits (B, d_vocab); the weights (B, T) pass ``self.tap``.

    With ``positions=False`` the tokens carry no position: permuting them permutes
    the weights and leaves the output unchanged (it reads a set, not a sequence).
    """

    def __init__(self, n_ctx: int = 16, d_vocab: int = 16, n_queries: int = 16, d_model: int = 32,
                 d_mlp: int = 64, positions: bool = True):
        super().__init__(n_ctx, d_vocab, n_queries, d_model, d_mlp, positions)
        self.W_Q = nn.Linear(d_model, d_model, bias=False)
        self.W_K = nn.Linear(d_model, d_model, bias=False)

    def _mix_weights(self, x, x_q):
        q = self.W_Q(x_q)  # (B, d)
        k = self.W_K(x)  # (B, T, d)
        s = torch.einsum("bd,btd->bt", q, k) / math.sqrt(self.d_model)  # (B, T)
        return torch.softmax(s, dim=-1)  # (B, T)


class TriadModel(nn.Module):
    """One attention layer with a pluggable score, for the triads task. Derived in chapter 5.

    ``x_i = E_item[item_i] + E_pay[payload_i]``; ``y_i = readout(sum_j a_ij W_V x_j)`` with
    ``a_ij = softmax_j score(x_i, x_j)``. No residual: token i must *read* its answer.

    score: a module from :mod:`beforeqkv.models.scores` or a name in ``scores.SCORES``.
    forward(items (B, T), payloads (B, T)) -> logits (B, T, n_payloads); the weights (B, T, T)
    pass through ``self.tap``.
    """

    def __init__(self, score="full bilinear", n_items: int = 24, n_payloads: int = 8, d_model: int = 32):
        super().__init__()
        check_positive(n_items=n_items, n_payloads=n_payloads, d_model=d_model)
        if isinstance(score, str):
            score = _scores.make_score(score, d_model)
        if not isinstance(score, nn.Module) or getattr(score, "d_model", d_model) != d_model:
            raise ValueError("score must be a score module for this d_model, or a name in scores.SCORES")
        self.n_items, self.n_payloads, self.d_model = n_items, n_payloads, d_model
        self.embed = ItemPayloadEmbedding(n_items, n_payloads, d_model)
        self.score = score
        self.W_V = nn.Linear(d_model, d_model, bias=False)
        self.readout = nn.Linear(d_model, n_payloads)
        self.tap = WeightsTap()

    def forward(self, items: torch.Tensor, payloads: torch.Tensor) -> torch.Tensor:
        x = self.embed(items, payloads)  # (B, T, d)
        a = self.tap(torch.softmax(self.score(x), dim=-1))  # (B, T, T)
        read = torch.einsum("bij,bjd->bid", a, self.W_V(x))  # (B, T, d)
        return self.readout(read)  # (B, T, n_payloads)
