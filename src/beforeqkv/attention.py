"""Attention, from the single read of chapter 2 to multi-head attention of chapter 6.

Each function has a *teaching path* (explicit ``einsum`` and ``softmax``, the maths
written out) and, where torch has one, a *fast path*; the tests check they agree.

Shapes: ``q`` is ``(..., T_q, d)``, ``k`` is ``(..., T_k, d)``, ``v`` is ``(..., T_k, d_v)``;
``...`` is any batch/head prefix. Masks are boolean, ``True`` = "may attend".
"""
from __future__ import annotations

import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ._validate import check_positive
from .recorder import WeightsTap, record_weights, with_weights

__all__ = [
    "attention_scores",
    "causal_mask",
    "attention_weights",
    "attend",
    "scaled_dot_product_attention",
    "fast_weight_memory",
    "linear_attention",
    "rotary_tables",
    "apply_rotary",
    "KVCache",
    "MultiHeadAttention",
    "WeightsTap",
    "record_weights",
    "with_weights",
]


# --------------------------------------------------------------------------- checks
def _need_tensor(name: str, x, min_dim: int = 2) -> None:
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dims (..., T, d), got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")


def _check_qkv(q, k, v=None) -> None:
    _need_tensor("q", q)
    _need_tensor("k", k)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"queries and keys need the same width d: q has d={q.shape[-1]}, k has d={k.shape[-1]} "
            f"(q {tuple(q.shape)}, k {tuple(k.shape)})"
        )
    if v is not None:
        _need_tensor("v", v)
        if v.shape[-2] != k.shape[-2]:
            raise ValueError(
                f"keys and values must have the same length T_k: k {tuple(k.shape)}, v {tuple(v.shape)}"
            )


def _check_mask(mask, t_q: int, t_k: int):
    if mask is None:
        return None
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise ValueError("mask must be a boolean tensor (True = may attend)")
    if mask.dim() < 2 or mask.shape[-2] not in (1, t_q) or mask.shape[-1] != t_k:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not fit scores of shape (..., {t_q}, {t_k}); "
            f"it must end in ({t_q}, {t_k}) or (1, {t_k})"
        )
    return mask


# --------------------------------------------------------------------------- pieces
def attention_scores(q: torch.Tensor, k: torch.Tensor, scale: float | None = None) -> torch.Tensor:
    """Scores ``s_ij = scale * q_i . k_j``; default scale ``1/sqrt(d)``.

    q: (..., T_q, d), k: (..., T_k, d) -> (..., T_q, T_k). Derived in chapters 2 and 7.
    """
    _check_qkv(q, k)
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    return torch.einsum("...id,...jd->...ij", q, k) * scale  # (..., T_q, T_k)


def causal_mask(t_q: int, t_k: int | None = None, device=None) -> torch.Tensor:
    """Boolean (T_q, T_k) mask: query i may attend to key j iff j <= i (+ offset).

    With ``t_k > t_q`` (a KV cache holding earlier tokens) the queries are the *last*
    ``t_q`` positions. Derived in chapter 8.
    """
    t_k = t_q if t_k is None else t_k
    check_positive(t_q=t_q, t_k=t_k)
    if t_k < t_q:
        raise ValueError(f"causal mask needs t_k >= t_q, got t_q={t_q}, t_k={t_k}")
    i = torch.arange(t_q, device=device).unsqueeze(1) + (t_k - t_q)  # (T_q, 1)
    j = torch.arange(t_k, device=device).unsqueeze(0)  # (1, T_k)
    return j <= i  # (T_q, T_k)


def attention_weights(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over keys, ``a_ij = exp(s_ij) / sum_j' exp(s_ij')``, skipping masked keys.

    A row whose keys are all masked gets all-zero weights (it reads nothing)
    instead of NaN. scores: (..., T_q, T_k) -> same shape; rows sum to 1.
    """
    _need_tensor("scores", scores)
    mask = _check_mask(mask, scores.shape[-2], scores.shape[-1])
    if mask is None:
        return torch.softmax(scores, dim=-1)
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)


def attend(q, k, v, mask=None, scale: float | None = None):
    """Teaching path: ``out_i = sum_j softmax_j(q_i . k_j * scale) v_j``; returns (out, weights).

    q: (..., T_q, d), k: (..., T_k, d), v: (..., T_k, d_v), mask broadcastable to
    (..., T_q, T_k) -> out (..., T_q, d_v), weights (..., T_q, T_k).
    """
    _check_qkv(q, k, v)
    weights = attention_weights(attention_scores(q, k, scale), mask)  # (..., T_q, T_k)
    out = torch.einsum("...ij,...jd->...id", weights, v)  # (..., T_q, d_v)
    return out, weights


# torch >= 2.5 lets the fused kernel read grouped key/value heads without copying them
_SDPA_GQA = tuple(int(p) for p in torch.__version__.split(".")[:2] if p.isdigit()) >= (2, 5)


def _fused(q, k, v, mask, causal: bool, scale: float | None, grouped: bool = False) -> torch.Tensor:
    """torch's fused kernel with the least masking the case needs; ``mask`` already checked.

    Plain causal attention with ``t_q == t_k`` uses ``is_causal=True`` (no mask tensor);
    one query at the end of a cache sees every key (no mask); the zero-row fix for
    fully masked rows runs only when a user mask could create one. ``grouped=True``: ``k``
    and ``v`` (B, H_kv, T_k, d) have fewer heads than ``q`` (B, H, T_q, d), H a multiple of H_kv.
    """
    t_q, t_k = q.shape[-2], k.shape[-2]
    sdpa = F.scaled_dot_product_attention
    if grouped:
        if _SDPA_GQA:
            sdpa = functools.partial(F.scaled_dot_product_attention, enable_gqa=True)
        else:  # pragma: no cover - older torch: copy each key/value head for its group of queries
            rep = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)  # (B, H, T_k, d)
    if mask is None:
        if not causal or t_q == 1:
            return sdpa(q, k, v, scale=scale)  # (..., T_q, d_v)
        if t_q == t_k:
            return sdpa(q, k, v, is_causal=True, scale=scale)
        # queries are the last t_q of t_k positions: every row keeps >= 1 key
        cm = causal_mask(t_q, t_k, device=q.device)  # (T_q, T_k)
        return sdpa(q, k, v, attn_mask=cm, scale=scale)
    if causal:
        mask = mask & causal_mask(t_q, t_k, device=q.device)
    out = sdpa(q, k, v, attn_mask=mask, scale=scale)  # (..., T_q, d_v)
    return out.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)


def scaled_dot_product_attention(q, k, v, mask=None, causal: bool = False, scale: float | None = None,
                                 fast: bool = True) -> torch.Tensor:
    """``softmax(q k^T * scale + mask) v``: the fast path (torch's fused kernel) or the teaching path.

    Same contract as :func:`attend` (fully masked rows read zeros), without the weights.
    """
    _check_qkv(q, k, v)
    t_q, t_k = q.shape[-2], k.shape[-2]
    mask = _check_mask(mask, t_q, t_k)
    if fast:
        return _fused(q, k, v, mask, causal, scale)
    if causal:
        cm = causal_mask(t_q, t_k, device=q.device)
        mask = cm if mask is None else (mask & cm)
    return attend(q, k, v, mask, scale)[0]


def fast_weight_memory(k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The fixed-size memory of linear attention: ``M = sum_j v_j k_j^T``.

    k: (..., T, d_k), v: (..., T, d_v) -> M: (..., d_v, d_k), whatever T is. Chapter 2.
    """
    _check_qkv(k, k, v)
    return torch.einsum("...jv,...jk->...vk", v, k)  # (..., d_v, d_k)


def linear_attention(q, k, v, via_memory: bool = False) -> torch.Tensor:
    """Linear attention / fast-weight read, ``out_i = sum_j (k_j . q_i) v_j = M q_i``.

    ``via_memory=False`` (teaching order): unnormalised scores then a weighted sum (grows
    with T). ``via_memory=True``: fold the keys and values into ``M`` (fixed d_v x d_k)
    first, then read ``M q``. Same result, different cost.
    q: (..., T_q, d_k), k: (..., T_k, d_k), v: (..., T_k, d_v) -> (..., T_q, d_v).
    """
    _check_qkv(q, k, v)
    if via_memory:
        memory = fast_weight_memory(k, v)  # (..., d_v, d_k)
        return torch.einsum("...vk,...ik->...iv", memory, q)  # (..., T_q, d_v)
    scores = torch.einsum("...id,...jd->...ij", q, k)  # (..., T_q, T_k)
    return torch.einsum("...ij,...jd->...id", scores, v)  # (..., T_q, d_v)


# --------------------------------------------------------------------------- positions
def rotary_tables(n_positions: int, d_head: int, base: float = 10000.0, device=None,
                  dtype=torch.float32):
    """cos and sin tables (n_positions, d_head) for rotary positions, rotate-half layout."""
    if d_head % 2:
        raise ValueError(f"rotary positions need an even d_head, got {d_head}")
    inv_freq = 1.0 / (base ** (torch.arange(0, d_head, 2, device=device, dtype=torch.float32) / d_head))
    t = torch.arange(n_positions, device=device, dtype=torch.float32)
    angles = torch.outer(t, inv_freq)  # (T, d_head/2)
    angles = torch.cat([angles, angles], dim=-1)  # (T, d_head)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (x_a, x_{a+d/2}) by position-dependent angles. x: (..., T, d_head)."""
    if cos.shape[-2:] != x.shape[-2:]:
        raise ValueError(f"rotary tables {tuple(cos.shape)} do not fit x {tuple(x.shape)} (need (T, d_head))")
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)  # (..., T, d_head)
    return x * cos + rotated * sin


# --------------------------------------------------------------------------- modules
class KVCache:
    """Keys and values of the tokens seen so far, one entry per attention layer.

    ``generate`` feeds one token at a time; each layer appends its new k, v and
    attends over everything cached. Parallel and incremental decoding agree (chapter 8).
    ``keys[layer]`` and ``values[layer]`` are (B, H_kv, T, d_head): the tokens so far.

    The numbers live in a buffer with room for ``capacity`` tokens (or twice what it
    held, when it fills up), so a new token is written in place instead of copying the
    whole cache each step. While autograd records, appending stays out of place.
    """

    def __init__(self, capacity: int | None = None):
        if capacity is not None:
            check_positive(capacity=capacity)
        self.capacity = capacity
        self.keys: dict[int, torch.Tensor] = {}
        self.values: dict[int, torch.Tensor] = {}
        self._room: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # layer -> (k, v) buffers

    def length(self, layer: int = 0) -> int:
        k = self.keys.get(layer)
        return 0 if k is None else k.shape[-2]

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        """Append k, v (B, H, T_new, d_head) for ``layer``; return all cached (k, v)."""
        old, n = self.length(layer), self.length(layer) + k.shape[-2]
        if old and (self.keys[layer].shape[:-2] != k.shape[:-2] or self.keys[layer].shape[-1] != k.shape[-1]):
            raise ValueError(f"the cache of layer {layer} holds keys of shape {tuple(self.keys[layer].shape)}; "
                             f"new keys of shape {tuple(k.shape)} do not continue them")
        if k.requires_grad or v.requires_grad:  # autograd needs an out-of-place append
            self._room.pop(layer, None)
            if old:
                k = torch.cat([self.keys[layer], k], dim=-2)  # (B, H, T_old + T_new, d_head)
                v = torch.cat([self.values[layer], v], dim=-2)
        else:
            room = self._room.get(layer)
            if room is None or room[0].shape[-2] < n:
                size = max(n, 2 * old, self.capacity or 0)
                room = (k.new_empty(*k.shape[:-2], size, k.shape[-1]),  # (B, H, size, d_head)
                        v.new_empty(*v.shape[:-2], size, v.shape[-1]))
                if old:
                    room[0][..., :old, :] = self.keys[layer]
                    room[1][..., :old, :] = self.values[layer]
                self._room[layer] = room
            room[0][..., old:n, :] = k
            room[1][..., old:n, :] = v
            k, v = room[0][..., :n, :], room[1][..., :n, :]  # (B, H, T_old + T_new, d_head) views
        self.keys[layer], self.values[layer] = k, v
        return k, v


class MultiHeadAttention(nn.Module):
    """Multi-head attention with weights ``W_Q, W_K, W_V, W_O`` (derived in chapters 5-6).

    ``y_i = W_O concat_h( sum_j a^h_ij W_V^h x_j )``, ``a^h_ij = softmax_j(q^h_i . k^h_j * scale)``.

    Options the real models of Part IV need: ``bias``, grouped key/value heads
    (``n_kv_heads`` < ``n_heads``), a custom ``scale`` (``None`` = 1/sqrt(d_head)),
    cross-attention (``context=``), rotary positions (``rope=(cos, sin)``) and a KV cache.
    ``fast=True`` uses torch's fused kernel; ``fast=False`` the explicit teaching path, whose
    weights pass through ``self.tap``: read them with :func:`with_weights` or
    :func:`record_weights`, which run this path while they record.
    """

    def __init__(self, d_model: int, n_heads: int, *, d_head: int | None = None, n_kv_heads: int | None = None,
                 bias: bool = False, scale: float | None = None, fast: bool = True):
        super().__init__()
        check_positive(d_model=d_model, n_heads=n_heads)
        if d_head is None:
            if d_model % n_heads:
                raise ValueError(
                    f"d_model={d_model} is not divisible by n_heads={n_heads}: "
                    f"choose n_heads dividing d_model, or pass d_head explicitly"
                )
            d_head = d_model // n_heads
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        if not isinstance(n_kv_heads, int) or n_kv_heads < 1 or n_heads % n_kv_heads:
            raise ValueError(f"n_heads={n_heads} must be a multiple of n_kv_heads={n_kv_heads}")
        self.d_model, self.n_heads, self.d_head, self.n_kv_heads = d_model, n_heads, d_head, n_kv_heads
        self.scale = scale
        self.fast = fast
        self.W_Q = nn.Linear(d_model, n_heads * d_head, bias=bias)
        self.W_K = nn.Linear(d_model, n_kv_heads * d_head, bias=bias)
        self.W_V = nn.Linear(d_model, n_kv_heads * d_head, bias=bias)
        self.W_O = nn.Linear(n_heads * d_head, d_model, bias=bias)
        self.tap = WeightsTap()

    def project(self, x: torch.Tensor, src: torch.Tensor):
        """Queries from x, keys and values from src (x itself, or the context of cross-attention)."""
        return self.W_Q(x), self.W_K(src), self.W_V(src)  # (B, T, H d_head), (B, S, H_kv d_head) twice

    def _split(self, x: torch.Tensor, n: int) -> torch.Tensor:
        b, t, _ = x.shape
        return x.view(b, t, n, self.d_head).transpose(1, 2)  # (B, n, T, d_head)

    def forward(self, x: torch.Tensor, context: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                causal: bool = False, rope=None, kv_cache: KVCache | None = None, layer: int = 0):
        """x: (B, T, d_model); context (B, S, d_model) for cross-attention -> (B, T, d_model).

        mask: bool, broadcastable to (B, H, T, T_k), True = may attend.
        """
        if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != self.d_model:
            shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"x must have shape (B, T, d_model={self.d_model}), got {shape}")
        src = x if context is None else context
        if src.dim() != 3 or src.shape[0] != x.shape[0] or src.shape[-1] != self.d_model:
            raise ValueError(f"context must have shape (B={x.shape[0]}, S, {self.d_model}), got {tuple(src.shape)}")
        q, k, v = self.project(x, src)
        q = self._split(q, self.n_heads)  # (B, H, T, d_head)
        k = self._split(k, self.n_kv_heads)  # (B, H_kv, S, d_head)
        v = self._split(v, self.n_kv_heads)  # (B, H_kv, S, d_head)
        if rope is not None:
            cos, sin = rope
            q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        if kv_cache is not None:
            k, v = kv_cache.update(layer, k, v)  # (B, H_kv, T_cache, d_head)
        t_q, t_k = q.shape[-2], k.shape[-2]
        mask = _check_mask(mask, t_q, t_k)
        if self.fast:
            grouped = self.n_kv_heads != self.n_heads  # the kernel reads shared key/value heads itself
            out = _fused(q, k, v, mask, causal, self.scale, grouped=grouped)  # (B, H, T, d_head)
        else:
            if self.n_kv_heads != self.n_heads:  # each key/value head serves n_heads / n_kv_heads queries
                rep = self.n_heads // self.n_kv_heads
                k = k.repeat_interleave(rep, dim=1)  # (B, H, T_k, d_head)
                v = v.repeat_interleave(rep, dim=1)
            if causal:
                cm = causal_mask(t_q, t_k, device=x.device)  # (T, T_k)
                mask = cm if mask is None else (mask & cm)
            out, weights = attend(q, k, v, mask=mask, scale=self.scale)  # (B, H, T, d_head), (B, H, T, T_k)
            self.tap(weights)  # where record_weights reads them
        b, _, t, _ = out.shape
        out = out.transpose(1, 2).reshape(b, t, self.n_heads * self.d_head)  # (B, T, H*d_head)
        return self.W_O(out)  # (B, T, d_model)
