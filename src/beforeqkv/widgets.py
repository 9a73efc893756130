"""Interactive explorers: live ipywidgets in Jupyter/Colab, precomputed figures on the site.

Every chapter shows a static figure first, then ``explorer(plot_fn, **controls)`` over
the same plotting function. In Jupyter or Colab the controls redraw the figure live.
When the book is built (``make execute`` sets ``BEFOREQKV_EXPLORERS=static``) the same
call instead draws a bounded grid of control settings once and returns a
self-contained HTML component (inline PNGs, a few lines of plain JavaScript, no kernel,
no CDN) whose controls swap those figures. A control offers only the values that were
drawn, so it can never show a setting the figure was not drawn with. At most
``MAX_FIGURES`` settings are drawn per explorer (a chapter may change it before the
call; ``BEFOREQKV_EXPLORER_MAX_FIGURES`` overrides it for a whole build); the component
names the values it offers. This costs build time only: a reader's kernel never draws
the grid.
"""
from __future__ import annotations

import inspect
import os
from typing import Callable

from .live import LIVE_DIR_ENV
from ._explorer_static import StaticExplorer, _check, _check_description, _figure_or_raise

__all__ = ["explorer", "static_explorer", "StaticExplorer", "MAX_FIGURES", "MODE_ENV", "MAX_ENV"]

MODE_ENV = "BEFOREQKV_EXPLORERS"      # "live" (default) or "static" (the site build)
MAX_ENV = "BEFOREQKV_EXPLORER_MAX_FIGURES"   # overrides MAX_FIGURES for a whole build
MAX_FIGURES = 24                      # the most settings a static explorer draws (build time only)


def _ipywidgets():
    try:
        import ipywidgets
    except ImportError as err:  # pragma: no cover - exercised only without ipywidgets
        raise ImportError(
            "the interactive explorers need ipywidgets: pip install ipywidgets "
            "(the static figure above shows the same thing)"
        ) from err
    return ipywidgets


def explorer(plot_fn: Callable, description: str | None = None, live=None, **controls):
    """Re-draw ``plot_fn(**values)`` whenever a control changes.

    Each control is an ipywidgets widget or an abbreviation understood by
    ``ipywidgets.interactive``: ``(lo, hi, step)`` for a slider, a list for a
    dropdown, a bool for a checkbox. ``plot_fn`` must return a matplotlib Figure.
    ``description`` says in words what the figure shows: the static explorer's alt
    text (followed by the current setting); without it, the first line of
    ``plot_fn``'s docstring. Returns the live widget, or a :class:`StaticExplorer`
    when the environment variable ``BEFOREQKV_EXPLORERS`` is ``static`` (see
    :func:`static_explorer`).

    ``live``: a live explorer of :mod:`beforeqkv.live` over the chapter's own model and
    the reader's own input, shown above the controls: in Jupyter its widget, on the site
    its component, which computes in the reader's browser (the static figures stay below
    it, for a browser without WebAssembly); one whose ``widget()`` is None (chapter 7's)
    computes what ``plot_fn`` draws, so in Jupyter the controls alone are the explorer.
    The component is made only where
    ``BEFOREQKV_LIVE_DIR`` names a folder for the exported model (``make execute`` does);
    any other static run shows the static explorer alone.
    """
    _check(plot_fn, controls)
    _check_description(description)
    mode = os.environ.get(MODE_ENV, "live").strip().lower() or "live"
    if mode == "static":
        budget = os.environ.get(MAX_ENV, "").strip()
        if budget and not budget.isdigit():
            raise ValueError(f"{MAX_ENV}={budget!r}: use a positive integer")
        static = static_explorer(plot_fn, controls, int(budget) if budget else MAX_FIGURES,
                                 description=description)
        if live is None or not os.environ.get(LIVE_DIR_ENV, "").strip():
            return static       # no folder for the model's files: a run outside the site build
        return _WithLive(live, static)
    if mode != "live":
        raise ValueError(f"{MODE_ENV}={mode!r}: use 'live' or 'static'")
    w = _ipywidgets()
    from IPython.display import display

    def show(**values):
        display(_figure_or_raise(plot_fn(**values)))

    # Give the wrapper plot_fn's signature so sliders start at plot_fn's defaults
    # (the values the static figure above was drawn with).
    params = [p for name, p in inspect.signature(plot_fn).parameters.items() if name in controls]
    show.__signature__ = inspect.Signature(params)
    ui = w.interactive(show, **controls)
    ui.layout = w.Layout(border="1px solid #ddd", padding="4px")
    mine = None if live is None else live.widget()     # None: the chapter's explorer is the live one
    return ui if mine is None else w.VBox([mine, ui])


class _WithLive:
    """The site's live component above a static explorer's figures (its fallback)."""

    def __init__(self, live, static):
        self.live, self.static = live, static
        live.export()

    def _repr_html_(self):
        return self.live.html(fallback=self.static._repr_html_())

    def __repr__(self):
        return f"{self.live!r} above {self.static!r}"


def static_explorer(plot_fn: Callable, controls: dict, max_figures: int = MAX_FIGURES,
                    description: str | None = None):
    """Draw ``plot_fn`` over a grid of at most ``max_figures`` control settings.

    ``controls`` and ``description`` are those of :func:`explorer`. When the full grid
    is larger, sliders are thinned first (evenly spaced values that keep the ends and
    the starting value), then dropdowns; the component says which values it offers.
    """
    return StaticExplorer(plot_fn, controls, max_figures, description=description)
