"""Checkers for chapter 10: a real encoder (mean pooling, the post-norm sublayer, the reader's own
block and encoder running MiniLM, in ``_ch10_minilm``)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..i18n import N_, _
from ._ch10_minilm import check_minilm_block, check_minilm_encoder  # noqa: F401
from ._core import compare, register_question

__all__ = ["check_mean_pool", "check_post_norm", "check_minilm_block", "check_minilm_encoder"]


def _mean_pool(h, mask):
    m = mask.unsqueeze(-1).to(h.dtype)  # (B, T, 1)
    return (h * m).sum(1) / m.sum(1)  # (B, d)


def _pool_cases():
    g = torch.Generator().manual_seed(10)

    def case(lengths, t, d):
        mask = torch.arange(t).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)  # (B, T)
        return torch.randn(len(lengths), t, d, generator=g) + 1.0, mask

    return [
        case([2, 4, 3], 5, 4),  # padding of different lengths
        case([1], 1, 1),  # one token, width 1
        case([4, 4], 4, 3),  # no padding at all
        case([1, 7, 2, 6], 7, 384),  # the chapter's width
    ]


def check_mean_pool(fn):
    """Check ``fn(h, mask) -> (B, d)``: the mean of ``h`` (B, T, d) over the real tokens.

    mask: (B, T) bool, True = a real token (every row has at least one). Chapter 10.
    """
    mistakes = {
        N_("you averaged over every position, padding included: leave the pads out of the sum and the count"):
            lambda h, m: h.mean(1),
        N_("you divided by the padded length T; divide by the number of real tokens in each row"):
            lambda h, m: (h * m.unsqueeze(-1)).sum(1) / h.shape[1],
        N_("you summed the real tokens but did not divide by how many there are"):
            lambda h, m: (h * m.unsqueeze(-1)).sum(1),
        N_("the mask is the wrong way round: True marks the real tokens, False the padding"):
            lambda h, m: (h * (~m).unsqueeze(-1)).sum(1) / (~m).sum(1, keepdim=True),
        N_("mean pooling alone does not normalise: encode() divides by the norm afterwards"):
            lambda h, m: F.normalize(_mean_pool(h, m), dim=-1),
        N_("a sentence's vector is the mean over its real tokens, not the first ([CLS]) token's vector"):
            lambda h, m: h[:, 0],
    }
    return compare(fn, _mean_pool, _pool_cases(), "mean_pool", mistakes,
            describe=lambda a: _("h {shape}, real tokens per row {counts}").format(
                shape=tuple(a[0].shape), counts=a[1].sum(1).tolist()))


def _post_norm(x, fx, weight, bias, eps):
    return F.layer_norm(x + fx, x.shape[-1:], weight, bias, eps)  # (..., d)


def _norm_cases():
    g = torch.Generator().manual_seed(11)

    def case(shape, eps, scale=1.0):
        d = shape[-1]
        return (torch.randn(*shape, generator=g) * scale, torch.randn(*shape, generator=g) * scale,
                torch.randn(d, generator=g) + 1, torch.randn(d, generator=g), eps)

    return [
        case((2, 3, 8), 1e-12),  # BERT's eps
        case((5, 4), 0.5, scale=0.3),  # a large eps on small activations: where it goes matters
        case((1, 1, 2), 1e-5),  # width 2
        case((2, 6, 384), 1e-12),  # the chapter's width
    ]


def check_post_norm(fn):
    """Check ``fn(x, fx, weight, bias, eps)`` computes the post-norm sublayer ``LN(x + f(x))``.

    x, fx: (..., d), the sublayer's input and output; weight, bias: (d,), the LayerNorm's
    gain and shift; eps: a float. Chapters 8 and 10.
    """
    def layer_norm(z, w, b, eps, unbiased=False, eps_outside=False):
        mu = z.mean(-1, keepdim=True)
        var = z.var(-1, unbiased=unbiased, keepdim=True)
        scale = (var.sqrt() + eps) if eps_outside else (var + eps).sqrt()
        return (z - mu) / scale * w + b

    mistakes = {
        N_("that normalises only the sublayer's output, x + LN(f(x)); post-norm (BERT) normalises "
           "the sum: LN(x + f(x))"):
            lambda x, fx, w, b, e: x + layer_norm(fx, w, b, e),
        N_("the residual is missing: normalise x + f(x), not f(x) alone"):
            lambda x, fx, w, b, e: layer_norm(fx, w, b, e),
        N_("LayerNorm divides by the biased standard deviation (divide by d, not d - 1)"):
            lambda x, fx, w, b, e: layer_norm(x + fx, w, b, e, unbiased=True),
        N_("eps goes inside the square root: (z - mean) / sqrt(var + eps)"):
            lambda x, fx, w, b, e: layer_norm(x + fx, w, b, e, eps_outside=True),
        N_("the LayerNorm's learned gain (weight) and shift (bias) are missing"):
            lambda x, fx, w, b, e: layer_norm(x + fx, torch.ones_like(w), torch.zeros_like(b), e),
        N_("LayerNorm first subtracts the mean: (z - mean(z)) / sqrt(var(z) + eps)"):
            lambda x, fx, w, b, e: (x + fx) / ((x + fx).var(-1, unbiased=False, keepdim=True) + e).sqrt() * w + b,
        N_("x + f(x) is normalised, then nothing is added: LN(x + f(x)), not LN(x) + f(x)"):
            lambda x, fx, w, b, e: layer_norm(x, w, b, e) + fx,
    }
    return compare(fn, _post_norm, _norm_cases(), "post_norm", mistakes,
            describe=lambda a: f"x {tuple(a[0].shape)}, eps {a[4]:g}")


register_question(
    "ch10_token_type",
    choices=["less than 0.01", "between 0.01 and 0.1", "more than 0.1"],
    hint=N_("the row is added to every token's embedding, and every layer was trained on inputs "
            "that contain it; does the LayerNorm after the embeddings remove a vector's direction?"),
    reveals=["ch10_type_change"],
)
register_question(
    "ch10_qk_symmetry",
    choices=["close to symmetric", "close to random", "close to antisymmetric"],
    hint=N_("does a relation like 'it' -> 'animal', or 'the token before me', read the same both "
            "ways? Chapter 5: a symmetric A scores i -> j and j -> i alike."),
    reveals=["ch10_in_band", "ch10_r_min", "ch10_r_median"],
)
