"""How much of a computation must happen in order: sequential depth and timing (chapter 3).

* :func:`sequential_depth` counts the longest chain of operations in the autograd graph
  behind a tensor: no matter how many processors you have, those operations must run
  one after another. A deterministic number, unlike a stopwatch.
* :func:`step_of_each_unit` labels each unit of a stacked (recurrent or all-to-all) network
  with the step at which it can be computed: the picture of chapter 3.
* :func:`time_forward_backward` measures forward + backward time, the minimum over
  repeats (the least disturbed run).

Derived in chapter 3, book/03_red_connections.ipynb.
"""
from __future__ import annotations

import time

import torch

from .._validate import check_positive

__all__ = ["sequential_depth", "step_of_each_unit", "time_forward_backward"]

_LEAF = "AccumulateGrad"  # the node that deposits a gradient into a leaf tensor: not an operation


def sequential_depth(output: torch.Tensor) -> int:
    """Number of operations on the longest path from the leaves to ``output`` in its autograd graph.

    Each node of the graph (``output.grad_fn`` and its ``next_functions``) is one
    operation of the forward pass (a matmul, an add, a tanh, ...); the nodes that only
    accumulate gradients into leaf tensors are not counted. The graph is walked with an
    explicit stack and memoised, so it handles graphs with tens of thousands of nodes
    (a loop RNN at T = 1024) in linear time without hitting Python's recursion limit.

    output: any tensor that has a ``grad_fn`` (computed from tensors requiring grad).
    Examples: ``(a * b).sum()`` has depth 2; the loop RNN of chapter 3 has depth 3T + 2.
    """
    if not isinstance(output, torch.Tensor):
        raise ValueError(f"output must be a torch.Tensor, got {type(output).__name__}")
    root = output.grad_fn
    if root is None:
        raise ValueError(
            "output has no autograd graph (grad_fn is None): compute it from tensors with "
            "requires_grad=True (e.g. a model's parameters) and outside torch.no_grad()"
        )
    depth: dict = {}  # node -> operations on the longest path ending at that node
    stack = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if node in depth:
            continue
        children = [child for child, _ in node.next_functions if child is not None]
        if children_done:
            own = 0 if type(node).__name__ == _LEAF else 1
            depth[node] = own + max((depth[c] for c in children), default=0)
        else:
            stack.append((node, True))
            stack.extend((c, False) for c in children if c not in depth)
    return depth[root]


def step_of_each_unit(n_layers: int, T: int, recurrent: bool) -> torch.Tensor:
    """The step at which each unit of a stacked network can be computed, given unlimited processors.

    Unit (l, t) (layer l, position t) reads the layer below at every position j <= t
    (the all-to-all links) and, if ``recurrent``, also its left neighbour (l, t - 1).
    Its step is 1 + the latest step among its inputs; the inputs (layer 0) are given.
    Returns an int64 tensor (n_layers, T). The largest entry is
    ``n_layers + T - 1`` with recurrence and ``n_layers`` without it.
    """
    check_positive(n_layers=n_layers, T=T)
    steps = torch.zeros(n_layers + 1, T, dtype=torch.int64)  # row 0: the inputs, step 0
    for layer in range(1, n_layers + 1):
        for t in range(T):
            ready = steps[layer - 1, : t + 1].max()  # the layer below, positions j <= t
            if recurrent and t > 0:
                ready = torch.maximum(ready, steps[layer, t - 1])  # the left-to-right link
            steps[layer, t] = ready + 1
    return steps[1:]  # (n_layers, T)


def time_forward_backward(model: torch.nn.Module, x: torch.Tensor, repeats: int = 5, warmup: int = 1,
                          clock: str | None = None) -> float:
    """Seconds for one forward + backward pass of ``model(x).sum()``: the minimum over ``repeats``.

    The minimum is the run least disturbed by other programs. ``clock="cpu"`` counts
    this process's CPU time (robust on a busy machine, meaningful with one thread);
    ``clock="wall"`` counts elapsed time (needed on a GPU, whose work is not CPU time).
    Default: "wall" on CUDA, "cpu" otherwise. x: the model's input, e.g. (B, T, d_model).
    """
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"x must be a torch.Tensor, got {type(x).__name__}")
    for name, val, low in (("repeats", repeats, 1), ("warmup", warmup, 0)):
        if not isinstance(val, int) or isinstance(val, bool) or val < low:
            raise ValueError(f"{name} must be an int >= {low}, got {val!r}")
    if clock is None:
        clock = "wall" if x.device.type == "cuda" else "cpu"
    if clock not in ("cpu", "wall"):
        raise ValueError(f"clock must be 'cpu' or 'wall', got {clock!r}")
    import torch.utils.benchmark as benchmark  # 0.3 s to import: only when timing

    # torch.utils.benchmark's Timer: its default clock synchronises CUDA; on the CPU it takes
    # this process's CPU time. One run per timeit(1), gradients cleared in setup (not timed).
    timer = benchmark.Timer(stmt="model(x).sum().backward()", setup="model.zero_grad(set_to_none=True)",
                            globals={"model": model, "x": x},
                            **({"timer": time.process_time} if clock == "cpu" else {}))
    for _ in range(warmup):
        timer.timeit(1)
    best = min(timer.timeit(1).times[0] for _ in range(repeats))
    model.zero_grad(set_to_none=True)
    return best
