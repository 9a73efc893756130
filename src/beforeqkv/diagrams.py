"""Diagrams for the book, drawn in code: every function returns a ``Figure``.

Each figure carries its alt text as ``fig.alt_text`` (the same string as
``ALT_TEXT[name]``; the chapters copy it into the cell's ``mystnb.image.alt``).
Figures are at most 7 inches wide and use fonts of at least 10 pt, so they stay
legible in the book's 700 px column (and, scaled down, on a phone).
"""
from __future__ import annotations

import numpy as np
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from .plot import COLORS, new_figure

__all__ = ["memory_figure", "mixing_figure", "symmetry_figure", "heads_figure",
           "multihead_figure", "scale_figure", "block_figure", "mlp_memory_figure",
           "argument_map", "ARGUMENT", "ALT_TEXT", "MIN_FONT", "MAX_WIDTH"]

MIN_FONT, MAX_WIDTH = 10, 7.0  # pt, inches
FONT = 11
BLUE, RED, GREEN, ORANGE, GREY = COLORS[0], COLORS[1], COLORS[2], COLORS[3], "#7f7f7f"
FILL = {BLUE: "#dbe9f6", RED: "#f8d9d9", GREEN: "#dcefdc", ORANGE: "#fde6cf", GREY: "#eeeeee"}

# Each chapter as pressure -> fix: the argument map of the preface (book/index.md).
ARGUMENT = [
    (1, "Squished memory", "a fixed-size RNN state forgets as facts pile up",
     "keep every state and look things up"),
    (2, "Keep every state", "a fixed-size linear memory saturates too",
     "a memory that grows with the input"),
    (3, "The red connections", "recurrence forces one step per token",
     "drop it; keep only all-to-all mixing"),
    (4, "Dynamic weights", "fixed mixing weights cannot follow content",
     "weights computed from the inputs, plus positions"),
    (5, "Queries and keys", "dot-product scores are symmetric",
     "a bilinear form $W_Q^\\top W_K$: queries and keys"),
    (6, "Values and heads", "a weight matrix per pair is unwieldy",
     "shared low-rank maps: values, heads, $W_O$"),
    (7, "The 1/√d scale", "wide heads saturate the softmax",
     "divide the scores by $\\sqrt{d_\\mathrm{head}}$"),
    (8, "The autoregressive Transformer", "a model that peeks at the future",
     "causal mask, positions, residual blocks, a GPT"),
    (9, "The MLP as memory", "where do facts live?",
     "the feed-forward block is a key-value store"),
]

def _plain(text):
    """Maths of ARGUMENT in words, for alt text."""
    for tex, words in [("$W_Q^\\top W_K$", "W_Q transposed times W_K"), ("$W_O$", "W_O"),
                       ("$\\sqrt{d_\\mathrm{head}}$", "the square root of d_head")]:
        text = text.replace(tex, words)
    return text


ALT_TEXT = {
    "memory_figure": (
        "Two rows of the same five tokens. Top row, chapter 1: a recurrent network folds each "
        "token into the next state, h_1 to h_5; earlier states are overwritten (drawn faded) and "
        "the question is answered from the last state alone, a fixed number of values whatever "
        "the length. Bottom row, chapter 2: every state h_1 to h_5 is kept; a query reads all of "
        "them with weights a_1 to a_5 that sum to one, so the memory grows with the input."),
    "mixing_figure": (
        "Left: five input tokens x_1 to x_5 along the bottom and five outputs y_1 to y_5 along "
        "the top, with a line from every input to every output; the lines into y_3 are drawn in "
        "colour, thicker for larger weights w_3j. Right: the same weights as a 5 by 5 matrix, "
        "row i holding the weights of output y_i, each row summing to one."),
    "symmetry_figure": (
        "Top: rock, scissors and paper in a triangle with one-way arrows, rock to scissors, "
        "scissors to paper, paper to rock, next to the non-symmetric score matrix A with a one "
        "where the row item beats the column item. Bottom: the symmetric score matrix, one half "
        "in each pair of mirrored cells, and the same triangle with two-headed arrows: a "
        "symmetric score rates each pair the same both ways, so no item can prefer the item it "
        "beats over the item that beats it."),
    "heads_figure": (
        "Left: a T by T grid in which every cell, one pair of tokens i and j, holds its own full "
        "d by d matrix M_ij, T squared times d squared numbers. Right: multi-head attention; each "
        "head h has one T by T grid of scalar weights a^h_ij and one shared low-rank map, a thin "
        "W_V^h (d_head by d) followed by a narrow W_O^h (d by d_head), so that M_ij is the sum "
        "over heads of a^h_ij W_O^h W_V^h."),
    "multihead_figure": (
        "A top-to-bottom flow chart of multi-head attention, with the shape of the tensor after "
        "each step in a column on the right, for one sequence of T tokens. The token vectors x, "
        "shape (T, d_model), go through three maps: queries q_i = W_Q x_i, keys k_j = W_K x_j and "
        "values v_j = W_V x_j, each of shape (T, n_heads times d_head). Each is split into heads, "
        "shape (n_heads, T, d_head), drawn as a stack of cards, one per head. Inside a dashed box "
        "marked each head on its own, in parallel: the queries and keys of head h give the scores "
        "s^h_ij = q^h_i dot k^h_j divided by the square root of d_head, shape (n_heads, T, T); a "
        "softmax over the keys j turns them into the weights a^h_ij, same shape; the weights and "
        "the values give the weighted sum r^h_i = sum over j of a^h_ij v^h_j, shape (n_heads, T, "
        "d_head). The heads are concatenated, shape (T, n_heads times d_head), and W_O maps the "
        "result back to the output y_i, shape (T, d_model)."),
    "scale_figure": (
        "Four panels. Top left: the distribution of the unscaled score q dot k for random "
        "queries and keys with unit-variance components, drawn for d_head = 16, 256 and 1024: "
        "bell curves centred on zero whose spread, the square root of d_head, grows from 4 to 32. "
        "Top right: the same scores divided by the square root of d_head; the three curves lie "
        "on top of each other with spread 1. Bottom left: the softmax of one query's scores "
        "against 8 keys at d_head = 1024 without the scale: one bar at about 1, the others at "
        "zero, a saturated softmax. Bottom right: the same query and keys with the scale: the "
        "weight is shared among several keys."),
    "mlp_memory_figure": (
        "The MLP drawn as a key-value memory, left to right. The input x is matched against the "
        "keys k_1, k_2, k_3, ..., k_m, the rows of W_in, one per slot, with m = d_mlp slots. "
        "Each match k_u dot x plus b_u (here +0.9, -0.4, +0.6 and -1.2) goes through a relu and "
        "becomes the slot weight a_u (0.9, 0, 0.6 and 0): slots that do not match get zero. Each "
        "slot weight multiplies the slot's value v_u, a column of W_out; values of slots with "
        "zero weight are drawn faded and add nothing. The read is the sum over u of a_u v_u. A "
        "note at the bottom: read the same way, the gated MLP SwiGLU, W_out times silu of W_gate x "
        "times W_in x elementwise, has as slot u's key row u of W_gate, which decides whether "
        "the slot is read, while row u of W_in scales it."),
    "block_figure": (
        "A vertical diagram of a pre-norm decoder, bottom to top: token ids, the token embedding "
        "W_E plus position vectors W_pos (chapters 4 and 8), then a block repeated L times: "
        "LayerNorm, causal multi-head attention (all-to-all mixing from chapter 3, weights from "
        "content from chapter 4, queries and keys from chapter 5, values, heads and W_O from "
        "chapter 6, the 1/sqrt(d_head) scale from chapter 7, the causal mask from chapter 8), "
        "added back to the residual stream, then LayerNorm and an MLP (chapters 8 and 9) added "
        "back again; finally a LayerNorm and the unembedding W_U give the next-token scores. A "
        "straight line on the left is the residual stream, labelled chapter 8."),
    "argument_map": (
        "Nine rows, one per chapter, joined by downward arrows. Each row has a red box with the "
        "pressure (what fails) and a green box with the fix that answers it: " + "; ".join(
            f"chapter {n}: {p}, fixed by {_plain(f)}" for n, _, p, f in ARGUMENT) + "."),
}


def _canvas(figsize, xlim, ylim, nrows=1, ncols=1, **kwargs):
    fig, axes = new_figure(nrows, ncols, figsize=figsize, squeeze=False, **kwargs)
    for ax in axes.flat:
        ax.set_xlim(*xlim)
        ax.set_ylim(*ylim)
        ax.set_axis_off()
    return fig, axes


def _box(ax, x, y, text, w=1.0, h=0.6, color=BLUE, fs=FONT, faded=False, **kw):
    """A rounded box centred at (x, y) with ``text`` inside."""
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, lw=1.2,
                                boxstyle="round,pad=0,rounding_size=0.08",
                                fc=FILL[GREY] if faded else FILL[color],
                                ec=GREY if faded else color))
    return ax.text(x, y, text, ha="center", va="center", fontsize=fs,
                   color=GREY if faded else "black", **kw)


def _arrow(ax, start, end, color="#444444", lw=1.2, style="-|>", rad=0.0):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=12, color=color,
                                 lw=lw, shrinkA=0, shrinkB=0, connectionstyle=f"arc3,rad={rad}"))


def _done(fig, name):
    fig.alt_text = ALT_TEXT[name]
    return fig


def _check_tokens(n_tokens, lo=2, hi=8):
    if not isinstance(n_tokens, int) or not lo <= n_tokens <= hi:
        raise ValueError(f"n_tokens must be an int from {lo} to {hi} (to stay legible), got {n_tokens!r}")


def memory_figure(n_tokens: int = 5):
    """A fixed memory box (chapter 1) vs a memory that keeps every state (chapter 2)."""
    _check_tokens(n_tokens, 2, 6)
    T, xs = n_tokens, [1.0 + 1.3 * t for t in range(n_tokens)]
    fig, axes = _canvas((7.0, 5.0), (0, 10.2), (-0.2, 3.3), nrows=2, height_ratios=[2.5, 3.5])
    top, bottom = axes[0, 0], axes[1, 0]
    top.set_ylim(-0.2, 2.3)
    top.set_title("Chapter 1 · a fixed memory: one state, overwritten", fontsize=12)
    bottom.set_title("Chapter 2 · keep every state: the memory grows", fontsize=12)
    for ax in (top, bottom):
        for t, x in enumerate(xs):
            _box(ax, x, 0.3, f"$x_{t + 1}$", w=0.8, h=0.5, color=GREY)
            _arrow(ax, (x, 0.55), (x, 1.05))
    for t, x in enumerate(xs):   # chapter 1: a chain of states, only the last one survives
        _box(top, x, 1.35, f"$h_{t + 1}$", w=0.8, h=0.6, color=BLUE, faded=t < T - 1)
        if t:
            _arrow(top, (xs[t - 1] + 0.4, 1.35), (x - 0.4, 1.35))
    top.text(xs[0] - 0.5, 1.95, "earlier states: overwritten", fontsize=FONT, color=GREY, ha="left")
    _box(top, 9.0, 1.35, "answer", w=1.3, h=0.6, color=GREEN)
    _arrow(top, (xs[-1] + 0.4, 1.35), (8.35, 1.35))
    top.text(9.0, 0.3, "memory: a fixed\nsize, any $T$", ha="center", va="center",
             fontsize=FONT)
    a = np.exp([0.2, 1.8, 0.1, -0.3, 0.5, 0.0][:T])
    a = a / a.sum()
    xm = (xs[0] + xs[-1]) / 2
    _box(bottom, xm, 2.95, "read $r = \\sum_j a_j h_j$", w=2.9, h=0.55, color=GREEN)
    _box(bottom, 9.0, 2.95, "query $q$", w=1.4, h=0.5, color=ORANGE)
    _arrow(bottom, (8.3, 2.95), (xm + 1.45, 2.95))
    for t, x in enumerate(xs):   # chapter 2: every state kept and read with weights a_j
        _box(bottom, x, 1.35, f"$h_{t + 1}$", w=0.8, h=0.6, color=BLUE)
        if t:
            _arrow(bottom, (xs[t - 1] + 0.4, 1.35), (x - 0.4, 1.35), color=GREY)
        end = (xm + (x - xm) * 0.35, 2.67)
        _arrow(bottom, (x, 1.65), end, color=ORANGE, lw=0.6 + 5 * a[t])
        bottom.text(x + 0.42, 1.85, f"{a[t]:.2f}", ha="left", fontsize=MIN_FONT, color=ORANGE)
    bottom.text(9.0, 1.35, "weights $a_j$\nsum to 1", ha="center", va="center", fontsize=FONT,
                color=ORANGE)
    bottom.text(9.0, 0.3, "memory: $T \\times d$\nnumbers, grows", ha="center", va="center",
                fontsize=FONT)
    return _done(fig, "memory_figure")


def mixing_figure(n_tokens: int = 5, focus: int = 3, seed: int = 0):
    """All-to-all mixing ``y_i = sum_j w_ij x_j`` (chapters 3-4): lines and the matrix of w_ij."""
    _check_tokens(n_tokens)
    if not isinstance(focus, int) or not 1 <= focus <= n_tokens:
        raise ValueError(f"focus must be an output index from 1 to n_tokens={n_tokens}, got {focus!r}")
    T = n_tokens
    scores = np.random.default_rng(seed).normal(size=(T, T)) * 1.2
    w = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)        # (T, T), rows sum to 1
    fig, (ax, mat) = new_figure(1, 2, figsize=(7.0, 3.6), width_ratios=[1.25, 1])
    ax.set_xlim(0.3, T + 0.7)
    ax.set_ylim(-0.9, 3.2)
    ax.set_axis_off()
    ax.set_title("every $y_i$ reads every $x_j$", fontsize=12)
    i = focus - 1
    for r in range(T):
        for j in range(T):
            hot = r == i
            ax.plot([j + 1, r + 1], [0.45, 2.55], color=ORANGE if hot else "#cccccc",
                    lw=0.5 + 7 * w[r, j] if hot else 0.8, zorder=2 if hot else 1)
    for j in range(T):
        _box(ax, j + 1, 0.2, f"$x_{j + 1}$", w=0.7, h=0.5, color=GREY)
        _box(ax, j + 1, 2.8, f"$y_{j + 1}$", w=0.7, h=0.5, color=ORANGE if j == i else BLUE)
    ax.text((T + 1) / 2, -0.35, f"$y_{focus} = \\sum_j w_{{{focus}j}}\\, x_j$", ha="center",
            va="top", fontsize=FONT, color=ORANGE)
    mat.imshow(w, cmap="Oranges", vmin=0, vmax=1)
    mat.grid(False)
    for r in range(T):
        for j in range(T):
            mat.text(j, r, f"{w[r, j]:.2f}", ha="center", va="center", fontsize=MIN_FONT,
                     fontweight="bold" if r == i else "normal")
    labels = [str(k + 1) for k in range(T)]
    mat.set_xticks(range(T), labels, fontsize=FONT)
    mat.set_yticks(range(T), labels, fontsize=FONT)
    mat.set_xlabel("input $j$", fontsize=FONT)
    mat.set_ylabel("output $i$", fontsize=FONT)
    mat.set_title("$w_{ij}$: each row sums to 1", fontsize=12)
    return _done(fig, "mixing_figure")


def _triad(ax, directed):
    pos = {"rock": (0.0, 1.0), "scissors": (0.87, -0.5), "paper": (-0.87, -0.5)}
    for name, (x, y) in pos.items():
        _box(ax, x, y, name, w=0.95, h=0.42, color=BLUE)
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
    names = ["R", "S", "P"]
    ax.imshow(m, cmap="Greens", vmin=0, vmax=1.4)
    ax.grid(False)
    for r in range(3):
        for c in range(3):
            ax.text(c, r, f"{m[r, c]:g}", ha="center", va="center", fontsize=12)
    ax.set_xticks(range(3), names, fontsize=FONT)
    ax.set_yticks(range(3), names, fontsize=FONT)
    ax.set_xlabel("key $j$", fontsize=FONT)
    ax.set_ylabel("query $i$", fontsize=FONT)
    ax.set_title(title, fontsize=FONT)


def symmetry_figure():
    """Asymmetric vs symmetric scores on rock-paper-scissors (chapter 5)."""
    A = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=float)     # row beats column
    fig, axes = new_figure(2, 2, figsize=(6.4, 6.0), width_ratios=[1.3, 1])
    _triad(axes[0, 0], directed=True)
    axes[0, 0].set_title("asymmetric: each item reads\nthe item it beats", fontsize=FONT)
    _matrix(axes[0, 1], A, "$s_{ij} = x_i^\\top A x_j$,\n$A \\neq A^\\top$")
    _triad(axes[1, 0], directed=False)
    axes[1, 0].set_title("symmetric: $s_{ij} = s_{ji}$, so both\nends of a pair score the same",
                         fontsize=FONT)
    _matrix(axes[1, 1], (A + A.T) / 2, "$\\frac{1}{2}(A + A^\\top)$:\nhalf to each side")
    return _done(fig, "symmetry_figure")


def _grid(ax, x0, y0, size, T, cell_fill, label):
    step = size / T
    for r in range(T):
        for c in range(T):
            ax.add_patch(FancyBboxPatch((x0 + c * step, y0 + (T - 1 - r) * step), step * 0.9, step * 0.9,
                                        boxstyle="square,pad=0", fc=cell_fill(r, c), ec="white", lw=0.5))
    ax.text(x0 + size / 2, y0 - 0.25, label, ha="center", va="top", fontsize=FONT)


def heads_figure(n_heads: int = 2, n_tokens: int = 4):
    """One full matrix per pair vs heads with shared low-rank maps W_O^h W_V^h (chapter 6)."""
    _check_tokens(n_tokens, 2, 6)
    if not isinstance(n_heads, int) or not 1 <= n_heads <= 3:
        raise ValueError(f"n_heads must be 1, 2 or 3 (to stay legible), got {n_heads!r}")
    T = n_tokens
    fig, axes = _canvas((7.0, 4.4), (0, 10.4), (-1.2, 5.4), ncols=1)
    ax = axes[0, 0]
    ax.text(2.0, 5.1, "one matrix per pair", ha="center", fontsize=12, fontweight="bold")
    rng = np.random.default_rng(1)
    shades = rng.uniform(0.25, 0.9, size=(T, T))
    _grid(ax, 0.2, 0.9, 3.6, T, lambda r, c: (0.12, 0.47, 0.71, shades[r, c]),
          "$M_{ij}$: a $d \\times d$ matrix\nfor each of $T^2$ pairs")
    ax.text(2.0, 4.75, "$y_i = \\sum_j M_{ij}\\, x_j$", ha="center", fontsize=FONT)
    ax.text(2.0, -0.95, "$T^2 d^2$ numbers per layer", ha="center", fontsize=FONT, color=RED)
    ax.plot([4.5, 4.5], [-1.1, 5.3], color="#cccccc", lw=1)
    ax.text(7.5, 5.1, f"{n_heads} heads", ha="center", fontsize=12, fontweight="bold")
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
    ax.text(8.3, 4.3, "shared, low rank", ha="center", fontsize=FONT, color=GREEN)
    ax.text(7.5, -0.55, "$a^h_{ij}$: one number per pair", ha="center", fontsize=FONT, color=ORANGE)
    ax.text(7.5, -0.95, "$T^2 H$ weights + $H$ shared maps", ha="center", fontsize=FONT,
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
    ax.text(8.75, 9.85, "shape", ha="center", va="center", fontsize=FONT, color=GREY,
            fontweight="bold")
    for y, shape in MHA_SHAPES:
        ax.text(8.75, y, shape, ha="center", va="center", fontsize=MIN_FONT,
                family="monospace", color="#333333")
    ax.add_patch(FancyBboxPatch((0.05, 2.3), 6.85, 5.05, boxstyle="round,pad=0,rounding_size=0.15",
                                fc="none", ec=GREY, ls="--", lw=1.2))
    ax.text(0.2, 2.85, "each head $h$\non its own,\nin parallel", fontsize=MIN_FONT,
            color=GREY, va="center")
    _box(ax, xk, 9.35, "$x_i$: the $T$ token vectors", w=4.2, h=bh, color=GREY)
    for xc, name, vec, idx in [(xq, "Q", "q", "i"), (xk, "K", "k", "j"), (xv, "V", "v", "j")]:
        _arrow(ax, (xk + (xc - xk) * 0.4, 9.04), (xc, 8.05 + bh / 2))
        _box(ax, xc, 8.05, f"${vec}_{idx} = W_{name}\\, x_{idx}$", w=bw, h=bh,
             color=ORANGE if name != "V" else GREEN)
        _arrow(ax, (xc, 8.05 - bh / 2), (xc, 6.75 + bh / 2 + 0.18))
        _stack(ax, xc, 6.75, f"${vec}^h_{idx}$", w=1.2, h=bh,
               color=ORANGE if name != "V" else GREEN)
    ax.text((xq + xk) / 2, 7.5, "split into\nheads", fontsize=MIN_FONT, color="#333333",
            ha="center", va="center")
    xs = (xq + xk) / 2
    for xc in (xq, xk):
        _arrow(ax, (xc, 6.75 - bh / 2), (xs + (xc - xs) * 0.5, 5.45 + bh / 2 + 0.18))
    _stack(ax, xs, 5.45, "$s^h_{ij} = q^h_i \\cdot k^h_j \\,/\\, \\sqrt{d_\\mathrm{head}}$",
           w=3.9, h=bh, color=BLUE)
    ax.text(xs + 2.1, 5.95, "scores", fontsize=MIN_FONT, color=BLUE, ha="left")
    _arrow(ax, (xs, 5.45 - bh / 2), (xs, 4.15 + bh / 2 + 0.18))
    _stack(ax, xs, 4.15, "$a^h_{ij} = \\operatorname{softmax}_j(s^h_{ij})$", w=3.9, h=bh,
           color=BLUE)
    ax.text(xs + 2.1, 4.65, "weights", fontsize=MIN_FONT, color=BLUE, ha="left")
    xr = (xs + xv) / 2 + 0.3
    _arrow(ax, (xs, 4.15 - bh / 2), (xr - 0.9, 2.85 + bh / 2 + 0.18))
    _arrow(ax, (xv, 6.75 - bh / 2), (xr + 1.2, 2.85 + bh / 2 + 0.18), color=GREEN)
    ax.text(xv + 0.12, 4.8, "values", fontsize=MIN_FONT, color=GREEN, ha="left")
    _stack(ax, xr, 2.85, "$r^h_i = \\sum_j a^h_{ij}\\, v^h_j$: weighted sum", w=4.4, h=bh,
           color=GREEN)
    _arrow(ax, (xr, 2.85 - bh / 2), (xr, 1.55 + bh / 2))
    _box(ax, xr, 1.55, "concatenate the heads: $[r^1_i \\cdots r^H_i]$", w=4.8, h=bh,
         color=GREY)
    _arrow(ax, (xr, 1.55 - bh / 2), (xr, 0.35 + bh / 2))
    _box(ax, xr, 0.35, "$y_i = W_O\\, [r^1_i \\cdots r^H_i]$", w=4.8, h=bh, color=RED)
    return _done(fig, "multihead_figure")


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


def argument_map():
    """Each chapter as pressure -> fix, top to bottom (the preface's argument map)."""
    fig, axes = _canvas((7.0, 8.2), (0, 10), (0.2, len(ARGUMENT) + 0.9))
    ax = axes[0, 0]
    ax.text(3.0, len(ARGUMENT) + 0.55, "pressure (what fails)", ha="center", fontsize=12, color=RED)
    ax.text(7.75, len(ARGUMENT) + 0.55, "fix", ha="center", fontsize=12, color=GREEN)
    for k, (n, _title, pressure, fix) in enumerate(ARGUMENT):
        y = len(ARGUMENT) - k
        ax.text(0.15, y, f"{n}", fontsize=14, fontweight="bold", va="center")
        _box(ax, 3.0, y, _wrap(pressure), w=4.6, h=0.74, color=RED, fs=MIN_FONT)
        _box(ax, 7.75, y, _wrap(fix), w=4.3, h=0.74,
             color=GREEN, fs=MIN_FONT)
        _arrow(ax, (5.32, y), (5.58, y), color="#444444")
        if k + 1 < len(ARGUMENT):
            _arrow(ax, (7.75, y - 0.37), (3.6, y - 0.63), color=GREY, rad=0.0)
    return _done(fig, "argument_map")


def _wrap(text, width=34):
    parts = text.split("$")
    text = "$".join(p.replace(" ", "\0") if k % 2 else p for k, p in enumerate(parts))
    words, lines, line = [w.replace("\0", " ") for w in text.split()], [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return "\n".join(lines + [line])


SLOT_MATCH = [0.9, -0.4, 0.6, -1.2]   # k_u . x + b_u of the slots drawn (1, 2, 3, m)


def mlp_memory_figure():
    """The MLP read as a key-value memory: keys are rows of W_in, values columns of W_out (chapter 9)."""
    fig, axes = _canvas((7.0, 5.6), (0, 10), (-0.75, 6.3))
    ax = axes[0, 0]
    names = ["1", "2", "3", "m"]
    ys = [4.75, 3.95, 3.15, 1.85]
    ymid = (ys[0] + ys[-1]) / 2
    xk, xm, xa, xv, xr = 2.1, 3.5, 5.0, 6.9, 8.95     # keys, match, weights, values, read
    heads = [(xk, "keys $k_u$:\nrows of $W_\\mathrm{in}$"), (xm, "match\n$k_u \\cdot x + b_u$"),
             (xa, "slot weight\n$a_u = \\operatorname{relu}(\\cdot)$"),
             (xv, "values $v_u$:\ncolumns of $W_\\mathrm{out}$"), (xr, "read")]
    for xc, text in heads:
        ax.text(xc, 5.75, text, ha="center", va="center", fontsize=MIN_FONT)
    _box(ax, 0.6, ymid, "$x$", w=0.8, h=1.1, color=GREY)
    _box(ax, xr, ymid, "$\\sum_u a_u v_u$", w=1.6, h=0.8, color=GREEN)
    for name, y, s in zip(names, ys, SLOT_MATCH):
        a = max(s, 0.0)
        _arrow(ax, (1.0, ymid + (y - ymid) * 0.25), (xk - 0.45, y), color=GREY)
        _box(ax, xk, y, f"$k_{name}$", w=0.9, h=0.55, color=ORANGE)
        ax.text(xm, y, f"{s:+.1f}".replace("-", "−"), ha="center", va="center", fontsize=FONT)
        x0 = xa - 0.55
        ax.add_patch(FancyBboxPatch((x0, y - 0.17), 1.2 * a + 0.01, 0.34, boxstyle="square,pad=0",
                                    fc=ORANGE if a else "none", ec=ORANGE))
        ax.text(x0 + 1.2 * a + 0.1, y, f"{a:.1f}", va="center", fontsize=MIN_FONT,
                color="black" if a else GREY)
        _box(ax, xv, y, f"$v_{name}$", w=0.9, h=0.55, color=GREEN, faded=not a)
        end = (xr - 0.8, ymid + (y - ymid) * 0.3)
        if a:
            _arrow(ax, (xv + 0.45, y), end, color=GREEN, lw=0.8 + 3 * a)
        else:
            ax.plot([xv + 0.45, end[0]], [y, end[1]], color="#cccccc", lw=0.8, ls=":")
    for xc in (xk, xm, xv):
        ax.text(xc, 2.55, "⋮", ha="center", va="center", fontsize=14)
    ax.text(4.6, 1.2, "slots $u = 1, \\dots, m$ with $m = d_\\mathrm{mlp}$; a slot that does not "
            "match gets $a_u = 0$ and adds nothing", ha="center", va="center", fontsize=MIN_FONT,
            color="#333333")
    ax.add_patch(FancyBboxPatch((0.1, -0.7), 9.8, 1.45, boxstyle="round,pad=0,rounding_size=0.1",
                                fc=FILL[BLUE], ec=BLUE, lw=1.0))
    for y, line in [(0.45, "SwiGLU, $W_\\mathrm{out}(\\operatorname{silu}(W_\\mathrm{gate}\\,x) \\odot "
                           "W_\\mathrm{in}\\,x)$, read as slots:"),
                    (0.0, "slot $u$'s key $k_u$ is row $u$ of $W_\\mathrm{gate}$: "
                          "it decides whether the slot is read;"),
                    (-0.42, "row $u$ of $W_\\mathrm{in}$ scales it (in a plain MLP, "
                            "row $u$ of $W_\\mathrm{in}$ is the key)")]:
        ax.text(5.0, y, line, ha="center", va="center", fontsize=MIN_FONT)
    return _done(fig, "mlp_memory_figure")
