"""The package's own strings in Chinese (src/beforeqkv/i18n.py, BEFOREQKV_LANG).

Every ``_()`` of the package is a plain literal the catalog can hold; the committed
``.mo`` is the ``.po`` compiled; every message is translated and keeps its English's
``{fields}``; the language is read from one setting and a wrong one is refused.
"""
import ast
import io
import re
import string
import subprocess
import sys

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po

import beforeqkv
from beforeqkv import i18n
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
    assert len(extracted) >= 1
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
