"""Figures of chapter 6: heads, the multi-head shapes, and each head's weights on a ring."""
from __future__ import annotations

import numpy as np

from matplotlib.patches import FancyBboxPatch

from ..i18n import _
from ..plot import COLORS, heatmap, new_figure
from .common import (
    BLUE,
    FILL,
    FONT,
    GREEN,
    GREY,
    MIN_FONT,
    ORANGE,
    RED,
    _arrow,
    _box,
    _canvas,
    _check_tokens,
    _done,
)

__all__ = ["heads_figure", "multihead_figure", "MHA_SHAPES", "ring_head_weights", "ring_accuracy_figure"]


def _grid(ax, x0, y0, size, T, cell_fill, label):
    step = size / T
    for r in range(T):
        for c in range(T):
            ax.add_patch(FancyBboxPatch((x0 + c * step, y0 + (T - 1 - r) * step), step * 0.9, step * 0.9,
                                        boxstyle="square,pad=0", fc=cell_fill(r, c), ec="white", lw=0.5))
    ax.text(x0 + size / 2, y0 - 0.25, label, ha="center", va="top", fontsize=FONT)


def heads_figure(n_heads: int = 2, T: int = 4):
    """One full matrix per pair vs heads with shared low-rank maps W_O^h W_V^h (chapter 6)."""
    _check_tokens(T, 2, 6)
    if not isinstance(n_heads, int) or not 1 <= n_heads <= 3:
        raise ValueError(f"n_heads must be 1, 2 or 3 (to stay legible), got {n_heads!r}")
    fig, axes = _canvas((7.0, 4.4), (0, 10.4), (-1.2, 5.4), ncols=1)
    ax = axes[0, 0]
    ax.text(2.0, 5.1, _("one matrix per pair"), ha="center", fontsize=12, fontweight="bold")
    rng = np.random.default_rng(1)
    shades = rng.uniform(0.25, 0.9, size=(T, T))
    _grid(ax, 0.2, 0.9, 3.6, T, lambda r, c: (0.12, 0.47, 0.71, shades[r, c]),
          _("$M_{ij}$: a $d \\times d$ matrix\nfor each of $T^2$ pairs"))
    ax.text(2.0, 4.75, "$y_i = \\sum_j M_{ij}\\, x_j$", ha="center", fontsize=FONT)
    ax.text(2.0, -0.95, _("$T^2 d^2$ numbers per layer"), ha="center", fontsize=FONT, color=RED)
    ax.plot([4.5, 4.5], [-1.1, 5.3], color="#cccccc", lw=1)
    ax.text(7.5, 5.1, _("{n} heads").format(n=n_heads), ha="center", fontsize=12, fontweight="bold")
    ax.text(7.5, 4.75, "$M_{ij} = \\sum_h a^h_{ij}\\, W_O^h W_V^h$", ha="center", fontsize=FONT)
    row_h = 4.0 / n_heads
    for h in range(n_heads):
        yc = 4.35 - row_h * (h + 0.5)
        size = min(1.25, row_h * 0.62)
        weights = rng.dirichlet(np.ones(T) * 0.4, size=T)
        _grid(ax, 5.0, yc - size / 2 + 0.15, size, T,
              lambda r, c, w=weights: (1.0, 0.5, 0.05, 0.15 + 0.85 * w[r, c]), f"$a^{h + 1}_{{ij}}$")
        ax.text(6.65, yc + 0.1, "×", ha="center", va="center", fontsize=14)
        ax.add_patch(FancyBboxPatch((7.2, yc - 0.05), 1.0, 0.3, boxstyle="square,pad=0",
                                    fc=FILL[GREEN], ec=GREEN))          # W_V^h: (d_head, d), wide
        ax.add_patch(FancyBboxPatch((8.9, yc - 0.5), 0.3, 1.0, boxstyle="square,pad=0",
                                    fc=FILL[BLUE], ec=BLUE))            # W_O^h: (d, d_head), tall
        ax.text(7.7, yc - 0.3, f"$W_V^{h + 1}$", ha="center", va="top", fontsize=FONT)
        ax.text(9.5, yc, f"$W_O^{h + 1}$", ha="left", va="center", fontsize=FONT)
        _arrow(ax, (8.25, yc + 0.1), (8.85, yc + 0.1))
    ax.text(8.3, 4.3, _("shared, low rank"), ha="center", fontsize=FONT, color=GREEN)
    ax.text(7.5, -0.55, _("$a^h_{ij}$: one number per pair"), ha="center", fontsize=FONT, color=ORANGE)
    ax.text(7.5, -0.95, _("$T^2 H$ weights + $H$ shared maps"), ha="center", fontsize=FONT,
            color=GREEN)
    return _done(fig, "heads_figure")


def _stack(ax, x, y, text, w, h, color, depth=2, dx=0.09, dy=0.09):
    """A box with ``depth`` copies behind it: one card per head."""
    for k in range(depth, 0, -1):
        ax.add_patch(FancyBboxPatch((x - w / 2 + k * dx, y - h / 2 + k * dy), w, h, lw=1.0,
                                    boxstyle="round,pad=0,rounding_size=0.08",
                                    fc=FILL[color], ec=color, alpha=0.7))
    return _box(ax, x, y, text, w=w, h=h, color=color)


MHA_SHAPES = [  # (y, shape of the tensor this row produces, for one sequence)
    (9.35, "(T, d_model)"),
    (8.05, "(T, n_heads·d_head)"),
    (6.75, "(n_heads, T, d_head)"),
    (5.45, "(n_heads, T, T)"),
    (4.15, "(n_heads, T, T)"),
    (2.85, "(n_heads, T, d_head)"),
    (1.55, "(T, n_heads·d_head)"),
    (0.35, "(T, d_model)"),
]


def multihead_figure():
    """The data flow of multi-head attention, with the shape after each step (chapter 6)."""
    fig, axes = _canvas((7.0, 7.6), (0, 10), (-0.15, 10.0))
    ax = axes[0, 0]
    xq, xk, xv, bw, bh = 1.25, 3.45, 5.65, 2.0, 0.62
    ax.text(8.75, 9.85, _("shape"), ha="center", va="center", fontsize=FONT, color=GREY,
            fontweight="bold")
    for y, shape in MHA_SHAPES:
        ax.text(8.75, y, shape, ha="center", va="center", fontsize=MIN_FONT,
                family="monospace", color="#333333")
    ax.add_patch(FancyBboxPatch((0.05, 2.3), 6.85, 5.05, boxstyle="round,pad=0,rounding_size=0.15",
                                fc="none", ec=GREY, ls="--", lw=1.2))
    ax.text(0.2, 2.85, _("each head $h$\non its own,\nin parallel"), fontsize=MIN_FONT,
            color=GREY, va="center")
    _box(ax, xk, 9.35, _("$x_i$: the $T$ token vectors"), w=4.2, h=bh, color=GREY)
    for xc, name, vec, idx in [(xq, "Q", "q", "i"), (xk, "K", "k", "j"), (xv, "V", "v", "j")]:
        _arrow(ax, (xk + (xc - xk) * 0.4, 9.04), (xc, 8.05 + bh / 2))
        _box(ax, xc, 8.05, f"${vec}_{idx} = W_{name}\\, x_{idx}$", w=bw, h=bh,
             color=ORANGE if name != "V" else GREEN)
        _arrow(ax, (xc, 8.05 - bh / 2), (xc, 6.75 + bh / 2 + 0.18))
        _stack(ax, xc, 6.75, f"${vec}^h_{idx}$", w=1.2, h=bh,
               color=ORANGE if name != "V" else GREEN)
    ax.text((xq + xk) / 2, 7.5, _("split into\nheads"), fontsize=MIN_FONT, color="#333333",
            ha="center", va="center")
    xs = (xq + xk) / 2
    for xc in (xq, xk):
        _arrow(ax, (xc, 6.75 - bh / 2), (xs + (xc - xs) * 0.5, 5.45 + bh / 2 + 0.18))
    _stack(ax, xs, 5.45, "$s^h_{ij} = q^h_i \\cdot k^h_j \\,/\\, \\sqrt{d_\\mathrm{head}}$",
           w=3.9, h=bh, color=BLUE)
    ax.text(xs + 2.1, 5.95, _("scores"), fontsize=MIN_FONT, color=BLUE, ha="left")
    _arrow(ax, (xs, 5.45 - bh / 2), (xs, 4.15 + bh / 2 + 0.18))
    _stack(ax, xs, 4.15, "$a^h_{ij} = \\operatorname{softmax}_j(s^h_{ij})$", w=3.9, h=bh,
           color=BLUE)
    ax.text(xs + 2.1, 4.65, _("weights"), fontsize=MIN_FONT, color=BLUE, ha="left")
    xr = (xs + xv) / 2 + 0.3
    _arrow(ax, (xs, 4.15 - bh / 2), (xr - 0.9, 2.85 + bh / 2 + 0.18))
    _arrow(ax, (xv, 6.75 - bh / 2), (xr + 1.2, 2.85 + bh / 2 + 0.18), color=GREEN)
    ax.text(xv + 0.12, 4.8, _("values"), fontsize=MIN_FONT, color=GREEN, ha="left")
    _stack(ax, xr, 2.85, _("$r^h_i = \\sum_j a^h_{ij}\\, v^h_j$: weighted sum"), w=4.4, h=bh,
           color=GREEN)
    _arrow(ax, (xr, 2.85 - bh / 2), (xr, 1.55 + bh / 2))
    _box(ax, xr, 1.55, _("concatenate the heads: $[r^1_i \\cdots r^H_i]$"), w=4.8, h=bh,
         color=GREY)
    _arrow(ax, (xr, 1.55 - bh / 2), (xr, 0.35 + bh / 2))
    _box(ax, xr, 0.35, "$y_i = W_O\\, [r^1_i \\cdots r^H_i]$", w=4.8, h=bh, color=RED)
    return _done(fig, "multihead_figure")


def ring_head_weights(weights, items, profile=None, label: str = "", ring_size: int | None = None, axes=None):
    """Each head's attention weights on one ring example, rows and columns in ring order (chapter 6).

    weights: (H, T, T) for one example; items: (T,) ids on a ring of ``ring_size`` (default
    T) positions, position ``id % ring_size``; ``profile`` (H, 3) puts each head's successor/predecessor weights in its
    title. "s" marks each query's successor, "p" its predecessor.
    """
    w = weights.detach().cpu() if hasattr(weights, "detach") else weights
    n_heads, t = w.shape[0], w.shape[-1]
    if w.dim() != 3 or w.shape[1] != t or len(items) != t:
        raise ValueError(f"need weights (H, T, T) and T item ids, got {tuple(w.shape)} and {len(items)} ids")
    if axes is None:
        fig, axes = new_figure(1, n_heads, figsize=(2.3 * n_heads + 0.8, 2.9), squeeze=False)
        axes = axes[0]
    ring = t if ring_size is None else ring_size
    order = (items % ring).argsort()  # sequence positions in ring order
    ids = [str(i) for i in items[order].tolist()]
    for h in range(n_heads):
        title = (_("{label}, head {h}") if label else _("head {h}")).format(label=label, h=h + 1)
        if profile is not None:
            s, p = profile[h][:2].tolist()
            title += "\n" + _("succ {s:.2f} | pred {p:.2f}").format(s=s, p=p)
        heatmap(w[h][order][:, order], xlabels=ids, ylabels=ids, vmin=0, vmax=1, colorbar=False,
                ax=axes[h], title=title)  # (T, T), rows/cols in ring order
        for r in range(t):
            axes[h].text((r + 1) % ring, r, "s", ha="center", va="center", color="red", fontsize=9)
            axes[h].text((r - 1) % ring, r, "p", ha="center", va="center", color="white", fontsize=9)
        axes[h].set_xlabel(_("key (item id)"))
    axes[0].set_ylabel(_("query (item id)"))
    return axes[0].figure


def ring_accuracy_figure(acc, heads, n_params: int, d_attn: int = 16):
    """Held-out accuracy on the successor, the predecessor and both, for models of ``heads``
    heads of width ``d_attn / H`` and ``n_params`` parameters each (chapter 6).
    acc: {H: {"successor": a, "predecessor": a, "both": a}}."""
    fig, ax = new_figure(figsize=(6.4, 3.4))
    groups = [("successor", _("successor")), ("predecessor", _("predecessor")), ("both", _("both correct"))]
    for k, (key, label) in enumerate(groups):
        vals = [acc[H][key] for H in heads]
        xs = [i + (k - 1) * 0.27 for i in range(len(heads))]
        ax.bar(xs, vals, width=0.25, label=label, color=COLORS[k])
        for xx, v in zip(xs, vals):
            ax.text(xx, v, f"{v:.2f}", ha="center", va="bottom", fontsize=9)
    ax.axhline(1 / 8, color="gray", ls="--", lw=1, label=_("chance (one target)"))
    ax.set_xticks(range(len(heads)), [f"H = {H}  (d_head = {d_attn // H})" for H in heads])
    ax.set_ylim(0, 1.3)
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_ylabel(_("held-out accuracy"))
    title = _("Three models of {p:,} parameters each") if len(heads) == 3 else _("{n} models of {p:,} parameters each")
    ax.set_title(title.format(n=len(heads), p=n_params))
    ax.legend(loc="upper center", fontsize=9, ncols=2)
    return fig
