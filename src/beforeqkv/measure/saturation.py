"""Why attention divides by sqrt(d_head): measurements that need no training (chapter 7).

With query and key components of unit variance, ``Var(q . k) = d``: raw scores grow
like ``sqrt(d)``, the softmax saturates (one weight near 1, the rest near 0) and its
Jacobian ``diag(a) - a a^T`` goes to zero, so almost no gradient reaches the scores.

    rows = saturation_table((16, 256, 1024), generator=torch.Generator().manual_seed(0))

Derived in chapter 7, book/07_scaling.ipynb.
"""
from __future__ import annotations

import math
from typing import Iterable

import torch

from .._validate import check_finite, check_finite_number
from ..tasks._util import check_generator, check_positive

__all__ = [
    "softmax_jacobian",
    "random_scores",
    "row_gradient",
    "saturation_stats",
    "saturation_table",
    "denormal_fraction",
]


def softmax_jacobian(weights: torch.Tensor) -> torch.Tensor:
    """The Jacobian of the softmax, ``d a_i / d s_j = a_i (delta_ij - a_j)``, i.e. ``diag(a) - a a^T``.

    weights: (..., T), the softmax output ``a`` (rows sum to 1) -> (..., T, T).
    It vanishes when ``a`` is one-hot (a saturated softmax passes no gradient).
    Derived in chapter 7.
    """
    if not isinstance(weights, torch.Tensor) or not weights.is_floating_point() or weights.dim() < 1:
        raise ValueError("weights must be a floating-point tensor of shape (..., T)")
    outer = weights.unsqueeze(-1) * weights.unsqueeze(-2)  # (..., T, 1) * (..., 1, T) -> (..., T, T)
    return torch.diag_embed(weights) - outer  # (..., T, T)


def random_scores(d: int, n_queries: int = 4000, T: int = 32, scaled: bool = False, std: float = 1.0,
                  group: int = 32, generator: torch.Generator | None = None) -> torch.Tensor:
    """Scores ``q . k`` (times ``1/sqrt(d)`` if ``scaled``) for random q, k with i.i.d. N(0, std^2) components.

    Queries come in groups of ``group`` that share one set of ``T`` keys (each row is
    still an exact draw; sharing keys only saves random numbers).
    Returns (n_queries, T). Derived in chapter 7.
    """
    check_positive(d=d, n_queries=n_queries, T=T, group=group)
    check_finite_number("std", std, low=0, strict=True)
    g = check_generator(generator)
    n_groups = math.ceil(n_queries / group)
    q = torch.randn(n_groups, group, d, generator=g) * std  # (G, group, d)
    k = torch.randn(n_groups, T, d, generator=g) * std  # (G, T, d)
    s = (q @ k.transpose(1, 2)).reshape(-1, T)[:n_queries]  # (G, group, d) @ (G, d, T) -> (n_queries, T)
    return s / math.sqrt(d) if scaled else s


def row_gradient(weights: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """How much gradient a row's scores receive: ``|| J^T u ||`` with ``J = diag(a) - a a^T``.

    ``u`` is a random N(0, I) upstream gradient per row (as from a read-out ``a . v``).
    weights: (n, T) -> (n,). About 0.2 for a spread-out row of 32; ~0 for a one-hot row.
    """
    if not isinstance(weights, torch.Tensor) or weights.dim() != 2:
        raise ValueError("weights must be a 2-D tensor (n_rows, T)")
    g = check_generator(generator)
    u = torch.randn(weights.shape, generator=g, dtype=weights.dtype)  # (n, T)
    jac = softmax_jacobian(weights)  # (n, T, T), symmetric
    return (jac @ u.unsqueeze(-1)).squeeze(-1).norm(dim=-1)  # (n, T, T) @ (n, T, 1) -> (n,)


def saturation_stats(scores: torch.Tensor, threshold: float = 0.99,
                     generator: torch.Generator | None = None) -> dict:
    """Softmax each row of ``scores`` (n, T) and measure how saturated it is.

    Returns ``frac_saturated`` (rows whose largest weight exceeds ``threshold``),
    ``median_grad`` (median :func:`row_gradient`), ``median_max_weight`` and
    ``score_std`` (standard deviation of the scores).
    """
    if not isinstance(scores, torch.Tensor) or scores.dim() != 2 or not scores.is_floating_point():
        raise ValueError("scores must be a floating-point tensor of shape (n_rows, T)")
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must lie in (0, 1), got {threshold!r}")
    check_finite("scores", scores)  # a NaN row would silently count as not saturated
    weights = torch.softmax(scores, dim=-1)  # (n, T)
    top = weights.max(dim=-1).values  # (n,)
    return {
        "frac_saturated": (top > threshold).float().mean().item(),
        "median_grad": row_gradient(weights, generator).median().item(),
        "median_max_weight": top.median().item(),
        "score_std": scores.std().item(),
    }


def saturation_table(d_values: Iterable[int] = (1, 4, 16, 64, 256, 1024), n_queries: int = 4000,
                     T: int = 32, threshold: float = 0.99,
                     generator: torch.Generator | None = None) -> list[dict]:
    """:func:`saturation_stats` for unscaled and scaled scores at every ``d``: one dict per (d, scaled).

    Both variants use the *same* random q and k, so only the 1/sqrt(d) differs.
    """
    d_values = list(d_values)
    if not d_values:
        raise ValueError("d_values must name at least one width d")
    g = check_generator(generator)
    rows = []
    for d in d_values:
        raw = random_scores(d, n_queries, T, generator=g)  # (n_queries, T)
        for scaled in (False, True):
            s = raw / math.sqrt(d) if scaled else raw
            rows.append({"d": d, "scaled": scaled, **saturation_stats(s, threshold, generator=g)})
    return rows


def denormal_fraction(x: torch.Tensor) -> float:
    """Fraction of the entries of ``x`` that are denormal (nonzero but below the smallest normal float).

    A saturated softmax produces them (``exp`` of a score ~90 below the maximum, in float32).
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise ValueError("x must be a floating-point tensor")
    tiny = torch.finfo(x.dtype).tiny
    a = x.abs()
    return ((a > 0) & (a < tiny)).float().mean().item()
