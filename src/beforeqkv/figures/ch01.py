"""Figures of chapter 1: one squished state vs every state kept."""
from __future__ import annotations

import numpy as np

from .common import (
    BLUE,
    FONT,
    GREEN,
    GREY,
    MIN_FONT,
    ORANGE,
    _arrow,
    _box,
    _canvas,
    _check_tokens,
    _done,
)

__all__ = ["memory_figure"]


def memory_figure(n_tokens: int = 5):
    """A fixed memory box (chapter 1) vs a memory that keeps every state (chapter 2)."""
    _check_tokens(n_tokens, 2, 6)
    T, xs = n_tokens, [1.0 + 1.3 * t for t in range(n_tokens)]
    fig, axes = _canvas((7.0, 5.0), (0, 10.2), (-0.2, 3.3), nrows=2, height_ratios=[2.5, 3.5])
    top, bottom = axes[0, 0], axes[1, 0]
    top.set_ylim(-0.2, 2.3)
    top.set_title("Chapter 1 · a fixed memory: one state, overwritten", fontsize=12)
    bottom.set_title("Chapter 2 · keep every state: the memory grows", fontsize=12)
    for ax in (top, bottom):
        for t, x in enumerate(xs):
            _box(ax, x, 0.3, f"$x_{t + 1}$", w=0.8, h=0.5, color=GREY)
            _arrow(ax, (x, 0.55), (x, 1.05))
    for t, x in enumerate(xs):   # chapter 1: a chain of states, only the last one survives
        _box(top, x, 1.35, f"$h_{t + 1}$", w=0.8, h=0.6, color=BLUE, faded=t < T - 1)
        if t:
            _arrow(top, (xs[t - 1] + 0.4, 1.35), (x - 0.4, 1.35))
    top.text(xs[0] - 0.5, 1.95, "earlier states: overwritten", fontsize=FONT, color=GREY, ha="left")
    _box(top, 9.0, 1.35, "answer", w=1.3, h=0.6, color=GREEN)
    _arrow(top, (xs[-1] + 0.4, 1.35), (8.35, 1.35))
    top.text(9.0, 0.3, "memory: a fixed\nsize, any $T$", ha="center", va="center",
             fontsize=FONT)
    a = np.exp([0.2, 1.8, 0.1, -0.3, 0.5, 0.0][:T])
    a = a / a.sum()
    xm = (xs[0] + xs[-1]) / 2
    _box(bottom, xm, 2.95, "read $r = \\sum_j a_j h_j$", w=2.9, h=0.55, color=GREEN)
    _box(bottom, 9.0, 2.95, "query $q$", w=1.4, h=0.5, color=ORANGE)
    _arrow(bottom, (8.3, 2.95), (xm + 1.45, 2.95))
    for t, x in enumerate(xs):   # chapter 2: every state kept and read with weights a_j
        _box(bottom, x, 1.35, f"$h_{t + 1}$", w=0.8, h=0.6, color=BLUE)
        if t:
            _arrow(bottom, (xs[t - 1] + 0.4, 1.35), (x - 0.4, 1.35), color=GREY)
        end = (xm + (x - xm) * 0.35, 2.67)
        _arrow(bottom, (x, 1.65), end, color=ORANGE, lw=0.6 + 5 * a[t])
        bottom.text(x + 0.42, 1.85, f"{a[t]:.2f}", ha="left", fontsize=MIN_FONT, color=ORANGE)
    bottom.text(9.0, 1.35, "weights $a_j$\nsum to 1", ha="center", va="center", fontsize=FONT,
                color=ORANGE)
    bottom.text(9.0, 0.3, "memory: $T \\times d$\nnumbers, grows", ha="center", va="center",
                fontsize=FONT)
    return _done(fig, "memory_figure")
