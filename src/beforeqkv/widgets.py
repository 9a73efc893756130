"""Interactive explorers (ipywidgets, imported lazily).

Every chapter shows a static figure first, then an explorer over the same plotting
function: on the published site the static figure is what readers see; in Jupyter
or Colab the sliders redraw it.
"""
from __future__ import annotations

import inspect
from typing import Callable

__all__ = ["explorer"]


def _ipywidgets():
    try:
        import ipywidgets
    except ImportError as err:  # pragma: no cover - exercised only without ipywidgets
        raise ImportError(
            "the interactive explorers need ipywidgets: pip install ipywidgets "
            "(the static figure above shows the same thing)"
        ) from err
    return ipywidgets


def explorer(plot_fn: Callable, **controls):
    """Re-draw ``plot_fn(**values)`` whenever a control changes; return the widget.

    Each control is an ipywidgets widget or an abbreviation understood by
    ``ipywidgets.interactive``: ``(lo, hi, step)`` for a slider, a list for a
    dropdown, a bool for a checkbox. ``plot_fn`` must return a matplotlib Figure.
    """
    if not callable(plot_fn):
        raise ValueError("plot_fn must be callable and return a matplotlib Figure")
    if not controls:
        raise ValueError("explorer() needs at least one control, e.g. n_pairs=(2, 32, 2)")
    w = _ipywidgets()
    from IPython.display import display

    def show(**values):
        fig = plot_fn(**values)
        if fig is None or not hasattr(fig, "savefig"):
            raise ValueError(f"plot_fn must return a matplotlib Figure, got {type(fig).__name__}")
        display(fig)

    # Give the wrapper plot_fn's signature so sliders start at plot_fn's defaults
    # (the values the static figure above was drawn with).
    params = [p for name, p in inspect.signature(plot_fn).parameters.items() if name in controls]
    show.__signature__ = inspect.Signature(params)
    ui = w.interactive(show, **controls)
    ui.layout = w.Layout(border="1px solid #ddd", padding="4px")
    return ui
