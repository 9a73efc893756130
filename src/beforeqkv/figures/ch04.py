"""Figures of chapter 4: fixed vs content-dependent mixing weights."""
from __future__ import annotations

import numpy as np

from ..i18n import _
from ..plot import COLORS, heatmap, new_figure
from .common import (
    BLUE,
    FONT,
    GREY,
    MIN_FONT,
    ORANGE,
    _box,
    _check_tokens,
    _done,
)

__all__ = ["mixing_figure", "routing_figure", "pointer_weights_figure", "pointer_row_figure"]


def mixing_figure(T: int = 5, focus: int = 3, seed: int = 0):
    """All-to-all mixing ``y_i = sum_j w_ij x_j`` (chapters 3-4): lines and the matrix of w_ij."""
    _check_tokens(T)
    if not isinstance(focus, int) or not 1 <= focus <= T:
        raise ValueError(f"focus must be an output index from 1 to T={T}, got {focus!r}")
    scores = np.random.default_rng(seed).normal(size=(T, T)) * 1.2
    w = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)        # (T, T), rows sum to 1
    fig, (ax, mat) = new_figure(1, 2, figsize=(7.0, 3.6), width_ratios=[1.25, 1])
    ax.set_xlim(0.3, T + 0.7)
    ax.set_ylim(-0.9, 3.2)
    ax.set_axis_off()
    ax.set_title(_("every $y_i$ reads every $x_j$"), fontsize=12)
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
    mat.set_xlabel(_("input $j$"), fontsize=FONT)
    mat.set_ylabel(_("output $i$"), fontsize=FONT)
    mat.set_title(_("$w_{ij}$: each row sums to 1"), fontsize=12)
    return _done(fig, "mixing_figure")


def _mixer(name):
    """A mixer's or a task's name in the language in force."""
    return {"static": _("static"), "content": _("content"), "content, no positions": _("content, no positions"),
            "fixed": _("fixed"), "salient": _("salient"), "pointer": _("pointer")}.get(name, name)


def routing_figure(acc, mixers, task_names):
    """Held-out accuracy of each mixer on each routing task, grouped by task (chapter 4).

    acc: {(task, mixer): accuracy} for the runs made; mixers and task_names in drawing order.
    """
    fig, ax = new_figure(figsize=(6.4, 3.4))
    for k, mixer_name in enumerate(mixers):
        done = [(i, t) for i, t in enumerate(task_names) if (t, mixer_name) in acc]
        xs = [i + (k - 1) * 0.27 for i, _t in done]
        ys = [acc[t, mixer_name] for _i, t in done]
        ax.bar(xs, ys, width=0.26, label=_mixer(mixer_name), color=COLORS[k])
        for x, y in zip(xs, ys):
            ax.text(x, y, f"{y:.2f}", ha="center", va="bottom", fontsize=9)
    ax.set_xticks(range(len(task_names)), [_mixer(t) for t in task_names])
    ax.axhline(1 / 16, color="gray", ls="--", lw=1, label=_("chance (1/16)"))
    ax.set_ylim(0, 1.1)
    ax.set_ylabel(_("held-out accuracy"))
    ax.set_title(_("Static weights cannot follow a pointer"))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, fontsize=9)
    return fig


def pointer_weights_figure(weights):
    """Each mixer's weights (queries, positions) on the pointer task, one heatmap per
    mixer; ``weights``: {mixer: (16, 16)} (chapter 4)."""
    fig, axes = new_figure(1, len(weights), figsize=(9.6, 3.2))
    for ax, (mixer_name, w) in zip(axes, weights.items()):
        heatmap(w, ax=ax, vmin=0, vmax=1, colorbar=False, title=_mixer(mixer_name),
                xlabel=_("position j"), ylabel=_("query p") if ax is axes[0] else "")
    return fig


def pointer_row_figure(rows, tokens, query: int):
    """The weights each mixer puts on the positions of one sequence for the query 'read
    position ``query``' (chapter 4). rows: {mixer: (weights (T,), its answer)}; tokens (T,)."""
    fig, ax = new_figure(figsize=(6.4, 3.0))
    for k, (mixer_name, (w, pred)) in enumerate(rows.items()):
        ax.plot(range(len(w)), w, marker="o", ms=4, color=COLORS[k],
                label=_("{mixer} (answers {answer})").format(mixer=_mixer(mixer_name), answer=pred))
    ax.axvspan(query - 0.5, query + 0.5, color="gold", alpha=0.3, label=_("position {p}").format(p=query))
    ax.set_xticks(range(len(tokens)), [str(t) for t in tokens])
    ax.set_xlabel(_("token at each position"))
    ax.set_ylabel(_("weight"))
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(_("query: read position {p} (answer {answer})").format(p=query, answer=tokens[query]))
    ax.legend(fontsize=9)
    return fig
