"""Checkers for chapter 7: the 1/sqrt(d_head) scale and the softmax Jacobian."""
from __future__ import annotations

import math

import torch

from ..attention import attention_scores
from ..saturation import softmax_jacobian
from ._core import compare, register_question

__all__ = ["check_scaled_scores", "check_softmax_jacobian"]


def _score_cases():
    g = torch.Generator().manual_seed(7)
    return [
        (torch.randn(4, 8, generator=g), torch.randn(6, 8, generator=g)),  # T_q != T_k
        (torch.randn(2, 3, 5, 16, generator=g), torch.randn(2, 3, 5, 16, generator=g)),  # batch and heads
        (torch.randn(1, 1, generator=g), torch.randn(1, 1, generator=g)),  # T = 1, d_head = 1
        (torch.randn(3, 2, 64, generator=g), torch.randn(3, 7, 64, generator=g)),
    ]


def check_scaled_scores(fn):
    """Check ``fn(q, k) -> (..., T_q, T_k)`` computes ``q . k / sqrt(d_head)``.

    q: (..., T_q, d_head), k: (..., T_k, d_head). Chapter 7.
    """
    mistakes = {
        "the scores are not scaled at all: divide q . k by sqrt(d_head)":
            lambda q, k: q @ k.transpose(-1, -2),
        "you divided by d_head; divide by its square root, sqrt(d_head)":
            lambda q, k: q @ k.transpose(-1, -2) / q.shape[-1],
        "you scaled by the sequence length; the variance of q . k grows with the width d_head, not with T":
            lambda q, k: q @ k.transpose(-1, -2) / math.sqrt(k.shape[-2]),
        "rows should be queries and columns keys: compute q k^T, not k q^T":
            lambda q, k: k @ q.transpose(-1, -2) / math.sqrt(q.shape[-1]),
    }
    return compare(fn, lambda q, k: attention_scores(q, k), _score_cases(), "scaled_scores", mistakes,
            describe=lambda a: f"q {tuple(a[0].shape)}, k {tuple(a[1].shape)}")


def _jacobian_cases():
    g = torch.Generator().manual_seed(7)
    return [
        (torch.softmax(torch.randn(5, generator=g), -1),),  # one row
        (torch.softmax(torch.randn(3, 4, 6, generator=g), -1),),  # a batch of rows
        (torch.ones(1),),  # T = 1: the only weight is 1, nothing can change
        (torch.tensor([0.0, 1.0, 0.0, 0.0]),),  # one-hot: saturated
        (torch.full((8,), 1 / 8),),  # uniform
    ]


def check_softmax_jacobian(fn):
    """Check ``fn(a) -> (..., T, T)`` returns the softmax Jacobian ``diag(a) - a a^T``.

    a: (..., T), the softmax weights of one or more rows. Chapter 7.
    """
    mistakes = {
        "the diagonal is missing: d a_i / d s_i = a_i - a_i^2, so add diag(a)":
            lambda a: -a.unsqueeze(-1) * a.unsqueeze(-2),
        "the off-diagonal entries are missing: d a_i / d s_j = -a_i a_j for j != i":
            lambda a: torch.diag_embed(a * (1 - a)),
        "the sign is flipped: it is diag(a) - a a^T":
            lambda a: a.unsqueeze(-1) * a.unsqueeze(-2) - torch.diag_embed(a),
        "that is just diag(a): subtract the outer product a a^T":
            lambda a: torch.diag_embed(a),
    }
    return compare(fn, softmax_jacobian, _jacobian_cases(), "softmax_jacobian", mistakes,
            describe=lambda a: f"a of shape {tuple(a[0].shape)}")


register_question(
    "ch7_one_over_d", "near-uniform",
    "Scaling by 1/d makes the score variance d/d^2 = 1/d: at d = 1024 the scores have a standard "
    "deviation of about 0.03, so every weight is close to 1/T. Nothing saturates, but the softmax "
    "cannot focus either: the opposite failure. 1/sqrt(d) is the scale that keeps the variance at 1.",
    choices=["saturated", "near-uniform", "unchanged"],
    hint='what is the standard deviation of q . k / d when q . k has variance d?'
)
