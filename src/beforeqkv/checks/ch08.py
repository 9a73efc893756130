"""Checkers for chapter 8: the causal mask, causal attention and two predictions."""
from __future__ import annotations

import math

import torch

from ..attention import attend, causal_mask
from ._core import CheckFailure, checker, compare, register_question

__all__ = ["check_causal_mask", "check_causal_attention"]


@checker
def check_causal_mask(fn):
    """Check ``fn(T) -> (T, T)`` boolean mask with ``mask[i, j] = (j <= i)`` (True = may attend)."""
    for t in (1, 2, 5):  # a float 0/1 mask would pass the value comparison: catch it first
        try:
            got = fn(t)
        except Exception:  # compare() below reports it, with the reader's line
            break
        if isinstance(got, torch.Tensor) and got.dtype != torch.bool:
            raise CheckFailure(f"causal mask: return a boolean tensor (True = may attend), got dtype {got.dtype}. "
                               "Hint: `.bool()` or a comparison such as `j <= i` gives one.")
    return compare(fn, lambda t: causal_mask(t), [(t,) for t in (1, 2, 3, 5, 16)], "causal mask",
            mistakes={
                "your mask marks the BLOCKED positions (True = j > i). In this book True means "
                "'may attend': keep j <= i, the lower triangle with its diagonal.":
                    lambda t: torch.ones(t, t).triu(1).bool(),
                "that mask lets each token see the FUTURE (j >= i): keep the lower triangle, tril, not triu.":
                    lambda t: torch.ones(t, t).triu().bool(),
                "a token may attend to itself: the diagonal (j = i) must be True; use tril() with diagonal=0.":
                    lambda t: torch.ones(t, t).tril(-1).bool(),
                "every token may see every other: nothing is masked yet.":
                    lambda t: torch.ones(t, t, dtype=torch.bool),
            },
            describe=lambda args: f"T={args[0]}")


def _canonical(q, k, v):
    return attend(q, k, v, mask=causal_mask(q.shape[-2], k.shape[-2]))[0]


def _mask_after_softmax(q, k, v):
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)  # (..., T, T)
    return (w * causal_mask(q.shape[-2])) @ v  # rows no longer sum to 1


def _cases():
    g = torch.Generator().manual_seed(8)
    shapes = [(1, 4, 8), (5, 3, 4), (2, 6, 1), (2, 3, 7, 5)]  # (..., T, d); T = 1 and d = 1 included
    for shape in shapes:
        q, k, v = (torch.randn(*shape, generator=g) for _ in range(3))
        yield q, k, v


def _filled(q, k, v, where_allowed=False, value=float("-inf"), scale=None):
    t = q.shape[-2]
    allowed = torch.ones(t, t, dtype=torch.bool).tril()  # (T, T), True = may attend
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ k.transpose(-2, -1) * scale  # (..., T, T)
    s = s.masked_fill(allowed if where_allowed else ~allowed, value)
    return torch.softmax(s, dim=-1) @ v  # (..., T, d_v)


def check_causal_attention(fn):
    """Check ``fn(q, k, v) -> (..., T, d_v)``: softmax(q k^T / sqrt(d)) v with the future masked out."""
    return compare(fn, _canonical, list(_cases()), "causal attention",
            mistakes={
                "the future is not masked: set s_ij = -inf for j > i BEFORE the softmax.":
                    lambda q, k, v: attend(q, k, v)[0],
                "masking after the softmax leaves rows that no longer sum to 1: mask the scores with -inf instead.":
                    _mask_after_softmax,
                "did you scale the scores by 1/sqrt(d)?":
                    lambda q, k, v: attend(q, k, v, mask=causal_mask(q.shape[-2]), scale=1.0)[0],
                "you filled the positions that MAY be attended with -inf (so the last row is all "
                "-inf and gives NaN): fill where the mask is False, `masked_fill(~mask, -inf)`.":
                    lambda q, k, v: _filled(q, k, v, where_allowed=True),
                "you filled the future with 0, but a score of 0 still gets weight exp(0) = 1 in "
                "the softmax: fill with float('-inf') so the weight is exactly 0.":
                    lambda q, k, v: _filled(q, k, v, value=0.0),
                "you divided the scores by d; the scale is 1/sqrt(d), which keeps their variance "
                "near 1.":
                    lambda q, k, v: _filled(q, k, v, scale=1 / q.shape[-1]),
                "the mask is flipped: token i must see j <= i (the past), not j >= i.":
                    lambda q, k, v: attend(q, k, v, mask=causal_mask(q.shape[-2]).T.contiguous())[0],
            },
            describe=lambda args: f"q, k, v of shape {tuple(args[0].shape)}")


register_question(
    "ch8_iid_floor", math.log(16),
    "Every token is drawn uniformly from 16 symbols, independently of the past, so the best "
    "prediction is uniform: loss ln 16 = 2.773 nats. Anything lower must be peeking at the future.",
    tolerance=0.05,
    hint='what is the best guess when the next token does not depend on the past, and what loss does it get?')

register_question(
    "ch8_residual_no_norm", "above",
    "The residual connections do the heavy lifting: the 8-block stack without LayerNorm still "
    "learns recall (well above 0.5), only a little worse than with it. LayerNorm's benefit, stable "
    "training of deep, wide models at high learning rates, hardly shows at this size.",
    choices=["above", "below"])
