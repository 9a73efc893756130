"""Figures of chapter 7: how the spread of the scores grows with d_head."""
from __future__ import annotations

import numpy as np

from ..i18n import _
from ..plot import COLORS, lines, loss_curves, new_figure
from .common import (
    BLUE,
    FONT,
    GREEN,
    MIN_FONT,
    ORANGE,
    RED,
    _done,
)

__all__ = ["scale_figure", "saturation_figure", "recall_figure", "softmax_row_figure"]


def scale_figure(d_heads=(16, 256, 1024), seed=0):
    """The spread of q·k grows like sqrt(d_head); dividing by it keeps the softmax soft (chapter 7)."""
    if len(d_heads) != 3 or any(not isinstance(d, int) or d < 1 for d in d_heads):
        raise ValueError(f"d_heads must be three positive ints, got {d_heads!r}")
    fig, axes = new_figure(2, 2, figsize=(7.0, 6.0), height_ratios=[1.15, 1], layout="none")  # placed by hand
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
            ax.set_title(_("scaled: {score},\nspread 1 for every width").format(
                score="$q \\cdot k / \\sqrt{d_\\mathrm{head}}$"), fontsize=FONT)
            ax.set_xlabel(_("score"), fontsize=FONT)
        else:
            ax.set_title(_("unscaled: {score}, spread {spread}").format(
                score="$q \\cdot k$", spread="$\\sqrt{d_\\mathrm{head}}$"), fontsize=FONT)
            ax.set_xlabel(_("score"), fontsize=FONT)
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
        ax.set_xlabel(_("key $j$"), fontsize=FONT)
        ax.set_ylabel(_("weight $a_j$"), fontsize=FONT)
        title = (_("softmax at $d_\\mathrm{{head}} = {d}$,\nsoft: weight to share") if scaled else
                 _("softmax at $d_\\mathrm{{head}} = {d}$,\nsaturated: one key takes all"))
        ax.set_title(title.format(d=big), fontsize=FONT)
    return _done(fig, "scale_figure")


def _curves(unscaled, scaled, unscaled_first=True):
    pairs = [(_("unscaled q·k"), unscaled), (_("scaled q·k/√d"), scaled)]
    return dict(pairs if unscaled_first else pairs[::-1])


def saturation_figure(widths, unscaled, scaled):
    """The share of saturated softmax rows and the median gradient through the softmax
    against the head width, with and without the scale (chapter 7). unscaled, scaled:
    {d: {"frac_saturated": f, "median_grad": g}} (``saturation.saturation_table`` rows)."""
    def curves(key):
        return _curves([unscaled[d][key] for d in widths], [scaled[d][key] for d in widths])

    fig, (ax1, ax2) = new_figure(1, 2, figsize=(8, 3.2))
    lines(list(widths), curves("frac_saturated"), logx=True, xlabel=_("head width d"),
          ylabel=_("rows with max weight > 0.99"), title=_("Softmax saturation"), ylim=(-0.03, 1), ax=ax1)
    lines(list(widths), curves("median_grad"), logx=True, logy=True, xlabel=_("head width d"),
          ylabel=_("median ‖J γ‖"), title=_("Gradient through the softmax"), ax=ax2)
    return fig


def recall_figure(d_heads, acc, hist_scaled, hist_unscaled, n_pairs: int, steps: int, d_loss: int = 1024):
    """Left: held-out recall against d_head, scaled and unscaled (acc: {(d_head, scaled):
    accuracy}); right: the training loss of both at d_head = ``d_loss`` (chapter 7)."""
    import math

    fig, (ax1, ax2) = new_figure(1, 2, figsize=(8, 3.2))
    lines(list(d_heads), _curves([acc[d, False] for d in d_heads], [acc[d, True] for d in d_heads],
                                 unscaled_first=False),
          logx=True, xlabel=_("head width d_head"), ylabel=_("held-out accuracy"), chance=1 / 16,
          title=_("Recall, N = {n}, {steps} SGD steps").format(n=n_pairs, steps=steps), ylim=(0, 1.05), ax=ax1)
    loss_curves({_("scaled, d_head = {d}").format(d=d_loss): hist_scaled,
                 _("unscaled, d_head = {d}").format(d=d_loss): hist_unscaled},
                floor=math.log(16), floor_label=_("chance (ln 16)"), title=_("Training loss"), ax=ax2)
    return fig


def softmax_row_figure(weights, grad: float, d: int, scaled: bool):
    """The softmax weights of one query over its keys at width ``d``, scaled or not; the
    title gives the largest weight and the gradient ‖J γ‖ the row passes back (chapter 7)."""
    fig, ax = new_figure(figsize=(6.4, 2.6))
    ax.bar(range(len(weights)), weights, color=COLORS[0 if scaled else 1])
    ax.set_ylim(0, 1.02)
    ax.set(xlabel=_("key j"), ylabel=_("weight a_j"))
    title = (_("d = {d}, scaled: max weight {w:.4f}, ‖J γ‖ = {g:.1e}") if scaled else
             _("d = {d}, unscaled: max weight {w:.4f}, ‖J γ‖ = {g:.1e}"))
    ax.set_title(title.format(d=d, w=float(max(weights)), g=grad))
    return fig
