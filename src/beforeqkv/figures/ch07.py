"""Figures of chapter 7: how the spread of the scores grows with d_head."""
from __future__ import annotations

import numpy as np

from ..plot import new_figure
from .common import (
    BLUE,
    FONT,
    GREEN,
    MIN_FONT,
    ORANGE,
    RED,
    _done,
)

__all__ = ["scale_figure"]


def scale_figure(d_heads=(16, 256, 1024), seed=0):
    """The spread of q·k grows like sqrt(d_head); dividing by it keeps the softmax soft (chapter 7)."""
    if len(d_heads) != 3 or any(not isinstance(d, int) or d < 1 for d in d_heads):
        raise ValueError(f"d_heads must be three positive ints, got {d_heads!r}")
    fig, axes = new_figure(2, 2, figsize=(7.0, 6.0), height_ratios=[1.15, 1])
    fig.subplots_adjust(hspace=0.62, wspace=0.3, top=0.9, bottom=0.1, left=0.1, right=0.97)
    colors, styles = [BLUE, ORANGE, RED], ["-", "--", ":"]
    big = max(d_heads)
    lim = 3.6 * np.sqrt(big)
    for col, scaled in enumerate((False, True)):
        ax = axes[0, col]
        for d, c, ls in zip(d_heads, colors, styles):
            sd = 1.0 if scaled else np.sqrt(d)
            s = np.linspace(-lim if not scaled else -4.2, lim if not scaled else 4.2, 400)
            ax.plot(s, np.exp(-s**2 / (2 * sd**2)) / (sd * np.sqrt(2 * np.pi)), color=c, lw=2,
                    label=f"$d_\\mathrm{{head}} = {d}$", ls="-" if not scaled else ls)
        ax.set_yticks([])
        ax.tick_params(labelsize=MIN_FONT)
        if scaled:
            ax.set_title("scaled: $q \\cdot k / \\sqrt{d_\\mathrm{head}}$,\nspread 1 for every width",
                         fontsize=FONT)
            ax.set_xlabel("score", fontsize=FONT)
        else:
            ax.set_title("unscaled: $q \\cdot k$, spread $\\sqrt{d_\\mathrm{head}}$",
                         fontsize=FONT)
            ax.set_xlabel("score", fontsize=FONT)
            ax.legend(fontsize=MIN_FONT, frameon=False, loc="upper left")
    z = np.random.default_rng(seed).normal(size=8)      # one query against 8 keys, spread 1
    for col, scaled in enumerate((False, True)):
        ax = axes[1, col]
        s = z if scaled else z * np.sqrt(big)
        a = np.exp(s - s.max())
        a = a / a.sum()
        ax.bar(range(1, 9), a, color=GREEN if scaled else RED)
        ax.set_ylim(0, 1.05)
        ax.set_xticks(range(1, 9), [str(j) for j in range(1, 9)], fontsize=MIN_FONT)
        ax.tick_params(labelsize=MIN_FONT)
        ax.set_xlabel("key $j$", fontsize=FONT)
        ax.set_ylabel("weight $a_j$", fontsize=FONT)
        what = "soft: weight to share" if scaled else "saturated: one key takes all"
        ax.set_title(f"softmax at $d_\\mathrm{{head}} = {big}$,\n{what}", fontsize=FONT)
    return _done(fig, "scale_figure")
