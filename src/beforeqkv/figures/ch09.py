"""Figures of chapter 9: the MLP as a key-value memory, and which slots vote for a fact."""
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
    _arrow,
    _box,
    _canvas,
    _done,
)

__all__ = ["mlp_memory_figure", "SLOT_MATCH", "slot_votes", "capacity_figure", "slot_weights_figure"]


SLOT_MATCH = [0.9, -0.4, 0.6, -1.2]   # k_u . x + b_u of the slots drawn (1, 2, 3, m)


def mlp_memory_figure():
    """The MLP read as a key-value memory: keys are rows of W_in, values columns of W_out (chapter 9)."""
    fig, axes = _canvas((7.0, 5.6), (0, 10), (-0.75, 6.3))
    ax = axes[0, 0]
    names = ["1", "2", "3", "m"]
    ys = [4.75, 3.95, 3.15, 1.85]
    ymid = (ys[0] + ys[-1]) / 2
    xk, xm, xa, xv, xr = 2.1, 3.5, 5.0, 6.9, 8.95     # keys, match, weights, values, read
    heads = [(xk, _("keys $k_u$:\nrows of $W_\\mathrm{in}$")), (xm, _("match\n$k_u \\cdot x + b_u$")),
             (xa, _("slot weight\n$a_u = \\operatorname{relu}(\\cdot)$")),
             (xv, _("values $v_u$:\ncolumns of $W_\\mathrm{out}$")), (xr, _("read"))]
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
    ax.text(4.6, 1.2, _("slots $u = 1, \\dots, m$ with $m = d_\\mathrm{mlp}$; a slot that does not "
                      "match gets $a_u = 0$ and adds nothing"), ha="center", va="center", fontsize=MIN_FONT,
            color="#333333")
    ax.add_patch(FancyBboxPatch((0.1, -0.7), 9.8, 1.45, boxstyle="round,pad=0,rounding_size=0.1",
                                fc=FILL[BLUE], ec=BLUE, lw=1.0))
    for y, line in [(0.45, _("SwiGLU, $W_\\mathrm{out}(\\operatorname{silu}(W_\\mathrm{gate}\\,x) \\odot "
                             "W_\\mathrm{in}\\,x)$, read as slots:")),
                    (0.0, _("slot $u$'s key $k_u$ is row $u$ of $W_\\mathrm{gate}$: "
                            "it decides whether the slot is read;")),
                    (-0.42, _("row $u$ of $W_\\mathrm{in}$ scales it (in a plain MLP, "
                              "row $u$ of $W_\\mathrm{in}$ is the key)"))]:
        ax.text(5.0, y, line, ha="center", va="center", fontsize=MIN_FONT)
    return _done(fig, "mlp_memory_figure")


def slot_votes(memory, keys, target, fact: int, title: str = "", figsize=(8.5, 3.0)):
    """Which slots of a slot memory fire for one fact, and what each adds to its class (chapter 9).

    memory: an ``MLPMemory`` (``slot_weights``, ``W_out``); keys (N, d_model), target (N,).
    Left: the slot weights ``a_u`` for fact ``fact``; right: each slot's vote for the
    fact's class, ``a_u * W_out[target, u]`` (green helps, red hurts). A fact outside
    ``[0, N)`` is an error, never silently replaced by another fact.
    """
    import torch

    n = len(target)
    if keys.dim() != 2 or keys.shape[0] != n:
        raise ValueError(f"need keys (N, d) and target (N,), got {tuple(keys.shape)} and {n} targets")
    if isinstance(fact, bool) or not isinstance(fact, (int, np.integer)) or not 0 <= fact < n:
        raise ValueError(f"fact must be an int in [0, {n}) for these {n} facts, got {fact!r}")
    device = memory.W_out.weight.device
    with torch.no_grad():
        key = keys[fact].to(device)  # (d_model,)
        a = memory.slot_weights(key).cpu()  # (m,)
        predicted = int(memory(key).argmax())
        t = int(target[fact])
        vote = a * memory.W_out.weight[t].cpu()  # (m,) a_u (v_u)_target
    fig, (ax1, ax2) = new_figure(1, 2, figsize=figsize)
    slots = range(len(a))
    ax1.bar(slots, a.numpy(), color=COLORS[0])
    ax1.set(xlabel=_("slot u"), ylabel=_("slot weight a_u"),
            title=(_("fact {fact} ({title})") if title else _("fact {fact}")).format(fact=fact, title=_memory(title)))
    ax2.bar(slots, vote.numpy(), color=[COLORS[2] if v >= 0 else COLORS[1] for v in vote.tolist()])
    ax2.axhline(0, color="gray", lw=0.8)
    ax2.set(xlabel=_("slot u"), ylabel=_("a_u · v_u[target]"),
            title=_("target {t}, predicted {p}").format(t=t, p=predicted))
    for ax in (ax1, ax2):
        ax.set_xticks(range(0, len(a), 2))
    return fig


def _memory(name):
    """The chapter's memory names in the language in force."""
    return {"trained": _("trained"), "by hand": _("by hand")}.get(name, name)


def capacity_figure(series, hand_ratios, acc_hand):
    """Recall of stored facts against facts per slot N / m (chapter 9). series: {(normalise,
    m): [(N/m, recall), ...]} of trained memories, drawn relu m = 16, relu m = 64, softmax
    m = 16; acc_hand: {N/m: recall} of the memory written by hand."""
    fig, ax = new_figure(figsize=(6.4, 3.8))
    for (normalise, m), style in zip(series, ("o-", "s", "^--")):
        label = (_("trained MLP, m = {m}") if normalise == "relu" else _("softmax slots, m = {m}")).format(m=m)
        ratios, recalls = zip(*series[normalise, m])
        ax.plot(ratios, recalls, style, ms=6, label=label)
    ax.plot(hand_ratios, [acc_hand[r] for r in hand_ratios], "x:", color="gray",
            label=_("one fact per slot (by hand)"))
    ax.axhline(1 / 16, color="gray", ls="--", lw=1, label=_("chance"))
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(hand_ratios), [f"{r:g}" for r in hand_ratios])
    ax.set(xlabel=_("facts per slot  N / m"), ylabel=_("recall of stored facts"), ylim=(0, 1.05),
           title=_("How many facts fit in an MLP of width m"))
    ax.legend(fontsize=9)
    return fig


def slot_weights_figure(w_hand, w_trained):
    """The slot weights (facts, slots) of the memory written by hand and of the trained one
    (chapter 9)."""
    fig, (ax1, ax2) = new_figure(1, 2, figsize=(8.5, 4.2))
    heatmap(w_hand, xlabel=_("slot u"), ylabel=_("fact"), title=_("by hand: one slot per fact, or none"), ax=ax1)
    heatmap(w_trained, xlabel=_("slot u"), ylabel=_("fact"), title=_("trained: many slots per fact"), ax=ax2)
    for ax in (ax1, ax2):
        ax.set_xticks(range(0, w_hand.shape[1], 2))
    return fig
