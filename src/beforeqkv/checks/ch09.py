"""Checkers for chapter 9: the MLP written as attention over slots."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..i18n import N_
from ..models.memory import slot_attention
from ._core import compare, register_question

__all__ = ["check_ffn_as_slots", "check_swiglu_slot_weights"]


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
        N_("the slot weights are a softmax here; an MLP uses relu(k_u . x + b_u), not normalised"):
            lambda x, Wi, bi, Wo, bo: slot_attention(x, Wi, Wo.T, bi, normalise="softmax")[0] + bo,
        N_("you left out the slot biases b_u (the threshold inside the ReLU)"):
            lambda x, Wi, bi, Wo, bo: slot_attention(x, Wi, Wo.T)[0] + bo,
        N_("you left out the output bias b_out"):
            lambda x, Wi, bi, Wo, bo: slot_attention(x, Wi, Wo.T, bi)[0],
        N_("the values are the *columns* of W_out (W_out has shape (d_out, m)), not its rows"):
            lambda x, Wi, bi, Wo, bo: slot_attention(x, Wi, Wo, bi)[0] + bo,
        N_("the ReLU is missing: negative slot scores must not count"):
            lambda x, Wi, bi, Wo, bo: (x @ Wi.T + bi) @ Wo.T + bo,
        N_("add the output bias b_out once"):
            lambda x, Wi, bi, Wo, bo: slot_attention(x, Wi, Wo.T, bi)[0] + 2 * bo,
    }
    return compare(fn, _reference, _cases(), "ffn_as_slots", mistakes,
            describe=lambda a: f"x {tuple(a[0].shape)}, W_in {tuple(a[1].shape)}, W_out {tuple(a[3].shape)}")


def _swiglu_weights(x, W_gate, W_in):
    return F.silu(x @ W_gate.T) * (x @ W_in.T)  # (..., m) * (..., m)


def _swiglu_cases():
    g = torch.Generator().manual_seed(11)

    def case(shape, d, m):
        return (torch.randn(*shape, d, generator=g), torch.randn(m, d, generator=g),
                torch.randn(m, d, generator=g))

    return [
        case((3,), 4, 4),  # square (first, so that transposed weights get their hint)
        case((5,), 8, 6),  # fewer slots than input features
        case((1,), 1, 1),  # one slot, width 1
        case((2, 3, 4), 5, 7),  # three batch dimensions: the contract is (..., d)
    ]


def check_swiglu_slot_weights(fn):
    """Check ``fn(x, W_gate, W_in) -> (..., m)`` computes SwiGLU's slot weights ``silu(g_u . x) (w_u . x)``.

    x: (..., d), W_gate and W_in: (m, d) as ``nn.Linear`` stores them (row u belongs to
    slot u). With values v_u = columns of W_out, ``W_out (silu(W_gate x) * W_in x)`` is
    ``sum_u a_u(x) v_u``. Chapter 9, exercise on the gated MLP of chapter 11.
    """
    mistakes = {
        N_("the gate is silu(W_gate x), the *other* factor is linear: you swapped W_gate and W_in"):
            lambda x, Wg, Wi: _swiglu_weights(x, Wi, Wg),
        N_("silu(z) is z * sigmoid(z), not sigmoid(z) (a sigmoid gate is the original GLU)"):
            lambda x, Wg, Wi: torch.sigmoid(x @ Wg.T) * (x @ Wi.T),
        N_("the gate is a silu, not a ReLU"):
            lambda x, Wg, Wi: F.relu(x @ Wg.T) * (x @ Wi.T),
        N_("the linear factor W_in x is missing: SwiGLU multiplies the gate by it"):
            lambda x, Wg, Wi: F.silu(x @ Wg.T),
        N_("the silu is applied to the product; it belongs on the gate alone"):
            lambda x, Wg, Wi: F.silu((x @ Wg.T) * (x @ Wi.T)),
        N_("row u of W_gate and of W_in belongs to slot u: use x @ W.T, not x @ W"):
            lambda x, Wg, Wi: F.silu(x @ Wg) * (x @ Wi),
        N_("the gate is a silu, not GELU"):
            lambda x, Wg, Wi: F.gelu(x @ Wg.T) * (x @ Wi.T),
    }
    return compare(fn, _swiglu_weights, _swiglu_cases(), "swiglu_slot_weights", mistakes,
                   describe=lambda a: f"x {tuple(a[0].shape)}, W_gate {tuple(a[1].shape)}")


register_question(
    "ch9_handwritten_3m_4c",
    digits=2,
    tolerance=0.05,  # the question says "to within 0.05"
    hint=N_("what does the memory output for a fact without a slot, and how often is that right?"),
    reveals=["ch9_hand_3m_4c"],
)

register_question(
    "ch9_wider_keys",
    choices=["lower", "about the same", "higher"],
    hint=N_("count the numbers each slot has to store facts with."),
    reveals=["ch9_wide_32", "ch9_wide_64"],
)
