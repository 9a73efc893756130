"""Checkers for chapter 11: RMSNorm, rotary positions, a Q4_1 block, the reader's Llama GPT."""
from __future__ import annotations

import torch

from ..attention import apply_rotary, rotary_tables
from ..i18n import N_, _
from ._core import compare, register_question
from ._ch11_llama import check_llama, check_smollm2, llama_config, llama_weights  # noqa: F401

__all__ = ["check_rmsnorm", "check_rotary", "check_q4_1_block", "check_llama", "check_smollm2",
           "llama_weights", "llama_config"]


def _gen(seed):
    return torch.Generator().manual_seed(seed)


# ------------------------------------------------------------------ RMSNorm
def _rmsnorm(x, weight, eps):
    return x * (x.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * weight  # (..., d)


def check_rmsnorm(fn):
    """Check ``fn(x, weight, eps) -> x / sqrt(mean(x^2) + eps) * weight`` over the last axis.

    x: (..., d), weight: (d,), eps: float. Chapter 11 (LayerNorm: chapter 8).
    """
    g = _gen(11)
    cases = [
        (torch.randn(4, 6, generator=g) + 2.0, torch.rand(6, generator=g) + 0.5, 1e-5),  # not centred
        (torch.randn(2, 3, 8, generator=g), torch.randn(8, generator=g), 1e-5),
        (1e-3 * torch.randn(3, 5, generator=g), torch.ones(5), 1e-5),  # tiny x: eps matters
        (torch.randn(1, 1, generator=g), torch.full((1,), 2.0), 1e-6),  # d = 1
    ]
    mistakes = {
        N_("that is LayerNorm: RMSNorm does not subtract the mean"):
            lambda x, w, e: (x - x.mean(-1, keepdim=True)) * ((x - x.mean(-1, keepdim=True)).pow(2).mean(
                -1, keepdim=True) + e).rsqrt() * w,
        N_("divide by the *root* of the mean square, sqrt(mean(x^2) + eps)"):
            lambda x, w, e: x / (x.pow(2).mean(-1, keepdim=True) + e) * w,
        N_("multiply by the learned gain `weight` at the end"):
            lambda x, w, e: _rmsnorm(x, torch.ones_like(w), e),
        N_("eps goes inside the square root, added to mean(x^2) (it matters when x is tiny)"):
            lambda x, w, e: x / (x.pow(2).mean(-1, keepdim=True).sqrt() + e) * w,
        N_("the mean is over the last axis (the features of one position), not over the whole tensor"):
            lambda x, w, e: x * (x.pow(2).mean() + e).rsqrt() * w,
        N_("divide by the root of the MEAN of the squares (.mean(-1)), not of their sum: the sum grows with d"):
            lambda x, w, e: x * (x.pow(2).sum(-1, keepdim=True) + e).rsqrt() * w,
        N_("RMSNorm uses the mean of the squares, mean(x^2), not their variance: it does not centre x"):
            lambda x, w, e: x * (x.var(-1, keepdim=True, correction=0) + e).rsqrt() * w,
        N_("add eps to mean(x^2) inside the square root: without it a tiny x is blown up"):
            lambda x, w, e: x * x.pow(2).mean(-1, keepdim=True).rsqrt() * w,
    }
    return compare(fn, _rmsnorm, cases, "rmsnorm", mistakes,
            describe=lambda a: f"x {tuple(a[0].shape)}, eps={a[2]}")


# ------------------------------------------------------------------ rotary positions
def _rotary(q, base):
    cos, sin = rotary_tables(q.shape[-2], q.shape[-1], base=base)  # (T, d_head)
    return apply_rotary(q, cos, sin)


def _rotary_wrong(q, base, *, pairs=False, sign=1.0, start=0, step=2, exponent=-1, reverse=False,
                  swap=False, keep_b=False):
    t, d = q.shape[-2], q.shape[-1]
    c = torch.arange(0, d, step)[: d // 2].float()  # (d/2,)
    inv_freq = base ** (exponent * (c.flip(0) if reverse else c) / d)  # (d/2,)
    ang = torch.outer(torch.arange(start, start + t).float(), inv_freq)  # (T, d/2)
    c, s = (ang.sin(), sign * ang.cos()) if swap else (ang.cos(), sign * ang.sin())
    if pairs:  # rotate adjacent coordinates (0, 1), (2, 3), ...
        a, b = q[..., 0::2], q[..., 1::2]
        return torch.stack([a * c - b * s, a * s + b * c], -1).flatten(-2)
    a, b = q[..., : d // 2], q[..., d // 2:]
    return torch.cat([a * c - b * s, b if keep_b else a * s + b * c], -1)


def check_rotary(fn):
    """Check ``fn(q, base) -> q`` rotated by rotary positions 0..T-1 (rotate-half layout).

    q: (..., T, d_head) with d_head even; at position t = 0 .. T-1, coordinates c and
    c + d_head/2 (c = 0 .. d_head/2 - 1) turn together by the angle ``t * base^(-2c/d_head)``.
    Chapter 11 (positions: chapter 4).
    """
    g = _gen(12)
    cases = [(torch.randn(6, 8, generator=g), 10000.0), (torch.randn(2, 3, 5, 4, generator=g), 100.0),
             (torch.randn(1, 2, generator=g), 10000.0), (torch.randn(9, 64, generator=g), 100000.0)]
    mistakes = {
        N_("pair coordinate c with coordinate c + d_head/2 (rotate-half), not with its neighbour c + 1"):
            lambda q, b: _rotary_wrong(q, b, pairs=True),
        N_("the rotation turns the wrong way: (a, b) -> (a cos - b sin, a sin + b cos)"):
            lambda q, b: _rotary_wrong(q, b, sign=-1.0),
        N_("positions start at 0: the first token is not rotated at all"):
            lambda q, b: _rotary_wrong(q, b, start=1),
        N_("the frequencies are base^(-2c/d_head) for c = 0 .. d_head/2 - 1"):
            lambda q, b: _rotary_wrong(q, b, step=1),
        N_("theta_0 = 1 is the fastest pair and theta_c shrinks with c: base^(-2c/d_head), your frequencies "
           "run the other way"): lambda q, b: _rotary_wrong(q, b, reverse=True),
        N_("both coordinates of a pair change: (a, b) -> (a cos - b sin, a sin + b cos); you kept b as it was"):
            lambda q, b: _rotary_wrong(q, b, keep_b=True),
        N_("cos multiplies the coordinate itself: (a, b) -> (a cos - b sin, a sin + b cos); you swapped cos and sin"):
            lambda q, b: _rotary_wrong(q, b, swap=True),
        N_("the exponent is negative, theta_c = base^(-2c/d_head): pair c turns slower as c grows, not faster"):
            lambda q, b: _rotary_wrong(q, b, exponent=1),
    }
    return compare(fn, _rotary, cases, "rotary", mistakes, atol=1e-4,
            describe=lambda a: f"q {tuple(a[0].shape)}, base={a[1]}")


# ------------------------------------------------------------------ Q4_1
def _q4_1(block):
    d, m = block[:4].view(torch.float16).float()  # two fp16 numbers
    packed = block[4:].long()  # (16,)
    q = torch.cat([packed & 0xF, packed >> 4]).float()  # (32,) low nibbles, then high
    return d * q + m


def _q4_1_wrong(block, *, order="lohi", zero=0, with_m=True, swap=False, signed=False, scale_m=False):
    d, m = block[:4].view(torch.float16).float()
    if swap:
        d, m = m, d
    packed = (block[4:].view(torch.int8) if signed else block[4:]).long()
    lo, hi = packed & 0xF, packed >> 4
    q = {"lohi": torch.cat([lo, hi]), "hilo": torch.cat([hi, lo]),
         "interleaved": torch.stack([lo, hi], 1).flatten()}[order].float() - zero
    return d * (q + m) if scale_m else d * q + (m if with_m else 0)


def _blocks():
    g = _gen(13)
    out = []
    for d, m in [(0.25, -1.0), (0.01, 0.3), (1.5, -10.0), (0.0, 2.0)]:
        head = torch.tensor([d, m], dtype=torch.float16).view(torch.uint8)  # (4,)
        out.append((torch.cat([head, torch.randint(0, 256, (16,), generator=g, dtype=torch.uint8)]),))
    return out


def check_q4_1_block(fn):
    """Check ``fn(block) -> (32,)`` float32 dequantises one Q4_1 block.

    block: (20,) uint8 = fp16 ``d``, fp16 ``m``, 16 bytes of packed 4-bit ``q``;
    ``x_j = d q_j + m`` with the low nibbles as elements 0-15, the high ones 16-31.
    """
    mistakes = {
        N_("the low nibbles are elements 0-15 and the high nibbles 16-31, not the other way round"):
            lambda b: _q4_1_wrong(b, order="hilo"),
        N_("the nibbles are not interleaved: all 16 low nibbles come first, then the 16 high ones"):
            lambda b: _q4_1_wrong(b, order="interleaved"),
        N_("Q4_1 adds the block minimum m: x = d q + m"):
            lambda b: _q4_1_wrong(b, with_m=False),
        N_("Q4_1 has no zero point of 8 (that is Q4_0): q is used as stored, 0..15, then + m"):
            lambda b: _q4_1_wrong(b, zero=8),
        N_("the scale d comes first in the block, then the minimum m"):
            lambda b: _q4_1_wrong(b, swap=True),
        N_("the packed bytes are unsigned (uint8): read as int8, a byte of 128 or more gets a negative "
           "high nibble"): lambda b: _q4_1_wrong(b, signed=True),
        N_("m is added after the scaling: x = d q + m, not d (q + m)"): lambda b: _q4_1_wrong(b, scale_m=True),
    }
    return compare(fn, _q4_1, _blocks(), "q4_1_block", mistakes, atol=1e-6,
            describe=lambda a: _("block {values} (d, m)").format(values=a[0][:4].view(torch.float16).tolist()))


register_question(
    "ch11_cache_vs_weights",
    choices=["none", "multi-head only", "multi-head and grouped-query", "all three"],
    hint=N_("per token and layer the cache holds one key and one value of d_head numbers for each "
            "key/value head; multiply by the 30 layers and 8,192 tokens, and compare with 4 bytes "
            "per parameter."),
    reveals=["ch11_ctx_mha_mib", "ch11_ctx_gqa_mib", "ch11_ctx_mqa_mib"],
)
