"""Figures of chapter 5: rock-paper-scissors and the symmetry of dot-product scores."""
from __future__ import annotations

import numpy as np

from ..plot import new_figure
from .common import (
    BLUE,
    FONT,
    GREEN,
    RED,
    _arrow,
    _box,
    _done,
)

__all__ = ["symmetry_figure"]


def _triad(ax, directed):
    pos = {"rock": (0.0, 1.0), "scissors": (0.87, -0.5), "paper": (-0.87, -0.5)}
    for name, (x, y) in pos.items():
        _box(ax, x, y, name, w=0.95, h=0.42, color=BLUE)
    for a, b in [("rock", "scissors"), ("scissors", "paper"), ("paper", "rock")]:
        (x0, y0), (x1, y1) = pos[a], pos[b]
        d = np.array([x1 - x0, y1 - y0]) / np.hypot(x1 - x0, y1 - y0)
        start, end = np.array([x0, y0]) + 0.42 * d, np.array([x1, y1]) - 0.42 * d
        _arrow(ax, start, end, color=GREEN if directed else RED, lw=2,
               style="-|>" if directed else "<|-|>", rad=0.0)
    ax.set_xlim(-1.5, 1.5)
    ax.set_ylim(-1.0, 1.45)
    ax.set_aspect("equal")
    ax.set_axis_off()


def _matrix(ax, m, title):
    names = ["R", "S", "P"]
    ax.imshow(m, cmap="Greens", vmin=0, vmax=1.4)
    ax.grid(False)
    for r in range(3):
        for c in range(3):
            ax.text(c, r, f"{m[r, c]:g}", ha="center", va="center", fontsize=12)
    ax.set_xticks(range(3), names, fontsize=FONT)
    ax.set_yticks(range(3), names, fontsize=FONT)
    ax.set_xlabel("key $j$", fontsize=FONT)
    ax.set_ylabel("query $i$", fontsize=FONT)
    ax.set_title(title, fontsize=FONT)


def symmetry_figure():
    """Asymmetric vs symmetric scores on rock-paper-scissors (chapter 5)."""
    A = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=float)     # row beats column
    fig, axes = new_figure(2, 2, figsize=(6.4, 6.0), width_ratios=[1.3, 1])
    _triad(axes[0, 0], directed=True)
    axes[0, 0].set_title("asymmetric: each item reads\nthe item it beats", fontsize=FONT)
    _matrix(axes[0, 1], A, "$s_{ij} = x_i^\\top A x_j$,\n$A \\neq A^\\top$")
    _triad(axes[1, 0], directed=False)
    axes[1, 0].set_title("symmetric: $s_{ij} = s_{ji}$, so both\nends of a pair score the same",
                         fontsize=FONT)
    _matrix(axes[1, 1], (A + A.T) / 2, "$\\frac{1}{2}(A + A^\\top)$:\nhalf to each side")
    return _done(fig, "symmetry_figure")
