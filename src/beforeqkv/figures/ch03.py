"""Figures of chapter 3: the step at which each unit can run, with and without recurrence."""
from __future__ import annotations

from ..i18n import _
from ..plot import COLORS, lines, new_figure

__all__ = ["steps_figure", "depth_figure", "time_figure"]


def _circle(ax, center, r, color):
    from matplotlib.patches import Circle

    ax.add_patch(Circle(center, r, facecolor=color, edgecolor="black", lw=1, zorder=3))


def _draw_steps(ax, steps, recurrent: bool, r: float = 0.24):
    """Inputs at the bottom, then one row of units per layer labelled with its compute step."""
    n_layers, T = steps.shape

    def arrow(p, q, color, lw):
        (x0, y0), (x1, y1) = p, q
        dist = ((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5
        ux, uy = (x1 - x0) / dist, (y1 - y0) / dist
        ax.annotate("", xy=(x1 - r * ux, y1 - r * uy), xytext=(x0 + r * ux, y0 + r * uy),
                    arrowprops=dict(arrowstyle="-|>", color=color, lw=lw, shrinkA=0, shrinkB=0))

    for layer in range(1, n_layers + 1):
        for t in range(T):
            for j in range(t + 1):  # the all-to-all ("red") links, j <= t
                arrow((j, layer - 1), (t, layer), COLORS[1], 0.9)
            if recurrent and t > 0:  # the left-to-right links
                arrow((t - 1, layer), (t, layer), "black", 2.0)
    for t in range(T):
        _circle(ax, (t, 0), r, "#dddddd")
        ax.text(t, 0, f"$x_{t + 1}$", ha="center", va="center", fontsize=9)
        for layer in range(1, n_layers + 1):
            _circle(ax, (t, layer), r, "white")
            ax.text(t, layer, str(int(steps[layer - 1, t])), ha="center", va="center", fontsize=10)
    ax.set_xlim(-0.5, T - 0.5)
    ax.set_ylim(-0.5, n_layers + 0.5)
    ax.set_aspect("equal")
    ax.axis("off")
    title = _("with recurrence: {n} steps") if recurrent else _("red connections only: {n} steps")
    ax.set_title(title.format(n=int(steps.max())))


def steps_figure(n_layers: int = 2, T: int = 4):
    """Two diagrams of ``n_layers`` x ``T`` units, each labelled with the step it can run
    at: with left-to-right recurrence, and with the all-to-all links only (chapter 3)."""
    from ..measure.steps import step_of_each_unit

    fig, axes = new_figure(1, 2, figsize=(7.5, 1.2 + 0.95 * n_layers))
    for ax, recurrent in zip(axes, (True, False)):
        _draw_steps(ax, step_of_each_unit(n_layers, T, recurrent), recurrent)
    return fig


def _named(series):
    """The series of the chapter's two models, their names in the language in force."""
    names = {"loop RNN": _("loop RNN"), "attention layer": _("attention layer")}
    return {names.get(k, k): v for k, v in series.items()}


def depth_figure(lengths, depth):
    """Sequential depth (operations that must run in order) against the sequence length T;
    ``depth``: {model: [depth at each T]} (chapter 3)."""
    return lines(lengths, _named(depth), logx=True, logy=True, xlabel=_("sequence length T"),
                 ylabel=_("sequential depth (operations)"), title=_("Steps that must run in order"))


def time_figure(lengths, ms):
    """Forward + backward time of one sequence on a CPU against T; ``ms``: {model: [ms at
    each T]} (chapter 3)."""
    return lines(lengths, _named(ms), logx=True, logy=True, xlabel=_("sequence length T"),
                 ylabel=_("forward + backward (ms, CPU)"), title=_("One sequence (B = 1) on a CPU"))
