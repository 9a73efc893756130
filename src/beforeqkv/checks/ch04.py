"""Checkers for chapter 4: weights computed from the inputs, ``w_ij = softmax_j f(x_i, x_j)``."""
from __future__ import annotations

import torch

from ..i18n import N_
from ._core import compare, register_question

__all__ = ["check_content_weights", "content_weights_reference"]


def content_weights_reference(x_q: torch.Tensor, x_k: torch.Tensor, f) -> torch.Tensor:
    """``w_ij = softmax_j f(x_i, x_j)``; x_q (..., T_q, d), x_k (..., T_k, d) -> (..., T_q, T_k).

    ``f(a, b)`` scores broadcastable (..., d) tensors pairwise and returns (...).
    """
    s = f(x_q.unsqueeze(-2), x_k.unsqueeze(-3))  # (..., T_q, 1, d) with (..., 1, T_k, d) -> (..., T_q, T_k)
    return torch.softmax(s, dim=-1)


def _bilinear_f(seed: int, d: int):
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(d, d, generator=g) / d ** 0.5  # (d, d), asymmetric on purpose

    def f(a, b):
        return torch.einsum("...d,de,...e->...", a, A, b)  # x_i^T A x_j

    return f


def _cases():
    g = torch.Generator().manual_seed(4)
    shapes = [((5, 8), (5, 8)), ((2, 4, 6), (2, 4, 6)), ((3, 4), (7, 4)), ((1, 3), (1, 3)), ((2, 1, 1), (2, 6, 1)),
              ((2, 3, 4, 5), (2, 3, 6, 5))]  # two batch dimensions: the contract is (..., T, d)
    for i, (sq, sk) in enumerate(shapes):
        x_q = torch.randn(*sq, generator=g)
        x_k = x_q.clone() if sq == sk and i % 2 == 0 else torch.randn(*sk, generator=g)
        yield x_q, x_k, _bilinear_f(i, sq[-1])


def check_content_weights(fn):
    """Check ``fn(x_q, x_k, f) == softmax_j f(x_i, x_j)`` (weights of shape (..., T_q, T_k))."""

    def f_swapped(x_q, x_k, f):
        return torch.softmax(f(x_k.unsqueeze(-3), x_q.unsqueeze(-2)), dim=-1)

    mistakes = {
        N_("the softmax must run over the keys j (the last dim), so each query's row sums to 1"):
            lambda x_q, x_k, f: torch.softmax(f(x_q.unsqueeze(-2), x_k.unsqueeze(-3)), dim=-2),
        N_("weights are scores passed through a softmax; you returned the raw scores"):
            lambda x_q, x_k, f: f(x_q.unsqueeze(-2), x_k.unsqueeze(-3)),
        N_("f(x_i, x_j) takes the query first: you computed f(x_j, x_i)"): f_swapped,
        N_("after exp, divide by the row sum (that is what the softmax does)"):
            lambda x_q, x_k, f: f(x_q.unsqueeze(-2), x_k.unsqueeze(-3)).exp(),
        N_("rows are queries and columns keys: w[i, j] is query i's weight on key j; you returned the "
           "transpose"):
            lambda x_q, x_k, f: torch.softmax(f(x_q.unsqueeze(-2), x_k.unsqueeze(-3)), dim=-1).transpose(-1, -2),
        N_("a sigmoid does not make a row of weights sum to 1: use a softmax over the keys"):
            lambda x_q, x_k, f: torch.sigmoid(f(x_q.unsqueeze(-2), x_k.unsqueeze(-3))),
    }
    return compare(fn, content_weights_reference, _cases(), "content_weights", mistakes=mistakes,
            describe=lambda a: f"x_q {tuple(a[0].shape)}, x_k {tuple(a[1].shape)}")


register_question(
    "ch4_fixed_no_positions",
    choices=["near 1.00", "near the bag-of-tokens guess", "near chance"],
    hint=N_("shuffle the 16 tokens of a sequence: what changes in the output of a content mixer "
            "without positions?"),
    reveals=["ch4_fixed_content_nopos"],
)
register_question(
    "ch4_salient_no_positions",
    choices=["well above the bag-of-tokens guess", "near the bag-of-tokens guess", "near chance"],
    hint=N_("does answering the salient task require knowing where the marked token sits?"),
    reveals=["ch4_salient_content_nopos"],
)
