"""Checkers for chapter 3 (book/03_red_connections.ipynb): all-to-all mixing and sequential depth."""
from __future__ import annotations

import torch

from ..i18n import N_
from ._core import compare, register_question

__all__ = ["check_all_to_all_mix", "check_window_mix"]


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
            N_("row i of w holds the weights of output i: y_i = sum_j w_ij x_j. You used w_ji (w transposed)."):
                lambda x, w: _mix(x, w.transpose(-1, -2)),
            N_("every output reads every input: you kept only the diagonal w_ii x_i."):
                lambda x, w: torch.diagonal(w, dim1=-2, dim2=-1).unsqueeze(-1) * x,
            N_("the sum is weighted: multiply each x_j by w_ij before adding."):
                lambda x, w: x.sum(-2, keepdim=True).expand_as(x),
            N_("use the weights as given; do not softmax them here."):
                lambda x, w: _mix(x, torch.softmax(w, dim=-1)),
        },
    )


def _window_weights(T: int, k: int, dtype=torch.float32) -> torch.Tensor:
    """(T, T) weights of a causal moving average over the last k inputs: w_ij = 1/n_i for i-k < j <= i."""
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    w = ((j <= i) & (j > i - k)).to(dtype)  # (T, T) the window
    return w / w.sum(-1, keepdim=True)  # each row sums to 1


def _window_cases():
    g = torch.Generator().manual_seed(3)
    r = lambda *shape: torch.randn(*shape, generator=g)  # noqa: E731
    return [
        (r(6, 2), 3),  # x (T, d), window 3
        (r(5, 3), 1),  # k = 1: every output is its own input
        (r(4, 2), 10),  # k > T: the mean of everything so far
        (r(1, 4), 2),  # T = 1
        (r(2, 7, 3), 2),  # a batch
        (r(2, 3, 5, 2), 4),  # two batch dimensions
    ]


def check_window_mix(fn):
    """Check ``fn(x, k) -> y``: y_i = mean of x_j over the window max(0, i-k+1) <= j <= i; x (..., T, d)."""
    def mean_of(weights):
        return lambda x, k: _mix(x, weights(x.shape[-2], k))

    def noncausal(T, k):  # a window centred on i, reading the future too
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        w = ((j - i).abs() < k).float()
        return w / w.sum(-1, keepdim=True)

    def one_short(T, k):
        if k == 1:
            raise ValueError("a window of 0 inputs: not this mistake")  # the mistake does not apply
        return _window_weights(T, k - 1)

    return compare(
        fn, mean_of(_window_weights), _window_cases(), "window_mix",
        mistakes={
            N_("the window must not reach into the future: output i reads inputs j <= i only."):
                mean_of(noncausal),
            N_("the window holds the last k inputs, i itself included (i-k < j <= i); yours holds k + 1."):
                mean_of(lambda T, k: _window_weights(T, k + 1)),
            N_("the window holds the last k inputs, i itself included (i-k < j <= i); yours holds only k - 1."):
                mean_of(one_short),
            N_("near the start a window holds fewer than k inputs: divide by how many it holds, "
               "so that every row of w sums to 1."):
                mean_of(lambda T, k: _window_weights(T, k) * _window_weights(T, k).ne(0).sum(-1, keepdim=True) / k),
            N_("every output reads all the inputs before it: use only the last k."):
                mean_of(lambda T, k: _window_weights(T, T)),
        },
        describe=lambda a: f"x {tuple(a[0].shape)}, k={a[1]}",
    )


register_question(
    "ch3_steps_picture",
    digits=0,
    hint=N_("draw a small grid (2 layers by 4 tokens, as in the figure), find the rule for the last "
            "unit's step, then apply it to 6 layers by 100 tokens."),
    reveals=["ch3_steps_deep"],
)
register_question(
    "ch3_depth_stack",
    digits=0,
    hint=N_("depth counts operations that must wait for each other, not how big each operation is; "
            "what must wait for what in a stack?"),
    reveals=["ch3_depth_stack_ratio"],
)
