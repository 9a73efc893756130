"""Values and heads: the ring model, the per-pair generator and the OV identity (chapter 6).

The most general linear mixing is ``y_i = sum_j M_ij x_j`` with a (d, d) matrix per
pair. Multi-head attention is the cheap version ``M_ij = sum_h a^h_ij W_O^h W_V^h``;
:func:`per_pair_matrices` builds exactly these matrices from a
:class:`~beforeqkv.attention.MultiHeadAttention`, so the identity can be checked.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from ..attention import MultiHeadAttention
from .._validate import check_positive
from .embeddings import ItemPayloadEmbedding
from ..recorder import with_weights

__all__ = ["RingHeads", "PerPairGenerator", "ov_matrices", "per_pair_matrices", "mix_per_pair"]


class RingHeads(nn.Module):
    """Embeddings, one multi-head attention layer, two linear readouts (successor, predecessor).

    ``x_j = E_item[item_j] + E_pay[payload_j]`` (d_model), ``y = MultiHeadAttention(x)`` with
    ``n_heads`` heads of width ``d_head = d_attn // n_heads`` (``d_attn = n_heads * d_head``, the
    width of all heads together, is fixed, so the parameter count does not depend on ``n_heads``),
    no residual, no positions. Returns logits (B, T, 2, n_payloads):
    ``[..., 0, :]`` predicts the successor's payload, ``[..., 1, :]`` the predecessor's.
    Chapter 6.
    """

    def __init__(self, n_heads: int = 2, d_model: int = 32, d_attn: int = 16, n_items: int = 32,
                 n_payloads: int = 8, bias: bool = True):
        super().__init__()
        check_positive(n_heads=n_heads, d_attn=d_attn, d_model=d_model)
        if d_attn % n_heads:
            raise ValueError(f"d_attn={d_attn} (n_heads * d_head) is not divisible by n_heads={n_heads}")
        self.n_items, self.n_payloads = n_items, n_payloads
        self.embed = ItemPayloadEmbedding(n_items, n_payloads, d_model)
        self.attn = MultiHeadAttention(d_model, n_heads, d_head=d_attn // n_heads, bias=bias)
        self.readout_succ = nn.Linear(d_model, n_payloads)
        self.readout_pred = nn.Linear(d_model, n_payloads)

    def forward(self, items: torch.Tensor, payloads: torch.Tensor) -> torch.Tensor:
        """items, payloads: (B, T) ints -> logits (B, T, 2, n_payloads)."""
        y = self.attn(self.embed(items, payloads))  # (B, T, d_model)
        return torch.stack([self.readout_succ(y), self.readout_pred(y)], dim=-2)  # (B, T, 2, n_payloads)


class PerPairGenerator(nn.Module):
    """The unwieldy general mixer: an MLP generates a full (d, d) matrix for every pair.

    ``M_ij = MLP([x_i, x_j]).view(d, d)`` and ``y_i = (1/T) sum_j M_ij x_j``, then the same
    two readouts as :class:`RingHeads`. Memory and compute grow as ``T^2 d^2``. Chapter 6.
    """

    def __init__(self, d_model: int = 32, d_mlp: int = 32, n_items: int = 32, n_payloads: int = 8):
        super().__init__()
        self.d_model, self.n_items, self.n_payloads = d_model, n_items, n_payloads
        self.embed = ItemPayloadEmbedding(n_items, n_payloads, d_model)
        self.generator = nn.Sequential(nn.Linear(2 * d_model, d_mlp), nn.ReLU(),
                                       nn.Linear(d_mlp, d_model * d_model))
        self.readout_succ = nn.Linear(d_model, n_payloads)
        self.readout_pred = nn.Linear(d_model, n_payloads)

    def forward(self, items: torch.Tensor, payloads: torch.Tensor) -> torch.Tensor:
        """items, payloads: (B, T) ints -> logits (B, T, 2, n_payloads)."""
        x = self.embed(items, payloads)  # (B, T, d)
        b, t, d = x.shape
        pairs = torch.cat([x.unsqueeze(2).expand(b, t, t, d), x.unsqueeze(1).expand(b, t, t, d)],
                          dim=-1)  # (B, T, T, 2d)
        M = self.generator(pairs).view(b, t, t, d, d)  # (B, T, T, d, d): one matrix per pair
        y = mix_per_pair(M, x) / t  # (B, T, d)
        return torch.stack([self.readout_succ(y), self.readout_pred(y)], dim=-2)  # (B, T, 2, n_payloads)


def mix_per_pair(M: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The most general linear mixing ``y_i = sum_j M_ij x_j``.

    M: (B, T, T, d_out, d), x: (B, T, d) -> y (B, T, d_out). Chapter 6.
    """
    if not isinstance(M, torch.Tensor) or not isinstance(x, torch.Tensor) or M.dim() != 5 or x.dim() != 3:
        raise ValueError("need M of shape (B, T, T, d_out, d) and x of shape (B, T, d)")
    b, t, d = x.shape
    if M.shape[:3] != (b, t, t) or M.shape[-1] != d:
        raise ValueError(f"M {tuple(M.shape)} does not fit x {tuple(x.shape)}: need (B, T, T, d_out, {d})")
    return torch.einsum("bijod,bjd->bio", M, x)  # (B, T, d_out)


def ov_matrices(mha: MultiHeadAttention) -> torch.Tensor:
    """The per-head OV pieces ``U_h = W_O^h W_V^h``, each (d_model, d_model) of rank <= d_head.

    W_O^h is the (d_model, d_head) column block h of ``W_O.weight``; W_V^h the (d_head,
    d_model) row block of ``W_V.weight`` that head h reads (grouped KV heads share one).
    Returns (n_heads, d_model, d_model). Chapter 6 (cf. Elhage et al. 2021, "OV circuit").
    """
    if not isinstance(mha, MultiHeadAttention):
        raise ValueError(f"ov_matrices needs a beforeqkv MultiHeadAttention, got {type(mha).__name__}")
    h, h_kv, dh, d = mha.n_heads, mha.n_kv_heads, mha.d_head, mha.d_model
    W_O = mha.W_O.weight.view(d, h, dh).permute(1, 0, 2)  # (H, d_model, d_head)
    W_V = mha.W_V.weight.view(h_kv, dh, d).repeat_interleave(h // h_kv, dim=0)  # (H, d_head, d_model)
    return W_O @ W_V  # (H, d_model, d_model)


@torch.no_grad()
def per_pair_matrices(mha: MultiHeadAttention, x: torch.Tensor, **kwargs):
    """The per-pair matrices multi-head attention implicitly uses: ``M_ij = sum_h a^h_ij U_h``.

    x: (B, T, d_model) -> (M (B, T, T, d_model, d_model), offset (d_model,)). Then
    ``mha(x) == mix_per_pair(M, x) + offset`` where ``offset = b_O + sum_h W_O^h b_V^h``
    (zero without biases: every row of a^h sums to 1). kwargs go to ``mha`` (mask, causal).
    """
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != getattr(mha, "d_model", -1):
        raise ValueError(f"x must have shape (B, T, d_model), got {tuple(getattr(x, 'shape', ()))}")
    _, (a,) = with_weights(mha, x, **kwargs)  # (B, H, T, T)
    U = ov_matrices(mha)  # (H, d, d)
    M = torch.einsum("bhij,hod->bijod", a, U)  # (B, T, T, d, d)
    offset = torch.zeros(mha.d_model, dtype=x.dtype, device=x.device)
    if mha.W_O.bias is not None:
        offset = offset + mha.W_O.bias
    if mha.W_V.bias is not None:
        b_v = mha.W_V.bias.view(mha.n_kv_heads, mha.d_head).repeat_interleave(mha.n_heads // mha.n_kv_heads, 0)
        W_O = mha.W_O.weight.view(mha.d_model, mha.n_heads, mha.d_head)  # (d, H, d_head)
        offset = offset + torch.einsum("ohk,hk->o", W_O, b_v)  # (d,)
    return M, offset
