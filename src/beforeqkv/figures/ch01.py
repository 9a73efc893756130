"""Figures of chapter 1: one squished state vs every state kept."""
from __future__ import annotations

import numpy as np

from ..i18n import _
from ..plot import COLORS, bars, heatmap, lines, new_figure
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

__all__ = ["memory_figure", "recall_figure", "read_weights_figure", "more_state_figure"]


def memory_figure(T: int = 5):
    """A fixed memory box (chapter 1) vs a memory that keeps every state (chapter 2)."""
    _check_tokens(T, 2, 6)
    xs = [1.0 + 1.3 * t for t in range(T)]
    fig, axes = _canvas((7.0, 5.0), (0, 10.2), (-0.2, 3.3), nrows=2, height_ratios=[2.5, 3.5])
    top, bottom = axes[0, 0], axes[1, 0]
    top.set_ylim(-0.2, 2.3)
    top.set_title(_("Chapter 1 · a fixed memory: one state, overwritten"), fontsize=12)
    bottom.set_title(_("Chapter 2 · keep every state: the memory grows"), fontsize=12)
    for ax in (top, bottom):
        for t, x in enumerate(xs):
            _box(ax, x, 0.3, f"$x_{t + 1}$", w=0.8, h=0.5, color=GREY)
            _arrow(ax, (x, 0.55), (x, 1.05))
    for t, x in enumerate(xs):   # chapter 1: a chain of states, only the last one survives
        _box(top, x, 1.35, f"$h_{t + 1}$", w=0.8, h=0.6, color=BLUE, faded=t < T - 1)
        if t:
            _arrow(top, (xs[t - 1] + 0.4, 1.35), (x - 0.4, 1.35))
    top.text(xs[0] - 0.5, 1.95, _("earlier states: overwritten"), fontsize=FONT, color=GREY, ha="left")
    _box(top, 9.0, 1.35, _("answer"), w=1.3, h=0.6, color=GREEN)
    _arrow(top, (xs[-1] + 0.4, 1.35), (8.35, 1.35))
    top.text(9.0, 0.3, _("memory: a fixed\nsize, any $T$"), ha="center", va="center",
             fontsize=FONT)
    a = np.exp([0.2, 1.8, 0.1, -0.3, 0.5, 0.0][:T])
    a = a / a.sum()
    xm = (xs[0] + xs[-1]) / 2
    _box(bottom, xm, 2.95, _("read $r = \\sum_j a_j h_j$"), w=2.9, h=0.55, color=GREEN)
    _box(bottom, 9.0, 2.95, _("query $q$"), w=1.4, h=0.5, color=ORANGE)
    _arrow(bottom, (8.3, 2.95), (xm + 1.45, 2.95))
    for t, x in enumerate(xs):   # chapter 2: every state kept and read with weights a_j
        _box(bottom, x, 1.35, f"$h_{t + 1}$", w=0.8, h=0.6, color=BLUE)
        if t:
            _arrow(bottom, (xs[t - 1] + 0.4, 1.35), (x - 0.4, 1.35), color=GREY)
        end = (xm + (x - xm) * 0.35, 2.67)
        _arrow(bottom, (x, 1.65), end, color=ORANGE, lw=0.6 + 5 * a[t])
        bottom.text(x + 0.42, 1.85, f"{a[t]:.2f}", ha="left", fontsize=MIN_FONT, color=ORANGE)
    bottom.text(9.0, 1.35, _("weights $a_j$\nsum to 1"), ha="center", va="center", fontsize=FONT,
                color=ORANGE)
    bottom.text(9.0, 0.3, _("memory: $T \\times d$\nnumbers, grows"), ha="center", va="center",
                fontsize=FONT)
    return _done(fig, "memory_figure")


def recall_figure(n_attn, acc_attn, n_lstm, acc_lstm):
    """Held-out accuracy against the number of facts N: one attention read, and the LSTM
    (chapter 1). ``acc_attn``, ``acc_lstm``: {N: accuracy} for the N in ``n_attn``, ``n_lstm``."""
    fig = lines(n_attn, {_("attention (one read)"): [acc_attn[n] for n in n_attn]},
                logx=True, xlabel=_("number of facts N"), ylabel=_("accuracy on held-out examples"),
                title=_("Fixed memory fails as facts grow"), ylim=(0, 1.05))
    ax = fig.axes[0]
    ax.plot(n_lstm, [acc_lstm[n] for n in n_lstm], marker="s", label=_("LSTM (128 numbers of state)"))
    ax.axhline(1 / 16, color="gray", ls="--", lw=1, label=_("chance (1/16)"))
    ax.legend()
    return fig


def read_weights_figure(weights, answer, n_pairs: int):
    """A trained read's weights (examples, N) as a heatmap, a red frame on the stored pair
    whose key matches each example's query (``answer``: one column per row; chapter 1)."""
    from matplotlib.patches import Rectangle

    fig = heatmap(weights, xlabel=_("stored pair j"), ylabel=_("example"), vmin=0, vmax=1,
                  figsize=(6.4, 2.8), title=_("attention weights a_j (N = {n})").format(n=n_pairs))
    for row, col in enumerate(answer):
        fig.axes[0].add_patch(Rectangle((col - .5, row - .5), 1, 1, fill=False, ec="red", lw=2))
    return fig


def more_state_figure(acc_hid, acc_steps, acc_attn: float, n_pairs: int = 8):
    """The LSTM at N = ``n_pairs``: a bigger state (``acc_hid``: {d_hid: accuracy}) and
    more training (``acc_steps``: {steps: accuracy}) next to one attention read (chapter 1)."""
    fig, (ax1, ax2) = new_figure(1, 2, figsize=(8.4, 3.2))
    bars([f"d_hid = {d}" for d in acc_hid], list(acc_hid.values()),
         ylabel=_("accuracy at N = {n}").format(n=n_pairs), title=_("A bigger state (1000 steps)"),
         chance=1 / 16, ylim=(0, 1.05), ax=ax1, colors=[COLORS[0]] * len(acc_hid))
    bars([_("{n} steps").format(n=n) for n in acc_steps], list(acc_steps.values()),
         title=_("More training (d_hid = 64)"), chance=1 / 16, ylim=(0, 1.05), ax=ax2,
         colors=[COLORS[0]] * len(acc_steps))
    for ax in (ax1, ax2):
        ax.axhline(acc_attn, color="black", ls=":", lw=1.5, label=_("attention read, 150 steps"))
        if ax.get_legend():
            ax.get_legend().remove()
    fig.legend(*ax2.get_legend_handles_labels(), loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2,
               frameon=False)
    return fig
