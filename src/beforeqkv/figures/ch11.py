"""Figures for chapter 11: the architecture recap, one head's attention, next-token bars."""
from __future__ import annotations

from matplotlib.patches import FancyBboxPatch

from .. import plot
from ..i18n import N_, _, tr

__all__ = ["architecture_figure", "attention_figure", "next_token_figure", "ARCHITECTURE_ALT"]

# (label, chapter note, y centre); drawn bottom (tokens) to top (next token). The residual
# stream is drawn as a line on the left (as in chapter 8's figure), not as boxes.
# The words are marked with N_() for the catalog and translated where drawn (i18n.tr).
_PARTS = [
    (N_("token ids (byte-level BPE, no BOS)"), N_("ch 8: a sequence of tokens; ch 11: bytes → BPE"), 0.5),
    (N_("embedding  W_E"), N_("ch 8: W_E; no W_pos (positions live in attention)"), 1.5),
    (N_("RMSNorm (gain only)"), N_("ch 8: pre-norm; ch 11: no centring, no bias"), 2.6),
    (N_("attention: 9 query heads, 3 key/value heads"), N_("ch 2: keep every state; ch 4: weights from tokens"),
     3.7),
    (N_("  scores q·k/√d_head, rotary positions on q, k"), N_("ch 5: queries ≠ keys; ch 7: 1/√d; ch 8: RoPE"), 4.5),
    (N_("  causal mask, KV cache shared by 3 query heads"), N_("ch 6: heads; ch 8: mask, cache; ch 11: GQA"), 5.3),
    (N_("RMSNorm (gain only)"), N_("ch 8: pre-norm; ch 11: RMSNorm"), 7.0),
    (N_("MLP: W_out (silu(W_gate x) ⊙ W_in x), d_mlp = 1536"),
     N_("ch 9: slots; keys = rows of W_gate, values = cols of W_out"), 8.0),
    (N_("final RMSNorm"), N_("ch 8: final norm"), 10.0),
    (N_("unembedding  W_U = W_E (tied, as in 2017)"), N_("ch 8: W_U; ch 11: tied to W_E"), 11.0),
    (N_("softmax → next token (greedy or sampled)"), N_("ch 8: autoregressive generation"), 12.0),
]
_ADDS = [(6.15, 5.6), (8.9, 8.3)]  # (y of the "+" on the stream, top of the sublayer it adds)
_STREAM_X, _BOX_X = 0.35, 0.8
_FONT = 11  # points: the figure is 10 inches wide and shown about 690 px wide, so about 10.5 px


def _wrap(note: str, width: int = 46) -> str:
    """A chapter note in lines of at most ``width`` characters (at its '; ' or spaces), so the
    notes column stays inside the figure at the larger font."""
    import textwrap
    return "\n".join(textwrap.wrap(note, width, break_long_words=False)) if len(note) > width else note

ARCHITECTURE_ALT = ("A vertical diagram of SmolLM2: token ids and the embedding start a residual stream, drawn "
                    "as a line on the left; a block repeated 30 times reads it twice, through RMSNorm into "
                    "grouped-query attention with rotary positions and a causal mask, and through RMSNorm into "
                    "a SwiGLU MLP, each adding its output back to the stream; then a final RMSNorm, the "
                    "unembedding tied to the embedding and a softmax. Each part is labelled with the chapter "
                    "that motivated it; rotary positions with chapter 8. All linear weights are stored in "
                    "4 bits (Q4_1), the embedding in 8 bits (Q8_0).")


def architecture_figure(n_layers: int = 30):
    """The final architecture, every part labelled by the chapter that motivated it (chapter 11)."""
    fig, ax = plot.new_figure(figsize=(10, 8.4))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 12.7)
    ax.axis("off")
    block = FancyBboxPatch((0.1, 2.15), 5.2, 7.2, boxstyle="round,pad=0.05", fc="#f3f3f3", ec="#999", lw=1)
    ax.add_patch(block)
    ax.text(5.3, 1.9, _("× {n} blocks").format(n=n_layers), fontsize=_FONT - 1, color="#555", va="center", ha="right")
    colours = {"attention": "#dbe9f6", "MLP": "#fde3c8", "RMSNorm": "#e6f2dd"}
    red, sx = "#c0392b", _STREAM_X
    for label, note, y in _PARTS:
        sub = label.startswith("  ")
        colour = colours["attention"] if sub else next(
            (c for key, c in colours.items() if key in label), "#eeeeee")
        x0, w = (_BOX_X + 0.25, 4.2) if sub else (_BOX_X, 4.45)
        ax.add_patch(FancyBboxPatch((x0, y - 0.3), w, 0.6, boxstyle="round,pad=0.03", fc=colour, ec="#666", lw=0.8))
        ax.text(x0 + 0.1, y, tr(label).strip(), va="center", fontsize=_FONT)   # marked with N_() above
        ax.text(5.5, y, _wrap(tr(note)), va="center", fontsize=_FONT - 1, color="#333", linespacing=1.1)

    def arrow(start, end, colour="#444"):
        ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="->", color=colour, lw=0.9))

    xc = _BOX_X + 2.2
    arrow((xc, 0.82), (xc, 1.18))  # token ids -> embedding
    ax.plot([sx, sx], [1.5, 9.65], color=red, lw=3, solid_capstyle="butt")  # the residual stream
    ax.plot([sx, _BOX_X - 0.03], [1.5, 1.5], color=red, lw=3)  # the embedding starts it
    for y_norm, y_sub in [(2.6, 3.7), (7.0, 8.0)]:  # read the stream: norm, then the sublayer
        arrow((sx, y_norm - 0.45), (_BOX_X - 0.03, y_norm), colour=red)
        arrow((xc, y_norm + 0.32), (xc, y_sub - 0.32))
    for y_add, y_top in _ADDS:  # write back: the sublayer's output is added to the stream
        ax.plot([xc, xc, sx + 0.17], [y_top + 0.32, y_add, y_add], color="#444", lw=0.9)
        ax.plot([sx], [y_add], marker="o", ms=15, mfc="white", mec=red, mew=1.5)
        ax.text(sx, y_add, "+", ha="center", va="center", fontsize=11, color=red, weight="bold")
        ax.text(sx + 0.3, y_add + 0.25, _("added to the residual stream (chapter 8)"), va="center",
                fontsize=_FONT - 1, color=red)
    arrow((sx, 9.65), (_BOX_X - 0.03, 10.0), colour=red)  # the stream's end -> final norm
    arrow((xc, 10.32), (xc, 10.68))
    arrow((xc, 11.32), (xc, 11.68))
    ax.text(0.2, 12.55, _("SmolLM2-135M in the book's own GPT: weights 4-bit (Q4_1), embedding 8-bit (Q8_0)"),
            fontsize=_FONT + 1, weight="bold")
    return fig


def attention_figure(weights, labels, layer: int, head: int):
    """One head's (T, T) attention weights on a prompt; rows are queries, columns keys."""
    return plot.heatmap(weights, xlabels=labels, ylabels=labels, vmin=0, vmax=1, cmap="Blues",
                        title=_("layer {layer}, head {head}").format(layer=layer, head=head),
                        xlabel=_("key (attended to)"), ylabel=_("query"),
                        figsize=(5.6, 4.6))


def next_token_figure(pairs, prompt: str):
    """Bars of the most likely next tokens: pairs is [(token text, probability), ...]."""
    labels = [repr(t) for t, _ in pairs]
    return plot.bars(labels, [p for _, p in pairs], ylabel=_("probability"), horizontal=True,
                     title=_("after {prompt}").format(prompt=repr(prompt))[:70], figsize=(6, 3.2), ylim=(0, 1.1))
