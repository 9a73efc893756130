"""Checkers for chapter 3 (book/03_red_connections.ipynb): all-to-all mixing and sequential depth."""
from __future__ import annotations

import torch

from ._core import compare, register_question

__all__ = ["check_all_to_all_mix"]


def _mix(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """y_i = sum_j w_ij x_j: x (..., T, d), w (..., T, T) -> (..., T, d)."""
    return torch.einsum("...ij,...jd->...id", w, x)  # (..., T, d)


def _cases():
    g = torch.Generator().manual_seed(4)
    r = lambda *shape: torch.randn(*shape, generator=g)  # noqa: E731
    return [
        (r(4, 3), r(4, 4)),  # x (T, d), w (T, T), not symmetric
        (r(1, 5), r(1, 1)),  # T = 1: y_1 = w_11 x_1
        (r(6, 1), r(6, 6)),  # d = 1
        (r(2, 5, 3), r(2, 5, 5)),  # a batch: one weight matrix per example
        (r(2, 3, 4, 2), r(2, 3, 4, 4)),  # two batch dimensions: the contract is (..., T, d)
    ]


def check_all_to_all_mix(fn):
    """Check ``fn(x, w) -> y`` with ``y_i = sum_j w_ij x_j``: x (..., T, d), w (..., T, T) -> (..., T, d)."""
    return compare(
        fn, _mix, _cases(), "all_to_all_mix",
        mistakes={
            "row i of w holds the weights of output i: y_i = sum_j w_ij x_j. You used w_ji (w transposed).":
                lambda x, w: _mix(x, w.transpose(-1, -2)),
            "every output reads every input: you kept only the diagonal w_ii x_i.":
                lambda x, w: torch.diagonal(w, dim1=-2, dim2=-1).unsqueeze(-1) * x,
            "the sum is weighted: multiply each x_j by w_ij before adding.":
                lambda x, w: x.sum(-2, keepdim=True).expand_as(x),
            "use the weights as given; do not softmax them here.":
                lambda x, w: _mix(x, torch.softmax(w, dim=-1)),
        },
    )


register_question(
    "ch3_steps_picture", 105,
    "With recurrence, unit (layer l, position t) must wait for its left neighbour and for the "
    "layer below, so the last unit is ready at step n_tokens + n_layers - 1 = 100 + 6 - 1 = 105. "
    "Without recurrence every layer is one step: 6 steps, however long the sequence.",
    tolerance=0.5,
    hint="draw a small grid (2 layers by 4 tokens, as in the figure), find the rule for the last "
         "unit's step, then apply it to 6 layers by 100 tokens.",
    reveals=["ch3_steps_deep"],
)
register_question(
    "ch3_depth_stack", 4,
    "Each layer is a fixed recipe of matrix products, a softmax and reshapes, and it must wait "
    "for the layer below: 4 layers are 4 recipes in a row. A longer sequence makes each "
    "operation bigger, not the recipe longer, so going from 1024 to 2048 tokens changes "
    "nothing: 4 times one layer's depth.",
    tolerance=0.5,
    hint="depth counts operations that must wait for each other, not how big each operation is; "
         "what must wait for what in a stack?",
    reveals=["ch3_depth_stack_ratio"],
)
