"""Checkers for chapter 7: the 1/sqrt(d_head) scale and the softmax Jacobian."""
from __future__ import annotations

import math

import torch

from ..attention import attention_scores
from ..i18n import N_, _
from ..measure.saturation import softmax_jacobian
from . import _record
from ._core import CheckFailure, checker, compare, register_question

__all__ = ["check_scaled_scores", "check_scaled_scores_sigma", "check_softmax_jacobian", "check_sliding_window_mask",
           "sliding_window_mask"]


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
        N_("the scores are not scaled at all: divide q . k by sqrt(d_head)"):
            lambda q, k: q @ k.transpose(-1, -2),
        N_("you divided by d_head; divide by its square root, sqrt(d_head)"):
            lambda q, k: q @ k.transpose(-1, -2) / q.shape[-1],
        N_("you scaled by the sequence length; the variance of q . k grows with the width d_head, not with T"):
            lambda q, k: q @ k.transpose(-1, -2) / math.sqrt(k.shape[-2]),
        N_("rows should be queries and columns keys: compute q k^T, not k q^T"):
            lambda q, k: k @ q.transpose(-1, -2) / math.sqrt(q.shape[-1]),
    }
    return compare(fn, lambda q, k: attention_scores(q, k), _score_cases(), "scaled_scores", mistakes,
            describe=lambda a: f"q {tuple(a[0].shape)}, k {tuple(a[1].shape)}")


def _sigma_cases():
    g = torch.Generator().manual_seed(72)
    out = []
    for q_shape, k_shape, sigma in [((4, 8), (6, 8), 2.0), ((2, 3, 5, 16), (2, 3, 5, 16), 0.5),
                                    ((1, 1), (1, 1), 3.0), ((3, 2, 64), (3, 7, 64), 1.0),
                                    ((5, 9), (4, 9), 0.25)]:
        q = sigma * torch.randn(*q_shape, generator=g)
        k = sigma * torch.randn(*k_shape, generator=g)
        out.append((q, k, sigma))
    return out


def _over(c):
    """Scores q k^T divided by c(sigma, d_head): a wrong constant, for the hints."""
    return lambda q, k, sigma: q @ k.transpose(-1, -2) / c(sigma, q.shape[-1])


def check_scaled_scores_sigma(fn):
    """Check ``fn(q, k, sigma) -> (..., T_q, T_k)`` computes ``q . k / (sigma^2 sqrt(d_head))``.

    q: (..., T_q, d_head), k: (..., T_k, d_head) with components of standard deviation
    ``sigma``; the scores then have variance 1 whatever sigma and d_head. Chapter 7.
    """
    mistakes = {
        N_("sigma is ignored: with components of spread sigma, Var(q_i k_i) = sigma^2 * sigma^2, so "
           "Var(q . k) = d_head sigma^4"):
            _over(lambda s, d: math.sqrt(d)),
        N_("you divided by sigma sqrt(d_head): each term q_i k_i has variance sigma^2 * sigma^2 = sigma^4, "
           "so the standard deviation of q . k is sigma^2 sqrt(d_head)"):
            _over(lambda s, d: s * math.sqrt(d)),
        N_("you divided by sigma^4 sqrt(d_head): sigma^4 is the variance of one term q_i k_i; the "
           "standard deviation of q . k is sigma^2 sqrt(d_head)"):
            _over(lambda s, d: s ** 4 * math.sqrt(d)),
        N_("you divided by the variance d_head sigma^4; divide by the standard deviation, its square "
           "root: sigma^2 sqrt(d_head)"):
            _over(lambda s, d: s ** 4 * d),
        N_("you divided by sigma^2 d_head; the standard deviation of q . k is sigma^2 sqrt(d_head)"):
            _over(lambda s, d: s ** 2 * d),
        N_("rows should be queries and columns keys: compute q k^T, not k q^T"):
            lambda q, k, sigma: k @ q.transpose(-1, -2) / (sigma ** 2 * math.sqrt(q.shape[-1])),
        N_("you multiplied by sigma^2; divide by it: q . k / (sigma^2 sqrt(d_head))"):
            lambda q, k, sigma: q @ k.transpose(-1, -2) * sigma ** 2 / math.sqrt(q.shape[-1]),
    }
    return compare(fn, lambda q, k, sigma: attention_scores(q, k) / sigma ** 2, _sigma_cases(),
                   "scaled_scores_sigma", mistakes,
                   describe=lambda a: f"q {tuple(a[0].shape)}, k {tuple(a[1].shape)}, sigma={a[2]}")


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
        N_("the diagonal is missing: d a_i / d s_i = a_i - a_i^2, so add diag(a)"):
            lambda a: -a.unsqueeze(-1) * a.unsqueeze(-2),
        N_("the off-diagonal entries are missing: d a_i / d s_j = -a_i a_j for j != i"):
            lambda a: torch.diag_embed(a * (1 - a)),
        N_("the sign is flipped: it is diag(a) - a a^T"):
            lambda a: a.unsqueeze(-1) * a.unsqueeze(-2) - torch.diag_embed(a),
        N_("that is just diag(a): subtract the outer product a a^T"):
            lambda a: torch.diag_embed(a),
        N_("the outer product a a^T has the entries a_i a_j: a[..., :, None] * a[..., None, :]; yours "
           "subtracts a_j^2 in every row"):
            lambda a: torch.diag_embed(a) - (a * a).unsqueeze(-2),
    }
    return compare(fn, softmax_jacobian, _jacobian_cases(), "softmax_jacobian", mistakes,
            describe=lambda a: _("a of shape {shape}").format(shape=tuple(a[0].shape)))


def sliding_window_mask(T: int, w: int) -> torch.Tensor:
    """Canonical answer: (T, T) boolean, True where query i may attend to key j, i - w < j <= i.

    Each token sees itself and the previous ``w - 1`` tokens (``w >= T``: the causal mask).
    """
    if not isinstance(T, int) or not isinstance(w, int) or T < 1 or w < 1:
        raise ValueError(f"sliding_window_mask needs integers T >= 1 and w >= 1, got T={T!r}, w={w!r}")
    i = torch.arange(T).unsqueeze(1)  # (T, 1) query positions
    j = torch.arange(T).unsqueeze(0)  # (1, T) key positions
    return (j <= i) & (j > i - w)  # (T, T)


def _window(T, w, lo, hi):
    """True where i - lo < j <= i + hi (a wrong window, for the hints)."""
    i, j = torch.arange(T).unsqueeze(1), torch.arange(T).unsqueeze(0)
    return (j > i - lo) & (j <= i + hi)


_WINDOW_CASES = [(1, 1), (5, 1), (5, 2), (6, 3), (4, 4), (4, 10), (16, 5), (9, 8)]


@checker
def check_sliding_window_mask(fn):
    """Check ``fn(T, w) -> (T, T)`` boolean: ``mask[i, j] = i - w < j <= i`` (True = may attend).

    Cases include T = 1, w = 1 (each token sees only itself) and w >= T (the causal mask). Chapter 7.
    """
    for T, w in _WINDOW_CASES[:3]:  # a float 0/1 mask would pass the value comparison: catch it first
        try:
            got = _record.call("sliding window dtype", fn, T, w)[0]
        except Exception:  # compare() below reports it, with the reader's line
            break
        if isinstance(got, torch.Tensor) and got.dtype != torch.bool:
            raise CheckFailure(_("sliding window mask: return a boolean tensor (True = may attend), got dtype "
                                 "{dtype}. Hint: a comparison such as `j <= i` gives one.").format(dtype=got.dtype))
    mistakes = {
        N_("your mask marks the BLOCKED positions. In this book True means 'may attend': keep "
           "i - w < j <= i."):
            lambda T, w: ~sliding_window_mask(T, w),
        N_("your window holds w + 1 tokens: token i sees itself and the previous w - 1 tokens, so the "
           "oldest key it may read is j = i - w + 1 (use j > i - w, not j >= i - w)."):
            lambda T, w: _window(T, w + 1, w + 1, 0),
        N_("your window holds only w - 1 tokens: token i sees itself AND the previous w - 1 tokens "
           "(use j > i - w, not j > i - w + 1)."):
            lambda T, w: _window(T, w - 1, w - 1, 0),
        N_("your window also looks into the future: keep j <= i (causal) as well as j > i - w."):
            lambda T, w: _window(T, w, w, T),
        N_("that is the plain causal mask: also drop the keys older than the window (j <= i - w)."):
            lambda T, w: _window(T, T, T, 0),
        N_("the window runs the wrong way: token i may see keys i - w < j <= i, behind it, not in front."):
            lambda T, w: _window(T, 1, 1, w - 1),
    }
    return compare(fn, sliding_window_mask, _WINDOW_CASES, N_("sliding window mask"), mistakes,
                   describe=lambda a: f"T={a[0]}, w={a[1]}")


register_question(
    "ch7_one_over_d",
    choices=["saturated", "near-uniform", "unchanged"],
    hint=N_("what is the standard deviation of q . k / d when q . k has variance d?"),
    reveals=["ch7_over_d_max_weight", "ch7_over_d_saturated"],
)

register_question(
    "ch7_adam_unscaled",
    choices=["no better", "in between", "as good as scaled"],
    hint=N_("what does Adam do to a gradient that is small for every step?"),
    reveals=["ch7_acc_adam_unscaled"],
)
