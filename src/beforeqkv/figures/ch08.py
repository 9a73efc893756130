"""Figures of chapter 8: the pre-norm decoder block and the chapters behind each part."""
from __future__ import annotations

from matplotlib.patches import FancyBboxPatch

from .common import (
    BLUE,
    FONT,
    GREEN,
    GREY,
    MIN_FONT,
    ORANGE,
    RED,
    _arrow,
    _box,
    _canvas,
    _done,
)

__all__ = ["block_figure", "BLOCK_PARTS"]


BLOCK_PARTS = [  # (y, text, colour, chapters) from bottom to top
    (0.5, "token ids", GREY, ""),
    (1.5, "$W_E$[token] + $W_\\mathrm{pos}$[t]", GREY, "ch. 4, 8"),
    (2.7, "LayerNorm", ORANGE, "ch. 8"),
    (3.9, "causal multi-head attention", BLUE, "ch. 3-8"),
    (5.4, "LayerNorm", ORANGE, "ch. 8"),
    (6.6, "MLP: $W_\\mathrm{out}\\,\\mathrm{GELU}(W_\\mathrm{in} x)$", GREEN, "ch. 8, 9"),
    (8.1, "final LayerNorm", ORANGE, "ch. 8"),
    (9.1, "$W_U$: next-token scores", GREY, "ch. 8"),
]
ATTENTION_NOTES = ["all-to-all mixing: ch. 3", "weights from content: ch. 4",
                   "queries, keys: ch. 5", "values, heads, $W_O$: ch. 6",
                   "$1/\\sqrt{d_\\mathrm{head}}$: ch. 7", "causal mask: ch. 8"]


def block_figure():
    """The pre-norm decoder, each part labelled with the chapter that motivated it (chapter 8)."""
    fig, axes = _canvas((6.6, 7.4), (-1.6, 8.6), (0, 9.7))
    ax = axes[0, 0]
    xc, rx = 2.4, 0.0       # centre of the boxes, x of the residual stream
    ax.add_patch(FancyBboxPatch((-0.6, 2.15), 6.1, 5.65, boxstyle="round,pad=0,rounding_size=0.15",
                                fc="none", ec=GREY, ls="--", lw=1.2))
    ax.text(5.4, 7.7, "a block, repeated $L$ times", fontsize=FONT, color=GREY, va="top", ha="right")
    for y, text, color, ch in BLOCK_PARTS:
        _box(ax, xc, y, text, w=3.6, h=0.62, color=color)
        if ch:
            ax.text(xc + 1.95, y, ch, fontsize=FONT, va="center", color=RED)
    _arrow(ax, (xc, 0.81), (xc, 1.19))      # token ids -> embedding (which starts the stream)
    ax.plot([rx, rx], [1.82, 7.7], color=RED, lw=3, solid_capstyle="butt")   # the residual stream
    ax.plot([rx, xc - 1.8], [1.82, 1.82], color=RED, lw=3)
    ax.text(rx - 0.7, 3.2, "residual\nstream\n(ch. 8)", fontsize=FONT, color=RED, ha="right", va="bottom")
    for y_ln, y_sub, y_add in [(2.7, 3.9, 4.75), (5.4, 6.6, 7.45)]:
        _arrow(ax, (rx, y_ln - 0.35), (xc - 1.8, y_ln), color=RED)      # read the stream
        _arrow(ax, (xc, y_ln + 0.31), (xc, y_sub - 0.31))
        ax.plot([xc, xc, rx + 0.2], [y_sub + 0.31, y_add, y_add], color="#444444", lw=1.2)
        _box(ax, rx, y_add, "+", w=0.4, h=0.4, color=RED, fontweight="bold")
    _arrow(ax, (rx, 7.7), (xc - 1.8, 8.1), color=RED)
    _arrow(ax, (xc, 8.41), (xc, 8.79))
    for k, note in enumerate(ATTENTION_NOTES):
        ax.text(5.65, 4.55 - 0.35 * k, note, fontsize=MIN_FONT, va="center", color=BLUE)
    ax.set_title("A pre-norm decoder block and the chapters behind each part", fontsize=12)
    return _done(fig, "block_figure")
