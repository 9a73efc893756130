"""Figures of chapter 10: the post-norm block, a real encoder's heads, their QK asymmetry and OV writes."""
from __future__ import annotations

import math
from typing import Sequence

import torch
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from ..i18n import _
from .. import plot

__all__ = ["post_norm_block", "attention_grid", "attention_head", "qk_asymmetry", "head_contributions",
           "similarity_matrix"]


def _check_square(weights: torch.Tensor, tokens: Sequence[str], what: str) -> None:
    if weights.dim() < 2 or weights.shape[-1] != weights.shape[-2] or weights.shape[-1] != len(tokens):
        raise ValueError(f"{what}: weights {tuple(weights.shape)} do not fit {len(tokens)} tokens (need (..., T, T))")


def attention_head(weights: torch.Tensor, tokens: Sequence[str], title: str = "", ax=None,
                   layer: int | None = None, head: int | None = None, ratio: float | None = None):
    """One head's attention weights (T, T), rows = queries, columns = keys, tokens on both axes.

    Without ``title``, ``layer`` and ``head`` (and the head's QK asymmetry ``ratio``) make one."""
    _check_square(weights, tokens, "attention_head")
    if not title and layer is not None and head is not None:
        title = _("layer {layer}, head {head}").format(layer=layer, head=head)
        if ratio is not None:
            title += f" (ρ = {float(ratio):.2f})"
    fig = plot.heatmap(weights, xlabels=list(tokens), ylabels=list(tokens), vmin=0, vmax=1, cmap="Blues",
                       xlabel=_("key (read from)"), ylabel=_("query (reads)"), title=title, ax=ax,
                       figsize=(5.2, 4.4))
    return fig


def attention_grid(weights: torch.Tensor, tokens: Sequence[str], layer: int, ncols: int = 4):
    """Every head of one layer, weights (H, T, T), in a grid; token labels on the outer panels."""
    _check_square(weights, tokens, "attention_grid")
    n_heads = weights.shape[0]
    nrows = math.ceil(n_heads / ncols)
    fig, axes = plot.new_figure(nrows, ncols, figsize=(2.6 * ncols, 2.6 * nrows + 0.6), squeeze=False)
    for h in range(nrows * ncols):
        ax = axes[h // ncols][h % ncols]
        if h >= n_heads:
            ax.axis("off")
            continue
        ax.imshow(weights[h].detach().cpu().numpy(), cmap="Blues", vmin=0, vmax=1, aspect="auto")
        ax.grid(False)
        ax.set_title(_("head {h}").format(h=h), fontsize=9)
        ticks = range(len(tokens))
        ax.set_xticks(ticks, list(tokens) if h // ncols == nrows - 1 else [], rotation=90, fontsize=9)
        ax.set_yticks(ticks, list(tokens) if h % ncols == 0 else [], fontsize=9)
    title = _("layer {layer}: attention weights of each head (rows = queries, columns = keys)")
    fig.suptitle(title.format(layer=layer), fontsize=10)
    return fig


def qk_asymmetry(ratios: torch.Tensor, random_ratio: float | None = None):
    """Per-head ``||A - A^T|| / ||A||`` of ``A = W_Q^h^T W_K^h``, ratios (n_layers, n_heads)."""
    if ratios.dim() != 2:
        raise ValueError(f"ratios must be (n_layers, n_heads), got {tuple(ratios.shape)}")
    n_layers, n_heads = ratios.shape
    fig, (ax1, ax2) = plot.new_figure(1, 2, figsize=(9.5, 3.8), gridspec_kw={"width_ratios": [2.2, 1]})
    plot.heatmap(ratios, xlabels=[str(h) for h in range(n_heads)], ylabels=[str(i) for i in range(n_layers)],
                 vmin=0, vmax=2, cmap="coolwarm", annotate=True, xlabel=_("head"), ylabel=_("layer"),
                 title=_("||A − Aᵀ|| / ||A|| per head"), ax=ax1)
    for t in ax1.texts:  # the per-head numbers, legible at the page's width
        t.set_fontsize(9)
        t.set_color("black")  # every ratio in [0, 2] sits on a light-to-mid colour
    values = ratios.flatten().cpu().numpy()
    ax2.hist(values, bins=16, range=(0, 2), color=plot.COLORS[0])
    for x, label in ((0, _("symmetric")), (2, _("antisymmetric"))):
        ax2.axvline(x, color="gray", lw=1, ls=":")
        ax2.text(x + (0.04 if x == 0 else -0.04), ax2.get_ylim()[1] * 0.5, label, fontsize=9, rotation=90,
                 ha="left" if x == 0 else "right", va="center")
    if random_ratio is not None:
        ax2.axvline(random_ratio, color="black", lw=1, ls="--", label=_("random W_Q, W_K"))
        ax2.legend(fontsize=9, loc="upper left")
    ax2.set(xlabel="||A − Aᵀ|| / ||A||", ylabel=_("heads"), title=_("all {n} heads").format(n=values.size),
            xlim=(-0.05, 2.05))
    return fig


def head_contributions(norms: torch.Tensor, tokens: Sequence[str], layer: int):
    """Size of each head's OV contribution at each token, norms (n_heads, T)."""
    if norms.dim() != 2 or norms.shape[1] != len(tokens):
        raise ValueError(f"norms {tuple(norms.shape)} do not fit {len(tokens)} tokens (need (n_heads, T))")
    return plot.heatmap(norms, xlabels=list(tokens), ylabels=[_("head {h}").format(h=h) for h in range(norms.shape[0])],
                        cmap="magma", xlabel=_("token"),
                        title=_("layer {layer}: size of each head's write into the residual stream").format(
                            layer=layer), figsize=(6.4, 4.2))


def similarity_matrix(cosines: torch.Tensor, labels: Sequence[str]):
    """Cosine similarities (N, N) of sentence embeddings, annotated."""
    if cosines.dim() != 2 or cosines.shape[0] != cosines.shape[1] or cosines.shape[0] != len(labels):
        raise ValueError(f"cosines {tuple(cosines.shape)} do not fit {len(labels)} labels (need (N, N))")
    numbers = [str(i + 1) for i in range(len(labels))]
    fig = plot.heatmap(cosines, xlabels=numbers, ylabels=[f"{n}  {lab}" for n, lab in zip(numbers, labels)],
                       vmin=-0.2, vmax=1, cmap="viridis", annotate=True,
                       title=_("cosine similarity of sentence embeddings"), figsize=(7.0, 4.2))
    for t in fig.axes[0].texts:  # the cosines, legible at the page's width
        t.set_fontsize(9)
    return fig


_STREAM, _BOX, _EDGE = plot.COLORS[1], "#dbe9f6", plot.COLORS[0]
_NORM_FILL, _NORM_EDGE = "#fde6cf", plot.COLORS[3]


def _panel(ax, post_norm: bool) -> None:
    """One block: the residual stream (red, left), attention and MLP, where the norms sit."""
    ax.set_xlim(-1.3, 4.0)
    ax.set_axis_off()
    rx, xc = 0.0, 2.35  # the residual stream, the centre of the sublayers

    def box(y, text, norm=False, w=3.0):
        ax.add_patch(FancyBboxPatch((xc - w / 2, y - 0.3), w, 0.6, boxstyle="round,pad=0,rounding_size=0.08",
                                    fc=_NORM_FILL if norm else _BOX, ec=_NORM_EDGE if norm else _EDGE, lw=1.2))
        ax.text(xc, y, text, ha="center", va="center", fontsize=10)

    def arrow(a, b, color="#444444"):
        ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=11, color=color, lw=1.2,
                                     shrinkA=0, shrinkB=0))

    def plus(y):
        ax.add_patch(FancyBboxPatch((rx - 0.2, y - 0.2), 0.4, 0.4, boxstyle="round,pad=0,rounding_size=0.08",
                                    fc="white", ec=_STREAM, lw=1.4, zorder=3))
        ax.text(rx, y, "+", ha="center", va="center", fontsize=11, fontweight="bold", zorder=4)

    ax.text(rx, 0.0, "x", ha="center", va="center", fontsize=11)
    ax.set_ylim(-0.6, 8.6)
    attention = _("multi-head attention\n(no causal mask)") if post_norm else _("causal multi-head\nattention")
    subs = [(attention, "norm_attn"), ("MLP  (GELU)", "norm_mlp")]
    y0 = 0.5
    for k, (name, norm) in enumerate(subs):
        base = y0 + 3.6 * k
        if post_norm:  # the sublayer reads the stream itself; the norm sits ON the stream, after the +
            ax.plot([rx, rx], [base, base + 1.9], color=_STREAM, lw=3)
            ax.plot([rx, xc - 1.5], [base + 0.35, base + 0.35], color="#444444", lw=1.2)
            arrow((xc - 1.5, base + 0.35), (xc - 1.5, base + 0.7))
            box(base + 1.0, name)
            ax.plot([xc, xc, rx + 0.2], [base + 1.3, base + 1.9, base + 1.9], color="#444444", lw=1.2)
            plus(base + 1.9)
            ax.plot([rx, rx], [base + 2.1, base + 2.5], color=_STREAM, lw=3)
            ax.add_patch(FancyBboxPatch((rx - 1.25, base + 2.5), 2.5, 0.55, boxstyle="round,pad=0,rounding_size=0.08",
                                        fc=_NORM_FILL, ec=_NORM_EDGE, lw=1.2, zorder=3))
            ax.text(rx, base + 2.77, f"LayerNorm ({norm})", ha="center", va="center", fontsize=10, zorder=4)
            ax.plot([rx, rx], [base + 3.05, base + 3.6], color=_STREAM, lw=3)
        else:  # pre-norm: the norm is on the branch, the stream runs straight through
            ax.plot([rx, rx], [base, base + 3.6], color=_STREAM, lw=3)
            ax.plot([rx, xc - 1.5], [base + 0.35, base + 0.35], color="#444444", lw=1.2)
            arrow((xc - 1.5, base + 0.35), (xc - 1.5, base + 0.7))
            box(base + 1.0, f"LayerNorm ({norm})", norm=True)
            arrow((xc, base + 1.3), (xc, base + 1.75))
            box(base + 2.05, name)
            ax.plot([xc, xc, rx + 0.2], [base + 2.35, base + 2.95, base + 2.95], color="#444444", lw=1.2)
            plus(base + 2.95)
    arrow((rx, y0 + 7.2), (rx, y0 + 7.6), color=_STREAM)
    ax.text(rx, y0 + 7.8, _("x (next block)"), ha="center", va="center", fontsize=11)
    formula = ("x = LN(x + attn(x))\nx = LN(x + mlp(x))" if post_norm else
               "x = x + attn(LN(x))\nx = x + mlp(LN(x))")
    ax.text(xc + 1.6, 0.0, formula, ha="right", va="center", fontsize=10, family="monospace")
    ax.set_title(_("post-norm (BERT, MiniLM)") if post_norm else _("pre-norm (chapter 8, GPT-2)"), fontsize=11)


def post_norm_block():
    """Chapter 8's pre-norm block next to BERT's post-norm block: where the LayerNorms sit (chapter 10)."""
    fig, axes = plot.new_figure(1, 2, figsize=(7.0, 5.6))
    _panel(axes[0], post_norm=False)
    _panel(axes[1], post_norm=True)
    fig.supxlabel(_("red: the residual stream; orange: LayerNorm (MiniLM: eps 1e-12)"),
                  fontsize=10, color="#444444")
    fig.alt_text = POST_NORM_ALT
    return fig


POST_NORM_ALT = (
    "Two block diagrams side by side, each a red residual stream going up from x to the next block "
    "with two branches, multi-head attention and the GELU MLP, whose outputs are added back with a "
    "plus. Left, pre-norm (chapter 8, GPT-2): each branch starts with its LayerNorm and the stream "
    "itself is never normalised, x = x + attn(LN(x)), x = x + mlp(LN(x)). Right, post-norm (BERT, "
    "MiniLM): each branch reads the stream directly and the LayerNorm sits on the stream right after "
    "each plus, x = LN(x + attn(x)), x = LN(x + mlp(x)).")
