"""Figures for the book: matplotlib only, every function returns a ``Figure``.

Chapters call these so that every figure in the book looks the same. Figures are
made with ``matplotlib.figure.Figure`` (not pyplot), so a notebook shows each one
exactly once: when the cell returns it.
"""
from __future__ import annotations

import io
from typing import Mapping, Sequence

import matplotlib
import numpy as np
from matplotlib.figure import Figure

__all__ = [
    "use_book_style",
    "lines",
    "bars",
    "heatmap",
    "loss_curves",
    "compute_steps",
    "ring_head_weights",
    "COLORS",
    "new_figure",
    "enable_notebook_display",
    "slot_votes",
]

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


def enable_notebook_display() -> bool:
    """Show ``Figure`` objects as PNG images when a notebook cell returns them.

    Jupyter's inline backend registers this only once pyplot is imported; the book
    never imports pyplot (so no figure is shown twice), hence this explicit hook.
    Returns False outside IPython.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    if ip is None or not hasattr(ip, "display_formatter"):
        return False

    def to_png(fig):
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight")
        return buf.getvalue()

    ip.display_formatter.formatters["image/png"].for_type(Figure, to_png)
    return True


def use_book_style() -> None:
    """One style for every figure: readable fonts, light grid, no top/right spines."""
    matplotlib.rcParams.update({
        "figure.figsize": (6.4, 3.6),
        "figure.dpi": 100,
        "savefig.dpi": 120,
        "font.size": 10,
        "axes.titlesize": 11,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.prop_cycle": matplotlib.cycler(color=COLORS),
        "legend.frameon": False,
        "figure.constrained_layout.use": True,
    })


def new_figure(nrows: int = 1, ncols: int = 1, figsize=None, **kwargs):
    """A fresh (fig, axes) pair outside pyplot's global state (shown once when returned)."""
    fig = Figure(figsize=figsize or matplotlib.rcParams["figure.figsize"])
    axes = fig.subplots(nrows, ncols, **kwargs)
    return fig, axes


def _finish(ax, title, xlabel, ylabel):
    if title:
        ax.set_title(title)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)


def lines(x: Sequence, ys: Mapping[str, Sequence], xlabel: str = "", ylabel: str = "", title: str = "",
          logx: bool = False, logy: bool = False, chance: float | None = None, ylim=None,
          markers: bool = True, ax=None, figsize=None):
    """One line per entry of ``ys`` (label -> values over ``x``); optional chance line."""
    if not ys:
        raise ValueError("lines() needs at least one series in ys")
    for label, y in ys.items():
        if len(y) != len(x):
            raise ValueError(f"series {label!r} has {len(y)} values but x has {len(x)}")
    fig, ax = (ax.figure, ax) if ax is not None else new_figure(figsize=figsize)
    for label, y in ys.items():
        ax.plot(x, y, marker="o" if markers else None, ms=4, label=label)
    if chance is not None:
        ax.axhline(chance, color="gray", ls="--", lw=1, label="chance")
    if logx:
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(x))
        ax.set_xticklabels([str(v) for v in x])
    if logy:
        ax.set_yscale("log")
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.legend()
    _finish(ax, title, xlabel, ylabel)
    return fig


def bars(labels: Sequence[str], values: Sequence[float], ylabel: str = "", title: str = "",
         chance: float | None = None, ylim=None, annotate: bool = True, colors=None, ax=None, figsize=None,
         horizontal: bool = False):
    """A bar chart with the value written on each bar."""
    if len(labels) != len(values):
        raise ValueError(f"{len(labels)} labels but {len(values)} values")
    fig, ax = (ax.figure, ax) if ax is not None else new_figure(figsize=figsize)
    pos = np.arange(len(labels))
    colors = colors or [COLORS[i % len(COLORS)] for i in range(len(labels))]
    if horizontal:
        ax.barh(pos, values, color=colors)
        ax.set_yticks(pos, labels)
        ax.invert_yaxis()
    else:
        ax.bar(pos, values, color=colors)
        ax.set_xticks(pos, labels, rotation=20 if max(len(s) for s in labels) > 8 else 0, ha="right"
                      if max(len(s) for s in labels) > 8 else "center")
    if annotate:
        for p, v in zip(pos, values):
            if horizontal:
                ax.text(v, p, f" {v:.2f}", va="center", fontsize=9)
            else:
                ax.text(p, v, f"{v:.2f}", ha="center", va="bottom", fontsize=9)
    if chance is not None:
        (ax.axvline if horizontal else ax.axhline)(chance, color="gray", ls="--", lw=1, label="chance")
        ax.legend()
    if ylim is not None:
        (ax.set_xlim if horizontal else ax.set_ylim)(*ylim)
    _finish(ax, title, "" if not horizontal else ylabel, ylabel if not horizontal else "")
    return fig


def heatmap(matrix, xlabels: Sequence[str] | None = None, ylabels: Sequence[str] | None = None,
            title: str = "", xlabel: str = "", ylabel: str = "", cmap: str = "viridis", vmin=None, vmax=None,
            annotate: bool = False, colorbar: bool = True, ax=None, figsize=None):
    """A matrix as an image, e.g. attention weights (rows = queries, columns = keys)."""
    m = matrix.detach().cpu().numpy() if hasattr(matrix, "detach") else np.asarray(matrix)
    if m.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D matrix, got shape {m.shape}")
    fig, ax = (ax.figure, ax) if ax is not None else new_figure(figsize=figsize or (4.2, 3.6))
    im = ax.imshow(m, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.grid(False)
    if xlabels is not None:
        ax.set_xticks(range(m.shape[1]), xlabels, rotation=90 if m.shape[1] > 8 else 0)
    if ylabels is not None:
        ax.set_yticks(range(m.shape[0]), ylabels)
    if annotate:
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", fontsize=9,
                        color="white" if m[i, j] < (np.nanmax(m) + np.nanmin(m)) / 2 else "black")
    if colorbar:
        fig.colorbar(im, ax=ax, shrink=0.85)
    _finish(ax, title, xlabel, ylabel)
    return fig


def loss_curves(histories: Mapping[str, object], title: str = "", floor: float | None = None,
                floor_label: str = "floor", logy: bool = False, ax=None, figsize=None):
    """Training loss against step for several :class:`~beforeqkv.train.History` objects."""
    if not histories:
        raise ValueError("loss_curves() needs at least one history")
    fig, ax = (ax.figure, ax) if ax is not None else new_figure(figsize=figsize)
    for label, h in histories.items():
        ax.plot(h.steps, h.loss, label=label)
    if floor is not None:
        ax.axhline(floor, color="gray", ls="--", lw=1, label=floor_label)
    if logy:
        ax.set_yscale("log")
    ax.legend()
    _finish(ax, title, "step", "training loss (nats)")
    return fig


def _circle(ax, center, r, color):
    from matplotlib.patches import Circle

    ax.add_patch(Circle(center, r, facecolor=color, edgecolor="black", lw=1, zorder=3))


def _draw_steps(ax, steps, recurrent: bool, r: float = 0.24):
    """Inputs at the bottom, then one row of units per layer labelled with its compute step."""
    n_layers, n_tokens = steps.shape

    def arrow(p, q, color, lw):
        (x0, y0), (x1, y1) = p, q
        dist = ((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5
        ux, uy = (x1 - x0) / dist, (y1 - y0) / dist
        ax.annotate("", xy=(x1 - r * ux, y1 - r * uy), xytext=(x0 + r * ux, y0 + r * uy),
                    arrowprops=dict(arrowstyle="-|>", color=color, lw=lw, shrinkA=0, shrinkB=0))

    for layer in range(1, n_layers + 1):
        for t in range(n_tokens):
            for j in range(t + 1):  # the all-to-all ("red") links, j <= t
                arrow((j, layer - 1), (t, layer), COLORS[1], 0.9)
            if recurrent and t > 0:  # the left-to-right links
                arrow((t - 1, layer), (t, layer), "black", 2.0)
    for t in range(n_tokens):
        _circle(ax, (t, 0), r, "#dddddd")
        ax.text(t, 0, f"$x_{t + 1}$", ha="center", va="center", fontsize=9)
        for layer in range(1, n_layers + 1):
            _circle(ax, (t, layer), r, "white")
            ax.text(t, layer, str(int(steps[layer - 1, t])), ha="center", va="center", fontsize=10)
    ax.set_xlim(-0.5, n_tokens - 0.5)
    ax.set_ylim(-0.5, n_layers + 0.5)
    ax.set_aspect("equal")
    ax.axis("off")
    kind = "with recurrence" if recurrent else "red connections only"
    ax.set_title(f"{kind}: {int(steps.max())} steps")


def compute_steps(n_tokens: int = 4, n_layers: int = 2):
    """Two diagrams of ``n_layers`` x ``n_tokens`` units, each labelled with the step it can run
    at: with left-to-right recurrence, and with the all-to-all links only (chapter 3)."""
    from .parallel import compute_steps as steps_of

    fig, axes = new_figure(1, 2, figsize=(7.5, 1.2 + 0.95 * n_layers))
    for ax, recurrent in zip(axes, (True, False)):
        _draw_steps(ax, steps_of(n_layers, n_tokens, recurrent), recurrent)
    return fig


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
        title = f"{label}, head {h + 1}" if label else f"head {h + 1}"
        if profile is not None:
            s, p = profile[h][:2].tolist()
            title += f"\nsucc {s:.2f} | pred {p:.2f}"
        heatmap(w[h][order][:, order], xlabels=ids, ylabels=ids, vmin=0, vmax=1, colorbar=False,
                ax=axes[h], title=title)  # (T, T), rows/cols in ring order
        for r in range(t):
            axes[h].text((r + 1) % ring, r, "s", ha="center", va="center", color="red", fontsize=9)
            axes[h].text((r - 1) % ring, r, "p", ha="center", va="center", color="white", fontsize=9)
        axes[h].set_xlabel("key (item id)")
    axes[0].set_ylabel("query (item id)")
    return axes[0].figure


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
    ax1.set(xlabel="slot u", ylabel="slot weight a_u",
            title=f"fact {fact}" + (f" ({title})" if title else ""))
    ax2.bar(slots, vote.numpy(), color=[COLORS[2] if v >= 0 else COLORS[1] for v in vote.tolist()])
    ax2.axhline(0, color="gray", lw=0.8)
    ax2.set(xlabel="slot u", ylabel="a_u · v_u[target]", title=f"target {t}, predicted {predicted}")
    for ax in (ax1, ax2):
        ax.set_xticks(range(0, len(a), 2))
    return fig
