"""Figures of chapter 4: fixed vs content-dependent mixing weights."""
from __future__ import annotations

import numpy as np

from ..plot import new_figure
from .common import (
    BLUE,
    FONT,
    GREY,
    MIN_FONT,
    ORANGE,
    _box,
    _check_tokens,
    _done,
)

__all__ = ["mixing_figure"]


def mixing_figure(n_tokens: int = 5, focus: int = 3, seed: int = 0):
    """All-to-all mixing ``y_i = sum_j w_ij x_j`` (chapters 3-4): lines and the matrix of w_ij."""
    _check_tokens(n_tokens)
    if not isinstance(focus, int) or not 1 <= focus <= n_tokens:
        raise ValueError(f"focus must be an output index from 1 to n_tokens={n_tokens}, got {focus!r}")
    T = n_tokens
    scores = np.random.default_rng(seed).normal(size=(T, T)) * 1.2
    w = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)        # (T, T), rows sum to 1
    fig, (ax, mat) = new_figure(1, 2, figsize=(7.0, 3.6), width_ratios=[1.25, 1])
    ax.set_xlim(0.3, T + 0.7)
    ax.set_ylim(-0.9, 3.2)
    ax.set_axis_off()
    ax.set_title("every $y_i$ reads every $x_j$", fontsize=12)
    i = focus - 1
    for r in range(T):
        for j in range(T):
            hot = r == i
            ax.plot([j + 1, r + 1], [0.45, 2.55], color=ORANGE if hot else "#cccccc",
                    lw=0.5 + 7 * w[r, j] if hot else 0.8, zorder=2 if hot else 1)
    for j in range(T):
        _box(ax, j + 1, 0.2, f"$x_{j + 1}$", w=0.7, h=0.5, color=GREY)
        _box(ax, j + 1, 2.8, f"$y_{j + 1}$", w=0.7, h=0.5, color=ORANGE if j == i else BLUE)
    ax.text((T + 1) / 2, -0.35, f"$y_{focus} = \\sum_j w_{{{focus}j}}\\, x_j$", ha="center",
            va="top", fontsize=FONT, color=ORANGE)
    mat.imshow(w, cmap="Oranges", vmin=0, vmax=1)
    mat.grid(False)
    for r in range(T):
        for j in range(T):
            mat.text(j, r, f"{w[r, j]:.2f}", ha="center", va="center", fontsize=MIN_FONT,
                     fontweight="bold" if r == i else "normal")
    labels = [str(k + 1) for k in range(T)]
    mat.set_xticks(range(T), labels, fontsize=FONT)
    mat.set_yticks(range(T), labels, fontsize=FONT)
    mat.set_xlabel("input $j$", fontsize=FONT)
    mat.set_ylabel("output $i$", fontsize=FONT)
    mat.set_title("$w_{ij}$: each row sums to 1", fontsize=12)
    return _done(fig, "mixing_figure")
