"""Explorers: a live widget in Jupyter, a precomputed component on the site that never
shows a setting other than the one its figure was drawn with."""
import json
import re

import pytest

from beforeqkv import _explorer_static as static
from beforeqkv import plot, widgets

ipywidgets = pytest.importorskip("ipywidgets")


@pytest.fixture(autouse=True)
def live_by_default(monkeypatch):
    monkeypatch.delenv(widgets.MODE_ENV, raising=False)


def test_explorer_redraws_with_the_chosen_value():
    seen = []

    def draw(n=1):
        seen.append(n)
        return plot.lines([0, 1], {"y": [0, n]})

    ui = widgets.explorer(draw, n=(1, 5, 1))
    assert isinstance(ui, ipywidgets.Widget)
    ui.children[0].value = 3
    assert 3 in seen


def test_explorer_rejects_bad_arguments(monkeypatch):
    with pytest.raises(ValueError):
        widgets.explorer(lambda: None)
    with pytest.raises(ValueError):
        widgets.explorer(42, n=(1, 2))
    monkeypatch.setenv(widgets.MODE_ENV, "sometimes")
    with pytest.raises(ValueError, match="BEFOREQKV_EXPLORERS"):
        widgets.explorer(lambda n=1: plot.lines([0, 1], {"y": [0, n]}), n=(1, 2))


def test_explorer_starts_at_the_plot_functions_defaults():
    def draw(n=4, kind="b"):
        return plot.lines([0, 1], {kind: [0, n]})

    ui = widgets.explorer(draw, n=(1, 9, 1), kind=["a", "b", "c"])
    values = {c.description: c.value for c in ui.children if hasattr(c, "value") and c.description}
    assert values == {"n": 4, "kind": "b"}


def labelled(n=4, kind="b", scaled=False):
    """A figure whose pixels depend on every argument (so frames can be compared)."""
    return plot.lines([0, 1], {f"{kind} {scaled}": [0, n]}, title=f"n={n} kind={kind} scaled={scaled}")


def test_explorer_is_a_static_component_when_the_book_is_built(monkeypatch):
    monkeypatch.setenv(widgets.MODE_ENV, "static")
    ui = widgets.explorer(labelled, n=(1, 3, 1))
    assert isinstance(ui, widgets.StaticExplorer)
    assert not isinstance(ui, ipywidgets.Widget)
    assert "bqkv-explorer" in ui._repr_html_()


def test_a_build_can_change_the_budget_but_not_to_nonsense(monkeypatch):
    monkeypatch.setenv(widgets.MODE_ENV, "static")
    monkeypatch.setenv(widgets.MAX_ENV, "2")
    assert len(widgets.explorer(labelled, n=(1, 9, 1)).frames) == 2
    monkeypatch.setenv(widgets.MAX_ENV, "many")
    with pytest.raises(ValueError, match="positive integer"):
        widgets.explorer(labelled, n=(1, 9, 1))


def test_every_static_frame_is_the_figure_of_the_setting_its_controls_show():
    ui = widgets.static_explorer(labelled, dict(n=(1, 3, 1), kind=["a", "b"], scaled=False), 100)
    assert ui.sizes == [3, 2, 2] and len(ui.frames) == 12 and len(ui.images) == 12
    for c in ui.controls:
        assert c.texts == [str(v) for v in c.values]
    for n in (1, 2, 3):
        for kind in ("a", "b"):
            for scaled in (False, True):
                assert ui.frame(n=n, kind=kind, scaled=scaled) == static._png(labelled(n, kind, scaled))
    assert ui.frame() == static._png(labelled(3, "b", False))   # no values: the start
    start = {c.name: c.values[c.index] for c in ui.controls}
    assert start == {"n": 3, "kind": "b", "scaled": False}     # n=4 clamps to the slider's max
    with pytest.raises(ValueError, match="not offered"):
        ui.frame(n=7)


def test_identical_figures_are_stored_once():
    ui = widgets.static_explorer(lambda n=1, unused=0: labelled(n), dict(n=(1, 2, 1), unused=(0, 4, 1)), 100)
    assert len(ui.frames) == 10 and len(ui.images) == 2


def test_a_large_grid_is_thinned_sliders_first_keeping_the_ends_and_the_start():
    ui = widgets.static_explorer(labelled, dict(n=(0, 50, 1), kind=["a", "b", "c"]), 12)
    n, kind = ui.controls
    assert kind.values == ["a", "b", "c"]                  # dropdowns are kept whole
    assert len(n.values) == 4 and {0, 4, 50} <= set(n.values)
    assert n.values[n.index] == 4 and len(ui.frames) == 12
    note = ui.note()
    assert "12 of 153 settings" in note and "n: 0, " in note and "Jupyter or Colab" in note
    tiny = widgets.static_explorer(labelled, dict(n=(0, 50, 1), kind=["a", "b", "c"]), 2)
    assert tiny.sizes == [1, 2] and tiny.controls[0].kind == "fixed"
    assert "b" in tiny.controls[1].values                  # the starting option survives


@pytest.mark.parametrize("abbrev, default", [
    ((1, 10, 1), 6), ((0, 50, 1), 7), ((0, 9), None), ((0.25, 1.5, 0.25), 0.75), ((0.0, 1.0), None),
    ((0, 12, 1), 99), ([2, 4, 8, 16, 32], 16), (["a", "b"], "zz"), ([("one", 1), ("two", 2)], 2),
    (False, None), (True, None), (16, None), (0, None), (2.5, None)])
def test_static_controls_offer_what_ipywidgets_offers(abbrev, default):
    empty = static.inspect.Parameter.empty
    default = empty if default is None else default
    widget = ipywidgets.interactive.widget_from_abbrev(abbrev, default)
    control = static._control("x", abbrev, default)
    assert control.values[control.index] == pytest.approx(widget.value)
    if hasattr(widget, "_options_values"):
        assert control.values == list(widget._options_values)
        assert control.texts == list(widget._options_labels)
    elif isinstance(widget.value, bool):
        assert control.values == [False, True]
    else:
        assert control.values[0] == pytest.approx(widget.min)
        assert control.values[-1] == pytest.approx(widget.max, abs=widget.step)
        assert control.values[1] - control.values[0] == pytest.approx(widget.step)


def test_widget_instances_are_read_not_recreated():
    d_k = ipywidgets.Dropdown(options=[8, 16, 32, 64], value=16, description="d_k")
    scale = ipywidgets.FloatSlider(value=30.0, min=1.0, max=40.0, step=1.0, description="scale")
    ui = widgets.static_explorer(lambda d_k=16, sharpness=30.0: labelled(d_k, str(sharpness)),
                                 dict(d_k=d_k, sharpness=scale), 12)
    assert [c.label for c in ui.controls] == ["d_k", "scale"]
    assert ui.controls[0].values == [8, 16, 32, 64]
    s = ui.controls[1]
    assert len(s.values) == 3 and s.values[0] == 1.0 and s.values[-1] == 40.0 and 30.0 in s.values


def test_the_component_is_self_contained_and_starts_at_the_start():
    ui = widgets.static_explorer(labelled, dict(n=(1, 3, 1), kind=["a", "b"]), 100)
    page = ui._repr_html_()
    assert "http" not in page and "require(" not in page       # no CDN, no loader
    srcs = re.findall(r'src="([^"]+)"', page)
    assert len(srcs) == 1 and srcs[0].startswith("data:image/png;base64,")
    data = json.loads(re.search(r'<script type="application/json" class="bqkv-data">(.*?)</script>',
                                page, re.S).group(1))
    assert data["sizes"] == [3, 2] and len(data["frames"]) == 6
    assert srcs[0] == data["images"][data["frames"][ui.start]]
    assert page.count(" disabled>") == 2         # controls are enabled by the script, not before
    assert 'value="2" disabled> <output data-out="0">3</output>' in page


@pytest.mark.parametrize("controls, match", [
    (dict(n=(5, 1)), "lo <= hi"), (dict(n=(1, 5, 0)), "step"), (dict(m=(1, 2)), "no argument"),
    (dict(n=[]), "no options"), (dict(n=object()), "control n")])
def test_static_explorer_rejects_bad_controls(controls, match):
    with pytest.raises(ValueError, match=match):
        widgets.static_explorer(labelled, controls, 10)


def test_static_explorer_rejects_a_bad_budget_and_a_plot_without_figure():
    with pytest.raises(ValueError, match="max_figures"):
        widgets.static_explorer(labelled, dict(n=(1, 2)), 0)
    with pytest.raises(ValueError, match="Figure"):
        widgets.static_explorer(lambda n=1: None, dict(n=(1, 2)), 10)


def test_the_alt_text_says_what_the_figure_shows_not_the_function_name(monkeypatch):
    monkeypatch.setenv(widgets.MODE_ENV, "static")
    ui = widgets.explorer(labelled, description="A line rising to n.", n=(1, 3, 1))
    page = ui._repr_html_()
    alt = re.search(r'<img class="bqkv-figure" src="[^"]+" alt="([^"]+)"', page).group(1)
    assert alt.startswith("A line rising to n. (n = 3)") and "labelled" not in alt
    assert '"alt":"A line rising to n."' in page             # the script keeps it per setting

    def documented(n=1):
        """Documented: a line."""
        return plot.lines([0, 1], {"y": [0, n]})

    assert widgets.static_explorer(documented, dict(n=(1, 2)), 4).description == "Documented: a line."
    with pytest.raises(ValueError, match="description"):
        widgets.explorer(labelled, description="  ", n=(1, 3, 1))
