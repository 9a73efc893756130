"""Checkers for chapter 6: multi-head attention from per-head pieces, and predictions."""
from __future__ import annotations

import math

import torch

from ..attention import MultiHeadAttention
from ..i18n import N_
from ._core import compare, register_question

__all__ = ["check_multihead_attention", "reference_multihead_attention"]


def reference_multihead_attention(x, W_Q, W_K, W_V, W_O, n_heads):
    """Canonical answer: the package's MultiHeadAttention with these weights (no biases).

    x: (B, T, d_model); W_Q, W_K, W_V: (n_heads*d_head, d_model); W_O: (d_model, n_heads*d_head)
    (``nn.Linear`` layout: ``q = x @ W_Q.T``) -> (B, T, d_model).
    """
    d_model, width = W_O.shape
    mha = MultiHeadAttention(d_model, n_heads, d_head=width // n_heads, bias=False, fast=False)
    mha.load_state_dict({"W_Q.weight": W_Q, "W_K.weight": W_K, "W_V.weight": W_V, "W_O.weight": W_O})
    mha.to(dtype=x.dtype, device=x.device)
    with torch.no_grad():
        return mha(x)


def _heads(t, n_heads):
    b, n, w = t.shape
    return t.view(b, n, n_heads, w // n_heads).transpose(1, 2)  # (B, H, T, d_head)


def _variant(x, W_Q, W_K, W_V, W_O, n_heads, scale=None, split=_heads, use_W_O=True, transpose_back=True,
             softmax_dim=-1, linear_layout=True, causal=False):
    if not linear_layout:  # x @ W instead of x @ W.T: only runs when the weights are square
        W_Q, W_K, W_V, W_O = W_Q.T, W_K.T, W_V.T, W_O.T
    q, k, v = (split(x @ W.T, n_heads) for W in (W_Q, W_K, W_V))  # (B, H, T, d_head)
    d_head = q.shape[-1]
    s = q @ k.transpose(-1, -2) * (1 / math.sqrt(d_head) if scale is None else scale)  # (B, H, T, T)
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    out = torch.softmax(s, dim=softmax_dim) @ v  # (B, H, T, d_head)
    b, h, t, dh = out.shape
    out = out.transpose(1, 2).reshape(b, t, h * dh) if transpose_back else out.reshape(b, t, h * dh)
    return out @ W_O.T if use_W_O else out  # (B, T, d_model)


def _interleaved_split(t, n_heads):
    b, n, w = t.shape
    return t.view(b, n, w // n_heads, n_heads).permute(0, 3, 1, 2)  # (B, H, T, d_head): wrong grouping


_LAYOUT_HINT = N_("the weights are in nn.Linear layout, (out, in): project with `x @ W_Q.T` (and "
                  "`@ W_O.T` at the end), not `x @ W_Q`.")

def _one_head(x, W_Q, W_K, W_V, W_O, n_heads):
    if n_heads == 1:
        raise ValueError("one head was asked for: not a mistake here")  # the mistake does not apply
    return _variant(x, W_Q, W_K, W_V, W_O, 1)


_MISTAKES = {
    _LAYOUT_HINT: lambda *a: _variant(*a, linear_layout=False),
    N_("the output projection W_O is missing: after concatenating the heads, apply `@ W_O.T`."):
        lambda *a: _variant(*a, use_W_O=False),
    N_("the scores are not scaled: multiply q . k by 1/sqrt(d_head)."):
        lambda *a: _variant(*a, scale=1.0),
    N_("you divided the scores by d_head; the scale is 1/sqrt(d_head)."):
        lambda x, W_Q, W_K, W_V, W_O, n: _variant(x, W_Q, W_K, W_V, W_O, n, scale=n / W_Q.shape[0]),
    N_("you scaled by 1/sqrt(d_model); each head's scores use its own width: 1/sqrt(d_head)."):
        lambda x, W_Q, W_K, W_V, W_O, n: _variant(x, W_Q, W_K, W_V, W_O, n, scale=1 / math.sqrt(x.shape[-1])),
    N_("wrong head split: head h owns the *contiguous* columns h*d_head:(h+1)*d_head, i.e. "
       "`.view(B, T, n_heads, d_head)` (not `.view(B, T, d_head, n_heads)`)."):
        lambda *a: _variant(*a, split=_interleaved_split),
    N_("the heads were merged without moving the head axis back: `(B, H, T, d_head)` needs "
       "`.transpose(1, 2)` before `.reshape(B, T, H * d_head)`."):
        lambda *a: _variant(*a, transpose_back=False),
    N_("the softmax runs over the wrong axis: normalise over keys (the last axis), so each query's "
       "weights sum to 1."):
        lambda *a: _variant(*a, softmax_dim=-2),
    N_("split q, k and v into n_heads heads of width d_head = d_model / n_heads, each with its own "
       "softmax: you computed one head over all of d_model."): _one_head,
    N_("this attention has no causal mask: every token reads every token, before and after it."):
        lambda *a: _variant(*a, causal=True),
}


def _cases():
    g = torch.Generator().manual_seed(6)
    out = []
    for b, t, d, h, dh in [(2, 5, 8, 2, 4), (1, 1, 8, 2, 4), (2, 4, 6, 3, 2), (3, 6, 4, 4, 1), (2, 7, 8, 1, 8),
                           (1, 3, 8, 2, 3)]:
        x = torch.randn(b, t, d, generator=g)
        W_Q, W_K, W_V = (torch.randn(h * dh, d, generator=g) / math.sqrt(d) for _ in range(3))
        W_O = torch.randn(d, h * dh, generator=g) / math.sqrt(h * dh)
        out.append((x, W_Q, W_K, W_V, W_O, h))
    return out


def check_multihead_attention(fn):
    """Check ``fn(x, W_Q, W_K, W_V, W_O, n_heads)`` against the package's MultiHeadAttention.

    x: (B, T, d_model); W_Q, W_K, W_V: (n_heads*d_head, d_model); W_O: (d_model, n_heads*d_head),
    in ``nn.Linear`` layout. Cases include T = 1, d_head = 1, one head, and d_head*n_heads != d_model.
    """
    return compare(fn, reference_multihead_attention, _cases(), "multihead_attention", mistakes=_MISTAKES,
            describe=lambda a: f"B,T,d_model={tuple(a[0].shape)}, n_heads={a[5]}, d_head={a[1].shape[0] // a[5]}",
                   errors={r"cannot be multiplied|must match the size": _LAYOUT_HINT})


register_question(
    "ch6_per_pair_numbers",
    choices=["10^6", "10^9", "10^12", "10^15"],
    hint=N_("one d x d matrix for each of the T x T pairs."),
    reveals=["ch6_gpt2_numbers"],
)

register_question(
    "ch6_one_head_routings",
    choices=["0", "1", "2"],
    hint=N_("how many softmax distributions does one head compute for one token?"),
    reveals=["ch6_h1_both", "ch6_h1_won", "ch6_h1_lost", "ch6_h1_won_name"],
)

register_question(
    "ch6_wide_head_both",
    choices=["yes", "no"],
    hint=N_("how many blends of its neighbours does one head give each token, whatever its width?"),
    reveals=["ch6_wide_both"],
)

register_question(
    "ch6_sixteen_heads_both",
    choices=["rarely", "often", "almost always"],
    hint=N_("count the separate blends each token receives, then ask how precise one blend of a "
            "width-one head can be."),
    reveals=["ch6_h16_both"],
)
