"""Figures speak Chinese with BEFOREQKV_LANG=zh_CN: titles, axis words, legends and notes
come from the package catalog and are drawn with a CJK font, no glyph missing; in English
the same figures carry no Chinese and the fonts are left as they were."""
import inspect
import logging
import os
import re
import warnings
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg

from beforeqkv import figures, i18n, plot, train

HAN = re.compile(r"[\u4e00-\u9fff]")
# Names the Chinese edition keeps in Latin letters (locales/zh_CN/TERMS.md), and code words
# drawn as code (the monospace formulas of chapter 10).
KEPT = {"LayerNorm", "RMSNorm", "softmax", "LSTM", "RNN", "MLP", "GELU", "SwiGLU", "BERT", "MiniLM", "GPT",
        "SmolLM2", "BPE", "BOS", "RoPE", "GQA", "SGD", "relu", "silu", "eps", "attn", "mlp"}
WORD = re.compile(r"(?<![\w\\])[A-Za-z]{3,}(?!\w)")


@pytest.fixture(autouse=True)
def back_to_english():
    yield
    i18n.set_language(None)
    plot.use_language_font()


def _history(n=5):
    return train.History(steps=list(range(1, n + 1)), loss=list(np.linspace(2.0, 0.5, n)))


def _memory():
    from beforeqkv import models, tasks
    keys, target = tasks.random_facts(8, generator=torch.Generator().manual_seed(0))
    return models.handwritten_memory(keys, target, d_mlp=4), keys, target


def _weights(*shape, seed=0):
    return torch.softmax(torch.randn(*shape, generator=torch.Generator().manual_seed(seed)), -1)


# Every figure function of beforeqkv.figures, with the inputs of the figure tests
# (tests/test_figures.py, test_plot.py, test_pretrained_minilm.py, test_pretrained_smollm2.py)
# or, for the figures moved out of the notebooks, small inputs of the notebooks' shapes.
# Inputs are data without English words, so every word drawn is the package's.
F = figures
CASES = {
    "common.argument_map": lambda: F.common.argument_map(),
    "ch01.memory_figure": lambda: F.ch01.memory_figure(T=4),
    "ch01.recall_figure": lambda: F.ch01.recall_figure([2, 4, 8], {2: 1.0, 4: 0.9, 8: 0.8}, [2, 8],
                                                       {2: 0.9, 8: 0.3}),
    "ch01.read_weights_figure": lambda: F.ch01.read_weights_figure(_weights(3, 8), [1, 4, 2], 8),
    "ch01.more_state_figure": lambda: F.ch01.more_state_figure({16: 0.2, 64: 0.3, 128: 0.35},
                                                               {1000: 0.3, 2000: 0.4}, 0.99),
    "ch02.fill_up_figure": lambda: F.ch02.fill_up_figure([4, 16, 64], {4: 1.0, 16: 1.0, 64: 0.9},
                                                         {4: 1.0, 16: 0.5, 64: 0.2}),
    "ch02.crosstalk_figure": lambda: F.ch02.crosstalk_figure([1, 4, 16, 64], [1, 1, 0.9, 0.6],
                                                             [1, 0.9, 0.4, 0.1], 16, 30.0),
    "ch02.memory_size_figure": lambda: F.ch02.memory_size_figure(0.2, 0.6, 0.3, 0.95, window=16),
    "ch03.steps_figure": lambda: F.ch03.steps_figure(n_layers=2, T=4),
    "ch03.depth_figure": lambda: F.ch03.depth_figure([2, 8, 32], {"loop RNN": [8, 26, 98],
                                                                  "attention layer": [30, 30, 30]}),
    "ch03.time_figure": lambda: F.ch03.time_figure([16, 64], {"loop RNN": [1.0, 4.0],
                                                              "attention layer": [0.5, 0.7]}),
    "ch04.mixing_figure": lambda: F.ch04.mixing_figure(T=4, focus=2),
    "ch04.routing_figure": lambda: F.ch04.routing_figure(
        {("fixed", "static"): 1.0, ("fixed", "content"): 1.0, ("pointer", "static"): 0.2,
         ("pointer", "content"): 1.0, ("pointer", "content, no positions"): 0.2},
        ["static", "content", "content, no positions"], ["fixed", "salient", "pointer"]),
    "ch04.pointer_weights_figure": lambda: F.ch04.pointer_weights_figure(
        {name: _weights(16, 16, seed=k) for k, name in enumerate(["static", "content", "content, no positions"])}),
    "ch04.pointer_row_figure": lambda: F.ch04.pointer_row_figure(
        {"static": (_weights(16), 3), "content": (_weights(16, seed=1), 5)},
        list(range(16)), query=7),
    "ch05.symmetry_figure": lambda: F.ch05.symmetry_figure(),
    "ch05.self_weight_figure": lambda: F.ch05.self_weight_figure(_weights(6, 6) * 3, [2, 8, 32],
                                                                 [0.3, 0.6, 0.9], d=32),
    "ch05.variants_figure": lambda: F.ch05.variants_figure(
        ["raw dot", "symmetric bilinear", "full bilinear", "QK rank 1"], [0.5, 0.56, 1.0, 0.9],
        [0.9, 0.5, 0.0, 0.1], [True, True, False, False], chance=1 / 8, hedge_acc=9 / 16,
        commit_acc=17 / 24),
    "ch05.triad_weights_figure": lambda: F.ch05.triad_weights_figure(
        [("cosine", _weights(6, 6)), ("full bilinear", _weights(6, 6, seed=1))],
        [f"R{k}:{k}" for k in range(6)], [1, 2, 0, 4, 5, 3]),
    "ch06.heads_figure": lambda: F.ch06.heads_figure(n_heads=3),
    "ch06.multihead_figure": lambda: F.ch06.multihead_figure(),
    "ch06.ring_head_weights": lambda: F.ch06.ring_head_weights(
        torch.eye(4).expand(2, 4, 4), torch.tensor([3, 1, 2, 0]), torch.tensor([[0.1, 0.2, 0.7]] * 2),
        label="H=2"),
    "ch06.ring_accuracy_figure": lambda: F.ch06.ring_accuracy_figure(
        {H: {"successor": 0.9, "predecessor": 0.2, "both": 0.2 if H == 1 else 1.0} for H in (1, 2, 4)},
        [1, 2, 4], 1234),
    "ch07.scale_figure": lambda: F.ch07.scale_figure(d_heads=(16, 256, 1024)),
    "ch07.saturation_figure": lambda: F.ch07.saturation_figure(
        (1, 16, 256), {d: {"frac_saturated": d / 256, "median_grad": 1 / d} for d in (1, 16, 256)},
        {d: {"frac_saturated": 0.0, "median_grad": 0.1} for d in (1, 16, 256)}),
    "ch07.recall_figure": lambda: F.ch07.recall_figure(
        (16, 1024), {(16, True): 1.0, (16, False): 1.0, (1024, True): 1.0, (1024, False): 0.3},
        _history(), _history(), n_pairs=8, steps=300),
    "ch07.softmax_row_figure": lambda: F.ch07.softmax_row_figure(_weights(32).numpy(), 1e-3, 64, False),
    "ch08.block_figure": lambda: F.ch08.block_figure(),
    "ch08.mask_figure": lambda: F.ch08.mask_figure(0.1, 3.5, 2.8, 2.8, best=np.log(16)),
    "ch08.residual_loss_figure": lambda: F.ch08.residual_loss_figure(_history(), _history(), 1.0, 0.06,
                                                                     chance=np.log(16)),
    "ch08.spread_figure": lambda: F.ch08.spread_figure([0.5] * 8, list(np.geomspace(0.5, 1e-4, 8))),
    "ch08.char_lm_figure": lambda: F.ch08.char_lm_figure(_history(), 2.5, 4.1, 1.9),
    "ch08.temperature_figure": lambda: F.ch08.temperature_figure(
        ["a", "o", "␣"], [0.6, 0.3, 0.1], 0.75, "ab cd ef", 0.75, 0.8, 0.5),
    "ch09.mlp_memory_figure": lambda: F.ch09.mlp_memory_figure(),
    "ch09.slot_votes": lambda: F.ch09.slot_votes(*_memory(), 2, title="trained"),
    "ch09.capacity_figure": lambda: F.ch09.capacity_figure(
        {("relu", 16): [(2, 1.0), (8, 0.6)], ("relu", 64): [(2, 1.0)], ("softmax", 16): [(2, 0.9)]},
        (0.5, 1, 2, 8), {0.5: 1.0, 1: 1.0, 2: 0.5, 8: 0.2}),
    "ch09.slot_weights_figure": lambda: F.ch09.slot_weights_figure(_weights(32, 16), _weights(32, 16, seed=1)),
    "ch10.post_norm_block": lambda: F.ch10.post_norm_block(),
    "ch10.attention_grid": lambda: F.ch10.attention_grid(_weights(12, 4, 4), ["a", "b", "c", "d"], 0),
    "ch10.attention_head": lambda: F.ch10.attention_head(_weights(4, 4), ["a", "b", "c", "d"], layer=1, head=3,
                                                         ratio=torch.tensor(1.23)),
    "ch10.qk_asymmetry": lambda: F.ch10.qk_asymmetry(_weights(6, 12) * 8, random_ratio=1.41),
    "ch10.head_contributions": lambda: F.ch10.head_contributions(_weights(12, 4), ["a", "b", "c", "d"], 2),
    "ch10.similarity_matrix": lambda: F.ch10.similarity_matrix(torch.eye(3), ["x", "y", "z"]),
    "ch11.architecture_figure": lambda: F.ch11.architecture_figure(30),
    "ch11.attention_figure": lambda: F.ch11.attention_figure(torch.eye(3), ["a", "b", "c"], layer=1, head=2),
    "ch11.next_token_figure": lambda: F.ch11.next_token_figure([(" x", 0.7), (" y", 0.1)], "ab"),
    "plot.lines": lambda: plot.lines([1, 2, 4], {"a": [0.1, 0.5, 0.9]}, logx=True, chance=0.1),
    "plot.bars": lambda: plot.bars(["x", "y"], [0.2, 0.9], chance=0.5),
    "plot.loss_curves": lambda: plot.loss_curves({"a": _history()}, floor=0.3),
}


def drawn_texts(fig):
    """Every string with a letter drawn on the figure (titles, labels, ticks, legends,
    annotations); numbers alone (ticks, values) are left out."""
    found = fig.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "get_fontsize"))
    return [t.get_text() for t in found if re.search(r"[^\W\d_]", t.get_text())]


def words(text):
    """The English words of ``text`` outside $maths$, less the names kept in Latin letters."""
    return [w for w in WORD.findall(re.sub(r"\$[^$]*\$", " ", text)) if w not in KEPT]


class _Log(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def draw(name, lang):
    """The figure drawn in ``lang``, and the glyphs missing while drawing it: the text
    renderer warns ("Glyph ... missing from font(s)"), mathtext logs ("does not have a glyph")."""
    i18n.set_language(lang)
    log = _Log()
    logging.getLogger("matplotlib").addHandler(log)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fig = CASES[name]()
            FigureCanvasAgg(fig).draw()
    finally:
        logging.getLogger("matplotlib").removeHandler(log)
    missing = [str(w.message) for w in caught if "missing from font" in str(w.message)]
    return fig, missing + [m for m in log.messages if "does not have a glyph" in m]


def test_every_figure_function_of_the_package_is_drawn_here():
    public = set()
    for mod in ("common", "ch01", "ch02", "ch03", "ch04", "ch05", "ch06", "ch07", "ch08", "ch09", "ch10", "ch11"):
        module = getattr(figures, mod)
        public |= {f"{mod}.{n}" for n in module.__all__ if inspect.isfunction(getattr(module, n))}
    assert public <= set(CASES), sorted(public - set(CASES))


@pytest.mark.parametrize("name", sorted(CASES))
def test_figure_words_are_chinese_and_every_glyph_is_drawn(name):
    if plot.cjk_font() is None:
        pytest.skip("no CJK font installed (apt install fonts-noto-cjk)")
    en_fig, en_missing = draw(name, "en")
    en = drawn_texts(en_fig)
    zh_fig, zh_missing = draw(name, "zh_CN")
    zh = drawn_texts(zh_fig)
    assert not en_missing and not zh_missing, (en_missing, zh_missing)
    assert not any(HAN.search(t) for t in en), [t for t in en if HAN.search(t)]
    assert len(en) == len(zh)
    untranslated = [(e, z) for e, z in zip(en, zh) if words(e) and not HAN.search(z)]
    assert not untranslated, untranslated
    assert any(HAN.search(t) for t in zh)
    maths = re.compile(r"\$[^$]*\$")
    changed = [(e, z) for e, z in zip(en, zh) if sorted(maths.findall(e)) != sorted(maths.findall(z))]
    assert not changed, changed  # the maths is drawn as in English


def test_titles_and_axis_words_of_the_diagrams_are_chinese():
    i18n.set_language("zh_CN")
    fig = figures.ch06.ring_head_weights(torch.eye(4).expand(2, 4, 4), torch.tensor([3, 1, 2, 0]),
                                         torch.tensor([[0.1, 0.2, 0.7]] * 2), label="H=2")
    assert [ax.get_title() for ax in fig.axes] == ["H=2，头 1\n后继 0.10 | 前驱 0.20",
                                                   "H=2，头 2\n后继 0.10 | 前驱 0.20"]
    assert fig.axes[0].get_ylabel() == "查询（条目编号）"
    fig = figures.ch03.steps_figure(n_layers=2, T=4)
    assert [ax.get_title() for ax in fig.axes] == ["有循环：5 步", "只有红色连接：2 步"]
    fig = figures.ch07.scale_figure()
    assert fig.axes[0].get_title() == "未缩放：$q \\cdot k$，分散程度 $\\sqrt{d_\\mathrm{head}}$"
    assert fig.axes[2].get_xlabel() == "键 $j$"
    s = " ".join(drawn_texts(figures.common.argument_map()))
    assert "把分数除以" in s and "$\\sqrt{d_\\mathrm{head}}$" in s and "压力（什么失效了）" in s


def test_chinese_wraps_in_the_argument_map_boxes():
    from beforeqkv.figures.common import _wrap

    text = "双线性形式 $W_Q^\\top W_K$：查询与键分开，这是一个很长很长的句子用来测试"
    lines = _wrap(text).split("\n")
    assert len(lines) > 1 and "".join(lines).replace(" ", "") == text.replace(" ", "")
    assert all(line.count("$") % 2 == 0 for line in lines)  # never inside the maths
    assert not any(line.startswith(("，", "：")) for line in lines)


def test_english_leaves_the_fonts_as_they_are():
    i18n.set_language("en")
    with matplotlib.rc_context():
        before = list(matplotlib.rcParams["font.family"])
        plot.use_book_style()
        assert list(matplotlib.rcParams["font.family"]) == before


def test_chinese_puts_a_cjk_font_before_the_usual_one_and_english_puts_it_back():
    font = plot.cjk_font()
    if font is None:
        pytest.skip("no CJK font installed (apt install fonts-noto-cjk)")
    assert font in plot.CJK_FONTS
    with matplotlib.rc_context():
        before = list(matplotlib.rcParams["font.family"])
        i18n.set_language("zh_CN")
        assert plot.use_language_font() == font
        assert list(matplotlib.rcParams["font.family"]) == [font] + before
        plot.use_language_font()  # twice: added once
        assert list(matplotlib.rcParams["font.family"]) == [font] + before
        i18n.set_language("en")
        assert plot.use_language_font() is None
        assert list(matplotlib.rcParams["font.family"]) == before


def test_no_cjk_font_warns_once_with_the_fix(monkeypatch):
    monkeypatch.setattr(plot, "_FONT_STATE", {"searched": True, "font": None, "warned": False,
                                              "saved_family": None})
    i18n.set_language("zh_CN")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert plot.use_language_font() is None
        plot.use_language_font()
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "apt install fonts-noto-cjk" in message and "pip install mplfonts" in message
    assert "Noto Sans CJK SC" in message


def test_a_cjk_font_brought_by_mplfonts_is_found_when_the_system_has_none(tmp_path):
    """What the Chinese reader notebooks rely on in Colab (no system CJK font): after
    `pip install mplfonts`, plot.cjk_font finds the package's fonts. Stand-in package: a
    folder `mplfonts/fonts/` holding a CJK font file; the system's fonts are hidden."""
    import shutil
    import subprocess
    import sys

    from matplotlib import font_manager
    system = sorted(f for f in font_manager.findSystemFonts()
                    if re.search(r"wqy-microhei|NotoSansCJK", Path(f).name, re.I))
    if not system:
        pytest.skip("no CJK font file on this machine to stand in for mplfonts'")
    (tmp_path / "mplfonts" / "fonts").mkdir(parents=True)
    (tmp_path / "mplfonts" / "__init__.py").write_text("")
    shutil.copy(system[0], tmp_path / "mplfonts" / "fonts" / Path(system[0]).name)
    code = (
        "from matplotlib import font_manager as fm\n"
        "fm.findSystemFonts = lambda *a, **k: []\n"
        "fm.fontManager.ttflist = [f for f in fm.fontManager.ttflist\n"
        "                          if 'mplfonts' in f.fname or not any(c in f.name for c in ('CJK', 'WenQuanYi'))]\n"
        "from beforeqkv import plot\n"
        "print(plot.cjk_font())\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "BEFOREQKV_LANG": "zh_CN"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() in plot.CJK_FONTS, out
