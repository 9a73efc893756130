"""Shared pieces of the book's concept diagrams, and the preface's argument map.

Every diagram returns a ``Figure`` carrying its alt text as ``fig.alt_text`` (the same
string as ``ALT_TEXT[name]``; the chapters copy it into the cell's ``mystnb.image.alt``).
Figures are at most 7 inches wide and use fonts of at least 10 pt, so they stay
legible in the book's 700 px column (and, scaled down, on a phone).
"""
from __future__ import annotations

import re

from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from ..i18n import N_, _, tr
from ..plot import COLORS, new_figure

__all__ = ["argument_map", "ARGUMENT", "ALT_TEXT", "MIN_FONT", "MAX_WIDTH"]

MIN_FONT, MAX_WIDTH = 10, 7.0  # pt, inches
FONT = 11
BLUE, RED, GREEN, ORANGE, GREY = COLORS[0], COLORS[1], COLORS[2], COLORS[3], "#7f7f7f"
FILL = {BLUE: "#dbe9f6", RED: "#f8d9d9", GREEN: "#dcefdc", ORANGE: "#fde6cf", GREY: "#eeeeee"}

# Each chapter as pressure -> fix: the argument map of the preface (book/index.md).
# The pressures and fixes are marked with N_() for the catalog and translated where drawn (i18n.tr).
ARGUMENT = [
    (1, "Squished memory", N_("a fixed-size RNN state forgets as facts pile up"),
     N_("keep every state and look things up")),
    (2, "Keep every state", N_("a fixed-size linear memory saturates too"),
     N_("a memory that grows with the input")),
    (3, "The red connections", N_("recurrence forces one step per token"),
     N_("drop it; keep only all-to-all mixing")),
    (4, "Dynamic weights", N_("fixed mixing weights cannot follow content"),
     N_("weights computed from the inputs, plus positions")),
    (5, "Queries and keys", N_("dot-product scores are symmetric"),
     N_("a bilinear form $W_Q^\\top W_K$: queries and keys")),
    (6, "Values and heads", N_("a weight matrix per pair is unwieldy"),
     N_("shared low-rank maps: values, heads, $W_O$")),
    (7, "The 1/√d scale", N_("wide heads saturate the softmax"),
     "divide the scores by $\\sqrt{d_\\mathrm{head}}$"),   # translated as "... by {m0}" (tr_math)
    (8, "The autoregressive Transformer", N_("a model that peeks at the future"),
     N_("causal mask, positions, residual blocks, a GPT")),
    (9, "The MLP as memory", N_("where do facts live?"),
     N_("the feed-forward block is a key-value store")),
]

# Messages whose maths has nested braces ($\\sqrt{d_\\mathrm{head}}$) go to the catalog with
# the maths replaced by {m0}, {m1}, ... (the catalog's {fields} check cannot parse them).
_MATH_TEMPLATES = [N_("divide the scores by {m0}"), N_("{m0}: ch. 7")]


def tr_math(text):
    """``text`` in the language in force: the message itself if the catalog has it, else
    its template with each ``$maths$`` as {m0}, {m1}, ... (the maths is put back as is)."""
    done = tr(text)
    maths = re.findall(r"\$[^$]*\$", text)
    if done != text or not maths:
        return done
    template = text
    for k, m in enumerate(maths):
        template = template.replace(m, "{m%d}" % k, 1)
    return tr(template).format(**{f"m{k}": m for k, m in enumerate(maths)})


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
            f"chapter {n}: {p}, fixed by {_plain(f)}" for n, _title, p, f in ARGUMENT) + "."),
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


def _check_tokens(T, lo=2, hi=8):
    if not isinstance(T, int) or not lo <= T <= hi:
        raise ValueError(f"T must be an int from {lo} to {hi} (to stay legible), got {T!r}")


def argument_map():
    """Each chapter as pressure -> fix, top to bottom (the preface's argument map)."""
    fig, axes = _canvas((7.0, 8.2), (0, 10), (0.2, len(ARGUMENT) + 0.9))
    ax = axes[0, 0]
    ax.text(3.0, len(ARGUMENT) + 0.55, _("pressure (what fails)"), ha="center", fontsize=12, color=RED)
    ax.text(7.75, len(ARGUMENT) + 0.55, _("fix"), ha="center", fontsize=12, color=GREEN)
    for k, (n, _title, pressure, fix) in enumerate(ARGUMENT):
        y = len(ARGUMENT) - k
        ax.text(0.15, y, f"{n}", fontsize=14, fontweight="bold", va="center")
        _box(ax, 3.0, y, _wrap(tr_math(pressure)), w=4.6, h=0.74, color=RED, fs=MIN_FONT)
        _box(ax, 7.75, y, _wrap(tr_math(fix)), w=4.3, h=0.74,
             color=GREEN, fs=MIN_FONT)
        _arrow(ax, (5.32, y), (5.58, y), color="#444444")
        if k + 1 < len(ARGUMENT):
            _arrow(ax, (7.75, y - 0.37), (3.6, y - 0.63), color=GREY, rad=0.0)
    return _done(fig, "argument_map")


def _wrap(text, width=34):
    """Lines of at most ``width`` columns, never breaking inside ``$maths$``; a Chinese
    character counts two columns and a line may break between any two of them."""
    if _CJK.search(text):
        return _wrap_cjk(text, width)
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


_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
_NO_LINE_START = set("，。；：、！？）》”")


def _wrap_cjk(text, width):
    def cols(piece):
        if piece.startswith("$"):  # about as wide as drawn: a command one column, no braces
            return len(re.sub(r"\\[a-z]{2,}", "x", re.sub(r"\\(mathrm|operatorname)|[${}^_]", "", piece)))
        return sum(2 if _CJK.match(c) else 1 for c in piece)

    # pieces: a $maths$ span, a run of Latin letters/digits, or one other character
    pieces = re.findall(r"\$[^$]*\$|[A-Za-z0-9_.'/√-]+|.", text)
    lines, line, used = [], "", 0
    for piece in pieces:
        if line and used + cols(piece) > width and piece not in _NO_LINE_START:
            lines.append(line.rstrip())
            line = piece.lstrip()
            used = cols(line)
        else:
            line += piece
            used += cols(piece)
    return "\n".join(lines + [line.rstrip()])
