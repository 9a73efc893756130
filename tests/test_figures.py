"""Every diagram is a Figure with its labelled parts, alt text, and legible fonts."""
import re

import numpy as np
import pytest
from matplotlib.figure import Figure

from beforeqkv import figures

ALL = ["memory_figure", "mixing_figure", "symmetry_figure", "heads_figure",
       "multihead_figure", "scale_figure", "block_figure", "mlp_memory_figure", "argument_map"]
MODULE = {name: getattr(figures, mod) for name, mod in [
    ("memory_figure", "ch01"),
    ("mixing_figure", "ch04"),
    ("symmetry_figure", "ch05"),
    ("heads_figure", "ch06"),
    ("multihead_figure", "ch06"),
    ("scale_figure", "ch07"),
    ("block_figure", "ch08"),
    ("mlp_memory_figure", "ch09"),
    ("argument_map", "common"),
]}


def texts(fig):
    """Every string drawn on the figure (titles, labels, tick labels, annotations)."""
    out = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "get_fontsize"))]
    return [t for t in out if t]


def joined(fig):
    return " ".join(texts(fig))


@pytest.mark.parametrize("name", ALL)
def test_each_diagram_is_a_figure_with_its_alt_text(name):
    fig = getattr(MODULE[name], name)()
    assert isinstance(fig, Figure)
    assert fig.alt_text == figures.ALT_TEXT[name]
    assert len(fig.alt_text) >= 150 and "$" not in fig.alt_text


@pytest.mark.parametrize("name", ALL)
def test_diagrams_stay_legible_in_a_700px_column(name):
    fig = getattr(MODULE[name], name)()
    assert fig.get_size_inches()[0] <= figures.MAX_WIDTH
    sizes = [t.get_fontsize() for t in fig.findobj(lambda a: hasattr(a, "get_fontsize")) if t.get_text()]
    assert sizes and min(sizes) >= figures.MIN_FONT, (name, min(sizes))
    # nothing spills outside the figure, so the saved (tight) PNG is not wider than the figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    tight = fig.get_tightbbox(FigureCanvasAgg(fig).get_renderer())
    assert tight.width <= figures.MAX_WIDTH + 0.05, (name, tight.width)


def test_memory_figure_shows_both_memories():
    s = joined(figures.ch01.memory_figure(T=4))
    assert "Chapter 1" in s and "Chapter 2" in s and "$h_4$" in s and "$h_5$" not in s
    assert "answer" in s and "query $q$" in s


def test_memory_figure_weights_sum_to_one():
    fig = figures.ch01.memory_figure()
    shown = [float(t) for t in texts(fig) if t.replace(".", "").isdigit() and "." in t]
    assert len(shown) == 5 and abs(sum(shown) - 1) <= 0.02


def test_mixing_figure_rows_are_weights_that_sum_to_one():
    fig = figures.ch04.mixing_figure(T=4, focus=2)
    mat = fig.axes[1]
    w = mat.images[0].get_array()
    assert w.shape == (4, 4)
    np.testing.assert_allclose(np.asarray(w).sum(-1), 1.0, rtol=1e-6)
    s = joined(fig)
    assert "$y_2 = \\sum_j w_{2j}\\, x_j$" in s and "$x_4$" in s


def test_symmetry_figure_contrasts_a_matrix_and_its_symmetric_part():
    fig = figures.ch05.symmetry_figure()
    A, S = (np.asarray(ax.images[0].get_array()) for ax in (fig.axes[1], fig.axes[3]))
    assert not np.allclose(A, A.T) and np.allclose(S, S.T)
    np.testing.assert_allclose(S, (A + A.T) / 2)
    s = joined(fig)
    assert all(w in s for w in ["rock", "paper", "scissors", "asymmetric", "symmetric"])


def test_heads_figure_names_the_per_head_maps():
    s = joined(figures.ch06.heads_figure(n_heads=3))
    assert "$W_V^3$" in s and "$W_O^3$" in s and "3 heads" in s and "$T^2 d^2$" in s


def test_multihead_figure_follows_x_through_heads_to_W_O_with_shapes():
    s = joined(figures.ch06.multihead_figure())
    for part in ["$q_i = W_Q\\, x_i$", "$k_j = W_K\\, x_j$", "$v_j = W_V\\, x_j$", "split into",
                 "\\sqrt{d_\\mathrm{head}}", "\\operatorname{softmax}_j", "weighted sum",
                 "concatenate the heads", "$y_i = W_O"]:
        assert part in s, part
    shapes = [t for t in texts(figures.ch06.multihead_figure()) if t.startswith("(")]
    assert shapes == ["(T, d_model)", "(T, n_heads·d_head)", "(n_heads, T, d_head)",
                      "(n_heads, T, T)", "(n_heads, T, T)", "(n_heads, T, d_head)",
                      "(T, n_heads·d_head)", "(T, d_model)"]


def test_scale_figure_spread_grows_like_sqrt_d_and_the_unscaled_softmax_saturates():
    fig = figures.ch07.scale_figure(d_heads=(16, 256, 1024))
    s = joined(fig)
    assert "$d_\\mathrm{head} = 1024$" in s and "saturated" in s and "spread 1" in s
    for ax, want in [(fig.axes[0], [4, 16, 32]), (fig.axes[1], [1, 1, 1])]:
        peaks = [line.get_ydata().max() for line in ax.lines]     # 1 / (sqrt(2 pi) spread)
        spreads = [1 / (np.sqrt(2 * np.pi) * p) for p in peaks]
        np.testing.assert_allclose(spreads, want, rtol=0.02)
    unscaled, scaled = ([b.get_height() for b in ax.patches] for ax in fig.axes[2:])
    assert max(unscaled) > 0.99 and max(scaled) < 0.5
    np.testing.assert_allclose([sum(unscaled), sum(scaled)], 1.0, rtol=1e-6)


def test_mlp_memory_figure_reads_keys_from_W_in_values_from_W_out_and_gates_swiglu():
    s = joined(figures.ch09.mlp_memory_figure())
    for part in ["rows of $W_\\mathrm{in}$", "columns of $W_\\mathrm{out}$", "$k_m$", "$v_m$",
                 "\\operatorname{relu}", "$\\sum_u a_u v_u$", "d_\\mathrm{mlp}",
                 "row $u$ of $W_\\mathrm{gate}$", "scales it"]:
        assert part in s, part
    shown = [float(t.replace("−", "-")) for t in texts(figures.ch09.mlp_memory_figure())
             if t.startswith(("+", "−"))]
    assert shown == figures.ch09.SLOT_MATCH


def test_block_figure_labels_every_part_with_a_chapter():
    s = joined(figures.ch08.block_figure())
    for part in ["LayerNorm", "causal multi-head attention", "MLP", "$W_U$", "residual"]:
        assert part in s, part
    cited = set()
    for group in re.findall(r"ch\. ([0-9, -]+)", s):
        for part in group.replace(" ", "").strip(",").split(","):
            lo, _, hi = part.partition("-")
            cited |= set(range(int(lo), int(hi or lo) + 1))
    assert cited == set(range(3, 10)), cited


def test_argument_map_has_every_chapter_pressure_and_fix():
    s = joined(figures.common.argument_map())
    for _n, _, pressure, fix in figures.ARGUMENT:
        assert pressure.split()[-1] in s and fix.split()[0] in s
    assert [n for n, *_ in figures.ARGUMENT] == list(range(1, 10))


def test_preface_states_the_same_argument_map():
    from pathlib import Path
    index = (Path(__file__).parents[1] / "book" / "index.md").read_text()
    for n, _, pressure, fix in figures.ARGUMENT:
        assert f"| {pressure} | {fix} |" in index, n


@pytest.mark.parametrize("call", [lambda: figures.ch01.memory_figure(T=1),
                                  lambda: figures.ch01.memory_figure(T=3.0),
                                  lambda: figures.ch04.mixing_figure(focus=9),
                                  lambda: figures.ch06.heads_figure(n_heads=0),
                                  lambda: figures.ch06.heads_figure(T=20),
                                  lambda: figures.ch07.scale_figure(d_heads=(16, 0, 64)),
                                  lambda: figures.ch07.scale_figure(d_heads=(16,))])
def test_bad_sizes_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_chapter_cells_that_draw_a_diagram_carry_its_alt_text_and_a_caption():
    import json
    from pathlib import Path

    found = {}
    for path in sorted((Path(__file__).parents[1] / "book").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            src = "".join(cell["source"])
            for name in ALL:
                if cell["cell_type"] == "code" and f"figs.{name}(" in src:
                    meta = cell["metadata"]
                    assert "remove-input" in meta.get("tags", []), (path.name, name)
                    assert meta["mystnb"]["image"]["alt"] == figures.ALT_TEXT[name], (path.name, name)
                    assert meta["mystnb"]["figure"]["caption"], (path.name, name)
                    found[name] = path.name
    assert set(found) == set(ALL) - {"argument_map"}, found
    assert found["multihead_figure"] == "06_values_heads.ipynb"
    assert found["scale_figure"] == "07_scaling.ipynb"
    assert found["mlp_memory_figure"] == "09_mlp_memory.ipynb"


def test_the_scale_figure_places_its_panels_by_hand_without_a_layout_warning():
    import warnings

    from beforeqkv.figures import ch07
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = ch07.scale_figure()
        fig.canvas.draw()
    assert fig.get_layout_engine() is None


def test_the_neighbour_word_of_chapter_6_follows_the_language(monkeypatch):
    from beforeqkv import i18n
    from beforeqkv.measure import probes
    monkeypatch.setattr(i18n, "_CHOSEN", "en")
    assert probes.neighbour_word("successor") == "successor"
    monkeypatch.setattr(i18n, "_CHOSEN", "zh_CN")
    assert probes.neighbour_word("successor") == "后继" and probes.neighbour_word("predecessor") == "前驱"
    with pytest.raises(ValueError, match="'successor' or 'predecessor'"):
        probes.neighbour_word("self")
