"""The package's own strings in Chinese (src/beforeqkv/i18n.py, BEFOREQKV_LANG).

Every ``_()`` of the package is a plain literal the catalog can hold; the committed
``.mo`` is the ``.po`` compiled; every message is translated and keeps its English's
``{fields}``; the language is read from one setting and a wrong one is refused; the
checkers' feedback and hints speak the language in force and their verdicts do not depend on it.
"""
import ast
import io
import re
import string
import subprocess
import sys

import pytest
import torch
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po

import beforeqkv
from beforeqkv import checks, i18n
from beforeqkv.checks import CheckFailure, _core, grading
from _book import ROOT

PKG = ROOT / "src" / "beforeqkv"
PO = PKG / "locale" / "zh_CN" / "LC_MESSAGES" / "beforeqkv.po"
MO = PO.with_suffix(".mo")


def read_catalog():
    with open(PO, "rb") as f:
        return read_po(f)


def fields(message: str) -> set:
    return {name for _, name, _, _ in string.Formatter().parse(message) if name is not None}


def test_every_translated_call_is_one_literal_so_the_catalog_can_hold_it():
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"_", "N_"}
                    and not (len(node.args) == 1 and isinstance(node.args[0], ast.Constant)
                             and isinstance(node.args[0].value, str))):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not bad, f"_() of something other than one string literal (an f-string?): {bad}"


def test_the_catalog_holds_every_message_of_the_package_translated_with_its_fields():
    extracted = {msg[2] for msg in extract_from_dir(str(PKG), keywords={"_": None, "N_": None})}
    catalog = read_catalog()
    entries = {m.id: m for m in catalog if m.id}
    assert len(extracted) >= 220  # the banner and every checker message (230 when written)
    missing = sorted(extracted - set(entries))
    assert not missing, f"not in the catalog (run make i18n-package): {missing[:5]}"
    untranslated = sorted(m for m in extracted if not entries[m].string or entries[m].fuzzy)
    assert not untranslated, f"untranslated or fuzzy: {untranslated[:5]}"
    lost = {m: sorted(fields(m) ^ fields(entries[m].string)) for m in extracted
            if fields(m) != fields(entries[m].string)}
    assert not lost, f"a translation changed the {{fields}} of its English: {lost}"


def test_the_committed_mo_is_the_po_compiled():
    buf = io.BytesIO()
    write_mo(buf, read_catalog())
    buf.seek(0)
    want = {m.id: m.string for m in read_mo(buf) if m.id}
    with open(MO, "rb") as f:
        have = {m.id: m.string for m in read_mo(f) if m.id}
    assert have == want, "src/beforeqkv/locale/.../beforeqkv.mo is stale: run make i18n-package"


def test_the_wheel_ships_the_catalog():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"locale/*/LC_MESSAGES/*.mo"' in text


def test_the_language_comes_from_one_setting_and_a_wrong_one_is_refused(monkeypatch):
    monkeypatch.setattr(i18n, "_CHOSEN", None)
    monkeypatch.delenv("BEFOREQKV_LANG", raising=False)
    assert i18n.language() == "en"
    for value in ("zh_CN", "zh-CN", "zh", "zh_CN.UTF-8"):
        monkeypatch.setenv("BEFOREQKV_LANG", value)
        assert i18n.language() == "zh_CN"
    monkeypatch.setenv("BEFOREQKV_LANG", "klingon")
    with pytest.raises(ValueError, match="unknown language 'klingon'.*en, zh_CN"):
        i18n.language()
    monkeypatch.setenv("BEFOREQKV_LANG", "en")
    assert i18n.set_language("zh") == "zh_CN" and i18n.language() == "zh_CN"
    assert i18n.set_language(None) == "en"


def test_the_banner_speaks_chinese_with_beforeqkv_lang_zh_cn():
    code = "import beforeqkv; beforeqkv.setup(plot_style=False)"
    out = {lang: subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                env={"BEFOREQKV_LANG": lang, "PATH": ""}).stdout for lang in ("en", "zh_CN")}
    assert "CPU thread(s)" in out["en"] and not re.search(r"[\u4e00-\u9fff]", out["en"])
    assert "个 CPU 线程" in out["zh_CN"] and "设备" in out["zh_CN"] and "thread(s)" not in out["zh_CN"]
    assert beforeqkv.__version__ in out["zh_CN"]


# ---------------------------------------------------------------- the checkers in Chinese
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
def speak(monkeypatch):
    """Set the language for one test; the original comes back afterwards."""
    monkeypatch.setattr(i18n, "_CHOSEN", None)
    monkeypatch.delenv("BEFOREQKV_GRADING", raising=False)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    return i18n.set_language


@pytest.fixture
def lenient(monkeypatch):
    monkeypatch.setattr(_core, "_CONFIGURED", "lenient")


@pytest.fixture
def strict(monkeypatch):
    monkeypatch.setattr(_core, "_CONFIGURED", "strict")


def _unscaled_scores(q, k):
    return q @ k.transpose(-1, -2)


def _inverted_causal_mask(t):
    return torch.ones(t, t).triu(1).bool()


def _attention_over_d(q, k, v):  # causal attention with the scores divided by d, not sqrt(d)
    t = q.shape[-2]
    s = (q @ k.transpose(-2, -1) / q.shape[-1]).masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
    return s.softmax(-1) @ v


@pytest.mark.parametrize("check, wrong, english, chinese", [
    (checks.check_scaled_scores, _unscaled_scores,
     "Hint: the scores are not scaled at all: divide q . k by sqrt(d_head)",
     "提示：分数完全没有缩放：把 q . k 除以 sqrt(d_head)"),
    (checks.check_causal_mask, _inverted_causal_mask,
     "Hint: your mask marks the BLOCKED positions (True = j > i)",
     "提示：你的掩码标出的是“不可关注”的位置（True = j > i）"),
    (checks.check_causal_attention, _attention_over_d,  # a hint with {d} filled in
     "causal attention: wrong values on", "因果注意力：在"),
    (checks.check_causal_attention, _attention_over_d,
     "Hint: you divided the scores by d; the scale is 1/sqrt(d)", "提示：你把分数除以了 d；缩放应为 1/sqrt(d)"),
])
def test_a_lenient_check_prints_its_hint_in_the_language_in_force(speak, lenient, capsys, check, wrong, english,
                                                                  chinese):
    speak("zh_CN")
    assert not check(wrong)
    out = capsys.readouterr().out
    assert out.startswith("\u2717") and chinese in out and "Hint" not in out, out
    speak("en")
    assert not check(wrong)
    out = capsys.readouterr().out
    assert out.startswith("\u2717") and english in out and not CJK.search(out), out


def test_a_strict_failure_raises_its_message_in_chinese(speak, strict):
    speak("zh_CN")
    with pytest.raises(CheckFailure, match=r"^因果掩码：在 T=1 上的值不对。\n提示：你的掩码标出的是“不可关注”") as err:
        checks.check_causal_mask(_inverted_causal_mask)
    assert "BLOCKED" not in str(err.value)
    with pytest.raises(CheckFailure, match="scaled_scores：尚未实现。请在 `# YOUR CODE HERE` 处写你的代码"):
        checks.check_scaled_scores(lambda q, k: (_ for _ in ()).throw(NotImplementedError()))
    with pytest.raises(CheckFailure, match="你的代码假定了固定的维数") as err:  # the reader's own error, hinted
        checks.check_scaled_scores(lambda q, k: torch.einsum("id,jd->ij", q, k) / q.shape[-1] ** 0.5)
    assert "抛出了 RuntimeError" in str(err.value) and "（你的第" in str(err.value)
    with pytest.raises(CheckFailure, match="ch5_weights_symmetric：这与实验结果不符。提示：把 a_ij 和 a_ji 连同分母"):
        checks.check_prediction("ch5_weights_symmetric", "yes")  # wrong; the explanation stays sealed
    with pytest.raises(AssertionError, match="因果掩码：在 T=1 上的值不对"):  # graded, from a fresh copy
        grading.verify("check_causal_mask", _inverted_causal_mask)


def test_the_language_changes_the_words_of_a_check_and_never_its_verdict(speak, lenient, capsys):
    cases = [
        (checks.check_scaled_scores, lambda q, k: q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5),
        (checks.check_scaled_scores, _unscaled_scores),
        (checks.check_causal_mask, lambda t: torch.ones(t, t).tril().bool()),
        (checks.check_causal_mask, _inverted_causal_mask),
        (checks.check_causal_mask, lambda t: torch.ones(t, t).tril().float()),  # a dtype, not a value
        (checks.check_causal_attention, _attention_over_d),
        (checks.check_attention_read, lambda q, k, v: v.mean(1)),  # no hint: the max abs error
        (checks.check_triad_qk, lambda: (torch.eye(2, 3), torch.eye(2, 3))),
        (lambda a: checks.check_prediction("ch5_weights_symmetric", a), "yes"),
        (lambda a: checks.check_prediction("ch5_weights_symmetric", a), ...),
    ]
    verdicts, words = {}, {}
    for lang in ("en", "zh_CN"):
        speak(lang)
        verdicts[lang] = [bool(check(arg)) for check, arg in cases]
        words[lang] = capsys.readouterr().out
    assert verdicts["en"] == verdicts["zh_CN"] == [True, False, True, False, False, False, False, False, False, False]
    assert not CJK.search(words["en"])
    zh_lines = [line for line in words["zh_CN"].splitlines() if line.startswith(("\u2713", "\u2717"))]
    assert len(zh_lines) == len(cases) and all(CJK.search(line) for line in zh_lines), zh_lines
    assert "Hint" not in words["zh_CN"] and "wrong values" not in words["zh_CN"]


def test_a_right_prediction_is_explained_in_chinese_from_its_own_sealed_box(monkeypatch, capsys):
    """Every question has a Chinese explanation, sealed under the answer in a box of its own
    (its own key stream); English stays the English one."""
    import json

    from beforeqkv import checks
    from beforeqkv.checks import _core, _seal
    from beforeqkv.checks._sealed import SEALED
    key = json.loads((ROOT / "instructor" / "answers.json").read_text(encoding="utf-8"))
    monkeypatch.setattr(_core, "_CONFIGURED", "strict")
    assert set(SEALED) == set(key) and all("box_zh_CN" in SEALED[q] for q in key)
    for name, entry in key.items():
        for lang, field in (("zh_CN", "explanation_zh_CN"), ("en", "explanation")):
            monkeypatch.setattr(i18n, "_CHOSEN", lang)
            capsys.readouterr()
            assert checks.check_prediction(name, entry["answer"])
            out = capsys.readouterr().out
            assert entry[field] in out, (name, lang)
            assert bool(re.search(r"[\u4e00-\u9fff]", entry[field])) == (lang == "zh_CN"), name
    q = "ch1_lstm_state_size"
    canon = _core.canonical(key[q]["answer"], _core.QUESTIONS[q]["choices"], _core.QUESTIONS[q]["digits"])
    assert _seal.unseal(q, canon, SEALED[q]["box_zh_CN"], "box_zh_CN") == key[q]["explanation_zh_CN"]
    with pytest.raises(UnicodeDecodeError):  # the Chinese box under the English box's key stream
        _seal.unseal(q, canon, SEALED[q]["box_zh_CN"], "box")


# ----------------------------------------------------------- words of explorers and listings
def _explorer_calls():
    """(chapter, {control: literal value or None}, description or None) of every
    ``explorer(...)`` call in the book's notebooks (module-level names are resolved)."""
    import json
    calls = []
    for nb in sorted((ROOT / "book").glob("[01][0-9]_*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        src = "\n".join(line for c in cells if c["cell_type"] == "code" for line in "".join(c["source"]).splitlines()
                        if not line.lstrip().startswith(("%", "!")))
        tree = ast.parse(src)
        names = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                try:
                    names[node.targets[0].id] = ast.literal_eval(node.value)
                except ValueError:
                    if isinstance(node.value, ast.Call):
                        names[node.targets[0].id] = node.value
        for node in ast.walk(tree):
            func = node.func if isinstance(node, ast.Call) else None
            if getattr(func, "attr", getattr(func, "id", None)) != "explorer":
                continue
            controls, description = {}, None
            for kw in node.keywords:
                if kw.arg == "description":
                    description = ast.literal_eval(kw.value)
                    continue
                if kw.arg == "live":       # beforeqkv.live: its words are its own (live.words())
                    continue
                try:
                    controls[kw.arg] = ast.literal_eval(kw.value)
                except ValueError:
                    value = names.get(getattr(kw.value, "id", None), kw.value)
                    if isinstance(value, ast.Call):  # a widget: its description is its label
                        label = [k.value.value for k in value.keywords if k.arg == "description"]
                        controls[label[0] if label else kw.arg] = None
                    else:
                        controls[kw.arg] = value
            calls.append((nb.stem[:2], controls, description))
    return calls


def test_every_word_a_chapters_explorer_shows_is_in_the_catalog_and_translated():
    from beforeqkv import _explorer_words as words
    from beforeqkv.models import scores
    calls = _explorer_calls()
    assert len(calls) >= 11
    listed = set(words.CONTROLS) | set(words.OPTIONS) | set(words.DESCRIPTIONS)
    wanted = set()
    for _chapter, controls, description in calls:
        if description:
            wanted.add(description)
        for name, value in controls.items():
            wanted.add(name)
            if name in words.DATA_CONTROLS:
                continue
            if isinstance(value, dict):
                wanted |= set(value)
            elif isinstance(value, list) and all(isinstance(v, str) for v in value):
                wanted |= set(value)
    wanted |= set(scores.SCORES)  # chapter 5's variants: list(scores.SCORES)
    wanted -= {"d_k"}  # a symbol of the book's maths, the same in both editions
    assert wanted <= listed, sorted(wanted - listed)
    catalog = {m.id: m.string for m in read_catalog() if m.id and not m.fuzzy}
    untranslated = [w for w in wanted if not catalog.get(w) or not re.search(r"[\u4e00-\u9fff]", catalog[w])
                    and not w.startswith(("n_", "log2"))]
    assert not untranslated, untranslated


def test_a_static_explorer_and_a_listing_speak_the_language_in_force(speak):
    from beforeqkv import widgets
    from beforeqkv.listing import show_source
    from beforeqkv.models.memory import MLPMemory
    import matplotlib.pyplot as plt

    def plot(memory="trained", fact=0):
        fig, ax = plt.subplots(figsize=(1, 1))
        ax.plot([fact])
        return fig
    description = "Two bar charts over the 16 slots for the chosen fact in the chosen memory: " \
        "left, how strongly each slot fires; right, what each slot adds to the logit of the fact's class, " \
        "green bars helping and red bars hurting."
    for lang, label, option, header in (("en", "memory", "by hand", "source of"), ("zh_CN", "记忆", "手写", "的源码")):
        speak(lang)
        page = widgets.static_explorer(plot, {"memory": ["trained", "by hand"], "fact": (0, 1, 1)},
                                       description=description)._repr_html_()
        assert f"{label} <select" in page and f">{option}</option>" in page
        assert ("两张条形图" in page) == (lang == "zh_CN") and (description[:20] in page) == (lang == "en")
        assert header in show_source(MLPMemory)._repr_html_()
    plt.close("all")
