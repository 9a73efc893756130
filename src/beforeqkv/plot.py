"""Figures for the book: matplotlib only, every function returns a ``Figure``.

Chapters call these so that every figure in the book looks the same. Figures are
made with ``matplotlib.figure.Figure`` (not pyplot), so a notebook shows each one
exactly once: when the cell returns it.
"""
from __future__ import annotations

import io
import logging
import warnings
from pathlib import Path
from typing import Mapping, Sequence

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from .i18n import _, language

__all__ = [
    "use_book_style",
    "lines",
    "bars",
    "heatmap",
    "loss_curves",
    "COLORS",
    "new_figure",
    "enable_notebook_display",
    "use_language_font",
    "cjk_font",
    "CJK_FONTS",
]

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]

# Fonts with the Chinese characters, best first: the one found goes in front of the usual
# sans-serif, which supplies each glyph it lacks (see use_language_font).
CJK_FONTS = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "WenQuanYi Micro Hei",
             "Microsoft YaHei", "PingFang SC", "SimHei")
NO_CJK_FONT = ("beforeqkv: BEFOREQKV_LANG=zh_CN but no Chinese font for matplotlib was found "
               "(looked for {fonts}); figure labels will show empty boxes. Fix: "
               "`apt install fonts-noto-cjk` (then restart the kernel) or `pip install mplfonts`.")
_FONT_STATE = {"searched": False, "font": None, "warned": False, "saved_family": None}


def _mplfonts_files() -> list:
    """Font files shipped by the optional ``mplfonts`` package (never a dependency)."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("mplfonts")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    root = Path(list(spec.submodule_search_locations)[0])
    return sorted(f for ext in ("*.otf", "*.ttf", "*.ttc") for f in root.rglob(ext))


def cjk_font() -> str | None:
    """The name of the first installed font of :data:`CJK_FONTS` (``mplfonts``'s fonts
    count when that package is installed), or None. Searched once per process."""
    if _FONT_STATE["searched"]:
        return _FONT_STATE["font"]
    from matplotlib import font_manager

    def installed():
        names = {f.name for f in font_manager.fontManager.ttflist}
        return next((name for name in CJK_FONTS if name in names), None)

    def add(files):
        for f in files:
            try:
                font_manager.fontManager.addfont(str(f))
            except (OSError, RuntimeError, ValueError):  # a file matplotlib cannot read
                continue

    found = installed()
    if found is None:  # matplotlib's font cache predates the font (installed later): look again
        known = {f.fname for f in font_manager.fontManager.ttflist}
        add(f for f in font_manager.findSystemFonts() if f not in known)
        found = installed()
    if found is None:
        files = _mplfonts_files()
        add(files)
        found = installed()
        if found is None and files:  # any CJK family the package brought
            names = {f.name for f in font_manager.fontManager.ttflist if Path(f.fname) in set(files)}
            found = next((n for n in sorted(names) if "CJK" in n and "Mono" not in n), None)
    _FONT_STATE.update(searched=True, font=found)
    return found


def use_language_font() -> str | None:
    """Fonts for the language in force (:func:`beforeqkv.i18n.language`).

    Chinese: ``font.family`` becomes a CJK font followed by the usual sans-serif, and each
    glyph the CJK font lacks falls back to the sans-serif (matplotlib >= 3.6). The CJK font
    comes first because the words around ``$maths$`` in a label are drawn by mathtext, which
    takes the first font of the list only and falls back to none; the maths itself keeps
    ``mathtext.fontset``, as in English. Without a CJK font, a warning (once) says how to
    install one. English: the fonts are left as they are (or put back, after Chinese in the
    same process). Returns the CJK font used.
    """
    rc = matplotlib.rcParams
    if language() != "zh_CN":
        if _FONT_STATE["saved_family"] is not None:
            rc["font.family"] = _FONT_STATE["saved_family"]
            _FONT_STATE["saved_family"] = None
        return None
    font = cjk_font()
    if font is None:
        if not _FONT_STATE["warned"]:
            _FONT_STATE["warned"] = True
            warnings.warn(NO_CJK_FONT.format(fonts=", ".join(CJK_FONTS)), UserWarning, stacklevel=2)
        return None
    # A CJK font often has no bold face: matplotlib then draws a bold title in the regular
    # weight and logs "findfont: Failed to find font weight bold" above the figure; that is
    # expected here, not news for the reader. (Missing glyphs are other loggers/warnings.)
    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
    family = list(rc["font.family"])
    if family[:1] != [font]:
        if _FONT_STATE["saved_family"] is None:
            _FONT_STATE["saved_family"] = family
        rc["font.family"] = [font] + [f for f in family if f != font]
    return font


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
    use_language_font()


def new_figure(nrows: int = 1, ncols: int = 1, figsize=None, layout=None, **kwargs):
    """A fresh (fig, axes) pair outside pyplot's global state (shown once when returned).

    Its words use the fonts of the language in force (:func:`use_language_font`), also
    when the language was changed after :func:`use_book_style`. ``layout="none"``: a figure
    placed by hand with ``subplots_adjust`` (the book style's constrained layout is off from
    the start, so matplotlib has nothing to warn about)."""
    use_language_font()
    fig = Figure(figsize=figsize or matplotlib.rcParams["figure.figsize"], layout=layout)
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
        ax.axhline(chance, color="gray", ls="--", lw=1, label=_("chance"))
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
        (ax.axvline if horizontal else ax.axhline)(chance, color="gray", ls="--", lw=1, label=_("chance"))
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
                floor_label: str | None = None, logy: bool = False, ax=None, figsize=None):
    """Training loss against step for several :class:`~beforeqkv.train.History` objects."""
    if not histories:
        raise ValueError("loss_curves() needs at least one history")
    fig, ax = (ax.figure, ax) if ax is not None else new_figure(figsize=figsize)
    for label, h in histories.items():
        ax.plot(h.steps, h.loss, label=label)
    if floor is not None:
        ax.axhline(floor, color="gray", ls="--", lw=1, label=_("floor") if floor_label is None else floor_label)
    if logy:
        ax.set_yscale("log")
    ax.legend()
    _finish(ax, title, _("step"), _("training loss (nats)"))
    return fig
