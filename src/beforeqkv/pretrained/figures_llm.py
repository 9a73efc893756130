"""Figures for chapter 11: the architecture recap, one head's attention, next-token bars."""
from __future__ import annotations

from matplotlib.patches import FancyBboxPatch

from .. import plot

__all__ = ["architecture_figure", "attention_figure", "next_token_figure", "ARCHITECTURE_ALT"]

# (label, chapter note, y centre); drawn bottom (tokens) to top (next token)
_PARTS = [
    ("token ids (byte-level BPE, no BOS)", "ch 8: a sequence of tokens; ch 11: bytes → BPE", 0.5),
    ("embedding  W_E", "ch 8: W_E; no W_pos (positions live in attention)", 1.5),
    ("RMSNorm (gain only)", "ch 8: pre-norm; ch 11: no centring, no bias", 2.6),
    ("attention: 9 query heads, 3 key/value heads", "ch 2: keep every state; ch 4: weights from tokens", 3.7),
    ("  scores q·k/√d_head, rotary positions on q, k", "ch 5: queries ≠ keys; ch 7: 1/√d; ch 4, 11: RoPE", 4.5),
    ("  causal mask, KV cache shared by 3 query heads", "ch 6: heads; ch 8: mask, cache; ch 11: GQA", 5.3),
    ("+ residual", "ch 8: residual stream", 6.2),
    ("RMSNorm (gain only)", "ch 8: pre-norm; ch 11: RMSNorm", 7.0),
    ("MLP: W_out (silu(W_gate x) ⊙ W_in x), d_mlp = 1536", "ch 9: keys = rows of W_in, values = columns of W_out", 8.0),
    ("+ residual", "ch 8: residual stream", 8.9),
    ("final RMSNorm", "ch 8: final norm", 10.0),
    ("unembedding  W_U = W_E (tied)", "ch 8: W_U; ch 11: tied to W_E", 11.0),
    ("softmax → next token (greedy or sampled)", "ch 8: autoregressive generation", 12.0),
]

ARCHITECTURE_ALT = ("A vertical diagram of SmolLM2: token ids, embedding, then a block repeated 30 times "
                    "(RMSNorm, grouped-query attention with rotary positions and a causal mask, residual, "
                    "RMSNorm, SwiGLU MLP, residual), a final RMSNorm, the tied unembedding and a softmax; "
                    "each part is labelled with the chapter that motivated it. All linear weights are "
                    "stored in 4 bits (Q4_1), the embedding in 8 bits (Q8_0).")


def architecture_figure(n_layers: int = 30):
    """The final architecture, every part labelled by the chapter that motivated it (chapter 11)."""
    fig, ax = plot.new_figure(figsize=(10, 8.4))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 12.7)
    ax.axis("off")
    block = FancyBboxPatch((0.2, 2.15), 5.0, 7.2, boxstyle="round,pad=0.05", fc="#f3f3f3", ec="#999", lw=1)
    ax.add_patch(block)
    ax.text(5.2, 1.97, f"× {n_layers} blocks", fontsize=9, color="#555", va="center", ha="right")
    colours = {"attention": "#dbe9f6", "MLP": "#fde3c8", "RMSNorm": "#e6f2dd", "residual": "#ffffff"}
    for i, (label, note, y) in enumerate(_PARTS):
        sub = label.startswith("  ")
        colour = next((c for key, c in colours.items() if key in label), "#eeeeee")
        if sub:
            colour = colours["attention"]
        x0, w = (0.7, 4.2) if sub else (0.45, 4.5)
        ax.add_patch(FancyBboxPatch((x0, y - 0.3), w, 0.6, boxstyle="round,pad=0.03", fc=colour, ec="#666", lw=0.8))
        ax.text(x0 + 0.1, y, label.strip(), va="center", fontsize=9)
        ax.text(5.45, y, note, va="center", fontsize=9, color="#333")
        if i + 1 < len(_PARTS) and not _PARTS[i + 1][0].startswith("  "):
            ax.annotate("", xy=(2.7, _PARTS[i + 1][2] - 0.32), xytext=(2.7, y + 0.32),
                        arrowprops=dict(arrowstyle="->", color="#444", lw=0.8))
    ax.text(0.2, 12.55, "SmolLM2-135M in the book's own GPT: weights 4-bit (Q4_1), embedding 8-bit (Q8_0)",
            fontsize=10, weight="bold")
    return fig


def attention_figure(weights, labels, layer: int, head: int):
    """One head's (T, T) attention weights on a prompt; rows are queries, columns keys."""
    return plot.heatmap(weights, xlabels=labels, ylabels=labels, vmin=0, vmax=1, cmap="Blues",
                        title=f"layer {layer}, head {head}", xlabel="key (attended to)", ylabel="query",
                        figsize=(5.6, 4.6))


def next_token_figure(pairs, prompt: str):
    """Bars of the most likely next tokens: pairs is [(token text, probability), ...]."""
    labels = [repr(t) for t, _ in pairs]
    return plot.bars(labels, [p for _, p in pairs], ylabel="probability", horizontal=True,
                     title=f"after {prompt!r}"[:70], figsize=(6, 3.2), ylim=(0, 1.1))
