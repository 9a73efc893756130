"""Checkers for chapter 5: bilinear scores and the symmetry problem."""
from __future__ import annotations

import torch

from ._core import compare, register_question

__all__ = ["check_bilinear_scores", "bilinear_scores_reference"]


def bilinear_scores_reference(x_q: torch.Tensor, x_k: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    """``s_ij = x_i^T A x_j``: x_q (..., T_q, d), x_k (..., T_k, d), A (d, d) -> (..., T_q, T_k)."""
    return x_q @ A @ x_k.transpose(-2, -1)  # (..., T_q, d) @ (d, d) @ (..., d, T_k)


def _cases():
    g = torch.Generator().manual_seed(5)
    for sq, sk in [((4, 6), (4, 6)), ((2, 5, 3), (2, 5, 3)), ((3, 4), (6, 4)), ((1, 2), (1, 2)), ((3, 1), (3, 1)),
                   ((2, 3, 4, 5), (2, 3, 6, 5))]:  # two batch dimensions
        d = sq[-1]
        x_q = torch.randn(*sq, generator=g)
        x_k = torch.randn(*sk, generator=g)
        A = torch.randn(d, d, generator=g)  # asymmetric
        yield x_q, x_k, A


def check_bilinear_scores(fn):
    """Check ``fn(x_q, x_k, A) == x_q A x_k^T`` for an asymmetric A (shape (..., T_q, T_k))."""
    mistakes = {
        "you used A^T: s_ij = x_i^T A x_j puts A between the query (left) and the key (right)":
            lambda x_q, x_k, A: x_q @ A.T @ x_k.transpose(-2, -1),
        "you symmetrised A; the point of a bilinear form is that it need not be symmetric":
            lambda x_q, x_k, A: x_q @ ((A + A.T) / 2) @ x_k.transpose(-2, -1),
        "you returned s_ji instead of s_ij: rows are queries, columns are keys":
            lambda x_q, x_k, A: (x_q @ A @ x_k.transpose(-2, -1)).transpose(-2, -1),
        "the query goes on the left and the key on the right: you computed x_k A x_q^T":
            lambda x_q, x_k, A: x_k @ A @ x_q.transpose(-2, -1),
        "that is the plain dot product x_i . x_j: A is missing":
            lambda x_q, x_k, A: x_q @ x_k.transpose(-2, -1),
    }
    return compare(fn, bilinear_scores_reference, _cases(), "bilinear_scores", mistakes=mistakes,
            describe=lambda a: f"x_q {tuple(a[0].shape)}, x_k {tuple(a[1].shape)}")


register_question(
    "ch5_shared_symmetric",
    "yes",
    "(W x_i) . (W x_j) = x_i^T (W^T W) x_j and W^T W is symmetric: s_ij = s_ji for every "
    "W. One projection shared by both sides cannot make the score directional.",
    choices=["yes", "no"],
)

register_question(
    "ch5_rank_qk",
    2,
    "A = W_Q^T W_K is a (32 x r) matrix times an (r x 32) one: its rank is at most r = 2, "
    "and random (or trained) weights reach that bound.",
    tolerance=0,
    hint='the rank of a product is at most the smallest inner dimension.'
)
