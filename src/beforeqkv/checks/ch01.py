"""Checkers for chapter 1, squished memory (book/01_squished_memory.ipynb)."""
from __future__ import annotations

import math

import torch

from ..i18n import N_
from ._core import compare, register_question

__all__ = ["check_attention_read", "reference_attention_read"]


def reference_attention_read(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """One soft read: ``r = sum_j softmax_j(q . k_j / sqrt(d)) v_j``.

    q: (B, d), keys: (B, N, d), values: (B, N, d_v) -> (B, d_v). Derived in chapter 1.
    """
    scores = torch.einsum("bd,bnd->bn", q, keys) / math.sqrt(q.shape[-1])  # (B, N)
    weights = torch.softmax(scores, dim=-1)  # (B, N)
    return torch.einsum("bn,bnv->bv", weights, values)  # (B, d_v)


def _cases():
    g = torch.Generator().manual_seed(1)
    shapes = [(4, 6, 8, 5), (1, 1, 3, 2), (3, 5, 1, 4), (2, 32, 16, 16)]  # (B, N, d, d_v): N=1, d=1 edge cases
    for b, n, d, dv in shapes:
        yield (torch.randn(b, d, generator=g) * 2, torch.randn(b, n, d, generator=g),
               torch.randn(b, n, dv, generator=g))


def _describe(args):
    q, k, v = args
    return f"q {tuple(q.shape)}, keys {tuple(k.shape)}, values {tuple(v.shape)}"


_MISTAKES = {
    N_("did you scale the scores by 1/sqrt(d)?"):
        lambda q, k, v: torch.einsum("bn,bnv->bv", torch.softmax(torch.einsum("bd,bnd->bn", q, k), -1), v),
    N_("scale by 1/sqrt(d), not by 1/d."):
        lambda q, k, v: torch.einsum("bn,bnv->bv",
                                     torch.softmax(torch.einsum("bd,bnd->bn", q, k) / q.shape[-1], -1), v),
    N_("the softmax must run over the N stored pairs (dim=-1), not over the batch."):
        lambda q, k, v: torch.einsum(
            "bn,bnv->bv", torch.softmax(torch.einsum("bd,bnd->bn", q, k) / math.sqrt(q.shape[-1]), 0), v),
    N_("the weights need a softmax: raw dot products are not a weighted average."):
        lambda q, k, v: torch.einsum("bn,bnv->bv", torch.einsum("bd,bnd->bn", q, k) / math.sqrt(q.shape[-1]), v),
    N_("read the values, not the keys."):
        lambda q, k, v: reference_attention_read(q, k, k),
    N_("you multiplied the scores by sqrt(d); divide them by it: q . k / sqrt(d)."):
        lambda q, k, v: torch.einsum("bn,bnv->bv", torch.softmax(
            torch.einsum("bd,bnd->bn", q, k) * math.sqrt(q.shape[-1]), -1), v),
    N_("a plain mean of the values ignores the query: weight each value by the softmax of its score "
       "q . k_j / sqrt(d)."):
        lambda q, k, v: v.mean(1),
}


def check_attention_read(fn):
    """Exercise 1.1: ``fn(q, keys, values)`` must return the soft attention read."""
    return compare(fn, reference_attention_read, list(_cases()), "attention_read", _MISTAKES, describe=_describe)


register_question(
    "ch1_lstm_state_size",
    digits=0,
    hint=N_("an nn.LSTM layer carries two vectors from step to step, and each layer has its own."),
    reveals=["ch1_lstm2_state"],
)
register_question(
    "ch1_lstm_n32",
    choices=["near perfect", "in between", "chance"],
    hint=N_("compare how many numbers the LSTM carries with how many facts it must hold at N = 8 "
            "and at N = 32."),
    reveals=["ch1_lstm_n32"],
)
