"""Checkers for chapter 2 (book/02_keep_every_state.ipynb): the fixed-size fast-weight memory."""
from __future__ import annotations

import math

import torch

from ..attention import fast_weight_memory, linear_attention
from ..i18n import N_
from ._core import compare, register_question

__all__ = ["check_fast_weight_memory", "check_linear_attention"]


def _memory_cases():
    g = torch.Generator().manual_seed(2)
    r = lambda *shape: torch.randn(*shape, generator=g)  # noqa: E731
    return [
        (r(5, 4), r(5, 4)),  # d_k = d_v first, so a transposed memory gets its hint
        (r(6, 4), r(6, 3)),  # d_k = 4, d_v = 3: M is (3, 4)
        (r(1, 3), r(1, 2)),  # one pair: M is a single outer product
        (r(2, 7, 1), r(2, 7, 5)),  # a batch, d_k = 1
        (r(2, 3, 5, 4), r(2, 3, 5, 3)),  # two batch dimensions: the contract is (..., T, d)
    ]


def check_fast_weight_memory(fn):
    """Check ``fn(k, v) -> M = sum_j v_j k_j^T``: k (..., T, d_k), v (..., T, d_v) -> (..., d_v, d_k)."""
    return compare(
        fn, fast_weight_memory, _memory_cases(), "fast_weight_memory",
        mistakes={
            N_("M = sum_j v_j k_j^T has shape (d_v, d_k): rows indexed by value dims. You built k v^T."):
                lambda k, v: fast_weight_memory(k, v).transpose(-1, -2),
            N_("add the outer products, do not average them (M = sum_j, not mean_j)."):
                lambda k, v: fast_weight_memory(k, v) / k.shape[-2],
            N_("take the outer product of each pair, then sum; (sum_j v_j)(sum_j k_j)^T mixes "
               "every value with every key."):
                lambda k, v: torch.einsum("...v,...k->...vk", v.sum(-2), k.sum(-2)),
            N_("M sums the outer products of ALL the pairs, v_1 k_1^T + ... + v_T k_T^T: yours holds "
               "only the last one."):
                lambda k, v: torch.einsum("...v,...k->...vk", v[..., -1, :], k[..., -1, :]),
            N_("no scale in M: it is the plain sum of the outer products v_j k_j^T, without 1/sqrt(d_k)."):
                lambda k, v: fast_weight_memory(k, v) / math.sqrt(k.shape[-1]),
        },
    )


def _read_cases():
    g = torch.Generator().manual_seed(3)
    r = lambda *shape: torch.randn(*shape, generator=g)  # noqa: E731
    return [
        (r(3, 4), r(5, 4), r(5, 4)),  # q (T_q, d_k), k (T_k, d_k), v (T_k, d_v)
        (r(2, 3), r(6, 3), r(6, 2)),  # d_v != d_k
        (r(1, 2), r(1, 2), r(1, 3)),  # one query, one pair
        (r(2, 4, 1), r(2, 7, 1), r(2, 7, 3)),  # a batch, d_k = 1
        (r(2, 3, 4, 2), r(2, 3, 6, 2), r(2, 3, 6, 3)),  # two batch dimensions
    ]


def check_linear_attention(fn):
    """Check ``fn(q, k, v) -> out_i = sum_j (k_j . q_i) v_j = M q_i``: -> (..., T_q, d_v)."""
    ref = lambda q, k, v: linear_attention(q, k, v)  # noqa: E731
    return compare(
        fn, ref, _read_cases(), "linear_attention",
        mistakes={
            N_("linear attention has no softmax: the weights are the raw scores k_j . q_i."):
                lambda q, k, v: torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v,
            N_("no 1/sqrt(d_k) scale here: out_i = sum_j (k_j . q_i) v_j."):
                lambda q, k, v: ref(q, k, v) / math.sqrt(q.shape[-1]),
            N_("do not normalise by the sum of the scores; the plain fast-weight read is M q."):
                lambda q, k, v: ref(q, k, v) / (q @ k.transpose(-1, -2)).sum(-1, keepdim=True),
            N_("read with M q (M is d_v x d_k), not with M^T q."):
                lambda q, k, v: torch.einsum("...vk,...iv->...ik", fast_weight_memory(k, v), q),
            N_("no causal mask here: every query reads every stored pair, out_i = sum over all j of "
               "(k_j . q_i) v_j."):
                lambda q, k, v: (q @ k.transpose(-1, -2)).tril() @ v,
            N_("the weights are the raw scores k_j . q_i: no exp (that is half of a softmax)."):
                lambda q, k, v: (q @ k.transpose(-1, -2)).exp() @ v,
        },
    )


register_question(
    "ch2_memory_numbers",
    digits=0,
    hint=N_("does writing one more pair into M make M bigger? Which widths give M's shape?"),
    reveals=["ch2_mem_numbers", "ch2_mem_softmax"],
)
register_question(
    "ch2_bigger_memory",
    choices=[16, 64, 256],
    hint=N_("how does the size of the crosstalk depend on N and on d_k?"),
    reveals=["ch2_wide_n16", "ch2_wide_n64", "ch2_wide_n256"],
)
