"""The typical mistakes of causal attention and of a block's heads, defined once for chapter 8's checkers.

``ATTENTION_MISTAKES``: name -> (hint, wrong attention). A wrong attention maps q, k, v
(..., T, d) to (..., T, d_v); the hint says ``{d}`` for the width the scale uses (d for
one attention, d_head inside a block). ``check_causal_attention`` applies each one to
q, k, v and ``check_transformer_block`` to every head of a block, so both checkers name
every mistake, and a new one is added here, in one place.

``HEAD_MISTAKES``: name -> (hint, split, merge), the heads of a block split or merged wrongly.
"""
from __future__ import annotations

import math

import torch

from ..attention import attend, causal_mask
from ..i18n import N_


def _filled(q, k, v, allowed=None, where_allowed=False, value=float("-inf"), scale=None, dim=-1):
    """softmax(masked scores) v, masking, scaling or normalising the wrong way as asked."""
    t = q.shape[-2]
    allowed = torch.ones(t, t, dtype=torch.bool).tril() if allowed is None else allowed  # (T, T)
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ k.transpose(-2, -1) * scale  # (..., T, T)
    s = s.masked_fill(allowed if where_allowed else ~allowed, value)
    return torch.softmax(s, dim=dim) @ v  # (..., T, d_v)


def _mask_after_softmax(q, k, v):
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)  # (..., T, T)
    return (w * causal_mask(q.shape[-2])) @ v  # rows no longer sum to 1


def _ones(q):
    return torch.ones(q.shape[-2], q.shape[-2], dtype=torch.bool)  # (T, T)


ATTENTION_MISTAKES = {
    "no_mask": (
        N_("the future is not masked: position i reads the keys j > i. Set s_ij = -inf for j > i "
           "BEFORE the softmax."),
        lambda q, k, v: attend(q, k, v)[0]),
    "mask_after_softmax": (
        N_("masking after the softmax leaves rows that no longer sum to 1: mask the scores with -inf "
           "instead."),
        _mask_after_softmax),
    "no_scale": (
        N_("did you scale the scores by 1/sqrt({d})?"),
        lambda q, k, v: _filled(q, k, v, scale=1.0)),
    "fill_allowed": (
        N_("you filled the positions that MAY be attended with -inf (so the last row is all -inf and "
           "gives NaN): fill where the mask is False, `masked_fill(~mask, -inf)`."),
        lambda q, k, v: _filled(q, k, v, where_allowed=True)),
    "fill_zero": (
        N_("you filled the future with 0, but a score of 0 still gets weight exp(0) = 1 in the "
           "softmax: fill with float('-inf') so the weight is exactly 0."),
        lambda q, k, v: _filled(q, k, v, value=0.0)),
    "scale_by_d": (
        N_("you divided the scores by {d}; the scale is 1/sqrt({d}), which keeps their variance "
           "near 1."),
        lambda q, k, v: _filled(q, k, v, scale=1 / q.shape[-1])),
    "flipped_mask": (
        N_("the mask is flipped: token i must see j <= i (the past), not j >= i."),
        lambda q, k, v: _filled(q, k, v, allowed=_ones(q).triu())),
    "no_diagonal": (
        N_("a token may attend to itself: keep the diagonal j = i (tril(), not tril(-1)); without "
           "it the first position has nothing to read and gives NaN."),
        lambda q, k, v: _filled(q, k, v, allowed=_ones(q).tril(-1))),
    "softmax_over_queries": (
        N_("the softmax runs over the keys j, the last axis of the scores (dim=-1), so that each query's "
           "weights sum to 1; yours normalises over the queries (dim=-2)."),
        lambda q, k, v: _filled(q, k, v, dim=-2)),
    "scale_multiplied": (
        N_("you multiplied the scores by sqrt({d}); divide them by it: q . k / sqrt({d})."),
        lambda q, k, v: _filled(q, k, v, scale=math.sqrt(q.shape[-1]))),
}


def _split(y, n_heads):  # (B, T, d_model) -> (B, n_heads, T, d_head)
    b, t, d_model = y.shape
    return y.view(b, t, n_heads, d_model // n_heads).transpose(1, 2)


def _split_no_transpose(y, n_heads):  # viewed straight as (B, n_heads, T, d_head)
    b, t, d_model = y.shape
    return y.reshape(b, n_heads, t, d_model // n_heads)


def _merge(z):  # (B, n_heads, T, d_head) -> (B, T, d_model), head h in columns h*d_head...
    b, h, t, d_head = z.shape
    return z.transpose(1, 2).reshape(b, t, h * d_head)


def _merge_no_transpose(z):  # (B, n_heads, T, d_head) reshaped straight to (B, T, d_model)
    b, h, t, d_head = z.shape
    return z.reshape(b, t, h * d_head)


def _merge_interleaved(z):  # (B, T, d_head, n_heads): the heads interleaved coordinate by coordinate
    b, h, t, d_head = z.shape
    return z.permute(0, 2, 3, 1).reshape(b, t, h * d_head)


# How the heads of a block are typically split or merged wrongly: name -> (hint, split, merge).
HEAD_MISTAKES = {
    "split_no_transpose": (
        N_("your heads mix positions: (B, T, d_model) reshaped straight to (B, n_heads, T, d_head) "
           "puts pieces of different tokens in one row. View it as (B, T, n_heads, d_head), then "
           ".transpose(1, 2)."),
        _split_no_transpose, _merge),
    "merge_no_transpose": (
        N_("merging the heads: (B, n_heads, T, d_head) reshaped straight to (B, T, d_model) mixes "
           "positions. First .transpose(1, 2) to (B, T, n_heads, d_head), then reshape."),
        _split, _merge_no_transpose),
    "split_and_merge_no_transpose": (
        N_("your heads mix positions: both reshapes skip the transpose. Split with "
           ".view(B, T, n_heads, d_head).transpose(1, 2) and merge with .transpose(1, 2).reshape("
           "B, T, d_model)."),
        _split_no_transpose, _merge_no_transpose),
    "merge_interleaved": (
        N_("the heads are concatenated in the wrong order (interleaved coordinate by coordinate): "
           "head h must fill columns h*d_head to (h+1)*d_head - 1 of what W_O reads, which "
           ".transpose(1, 2).reshape(B, T, d_model) gives."),
        _split, _merge_interleaved),
}
