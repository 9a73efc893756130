"""Checkers for chapter 9: the MLP written as attention over slots."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..models.memory import slot_attention
from ._core import compare, register_question

__all__ = ["check_ffn_as_slots"]


def _reference(x, W_in, b_in, W_out, b_out):
    out, _ = slot_attention(x, W_in, W_out.T, b_in)  # keys = rows of W_in, values = columns of W_out
    return out + b_out  # (..., d_out)


def _cases():
    g = torch.Generator().manual_seed(9)

    def case(shape, d, m, d_out):
        return (torch.randn(*shape, d, generator=g), torch.randn(m, d, generator=g),
                torch.randn(m, generator=g), torch.randn(d_out, m, generator=g), torch.randn(d_out, generator=g))

    return [
        case((2, 3), 4, 4, 4),  # square (first, so that a transposed W_out gets its hint)
        case((5,), 8, 6, 4),  # a batch of inputs
        case((1,), 1, 1, 1),  # one slot, width 1
        case((7,), 32, 16, 16),  # the chapter's sizes
        case((2, 3, 4), 5, 3, 2),  # three batch dimensions: the contract is (..., d)
    ]


def check_ffn_as_slots(fn):
    """Check ``fn(x, W_in, b_in, W_out, b_out) -> (..., d_out)`` computes ``sum_u relu(k_u . x + b_u) v_u + b_out``.

    x: (..., d), W_in: (m, d) (rows are keys), b_in: (m,), W_out: (d_out, m) (columns
    are values), b_out: (d_out,), as stored by ``nn.Linear``. Chapter 9.
    """
    mistakes = {
        "the slot weights are a softmax here; an MLP uses relu(k_u . x + b_u), not normalised":
            lambda x, Wi, bi, Wo, bo: slot_attention(x, Wi, Wo.T, bi, normalise="softmax")[0] + bo,
        "you left out the slot biases b_u (the threshold inside the ReLU)":
            lambda x, Wi, bi, Wo, bo: slot_attention(x, Wi, Wo.T)[0] + bo,
        "you left out the output bias b_out":
            lambda x, Wi, bi, Wo, bo: slot_attention(x, Wi, Wo.T, bi)[0],
        "the values are the *columns* of W_out (W_out has shape (d_out, m)), not its rows":
            lambda x, Wi, bi, Wo, bo: slot_attention(x, Wi, Wo, bi)[0] + bo,
        "the ReLU is missing: negative slot scores must not count":
            lambda x, Wi, bi, Wo, bo: (x @ Wi.T + bi) @ Wo.T + bo,
    }
    return compare(fn, _reference, _cases(), "ffn_as_slots", mistakes,
            describe=lambda a: f"x {tuple(a[0].shape)}, W_in {tuple(a[1].shape)}, W_out {tuple(a[3].shape)}")


register_question(
    "ch9_handwritten_4m", 0.30,
    "Only m of the 4m facts have a slot, so a quarter of them are recalled for sure; the other "
    "three quarters mostly light up no slot at all, the output is all zeros and the argmax picks "
    "class 0, which is right for about 1 in 16 of them: 1/4 + 3/4 * 1/16 = 0.30.",
    tolerance=0.08,
)
