"""Figures of chapter 8: the pre-norm decoder block and the chapters behind each part."""
from __future__ import annotations

from matplotlib.patches import FancyBboxPatch

from ..i18n import N_, _, tr
from ..plot import COLORS, bars, lines, loss_curves, new_figure
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
    tr_math,
)

__all__ = ["block_figure", "BLOCK_PARTS", "mask_figure", "residual_loss_figure", "spread_figure",
           "char_lm_figure", "temperature_figure"]


# The words are marked with N_() for the catalog and translated where drawn (i18n.tr).
BLOCK_PARTS = [  # (y, text, colour, chapters) from bottom to top
    (0.5, N_("token ids"), GREY, ""),
    (1.5, N_("$W_E$[token] + $W_\\mathrm{pos}$[t]"), GREY, N_("ch. 4, 8")),
    (2.7, "LayerNorm", ORANGE, N_("ch. 8")),
    (3.9, N_("causal multi-head attention"), BLUE, N_("ch. 3-8")),
    (5.4, "LayerNorm", ORANGE, N_("ch. 8")),
    (6.6, "MLP: $W_\\mathrm{out}\\,\\mathrm{GELU}(W_\\mathrm{in} x)$", GREEN, N_("ch. 8, 9")),
    (8.1, N_("final LayerNorm"), ORANGE, N_("ch. 8")),
    (9.1, N_("$W_U$: next-token scores"), GREY, N_("ch. 8")),
]
ATTENTION_NOTES = [N_("all-to-all mixing: ch. 3"), N_("weights from content: ch. 4"),
                   N_("queries, keys: ch. 5"), N_("values, heads, $W_O$: ch. 6"),
                   "$1/\\sqrt{d_\\mathrm{head}}$: ch. 7", N_("causal mask: ch. 8")]   # tr_math


def block_figure():
    """The pre-norm decoder, each part labelled with the chapter that motivated it (chapter 8)."""
    fig, axes = _canvas((6.6, 7.4), (-1.6, 8.6), (0, 9.7))
    ax = axes[0, 0]
    xc, rx = 2.4, 0.0       # centre of the boxes, x of the residual stream
    ax.add_patch(FancyBboxPatch((-0.6, 2.15), 6.1, 5.65, boxstyle="round,pad=0,rounding_size=0.15",
                                fc="none", ec=GREY, ls="--", lw=1.2))
    ax.text(5.4, 7.7, _("a block, repeated $L$ times"), fontsize=FONT, color=GREY, va="top", ha="right")
    for y, text, color, ch in BLOCK_PARTS:
        _box(ax, xc, y, tr(text), w=3.6, h=0.62, color=color)   # marked with N_() above
        if ch:
            ax.text(xc + 1.95, y, tr(ch), fontsize=FONT, va="center", color=RED)
    _arrow(ax, (xc, 0.81), (xc, 1.19))      # token ids -> embedding (which starts the stream)
    ax.plot([rx, rx], [1.82, 7.7], color=RED, lw=3, solid_capstyle="butt")   # the residual stream
    ax.plot([rx, xc - 1.8], [1.82, 1.82], color=RED, lw=3)
    ax.text(rx - 0.7, 3.2, _("residual\nstream\n(ch. 8)"), fontsize=FONT, color=RED, ha="right", va="bottom")
    for y_ln, y_sub, y_add in [(2.7, 3.9, 4.75), (5.4, 6.6, 7.45)]:
        _arrow(ax, (rx, y_ln - 0.35), (xc - 1.8, y_ln), color=RED)      # read the stream
        _arrow(ax, (xc, y_ln + 0.31), (xc, y_sub - 0.31))
        ax.plot([xc, xc, rx + 0.2], [y_sub + 0.31, y_add, y_add], color="#444444", lw=1.2)
        _box(ax, rx, y_add, "+", w=0.4, h=0.4, color=RED, fontweight="bold")
    _arrow(ax, (rx, 7.7), (xc - 1.8, 8.1), color=RED)
    _arrow(ax, (xc, 8.41), (xc, 8.79))
    for k, note in enumerate(ATTENTION_NOTES):
        ax.text(5.65, 4.55 - 0.35 * k, tr_math(note), fontsize=MIN_FONT, va="center", color=BLUE)
    ax.set_title(_("A pre-norm decoder block and the chapters behind each part"), fontsize=12)
    return _done(fig, "block_figure")


def mask_figure(peek_parallel, peek_prefix, mask_parallel, mask_prefix, best: float):
    """Loss on fresh sequences without and with the causal mask, evaluated in parallel and
    on prefixes only, against the best possible loss ``best`` (chapter 8)."""
    fig = bars([_("no mask\nparallel"), _("no mask\nprefix only"), _("mask\nparallel"), _("mask\nprefix only")],
               [peek_parallel, peek_prefix, mask_parallel, mask_prefix],
               ylabel=_("loss on fresh sequences (nats)"), title=_("Without a mask, training loss is a lie"),
               colors=[COLORS[1]] * 2 + [COLORS[0]] * 2)
    ax = fig.axes[0]
    ax.axhline(best, color="gray", ls="--", lw=1, label=_("ln 16: the best possible"))
    ax.legend()
    return fig


def residual_loss_figure(hist_res, hist_nores, acc_res: float, acc_nores: float, chance: float):
    """Training loss of 6 blocks on associative recall with and without the residual
    stream, their accuracy in the legend (chapter 8)."""
    return loss_curves({_("with residual (accuracy {a:.2f})").format(a=acc_res): hist_res,
                        _("without residual (accuracy {a:.2f})").format(a=acc_nores): hist_nores},
                       floor=chance, floor_label=_("chance: ln 16"),
                       title=_("6 blocks on associative recall (N = 8)"))


def spread_figure(spread_res, spread_nores):
    """The spread of the token vectors across positions after each block, with and without
    the residual stream (chapter 8)."""
    return lines(list(range(1, len(spread_res) + 1)),
                 {_("with residual"): spread_res, _("without residual"): spread_nores},
                 logy=True, xlabel=_("after block"), ylabel=_("spread across positions (relative)"),
                 title=_("Without residuals, every position becomes one vector"))


def char_lm_figure(hist, bigram_loss: float, uniform_loss: float, val_loss: float):
    """The training loss of the character GPT against the bigram and uniform losses and its
    final validation loss (chapter 8)."""
    fig = loss_curves({_("training loss"): hist}, floor=bigram_loss,
                      floor_label=_("bigram ({loss:.2f})").format(loss=bigram_loss),
                      title=_("A 2-block GPT learns Shakespeare, one character at a time"))
    ax = fig.axes[0]
    ax.axhline(uniform_loss, color="black", ls=":", lw=1, label=_("uniform ({loss:.2f})").format(loss=uniform_loss))
    ax.axhline(val_loss, color=COLORS[2], ls="-.", lw=1,
               label=_("validation at the end ({loss:.2f})").format(loss=val_loss))
    ax.legend()
    return fig


def temperature_figure(labels, probs, temperature: float, sample: str, sample_temperature: float,
                       real_words: float, distinct_words: float, prompt: str = "What sh"):
    """Left: the likeliest next characters after ``prompt`` at ``temperature`` (labels, their
    probabilities); right: a ``sample`` drawn at ``sample_temperature`` with its share of
    real and of distinct words (chapter 8). The sample itself stays as generated."""
    import textwrap

    fig, (ax, ax_text) = new_figure(1, 2, figsize=(9.5, 3.6), width_ratios=[1, 1.4])
    bars(labels, probs, ax=ax, ylim=(0, 1), ylabel=_("probability"), annotate=False,
         colors=[COLORS[0]] * len(labels),
         title=_("next character after '{prompt}' (τ = {t})").format(prompt=prompt, t=temperature))
    ax_text.axis("off")
    wrapped = "\n".join(textwrap.fill(line, 56) for line in sample.split("\n"))
    ax_text.text(0, 1, wrapped, va="top", family="monospace", fontsize=9)
    ax_text.set_title(_("sample at T = {t}: {real:.0%} real words, {distinct:.0%} distinct").format(
        t=sample_temperature, real=real_words, distinct=distinct_words), fontsize=10)
    return fig
