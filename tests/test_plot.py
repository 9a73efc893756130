"""Every plotting function returns a Figure and checks its inputs."""
import pytest
import torch
from matplotlib.figure import Figure

from beforeqkv import plot, train


def test_plot_functions_return_figures():
    h = train.History(steps=[1, 2], loss=[1.0, 0.5])
    figs = [
        plot.lines([1, 2, 4], {"a": [0.1, 0.5, 0.9]}, logx=True, chance=0.1),
        plot.bars(["x", "a long label"], [0.2, 0.9], chance=0.5),
        plot.bars(["x", "y"], [0.2, 0.9], horizontal=True),
        plot.heatmap(torch.rand(3, 4), xlabels=list("abcd"), ylabels=list("xyz"), annotate=True),
        plot.loss_curves({"run": h}, floor=0.3),
    ]
    assert all(isinstance(f, Figure) for f in figs)


def test_plot_inputs_are_checked():
    with pytest.raises(ValueError):
        plot.lines([1, 2], {"a": [1.0]})
    with pytest.raises(ValueError):
        plot.bars(["a"], [1.0, 2.0])
    with pytest.raises(ValueError):
        plot.heatmap(torch.rand(2, 2, 2))
    with pytest.raises(ValueError):
        plot.lines([1], {})


def test_figures_render_as_png_in_ipython():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        assert plot.enable_notebook_display() is True
        data, _ = shell.display_formatter.format(plot.bars(["a"], [1.0]))
        assert data["image/png"][:4] == b"\x89PNG"
    finally:
        InteractiveShell.clear_instance()


def test_enable_notebook_display_is_harmless_outside_ipython():
    assert plot.enable_notebook_display() is False
