"""The explorer builds a working widget and refuses functions that return no figure."""
import pytest

from beforeqkv import plot, widgets

ipywidgets = pytest.importorskip("ipywidgets")


def test_explorer_redraws_with_the_chosen_value():
    seen = []

    def draw(n=1):
        seen.append(n)
        return plot.lines([0, 1], {"y": [0, n]})

    ui = widgets.explorer(draw, n=(1, 5, 1))
    assert isinstance(ui, ipywidgets.Widget)
    ui.children[0].value = 3
    assert 3 in seen


def test_explorer_rejects_bad_arguments():
    with pytest.raises(ValueError):
        widgets.explorer(lambda: None)
    with pytest.raises(ValueError):
        widgets.explorer(42, n=(1, 2))


def test_explorer_starts_at_the_plot_functions_defaults():
    def draw(n=4, kind="b"):
        return plot.lines([0, 1], {kind: [0, n]})

    ui = widgets.explorer(draw, n=(1, 9, 1), kind=["a", "b", "c"])
    values = {c.description: c.value for c in ui.children if hasattr(c, "value") and c.description}
    assert values == {"n": 4, "kind": "b"}
