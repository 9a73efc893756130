"""The Chinese edition (tools/editions/i18n.py, locales/zh_CN, _ext/bqkv_site.py).

Catalog tests need no build: every translation keeps the English's roles, glue, math and
code; the translated pages use each term of locales/zh_CN/TERMS.md one way; the edition's
configuration is _config.yml plus its overlay; `make i18n-status` counts right. Site tests
(the `site` fixture: `make site`, then --require-site) check both editions in _build/html:
every English page has its Chinese page, the language switch links the two both ways, the
Chinese pages say lang="zh-CN" and show the catalogs' translations, and the Chinese search
index finds 注意力.
"""
import html as html_lib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from posixpath import normpath

import nbformat
import pytest
import yaml

from _book import CHAPTERS, ROOT, reader_problems, toc_files

from editions import i18n

LANG = "zh_CN"
PO_DIR = ROOT / "locales" / LANG / "LC_MESSAGES"
CATALOGS = sorted(PO_DIR.rglob("*.po"))
# The pages translated in full (the rest of the book falls back to English, and is counted).
TRANSLATED = [
    "book/index",
    "book/notation",
    "book/glossary",
    "book/01_squished_memory",
    "book/02_keep_every_state",
    "book/03_red_connections",
    "book/04_dynamic_weights",
    "book/05_queries_keys",
    "book/06_values_heads",
    "book/07_scaling",
    "book/08_transformer",
    "book/09_mlp_memory",
    "book/10_real_encoder",
    "book/11_modern_llm",
    "book/gpu_and_colab",
    "book/teachers",
    "book/references",
]


def page_of(po: Path) -> str:
    return po.relative_to(PO_DIR).with_suffix("").as_posix()


def translated_entries(po: Path):
    """(msgid, msgstr, user comments) of every translated, non-fuzzy message of a catalog."""
    return [(m.id, m.string, m.user_comments) for m in i18n.messages(i18n.read_catalog(po))
            if m.string and not m.fuzzy]


# --------------------------------------------------------------------------------- catalogs
def test_there_is_a_catalog_for_each_translated_page_and_only_for_pages_of_the_book():
    pages = set(toc_files())
    assert {page_of(po) for po in CATALOGS} <= pages, "a catalog for a page the book does not have"
    assert set(TRANSLATED) <= {page_of(po) for po in CATALOGS}


@pytest.mark.parametrize("po", CATALOGS, ids=page_of)
def test_every_translation_keeps_the_roles_glue_math_and_code_of_its_english(po):
    bad = {msgid[:70]: i18n.markup_problems(msgid, msgstr)
           for msgid, msgstr, _ in translated_entries(po) if i18n.markup_problems(msgid, msgstr)}
    assert not bad, json.dumps(bad, ensure_ascii=False, indent=1)


@pytest.mark.parametrize("page", TRANSLATED)
def test_translated_pages_are_translated_in_full(page):
    po = PO_DIR / f"{page}.po"
    catalog = i18n.messages(i18n.read_catalog(po))
    untranslated = [m.id[:70] for m in catalog if not m.string or m.fuzzy]
    assert catalog and not untranslated, untranslated


def test_the_glyph_check_finds_matplotlibs_missing_glyph_warning(tmp_path):
    warning = ("/x/matplotlib/backends/backend_agg.py:211: UserWarning: Glyph 27880 "
               "(\\N{CJK UNIFIED IDEOGRAPH-6CE8}) missing from font(s) DejaVu Sans.\n")
    for name, text in (("bad.ipynb", warning), ("good.ipynb", "注意力\n")):
        cell = nbformat.v4.new_code_cell("plot()")
        cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text=text)]
        nbformat.write(nbformat.v4.new_notebook(cells=[cell]), tmp_path / name)
    assert [f.split(":")[0] for f in i18n.missing_glyphs(tmp_path)] == ["bad.ipynb"]
    assert i18n.main(["glyphs", str(tmp_path)]) == 1
    (tmp_path / "bad.ipynb").unlink()
    assert i18n.main(["glyphs", str(tmp_path)]) == 0


def test_markup_problems_sees_a_lost_glue_a_changed_target_and_a_dropped_formula():
    msgid = "With {glue:text}`ch1_n:.2f` facts, {ref}`chapter 2 <ch-two>` shows $N$ and `hidden`."
    good = "有 {glue:text}`ch1_n:.2f` 个事实，{ref}`第 2 章 <ch-two>` 展示了 $N$ 和 `hidden`。"
    assert i18n.markup_problems(msgid, good) == []
    assert i18n.markup_problems(msgid, "{ref}`第 2 章 <ch-two>` 展示了 $N$ 和 `hidden`。")  # glue lost
    assert i18n.markup_problems(msgid, "有 {glue:text}`ch1_n:.3f` 个，{ref}`第 2 章 <ch-two>` $N$ `hidden`")
    assert i18n.markup_problems(msgid, "有 {glue:text}`ch1_n:.2f` 个，{ref}`第 2 章 <ch-3>` $N$ `hidden`")
    assert i18n.markup_problems(msgid, "有 {glue:text}`ch1_n:.2f` 个，{ref}`第 2 章 <ch-two>` N `hidden`")
    assert i18n.markup_problems(msgid, "有 {glue:text}`ch1_n:.2f` 个，{ref}`第 2 章 <ch-two>` $N$ hidden")


# ------------------------------------------------------------------------------------ terms
TERMS = i18n.read_terms(ROOT / "locales" / LANG / "TERMS.md")


def test_the_term_table_gives_each_term_one_translation():
    english = [e.lower() for t in TERMS for e in t.english]
    assert len(TERMS) >= 40 and len(english) == len(set(english)), "an English term listed twice"
    for t in TERMS:
        assert t.chinese and not any(a == t.chinese for a in t.avoid), t
    # The terms the issue fixed.
    table = {e: t.chinese for t in TERMS for e in t.english}
    assert table["attention"] == "注意力" and table["query"] == "查询" and table["key"] == "键"
    assert table["value"] == "值" and table["multi-head attention"] == "多头注意力"
    assert table["residual stream"] == "残差流" and table["causal mask"] == "因果掩码"


# The package's own catalog (checker hints, banner, figure words) speaks to the same reader.
PACKAGE_PO = ROOT / "src" / "beforeqkv" / "locale" / LANG / "LC_MESSAGES" / "beforeqkv.po"
PLACEHOLDER = re.compile(r"\{[A-Za-z_][\w.]*(?:![rsa])?(?::[^{}]*)?\}")
# In a checker's message, code is not in backticks: `mask=False`, `.weight`, `W_E[token_t]`,
# `norm_attn(x)`, or a variable named in parentheses, "(mask)". Not prose.
CODE_WORD = re.compile(r"\S*[_.=()\[\]@/<>+*]\S*|\(\w+\)")


def package_prose(msgid: str) -> str:
    return CODE_WORD.sub(" ", PLACEHOLDER.sub(" ", i18n.prose(msgid)))


def term_problems(entries, prose=i18n.prose) -> list[str]:
    """Where a message's English says a term, its Chinese says the term's translation and
    none of the translations the table rules out. A translator comment `terms: memory` on a
    message exempts that term there (the hardware's memory, 内存/显存, not the model's)."""
    bad = []
    for msgid, msgstr, comments in entries:
        exempt = {w.strip() for c in comments if c.startswith("terms:") for w in c[6:].split(",")}
        english, chinese = prose(msgid), "".join(msgstr.split())  # a figure word may wrap
        for term in TERMS:
            if term.english[0] in exempt:
                continue
            if any(i18n.term_pattern(e).search(english) for e in term.english) and \
                    "".join(term.chinese.split()) not in chinese:
                bad.append(f"{term.english[0]} -> {term.chinese} missing in: {msgstr[:60]}")
            bad += [f"{term.english[0]}: {a} instead of {term.chinese} in: {msgstr[:60]}"
                    for a in term.avoid if a in chinese]
    return bad


@pytest.mark.parametrize("page", TRANSLATED)
def test_translated_pages_use_each_terms_one_translation(page):
    bad = term_problems(translated_entries(PO_DIR / f"{page}.po"))
    assert not bad, "\n".join(bad)


def test_the_packages_catalog_uses_the_books_terms():
    """One glossary for both catalogs: what a checker or a figure says uses TERMS.md too."""
    bad = term_problems(translated_entries(PACKAGE_PO), prose=package_prose)
    assert not bad, "\n".join(bad)


def test_the_term_check_fails_on_a_wrong_term_in_either_catalog():
    assert term_problems([("a fixed memory", "固定内存", [])]) == [
        "memory -> 记忆 missing in: 固定内存", "memory: 内存 instead of 记忆 in: 固定内存"]
    assert term_problems([("time and memory", "时间和内存", ["terms: memory"])]) == []
    assert term_problems([("this is post-norm", "这是后归一化", [])], prose=package_prose)
    assert term_problems([("run this cell", "运行这个单元格", [])], prose=package_prose)
    assert term_problems([("{key}: answer first", "{key}：请先作答", [])], prose=package_prose) == []
    assert term_problems([("fill where mask=False", "把 mask=False 处填满", [])], prose=package_prose) == []
    assert term_problems([("causal multi-head\nattention", "因果多头\n注意力", [])], prose=package_prose) == []


def test_term_patterns_match_whole_words_and_plurals_only():
    assert i18n.term_pattern("query").search("two queries")
    assert i18n.term_pattern("matrix").search("weight matrices")
    assert i18n.term_pattern("head").search("one head's keys")
    assert not i18n.term_pattern("head").search("a multi-head layer")
    assert not i18n.term_pattern("token").search("the tokenizer")
    assert not i18n.term_pattern("embedding").search("the unembedding")
    assert i18n.term_pattern("dot product").search("dot-product scores")


# ---------------------------------------------------------------------- configuration, status
def test_the_chinese_edition_is_config_yml_plus_its_overlay(tmp_path):
    base = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    out = tmp_path / "_config_zh.yml"
    i18n.main(["config", str(ROOT / "_config.yml"), str(out), "--lang", LANG])
    zh = yaml.safe_load(out.read_text(encoding="utf-8"))
    sphinx = zh["sphinx"]["config"]
    assert sphinx["language"] == LANG and sphinx["html_search_language"] == "zh"
    assert sphinx["locale_dirs"] == ["locales"] and sphinx["gettext_compact"] is False
    assert sphinx["bqkv_editions"] == {"en": "", LANG: "zh/"}

    overlay = i18n.overlay(LANG)

    def same_outside_overlay(a, b, over, path=""):
        for key in set(a) | set(b):
            if key not in over:
                assert a.get(key) == b.get(key), f"{path}{key} drifted from _config.yml"
            elif isinstance(over[key], dict) and isinstance(a.get(key), dict):
                same_outside_overlay(a[key], b[key], over[key], f"{path}{key}.")
            else:
                assert b[key] == over[key], f"{path}{key} is not the overlay's"

    same_outside_overlay(base, zh, overlay)


def test_a_site_with_one_edition_has_no_language_switch(tmp_path):
    out = tmp_path / "_config.yml"
    i18n.main(["config", str(ROOT / "_config.yml"), str(out), "--lang", "en", "--only"])
    assert yaml.safe_load(out.read_text(encoding="utf-8"))["sphinx"]["config"]["bqkv_editions"] == {"en": ""}


def test_status_counts_translated_fuzzy_and_missing_against_the_pot(tmp_path):
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po
    pot, po = Catalog(), Catalog(locale=LANG)
    for msg in ("One", "Two", "Three", "Four"):
        pot.add(msg)
    po.add("One", "一")
    po.add("Two", "二", flags=["fuzzy"])
    po.add("Three", "")
    po.add("Gone", "旧")  # no longer in the English: not counted
    (tmp_path / "gettext" / "book").mkdir(parents=True)
    (tmp_path / "locales" / LANG / "LC_MESSAGES" / "book").mkdir(parents=True)
    with open(tmp_path / "gettext" / "book" / "p.pot", "wb") as f:
        write_po(f, pot)
    with open(tmp_path / "locales" / LANG / "LC_MESSAGES" / "book" / "p.po", "wb") as f:
        write_po(f, po)
    (tmp_path / "_toc.yml").write_text("root: book/p\nchapters:\n  - file: book/q\n")
    rows = i18n.status(LANG, tmp_path / "gettext", tmp_path / "locales", tmp_path / "_toc.yml")
    assert [(r.page, r.total, r.translated, r.fuzzy, r.missing, r.source) for r in rows] == [
        ("book/p", 4, 1, 1, 2, "pot"), ("book/q", None, 0, 0, None, "none")]
    text = i18n.format_status(rows, LANG)
    assert "book/q" in text and "no catalog" in text and "1 of 2 pages" not in text


def test_i18n_status_reports_every_page_and_exits_0(capsys):
    assert i18n.main(["status", "--lang", LANG, "--pot", str(ROOT / "no-such-dir")]) == 0
    out = capsys.readouterr().out
    for page in toc_files():
        assert page in out
    rows = {r.page: r for r in i18n.status(LANG, None)}
    for page in TRANSLATED:
        assert rows[page].total and rows[page].translated == rows[page].total and rows[page].missing == 0


def test_jieba_and_sphinx_intl_are_pinned_for_everyone():
    reqs = (ROOT / "requirements.txt").read_text()
    assert re.search(r"^jieba==", reqs, re.M), "html_search_language zh without jieba indexes no Chinese word"
    assert re.search(r"^sphinx-intl==", reqs, re.M)


# --------------------------------------------------------------------- the extension's parts
def site_extension():
    """_ext/bqkv_site.py, which imports Sphinx: the site's build stack (requirements.txt). The
    workflow's versions rows install a reader's stack without it (test_stack.py)."""
    pytest.importorskip("sphinx", reason="the site's Sphinx extension needs Sphinx (requirements.txt)")
    import bqkv_site
    return bqkv_site


def test_edition_links_are_relative_and_lead_to_the_same_page():
    bqkv_site = site_extension()

    class App:
        class config:
            language = None
            bqkv_editions = {"en": "", LANG: "zh/"}

    app = App()
    assert bqkv_site.edition_links(app, "book/01_x", "book/01_x.html")[0]["url"] == "../zh/book/01_x.html"
    assert bqkv_site.edition_links(app, "search", "search.html")[0]["url"] == "zh/search.html"
    assert bqkv_site.site_root(app) == ""
    App.config.language = LANG
    link = bqkv_site.edition_links(app, "book/01_x", "book/01_x.html")[0]
    assert link["url"] == "../../book/01_x.html" and link["label"] == "English" and link["hreflang"] == "en"
    assert bqkv_site.site_root(app) == "../"
    App.config.bqkv_editions = {LANG: ""}
    assert bqkv_site.edition_links(app, "search", "search.html") == []


def test_chinese_search_cuts_chinese_with_the_books_terms_and_keeps_latin_words():
    bqkv_site = site_extension()
    jieba = pytest.importorskip("jieba")
    assert "残差流" in bqkv_site.chinese_terms(ROOT / "locales" / LANG / "TERMS.md")
    search = bqkv_site.ChineseSearch({"bqkv_terms": str(ROOT / "locales" / LANG / "TERMS.md")})
    words = search.split("每个子层读取残差流（residual stream），LSTM 的 hidden 为 128。")
    assert "残差流" in words and "residual" in words and "LSTM" in words and "128" in words
    assert not any(re.search(r"[A-Za-z]", w) and re.search(r"[\u4e00-\u9fff]", w) for w in words)
    assert jieba is bqkv_site.sphinx_zh.jieba


# What a Chinese ML reader types into the search box (the review found 0 pages for the last six).
SEARCHED = ("注意力", "查询", "残差流", "因果掩码", "记忆", "层归一化", "位置编码", "旋转位置编码",
            "正弦位置编码", "词元")


def test_chinese_search_indexes_the_searched_terms_whole_and_an_alias_where_its_word_is():
    bqkv_site = site_extension()
    pytest.importorskip("jieba")
    config = yaml.safe_load((ROOT / "locales" / LANG / "config.yml").read_text(encoding="utf-8"))
    options = dict(config["sphinx"]["config"]["html_search_options"])
    options["bqkv_terms"] = str(ROOT / options["bqkv_terms"])
    search = bqkv_site.ChineseSearch(options)
    words = search.split("大多数现代模型改用旋转位置编码；2017 年用正弦位置编码。LayerNorm（层归一化）"
                         "把位置编码加到每个标记上，固定记忆会遗忘。")
    for word in ("旋转位置编码", "正弦位置编码", "层归一化", "位置编码", "记忆", "标记", "词元"):
        assert word in words, (word, words)
    assert "词元" not in search.split("注意力读取")
    with pytest.raises(ValueError, match="bqkv_aliases"):
        bqkv_site.ChineseSearch({"bqkv_aliases": {"token": "标记"}})


def test_glue_in_a_translation_reads_the_pages_own_notebook():
    bqkv_site = site_extension()
    text = "准确率 {glue:text}`ch1_lstm_n2:.2f`，共 {glue:text}`ch1_lstm2_state` 个；{numref}`fig-x`"
    assert bqkv_site.glue_in_translation(text, "01_x.ipynb") == (
        "准确率 {glue:text}`01_x.ipynb::ch1_lstm_n2:.2f`，共 {glue:text}`01_x.ipynb::ch1_lstm2_state:s` 个；"
        "{numref}`fig-x`")


# ------------------------------------------------------------------------------ the site
def zh(site):
    return site / "zh"


def html_pages(root: Path):
    """The Sphinx pages of one edition (not the root redirect, not another edition)."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.html")
                  if not p.relative_to(root).parts[0].startswith(("_", "zh"))
                  and 'http-equiv="refresh"' not in p.read_text(encoding="utf-8")[:3000].lower())


def switch_target(page: Path) -> tuple[str, str]:
    """(href, hreflang) of a page's language switch."""
    text = page.read_text(encoding="utf-8")
    m = re.search(r'<a class="btn btn-sm bqkv-language" href="([^"]+)" hreflang="([^"]+)"', text)
    assert m, f"{page}: no language switch"
    return html_lib.unescape(m.group(1)), m.group(2)


def test_every_english_page_has_a_chinese_page_and_the_switch_links_both_ways(site):
    english = html_pages(site)
    assert len(english) >= len(toc_files()) + 2  # the book, search, genindex
    for rel in english:
        zh_page = zh(site) / rel
        assert zh_page.is_file(), f"no Chinese page for {rel}"
        href, lang = switch_target(site / rel)
        assert lang == "zh-CN" and not href.startswith(("/", "http"))
        assert normpath((Path(rel).parent / href).as_posix()) == f"zh/{rel}", (rel, href)
        href, lang = switch_target(zh_page)
        assert lang == "en" and not href.startswith(("/", "http"))
        assert normpath((Path("zh") / Path(rel).parent / href).as_posix()) == rel, (rel, href)
    assert html_pages(zh(site)) == english, "the Chinese edition has pages the English one lacks"


def test_the_editions_declare_their_language_and_the_chinese_one_loads_nothing_remote(site):
    for rel in html_pages(site):
        assert re.search(r'<html[^>]* lang="en"', (site / rel).read_text(encoding="utf-8")), rel
        text = (zh(site) / rel).read_text(encoding="utf-8")
        assert re.search(r'<html[^>]* lang="zh-CN"', text), rel
        remote = re.findall(r"<(?:script|link)[^>]+(?:src|href)=\"((?:https?:)?//[^\"]+)\"", text)
        assert not remote, f"zh/{rel} loads {remote}"
        assert "bqkv_i18n.css" in text


def test_cjk_text_uses_the_readers_system_fonts_and_no_web_font(site):
    css = (zh(site) / "_static" / "bqkv_i18n.css").read_text(encoding="utf-8")
    assert 'html[lang|="zh"]' in css and "Noto Sans CJK SC" in css and "Microsoft YaHei" in css
    assert "@font-face" not in css and "url(" not in css


class _Blocks(HTMLParser):
    """The text of every prose block (paragraph, heading, table cell, term) of a page's
    article, outside code cells and their outputs, in document order."""

    BLOCKS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "td", "th", "dt"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.skip, self.blocks, self.current = [], 0, [], None

    def handle_starttag(self, tag, attrs):
        if tag in ("br", "img", "meta", "link", "input", "hr"):
            return
        cls = dict(attrs).get("class") or ""
        skip = tag in ("script", "style", "pre") or any(
            c in cls.split() for c in ("cell_output", "cell_input", "headerlink", "math", "bqkv-explorer",
                                       "footnote-list", "citation-list"))  # bibliography entries stay as cited
        self.stack.append((tag, skip))
        self.skip += skip
        if tag in self.BLOCKS and not self.skip and self.current is None:
            self.current = (tag, len(self.stack), [])

    def handle_endtag(self, tag):
        while self.stack:
            t, skip = self.stack.pop()
            self.skip -= skip
            if self.current and len(self.stack) < self.current[1]:
                self.blocks.append(" ".join("".join(self.current[2]).split()))
                self.current = None
            if t == tag:
                break

    def handle_data(self, data):
        if self.current is not None and not self.skip:
            self.current[2].append(data)


def blocks(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    start, end = text.find('<article class="bd-article">'), text.find("</article>")
    parser = _Blocks()
    parser.feed(text[start:end])
    return [b for b in parser.blocks if b]


WORD = re.compile(r"[A-Za-z]{3,}")


def english_words(text: str) -> set[str]:
    return {w.lower() for w in WORD.findall(text)} - {"figure", "table"}


CODE_NAME = re.compile(r"\S*[_.\[\]()]\S*")  # seq_len, norm.weight, W_in.weight[u]: names, not prose


def is_english_prose(block: str) -> bool:
    """Three English words or more, none of them Chinese; code names (a table cell of
    identifiers, such as notation's) are not words."""
    words = WORD.findall(CODE_NAME.sub(" ", block))
    return len(words) >= 3 and not re.search(r"[\u4e00-\u9fff]", block)


@pytest.mark.parametrize("page", TRANSLATED)
def test_translated_pages_are_chinese_and_show_no_english_paragraph_of_a_translated_message(site, page):
    """The two editions of a page have the same blocks in the same order; a block the
    Chinese page still shows in English must be one the catalog does not translate."""
    rel = f"{page}.html"
    text = (zh(site) / rel).read_text(encoding="utf-8")
    assert re.search(r'<html[^>]* lang="zh-CN"', text)
    en, cn = blocks(site / rel), blocks(zh(site) / rel)
    assert len(en) == len(cn) >= 2, f"{rel}: {len(en)} blocks in English, {len(cn)} in Chinese"
    translated = [english_words(i18n.prose(msgid)) for msgid, msgstr, _ in translated_entries(PO_DIR / f"{page}.po")
                  if msgstr != msgid]  # a name or number the translation keeps as it is
    still_english = []
    for e, c in zip(en, cn):
        if e != c or not is_english_prose(c):
            continue
        words = english_words(c)
        if any(len(t) >= 3 and len(t & words) >= 0.9 * len(t) for t in translated):
            still_english.append(c[:80])
    assert not still_english, f"{rel}: translated in the catalog, shown in English: {still_english}"
    prose = [c for e, c in zip(en, cn) if is_english_prose(e)]
    chinese = sum(bool(re.search(r"[\u4e00-\u9fff]", c)) for c in prose)
    assert chinese >= 0.9 * len(prose), f"{rel}: {chinese} of {len(prose)} English paragraphs are in Chinese"


class _Visible(HTMLParser):
    """What a reader of a built page sees or hears, outside code, maths, scripts, code output
    and the bibliography: its text, one string per block, and the values of its alt, title,
    aria-label, placeholder and tooltip attributes. Inside code output, an explorer (controls,
    options, note, figure alt) and a listing's header count (an option that is a model's input,
    a sentence or a prompt, is shown quoted: _explorer_static._shown)."""

    HIDE_TAGS = {"script", "style", "code", "pre", "kbd", "samp", "math", "svg"}
    HIDE_CLASSES = {"math", "highlight", "cell_input", "cell_output", "footnote-list", "citation-list"}
    SHOW_CLASSES = {"bqkv-explorer", "bqkv-listing"}  # a listing's code is in .highlight, hidden
    BLOCKS = {"p", "li", "td", "th", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "label", "option",
              "button", "figcaption", "summary", "div", "span", "a", "title"}
    VOID = {"br", "img", "meta", "link", "input", "hr", "source", "wbr", "col", "area", "base"}
    ATTRIBUTES = ("alt", "title", "aria-label", "placeholder", "data-bs-title")

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.texts, self.run = [], [], []

    def _flush(self):
        if "".join(self.run).strip():
            self.texts.append(" ".join("".join(self.run).split()))
        self.run = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        hidden = self.stack[-1][1] if self.stack else False
        if classes & self.SHOW_CLASSES:
            hidden = False
        if tag in self.HIDE_TAGS or classes & self.HIDE_CLASSES:
            hidden = True
        if tag == "a" and "external" in classes:
            hidden = True  # a link to another site is named by its own title (a cited work, a tool)
        if not hidden:
            self.texts += [a[k] for k in self.ATTRIBUTES if a.get(k)]
        if tag in self.BLOCKS - {"span", "a"}:
            self._flush()
        if tag not in self.VOID:
            self.stack.append((tag, hidden))

    def handle_endtag(self, tag):
        if tag in self.BLOCKS - {"span", "a"}:
            self._flush()
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        if not (self.stack and self.stack[-1][1]):
            self.run.append(data)
        elif self.run:
            self.run.append(" ")


# English a Chinese page may show: what it quotes (“What sh”, a model's prompt), cites (《…》),
# names a menu by (Runtime → Change runtime type), glosses in parentheses after the Chinese term
# (残差流（residual stream）, **fixed**（固定）), code and formulas written inline (d_model, sqrt(d)).
COMPOUND = re.compile(r"\b[a-z]+(?:-[a-z]+)+\b")  # a package's name: sentence-transformers, otter-grader
QUOTED = re.compile(r"“[^”]*”|‘[^’]*’|\"[^\"]*\"|'[^']*'|《[^》]*》")
MENU = re.compile(r"[\w .]+(?:→[\w .]+)+")
GLOSS = re.compile(r"[（(][^（）()]*[）)]")
BEFORE_GLOSS = re.compile(r"[A-Za-z][\w\- ]*(?=[（(][^（）()]*[\u4e00-\u9fff])")
CODE_LIKE = re.compile(r"\S*(?:[_\d/\\=<>{}\[\]@^]|\.\w|\w\()\S*")
LATIN_WORD = re.compile(r"[A-Za-z]{3,}")
# Names: the ones TERMS.md keeps in Latin letters, the cited authors (book/references.bib), and
# these tools, products and formula words.
NAMES = set("""GPT BERT MiniLM SmolLM Llama RoFormer NeoX Sentence Meta Hugging Face Base GELU ReLU relu
    silu sigmoid logistic Adam SGD PyTorch torch Python Jupyter JupyterLab Colab Binder GitHub CUDA GPU CPU
    NVIDIA Apple Google Linux Docker Gradescope nbgrader otter grader PyPI Markdown JavaScript JSON SDPA
    FFN LLM GGUF BOS English PDF KiB MiB zip wheel bool True False sum sqrt diag sigma inf eps exp log max
    min delta reshape logits transformers llama""".split())  # llama: llama.cpp


def page_english_words(text: str) -> list[str]:
    """The English words of a piece of a Chinese page that are not a quote, citation, menu,
    gloss or inline code."""
    text = COMPOUND.sub(" ", MENU.sub(" ", QUOTED.sub(" ", text)))
    text = BEFORE_GLOSS.sub(" ", text)
    for _ in range(2):  # a gloss may hold a quote or another gloss
        text = GLOSS.sub(lambda m: " " if len(LATIN_WORD.findall(m.group())) <= 6 else m.group(), text)
    return LATIN_WORD.findall(CODE_LIKE.sub(" ", text))


def allowed_names() -> set[str]:
    bib = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    authors = {w for m in re.finditer(r"author\s*=\s*[{\"](.*?)[}\"],?\s*$", bib, re.M)
               for w in LATIN_WORD.findall(m.group(1))}
    terms = (ROOT / "locales" / LANG / "TERMS.md").read_text(encoding="utf-8")
    kept = re.search(r"Latin letters \(([^)]*)\)", terms)  # "(Transformer, softmax, LSTM, ...)"
    latin = set(LATIN_WORD.findall(kept.group(1)))
    return NAMES | authors | latin


def english_on_page(page: Path, names: set[str]) -> list[str]:
    parser = _Visible()
    parser.feed(page.read_text(encoding="utf-8"))
    parser._flush()
    return [f"{w!r} in {text[:90]!r}" for text in parser.texts for w in page_english_words(text)
            if w not in names and w.lower() not in names]


def test_the_english_check_of_a_chinese_page_finds_english_and_passes_glosses_names_and_code(tmp_path):
    page = tmp_path / "p.html"
    page.write_text('<html><body><p>每个子层读取残差流（residual stream）；<code>d_model</code> 是宽度，'
                    'LSTM 与 Vaswani 的 $x$。</p><img alt="两张热图"><div class="cell_output"><pre>loss 0.1</pre>'
                    '<div class="bqkv-explorer"><label>提示 <select><option>“The capital of France is”</option>'
                    '</select></label><label>记忆 <select><option>trained</option></select></label>'
                    '<img alt="Heatmap of weights"></div></div>'
                    '<button title="Toggle primary sidebar"></button><p>The check builds a block.</p></body></html>',
                    encoding="utf-8")
    found = english_on_page(page, allowed_names())
    assert {f.split(" in ")[0].strip("'") for f in found} == {
        "Toggle", "primary", "sidebar", "trained", "Heatmap", "weights", "The", "check", "builds", "block"}, found


def test_the_chinese_pages_show_no_english_but_code_names_glosses_and_citations(site):
    """Every page of the Chinese edition, its text, figure alt texts, explorer controls and
    the theme's words: an English word there is a name (allowed_names), a gloss after the
    Chinese term, a quote, a citation, a menu path or code."""
    names = allowed_names()
    found = {}
    for page in sorted(zh(site).rglob("*.html")):
        rel = page.relative_to(zh(site)).as_posix()
        if rel.startswith(("_", "notebooks/")) or 'http-equiv="refresh"' in page.read_text(encoding="utf-8")[:3000]:
            continue
        words = english_on_page(page, names)
        if words:
            found[rel] = words[:8]
    assert not found, json.dumps(found, ensure_ascii=False, indent=1)


def test_chapter_1_in_chinese_keeps_its_glued_numbers_figures_and_citations(site):
    en = (site / "book" / "01_squished_memory.html").read_text(encoding="utf-8")
    cn = (zh(site) / "book" / "01_squished_memory.html").read_text(encoding="utf-8")
    pasted = re.findall(r'<span class="pasted-text">([^<]*)</span>', en)
    pasted_cn = re.findall(r'<span class="pasted-text">([^<]*)</span>', cn)
    assert pasted and len(pasted_cn) == len(pasted)
    # The Chinese page comes from the Chinese execution (_exec_zh): the same numbers, but for
    # the timings (CPU seconds), which no two runs share.
    from collections import Counter
    differ = sum((Counter(pasted) - Counter(pasted_cn)).values())
    timings = sum(1 for line in (ROOT / "book" / "01_squished_memory.ipynb").read_text().splitlines()
                  if 'glue(\\"ch1_cpu' in line)
    assert differ <= timings, (differ, timings, sorted(pasted), sorted(pasted_cn))
    assert re.findall(r'caption-number">图 ([\d.]+)', cn) == re.findall(r'caption-number">Figure ([\d.]+)', en)
    assert cn.count('class="footnote-reference') == en.count('class="footnote-reference')
    assert "{glue" not in cn and "No key" not in cn
    assert "显示解答" in cn and "Show solution" not in cn and "参考答案" in cn


def test_chinese_sidebar_has_translated_part_captions(site):
    for rel in ("book/index.html", "book/02_keep_every_state.html"):
        cn = (zh(site) / rel).read_text(encoding="utf-8")
        assert "第一部分 · 记忆" in cn and "Part I · Memory" not in cn, rel
        assert "Part I · Memory" in (site / rel).read_text(encoding="utf-8")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_a_chinese_chapters_buttons_open_its_chinese_reader_notebook(site, chapter):
    """Download: zh/notebooks/NN.ipynb of the site; Colab and Binder: zh/notebooks/NN.ipynb on
    the notebooks branch (the same file, tools/editions/notebooks_branch.py); the notebook has Chinese
    Markdown, sets BEFOREQKV_LANG=zh_CN and shows no solution."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    org, repo = re.match(r"https://github\.com/([^/]+)/([^/]+)", config["repository"]["url"]).groups()
    branch = config["sphinx"]["config"]["bqkv_notebooks_branch"]
    path = f"zh/{config['sphinx']['config']['bqkv_notebooks_dir']}/{chapter.name}"
    cn = html_lib.unescape((zh(site) / "book" / f"{chapter.stem}.html").read_text(encoding="utf-8"))
    hrefs = re.findall(r'<a [^>]*href="([^"]+)"', cn)
    assert [h for h in hrefs if "colab.research.google.com" in h] == [
        f"https://colab.research.google.com/github/{org}/{repo}/blob/{branch}/{path}"]
    assert [h for h in hrefs if "mybinder.org" in h] == [
        f"https://mybinder.org/v2/gh/{org}/{repo}/{branch}?urlpath=tree/{path}"]
    downloads = [h for h in hrefs if h.endswith(".ipynb") and "://" not in h]
    assert len(downloads) == 1
    file = (zh(site) / "book" / downloads[0]).resolve()
    assert file == (zh(site) / "notebooks" / chapter.name).resolve() and file.is_file()
    nb = nbformat.read(file, as_version=4)
    assert reader_problems(nb, nbformat.read(chapter, as_version=4)) == []
    assert any('os.environ["BEFOREQKV_LANG"] = "zh_CN"' in c.source for c in nb.cells if c.cell_type == "code")
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "## 答案" in md
    if f"book/{chapter.stem}" in TRANSLATED:
        assert len(re.findall(r"[\u4e00-\u9fff]", md)) > 1000


def search_index(root: Path) -> dict:
    text = (root / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1:text.rindex(")")])


def test_the_chinese_search_index_finds_attention_in_the_translated_pages(site):
    index = search_index(zh(site))
    docs = index["docnames"]

    def pages(word):  # a word in a page's headings is in titleterms, not in terms
        hits = [index[kind].get(word, []) for kind in ("terms", "titleterms")]
        return {docs[i] for h in hits for i in ([h] if isinstance(h, int) else h)}

    missing = [word for word in SEARCHED if not pages(word)]
    assert not missing, f"{missing} not in zh/searchindex.js (is jieba installed?)"
    assert {"book/02_keep_every_state", "book/09_mlp_memory"} <= pages("记忆")
    assert {"book/08_transformer", "book/11_modern_llm", "book/glossary"} <= pages("旋转位置编码")
    assert pages("词元") == pages("标记"), "词元 (what many Chinese texts call a token) finds the 标记 pages"
    found = pages("注意力")
    assert {"book/01_squished_memory", "book/index", "book/glossary", "book/notation"} <= found, found
    assert "attention" in search_index(site)["terms"] or "attent" in search_index(site)["terms"]


def test_chinese_pages_in_a_browser_typeset_maths_and_search_finds_chapter_1(site):
    """Headless Chromium, offline (tools/browser.py): the translated pages load without a
    console error, their maths is typeset, and searching 注意力 lists chapter 1."""
    import browser
    if not browser.find_chromium():
        pytest.fail("no Chromium: apt-get install -y chromium (.ci/run installs it)")
    pages = [f"zh/{p}.html" for p in TRANSLATED] + ["zh/search.html"]
    report = browser.check_site(site, ROOT / "_build" / "screenshots", pages)
    for page, r in report.items():
        assert not r["problems"], f"{page}: " + "\n".join(r["problems"])
        assert r["math_errors"] == 0 and not r["raw_tex"], page
        assert all(i["ok"] for i in r["images"]), page
    from playwright.sync_api import sync_playwright
    server, base = browser.serve(site)
    try:
        with sync_playwright() as pw:
            chromium = pw.chromium.launch(executable_path=browser.find_chromium(), headless=True)
            page = chromium.new_page()
            page.route(browser.ELSEWHERE, lambda route: route.abort("blockedbyclient"))  # offline
            page.goto(f"{base}/zh/search.html?q=%E6%B3%A8%E6%84%8F%E5%8A%9B")
            results = page.locator("#search-results ul.search li a")
            results.first.wait_for(timeout=60_000)
            hits = [a.get_attribute("href") for a in results.all()]
            chromium.close()
    finally:
        server.shutdown()
    assert any("01_squished_memory.html" in h for h in hits), hits


def test_a_display_equation_has_no_prose_for_the_term_check():
    assert i18n.prose("\ne_j = \\operatorname{score}(z, h_j) \\text{ for every token}\n") == ""
    assert "score" in i18n.prose("The score of $x$ is high.")


def test_the_teachers_page_names_each_chapter_and_exercise_as_the_chapter_does():
    """tools/editions/teachers.py copies the chapters' titles into the teachers page: one translation."""
    chapters = {}
    for po in sorted((PO_DIR / "book").glob("[01][0-9]_*.po")):
        for msgid, msgstr, _ in translated_entries(po):
            chapters[msgid] = msgstr
            m = re.match(r"Exercise (\d+\.\d+) · (.*)$", msgid)
            if m:
                chapters[m.group(2)] = re.sub(r"^练习 \d+\.\d+ · ", "", msgstr)
    teachers = {msgid: msgstr for msgid, msgstr, _ in translated_entries(PO_DIR / "book" / "teachers.po")}
    shared = set(teachers) & set(chapters)
    assert len(shared) >= 30
    differ = {k: (teachers[k], chapters[k]) for k in shared if teachers[k] != chapters[k]}
    assert not differ, json.dumps(differ, ensure_ascii=False, indent=1)
