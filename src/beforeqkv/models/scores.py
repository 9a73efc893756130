"""Score functions ``s_ij = f(x_i, x_j)``: from the symmetric dot product to queries and keys.

Derived in chapter 5 (book/05_queries_keys.ipynb). Every score here is a (possibly
normalised) bilinear form ``s_ij = scale * x_i^T A x_j``; they differ in which
matrices ``A`` they can express:

=========================  ===========================  =========  ==============
module                     A                            symmetric  parameters
=========================  ===========================  =========  ==============
:class:`DotScore`          I                            yes        0
:class:`SharedProjection`  W^T W                        yes        d_head * d
:class:`SymmetricBilinear` (B + B^T) / 2                yes        d^2
:class:`CosineScore`       tau d I on unit vectors      yes        1
:class:`BilinearScore`     A                            no         d^2
:class:`QKScore`           W_Q^T W_K  (rank <= d_head)  no         2 d_head d
=========================  ===========================  =========  ==============

Each module maps ``x_q`` (..., T_q, d) and ``x_k`` (..., T_k, d; default ``x_q``) to
scores (..., T_q, T_k); ``matrix()`` returns the (d, d) matrix ``A`` it uses.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .._validate import check_positive
from ..attention import attention_scores

__all__ = [
    "bilinear_scores", "dot_scores", "self_weight",
    "DotScore", "SharedProjection", "SymmetricBilinear", "CosineScore", "BilinearScore", "QKScore",
    "make_score", "SCORES",
]


def _check_x(name: str, x, d: int | None = None) -> None:
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise ValueError(f"{name} must be a floating-point torch.Tensor")
    if x.dim() < 2:
        raise ValueError(f"{name} must have shape (..., T, d), got {tuple(x.shape)}")
    if d is not None and x.shape[-1] != d:
        raise ValueError(f"{name} has width {x.shape[-1]}, but this score was built for d_model={d}")


def _check_pair(x_q, x_k, d=None):
    x_k = x_q if x_k is None else x_k
    _check_x("x_q", x_q, d)
    _check_x("x_k", x_k, d)
    if x_q.shape[-1] != x_k.shape[-1]:
        raise ValueError(f"x_q and x_k need the same width: {tuple(x_q.shape)} vs {tuple(x_k.shape)}")
    return x_k


def dot_scores(x_q: torch.Tensor, x_k: torch.Tensor | None = None, scale: float = 1.0) -> torch.Tensor:
    """Raw dot-product scores ``s_ij = scale * x_i . x_j``: symmetric when x_k is x_q.

    x_q: (..., T_q, d), x_k: (..., T_k, d) -> (..., T_q, T_k). Chapter 5.
    """
    x_k = _check_pair(x_q, x_k)
    return attention_scores(x_q, x_k, scale=scale)  # (..., T_q, T_k)


def bilinear_scores(x_q: torch.Tensor, x_k: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    """Bilinear scores ``s_ij = x_i^T A x_j``: A is (d, d), any matrix, not necessarily symmetric.

    x_q: (..., T_q, d), x_k: (..., T_k, d), A: (d, d) -> (..., T_q, T_k). Chapter 5.
    """
    x_k = _check_pair(x_q, x_k)
    d = x_q.shape[-1]
    if not isinstance(A, torch.Tensor) or A.shape != (d, d):
        shape = tuple(A.shape) if isinstance(A, torch.Tensor) else type(A).__name__
        raise ValueError(f"A must be a ({d}, {d}) tensor to match x of width {d}, got {shape}")
    return torch.einsum("...id,de,...je->...ij", x_q, A, x_k)  # (..., T_q, T_k)


def self_weight(weights: torch.Tensor) -> float:
    """Mean attention weight a token puts on itself: the mean diagonal of (..., T, T) weights."""
    if not isinstance(weights, torch.Tensor) or weights.dim() < 2 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError("weights must be a square (..., T, T) tensor")
    return weights.diagonal(dim1=-2, dim2=-1).mean().item()


class _Score(nn.Module):
    """Base class: ``forward(x_q, x_k=None) -> scale * x_q A x_k^T``."""

    symmetric: bool = False

    def __init__(self, d_model: int):
        super().__init__()
        check_positive(d_model=d_model)
        self.d_model = d_model
        self.scale = 1.0 / math.sqrt(d_model)

    def matrix(self) -> torch.Tensor:
        """The (d, d) matrix A of ``s_ij = scale * x_i^T A x_j``."""
        raise NotImplementedError

    def forward(self, x_q: torch.Tensor, x_k: torch.Tensor | None = None) -> torch.Tensor:
        x_k = _check_pair(x_q, x_k, self.d_model)
        return bilinear_scores(x_q, x_k, self.matrix()) * self.scale  # (..., T_q, T_k)

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


class DotScore(_Score):
    """``s_ij = x_i . x_j / sqrt(d)``: no parameters, symmetric, and self-dominant when norms are equal."""

    symmetric = True

    def matrix(self):
        return torch.eye(self.d_model)

    def forward(self, x_q, x_k=None):
        x_k = _check_pair(x_q, x_k, self.d_model)
        return dot_scores(x_q, x_k, self.scale)  # (..., T_q, T_k)


class SharedProjection(_Score):
    """``s_ij = (W x_i) . (W x_j) / sqrt(d_head)``: one projection for both sides, so A = W^T W is symmetric."""

    symmetric = True

    def __init__(self, d_model: int, d_head: int | None = None):
        super().__init__(d_model)
        d_head = d_model if d_head is None else d_head
        check_positive(d_head=d_head)
        self.W = nn.Linear(d_model, d_head, bias=False)  # weight (d_head, d)
        self.scale = 1.0 / math.sqrt(d_head)

    def matrix(self):
        return self.W.weight.T @ self.W.weight  # (d, d_head) @ (d_head, d) -> (d, d)

    def forward(self, x_q, x_k=None):
        x_k = _check_pair(x_q, x_k, self.d_model)
        return dot_scores(self.W(x_q), self.W(x_k), self.scale)  # (..., T_q, T_k)


class SymmetricBilinear(_Score):
    """``s_ij = x_i^T (B + B^T)/2 x_j / sqrt(d)``: any symmetric form, even indefinite (so not self-dominant)."""

    symmetric = True

    def __init__(self, d_model: int):
        super().__init__(d_model)
        self.B = nn.Parameter(torch.empty(d_model, d_model).uniform_(-1, 1) / math.sqrt(d_model))

    def matrix(self):
        return (self.B + self.B.T) / 2  # (d, d)


class CosineScore(_Score):
    """``s_ij = tau * sqrt(d) * cos(x_i, x_j)`` with a learned temperature tau (any sign). Symmetric.

    At tau = 1 this is the dot score of vectors rescaled to norm sqrt(d) (their typical
    norm at initialisation); tau < 0 means "attend to the least similar token".
    """

    symmetric = True

    def __init__(self, d_model: int, temperature: float = 1.0):
        super().__init__(d_model)
        self.temperature = nn.Parameter(torch.tensor(float(temperature)))

    def matrix(self):
        eye = torch.eye(self.d_model, device=self.temperature.device)
        return self.temperature.detach() * eye * self.d_model  # acts on unit vectors

    def forward(self, x_q, x_k=None):
        x_k = _check_pair(x_q, x_k, self.d_model)
        cos = dot_scores(F.normalize(x_q, dim=-1), F.normalize(x_k, dim=-1))  # (..., T_q, T_k)
        return self.temperature * math.sqrt(self.d_model) * cos


class BilinearScore(_Score):
    """``s_ij = x_i^T A x_j / sqrt(d)`` with a full, learned, asymmetric A (d^2 parameters)."""

    symmetric = False

    def __init__(self, d_model: int):
        super().__init__(d_model)
        self.A = nn.Parameter(torch.empty(d_model, d_model).uniform_(-1, 1) / math.sqrt(d_model))

    def matrix(self):
        return self.A


class QKScore(_Score):
    """Queries and keys: ``s_ij = (W_Q x_i) . (W_K x_j) / sqrt(d_head)``: A = W_Q^T W_K, rank <= d_head.

    2 d_head d parameters instead of d^2; the scores cost 2 T d_head d + T^2 d_head
    instead of T d^2 + T^2 d. Chapter 5.
    """

    symmetric = False

    def __init__(self, d_model: int, d_head: int):
        super().__init__(d_model)
        check_positive(d_head=d_head)
        self.d_head = d_head
        self.W_Q = nn.Linear(d_model, d_head, bias=False)  # weight (d_head, d)
        self.W_K = nn.Linear(d_model, d_head, bias=False)  # weight (d_head, d)
        self.scale = 1.0 / math.sqrt(d_head)

    def matrix(self):
        return self.W_Q.weight.T @ self.W_K.weight  # (d, d_head) @ (d_head, d) -> (d, d), rank <= d_head

    def forward(self, x_q, x_k=None):
        x_k = _check_pair(x_q, x_k, self.d_model)
        return dot_scores(self.W_Q(x_q), self.W_K(x_k), self.scale)  # (..., T_q, d_head) . (..., T_k, d_head)


SCORES = {
    "raw dot": lambda d: DotScore(d),
    "shared projection": lambda d: SharedProjection(d),
    "symmetric bilinear": lambda d: SymmetricBilinear(d),
    "cosine": lambda d: CosineScore(d),
    "full bilinear": lambda d: BilinearScore(d),
    "QK rank 4": lambda d: QKScore(d, 4),
    "QK rank 2": lambda d: QKScore(d, 2),
    "QK rank 1": lambda d: QKScore(d, 1),
}


def make_score(name: str, d_model: int = 32) -> _Score:
    """Build one of the score modules of chapter 5 by name (a key of ``SCORES``)."""
    if name not in SCORES:
        raise ValueError(f"unknown score {name!r}; choose one of {list(SCORES)}")
    return SCORES[name](d_model)
