"""Figures of chapter 5: rock-paper-scissors and the symmetry of dot-product scores."""
from __future__ import annotations

import numpy as np

from ..i18n import _
from ..plot import COLORS, bars, heatmap, lines, new_figure
from .common import (
    BLUE,
    FONT,
    GREEN,
    RED,
    _arrow,
    _box,
    _done,
)

__all__ = ["symmetry_figure", "self_weight_figure", "variants_figure", "triad_weights_figure"]


def _triad(ax, directed):
    pos = {"rock": (0.0, 1.0), "scissors": (0.87, -0.5), "paper": (-0.87, -0.5)}
    shown = {"rock": _("rock"), "scissors": _("scissors"), "paper": _("paper")}
    for name, (x, y) in pos.items():
        _box(ax, x, y, shown[name], w=0.95, h=0.42, color=BLUE)
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
    names = ["R", "S", "P"]  # as the chapter labels the items (R3 beats S3), in both languages
    ax.imshow(m, cmap="Greens", vmin=0, vmax=1.4)
    ax.grid(False)
    for r in range(3):
        for c in range(3):
            ax.text(c, r, f"{m[r, c]:g}", ha="center", va="center", fontsize=12)
    ax.set_xticks(range(3), names, fontsize=FONT)
    ax.set_yticks(range(3), names, fontsize=FONT)
    ax.set_xlabel(_("key $j$"), fontsize=FONT)
    ax.set_ylabel(_("query $i$"), fontsize=FONT)
    ax.set_title(title, fontsize=FONT)


def symmetry_figure():
    """Asymmetric vs symmetric scores on rock-paper-scissors (chapter 5)."""
    A = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=float)     # row beats column
    fig, axes = new_figure(2, 2, figsize=(6.4, 6.0), width_ratios=[1.3, 1])
    _triad(axes[0, 0], directed=True)
    axes[0, 0].set_title(_("asymmetric: each item reads\nthe item it beats"), fontsize=FONT)
    _matrix(axes[0, 1], A, "$s_{ij} = x_i^\\top A x_j$,\n$A \\neq A^\\top$")
    _triad(axes[1, 0], directed=False)
    axes[1, 0].set_title(_("symmetric: $s_{ij} = s_{ji}$, so both\nends of a pair score the same"),
                         fontsize=FONT)
    _matrix(axes[1, 1], (A + A.T) / 2, _("$\\frac{1}{2}(A + A^\\top)$:\nhalf to each side"))
    return _done(fig, "symmetry_figure")


def _variant(name):
    """A score variant's name (``scores.SCORES``) in the language in force."""
    if name.startswith("QK rank "):
        return _("QK rank {r}").format(r=name.removeprefix("QK rank "))
    return {"raw dot": _("raw dot"), "shared projection": _("shared projection"),
            "symmetric bilinear": _("symmetric bilinear"), "cosine": _("cosine"),
            "full bilinear": _("full bilinear")}.get(name, name)


def self_weight_figure(scores, widths, self_weight, d: int):
    """Left: the dot-product scores (T, T) of T random tokens of width ``d``; right: the mean
    weight each token puts on itself against the width (chapter 5)."""
    fig, (ax1, ax2) = new_figure(1, 2, figsize=(8.4, 3.2))
    labels = [f"x{i}" for i in range(scores.shape[0])]
    heatmap(scores, xlabels=labels, ylabels=labels, ax=ax1, annotate=True,
            title=_("dot-product scores (d = {d})").format(d=d), xlabel=_("key j"), ylabel=_("query i"))
    lines(widths, {_("dot product, {n} tokens").format(n=scores.shape[0]): self_weight}, logx=True, ax=ax2,
          ylim=(0, 1.02), xlabel=_("width d"), ylabel=_("mean weight on itself"),
          title=_("Self-weight grows with d"))
    ax2.axhline(1 / scores.shape[0], color="gray", ls="--", lw=1,
                label=_("uniform (1/{n})").format(n=scores.shape[0]))
    ax2.legend()
    return fig


def variants_figure(variants, accuracy, self_weight, symmetric, chance, hedge_acc, commit_acc):
    """Held-out accuracy and self-weight of each score variant, symmetric ones in red, with
    chance and the hedge and commit accuracies marked (chapter 5); the values are lists in
    the order of ``variants``, ``symmetric`` a list of bools."""
    fig, (ax1, ax2) = new_figure(1, 2, figsize=(9.6, 3.8))
    names = [_variant(v) for v in variants]
    colors = [COLORS[1] if sym else COLORS[0] for sym in symmetric]
    bars(names, accuracy, horizontal=True, colors=colors, ax=ax1, ylabel=_("held-out accuracy"),
         title=_("Accuracy (red: symmetric scores)"), ylim=(0, 1.15))
    for x, label, style in [(chance, _("chance"), ":"), (hedge_acc, _("hedge 9/16"), "--"),
                            (commit_acc, _("commit 17/24"), "-.")]:
        ax1.axvline(x, color="gray", ls=style, lw=1, label=label)
    ax1.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, fontsize=9, frameon=False)
    bars(names, self_weight, horizontal=True, colors=colors, ax=ax2, ylabel=_("mean weight on itself"),
         title=_("Self-weight"), ylim=(0, 1.15))
    ax2.set_yticklabels([])
    return fig


def triad_weights_figure(weights, labels, target_pos):
    """Two trained models' attention weights on one sequence of triads, a red frame on each
    token's target (chapter 5). weights: [(variant, (T, T)), (variant, (T, T))]; labels: T 'item:payload'
    strings; target_pos: the target's position for each query."""
    from matplotlib.patches import Rectangle

    fig, axes = new_figure(1, 2, figsize=(8.4, 3.6))
    for ax, (name, w) in zip(axes, weights):
        heatmap(w, xlabels=labels, ylabels=labels, ax=ax, vmin=0, vmax=1, colorbar=False, annotate=True,
                title=_variant(name), xlabel=_("key j (item:payload)"),
                ylabel=_("query i") if ax is axes[0] else "")
        for row, col in enumerate(target_pos):
            ax.add_patch(Rectangle((col - .5, row - .5), 1, 1, fill=False, ec="red", lw=2))
    return fig
