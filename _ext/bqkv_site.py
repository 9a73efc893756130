"""Site hygiene for the book (a local Sphinx extension, see _config.yml).

* Every page's scripts are de-duplicated: sphinx-thebe and sphinx-togglebutton register
  their inline configuration twice under this jupyter-book/Sphinx pair, and the second
  `const THEBE_JS_URL` is a SyntaxError in every page's console.
* sphinx-thebe is dropped altogether: the book has no Thebe button (launch_buttons.thebe
  is off), and its loader points at a CDN.
* Nothing from a CDN: a page that would still load a script or stylesheet from another
  host gets a build warning, which `-W` (make site) turns into an error.
* Every button of a chapter opens its reader notebook (tools/editions/export_reader.py: no raw
  MyST, no solution in view), never the author's source: Colab and Binder open
  ``notebooks/NN_x.ipynb`` (``bqkv_notebooks_dir``) on the branch named by ``bqkv_notebooks_branch`` (``_config.yml``,
  published by .github/workflows/book.yml), built from ``repository.url``; the download
  button's ``.ipynb`` is the copy ``make site`` puts in ``bqkv_notebooks_dir`` of the site.
* Figures are numbered per chapter, "Figure 5.2" for chapter 5's second figure (Sphinx
  alone counts on across the whole book when the toc is not numbered); other pages
  number theirs from 1. ``editions.book`` does the numbering, here and for the reader notebooks.
* Editions: the site holds one edition per language of ``bqkv_editions`` (English at the
  root, Chinese under ``zh/``; tools/editions/i18n.py, locales/). Every page's header links to the
  same page in each other edition, by a relative URL (works offline and on any host), and
  names it in a ``<link rel="alternate" hreflang>``. A chapter's buttons in another edition
  open that edition's reader notebook: ``zh/notebooks/NN_x.ipynb`` in the site (download)
  and on the notebooks branch (Colab, Binder), in Chinese (``make site``). The editions'
  own catalog (``locales/<lang>/editions.po``, read by ``editions.words`` into
  ``bqkv_ui_strings``) translates the strings the notebooks and this extension put on a page
  without going through a page's catalog (fold prompts, the model answers' ``<summary>``, a
  tooltip); the reader notebooks' own words come from the same catalog.
* Glue in translations: Sphinx parses a translated message as a fresh Markdown document,
  where myst-nb's ``{glue:text}`` finds no notebook to read (it warns "No key ... found in
  glue data"). The notebook parser below rewrites each local ``{glue:text}`key:fmt``` of a
  translated message as a reference to the page's own notebook, ``page.ipynb::key:fmt``,
  which myst-nb resolves from the glue data it saved while reading the page.
* The part captions of the table of contents ("Part I · Memory") are translated from the
  root page's catalog: sphinx-external-toc inserts its toctrees (priority 100) after
  Sphinx's own translation pass (20) has run, so Sphinx never sees them.
* Chinese search: Sphinx's ``zh`` search language with two changes. jieba cuts only the
  runs of Chinese characters (Latin words and numbers are taken by Sphinx's own regular
  expression anyway; jieba over a whole page of English and code tripled the build time),
  and the Chinese terms of ``html_search_options["bqkv_terms"]`` (locales/zh_CN/TERMS.md)
  are words of its dictionary, so 残差流 or 因果掩码 is found as one word. Its record of
  Latin words is a set: Sphinx's is one list for the whole build, searched for every word
  stemmed (47 of the edition's 110 s went there).
* The theme's own words: Sphinx, pydata-sphinx-theme and sphinx-book-theme translate their
  strings from catalogs they bundle, which leave some in English ("Link to this heading",
  "Repository", "Open issue") or say them the Taiwan way (列印成 PDF). An edition's
  ``locales/<lang>/theme/<catalog>.po`` (catalog ``sphinx`` or ``booktheme``) is read at
  start-up and its translations win over the bundled ones. The few strings the theme and
  myst-nb write without any catalog (a sidebar toggle's title, a fold's ``aria-label``) are
  attribute values translated from that same catalog, replaced in the written pages.
"""
from __future__ import annotations

import gettext
import html
import io
import re
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx import locale as sphinx_locale
from sphinx.locale import init as init_locale
from myst_nb.sphinx_ import Parser as _NotebookParser
from sphinx.search import zh as sphinx_zh
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.i18n import docname_to_domain
from sphinx.util import logging

from editions import words
from editions.book import chapter_number, number_per_chapter

logger = logging.getLogger(__name__)

_DROP = ("sphinx-thebe.js", "THEBE_JS_URL")


def _url(asset):
    return str(getattr(asset, "filename", asset) or "")


def _key(asset):
    attributes = getattr(asset, "attributes", {}) or {}
    return _url(asset), tuple(sorted((k, str(v)) for k, v in attributes.items()))


def _clean(app, pagename, templatename, context, doctree):
    for name in ("script_files", "css_files"):
        files = context.get(name)
        if not files:
            continue
        seen, kept = set(), []
        for asset in files:
            body = (getattr(asset, "attributes", {}) or {}).get("body", "")
            if any(d in _url(asset) or d in body for d in _DROP):
                continue
            key = _key(asset)
            if key in seen:
                continue
            seen.add(key)
            kept.append(asset)
            url = _url(asset)
            if url.startswith(("http://", "https://", "//")):
                logger.warning(f"{pagename}: {url} is loaded from another host; serve it from "
                               "the site (tools/vendor.py) so the book works offline",
                               type="bqkv", subtype="cdn")
        files[:] = kept


def _live_explorers(app, pagename, templatename, context, doctree):
    """A page with a live explorer (src/beforeqkv/live.py) loads its script, and no other page.

    The script is small; it fetches onnxruntime-web and the model only when the reader
    touches an explorer.
    """
    if 'class="bqkv-live"' in (context.get("body") or ""):
        app.add_js_file("bqkv-live.js", defer="defer")


def repository(app) -> tuple[str, str]:
    """(org, repo) of the GitHub repository named in _config.yml's ``repository.url``."""
    url = app.config.html_theme_options.get("repository_url", "").rstrip("/")
    m = re.match(r"https://github\.com/([^/]+)/([^/]+?)(?:\.git)?$", url)
    if not m:
        raise ValueError(f"repository.url must be a GitHub repository, got {url!r}")
    return m.group(1), m.group(2)


def launch_urls(app, pagename: str) -> dict[str, str]:
    """{"Colab": url, "Binder": url} of a chapter's reader notebook on the notebooks branch."""
    org, repo = repository(app)
    branch = app.config.bqkv_notebooks_branch
    path = f"{edition_dir(app)}{app.config.bqkv_notebooks_dir}/{pagename.split('/')[-1]}.ipynb"
    opts = app.config.html_theme_options.get("launch_buttons", {})
    colab = opts.get("colab_url", "https://colab.research.google.com").rstrip("/")
    binder = opts.get("binderhub_url", "https://mybinder.org").rstrip("/")
    ui = {"classic": "tree", "jupyterlab": "lab/tree"}[opts.get("notebook_interface", "classic")]
    return {"Colab": f"{colab}/github/{org}/{repo}/blob/{branch}/{path}",
            "Binder": f"{binder}/v2/gh/{org}/{repo}/{branch}?urlpath={ui}/{path}"}


def _reader_buttons(app, pagename, templatename, context, doctree):
    """Point the theme's launch and download buttons of a chapter at its reader notebook
    (after sphinx-book-theme made them, at priority 501)."""
    if chapter_number(pagename) is None or "header_buttons" not in context:
        return
    urls = launch_urls(app, pagename)
    name = pagename.split("/")[-1] + ".ipynb"
    download = context["pathto"](f"{site_root(app)}{edition_dir(app)}{app.config.bqkv_notebooks_dir}/{name}", 1)
    for group in context["header_buttons"]:
        for button in group.get("buttons", []):
            if group.get("label") == "launch-buttons" and button.get("text") in urls:
                button["url"] = urls[button["text"]]
            elif group.get("label") == "download-buttons" and button.get("text") == ".ipynb":
                button["url"] = download
                button["tooltip"] = ui_string(app, "Download the notebook (answers at its end)")


def _number_figures_per_chapter(app, env):
    """Sphinx's book-wide figure numbers (assigned just before, by the toctree collector at
    the default priority) as (chapter, n) in page order: ``editions.book``, which numbers the
    reader notebooks' figures too."""
    number_per_chapter(env.toc_fignumbers)
    return []


# --------------------------------------------------------------------------------- editions
LANGUAGE_NAMES = {"en": "English", "zh_CN": "中文"}


def language(app) -> str:
    return getattr(app.config, "language", None) or "en"


def hreflang(lang: str) -> str:
    """The BCP 47 tag of a Sphinx language name: zh_CN -> zh-CN."""
    return lang.replace("_", "-")


def _editions(app) -> dict[str, str]:
    editions = getattr(app.config, "bqkv_editions", None) or {}
    for lang, prefix in editions.items():
        if prefix and (not prefix.endswith("/") or prefix.startswith("/") or ".." in prefix):
            raise ValueError(f"bqkv_editions: {lang}'s folder must be relative and end in '/', got {prefix!r}")
    return editions


def edition_dir(app) -> str:
    """This edition's folder in the site and on the notebooks branch: '' for English, 'zh/'.
    Its reader notebooks are <edition_dir>notebooks/NN_x.ipynb in both places."""
    return _editions(app).get(language(app), "")


def site_root(app) -> str:
    """From the root of this edition to the root of the site: '' for English, '../' for zh/."""
    return "../" * _editions(app).get(language(app), "").count("/")


def edition_links(app, pagename: str, target_uri: str) -> list[dict]:
    """The same page in every other edition: [{lang, hreflang, label, url}], relative URLs.

    ``target_uri`` is the page's file in its edition ("book/01_squished_memory.html")."""
    editions = _editions(app)
    here = language(app)
    if here not in editions or len(editions) < 2:
        return []
    up = "../" * pagename.count("/") + site_root(app)
    return [{"lang": lang, "hreflang": hreflang(lang), "label": LANGUAGE_NAMES.get(lang, lang),
             "url": f"{up}{prefix}{target_uri}"}
            for lang, prefix in editions.items() if lang != here]


def _language_switch(app, pagename, templatename, context, doctree):
    links = edition_links(app, pagename, app.builder.get_target_uri(pagename))
    context["bqkv_edition_links"] = links
    alternates = "".join(f'\n<link rel="alternate" hreflang="{e["hreflang"]}" href="{html.escape(e["url"])}" />'
                         for e in links)
    context["metatags"] = context.get("metatags", "") + alternates


def _ui_strings(app, config):
    """The words the theme and myst-nb write without a catalog, in the edition's language:
    from the editions' own catalog (``locales/<lang>/editions.po``, ``editions.words``), the
    one the reader notebooks' words come from too."""
    config.bqkv_ui_strings = words.catalog(config.language or "en")


def ui_string(app, text: str) -> str:
    return (getattr(app.config, "bqkv_ui_strings", None) or {}).get(text, text)


class TranslateUiStrings(SphinxPostTransform):
    """Fold prompts (myst-nb's, after it resolved ``{type}``) and the model answers'
    ``<summary>`` in the language of the edition (``bqkv_ui_strings``)."""

    default_priority = 250  # after myst-nb's HideInputCells (199) made the folds
    formats = ("html",)

    def run(self, **kwargs):
        strings = self.app.config.bqkv_ui_strings or {}
        if not strings:
            return
        for node in self.document.findall(nodes.Element):
            if "prompt_show" in node.attributes:
                for key in ("prompt_show", "prompt_hide"):
                    node[key] = strings.get(node[key], node[key])
        for node in self.document.findall(nodes.raw):
            text = node.astext()
            new = re.sub(r"<summary>([^<]*)</summary>",
                         lambda m: f"<summary>{html.escape(strings.get(m.group(1), m.group(1)))}</summary>", text)
            if new != text:
                node.replace_self(nodes.raw(node.rawsource, new, **node.attributes))


class TranslateTocCaptions(SphinxTransform):
    """The captions of the toctrees sphinx-external-toc inserted, from the page's catalog."""

    default_priority = 110  # after sphinx_external_toc.events.InsertToctrees (100)

    def apply(self, **kwargs):
        if not self.config.language or self.config.language == "en":
            return
        toctrees = [n for n in self.document.findall(addnodes.toctree) if n.get("caption")]
        if not toctrees:
            return
        domain = docname_to_domain(self.env.docname, self.config.gettext_compact)
        dirs = [str(Path(self.env.srcdir) / d) for d in self.config.locale_dirs]
        catalog, has_catalog = init_locale(dirs, self.config.language, domain)
        if not has_catalog:
            return
        for node in toctrees:
            original = node.get("rawcaption") or node["caption"]
            translated = catalog.gettext(original)
            if translated and translated != original:
                node["caption"] = translated


GLUE_TEXT = re.compile(r"\{glue:text\}`([A-Za-z0-9_]+)(?::([^`]*))?`")


def glue_in_translation(text: str, notebook: str) -> str:
    """``{glue:text}`key:fmt``` -> ``{glue:text}`notebook::key:fmt``` (fmt defaults to s)."""
    return GLUE_TEXT.sub(lambda m: f"{{glue:text}}`{notebook}::{m.group(1)}:{m.group(2) or 's'}`", text)


class NotebookParser(_NotebookParser):
    """myst-nb's notebook parser; in a translated message, glue reads the page's notebook."""

    def parse(self, inputstring: str, document: nodes.document) -> None:
        if document.current_source and document.current_source.endswith("<translated>"):
            env = document.settings.env
            inputstring = glue_in_translation(inputstring, Path(env.doc2path(env.docname)).name)
        return super().parse(inputstring, document)


CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def chinese_terms(terms_md: str | Path) -> list[str]:
    """The Chinese column of a TERMS.md table (| English | 中文 | ...)."""
    words = []
    for line in Path(terms_md).read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) > 1 and CJK.search(cells[1]):
            words.append(cells[1])
    return words


class ChineseSearch(sphinx_zh.SearchChinese):
    """Sphinx's Chinese search language; jieba sees the Chinese text only, and knows the
    book's terms (see the module docstring). ``bqkv_aliases`` ({searched: written}, e.g.
    {"词元": "标记"}): a word readers search for that the book spells another way is
    indexed wherever the book's word is, so searching 词元 lists the pages that say 标记."""

    def init(self, options: dict[str, str]) -> None:
        super().init(options)
        self.latin_terms = set()  # stem() asks `word in self.latin_terms` for every word
        self.aliases: dict[str, list[str]] = {}
        for searched, written in (options.get("bqkv_aliases") or {}).items():
            if not (CJK.fullmatch(searched) and CJK.fullmatch(written)):
                raise ValueError(f"bqkv_aliases: {searched!r}: {written!r} must both be Chinese words")
            self.aliases.setdefault(written, []).append(searched)
        terms = options.get("bqkv_terms")
        if sphinx_zh.JIEBA and terms:
            for word in chinese_terms(terms):
                for part in word.split():   # "KV 缓存": 缓存 is the word jieba sees
                    if CJK.fullmatch(part):
                        sphinx_zh.jieba.add_word(part)

    def split(self, input: str) -> list[str]:
        chinese = []
        if sphinx_zh.JIEBA:
            chinese = [w for run in CJK.findall(input) for w in sphinx_zh.jieba.cut_for_search(run)]
            chinese += [a for w in chinese for a in self.aliases.get(w, ())]
        latin = [term.strip() for term in self.latin1_letters.findall(input)]
        self.latin_terms.update(latin)
        return chinese + latin


def _templates_and_assets(app, config):
    """The language switch is a header component; its style and the CJK font fallback are
    served from the site (no web font: each reader's system CJK fonts)."""
    here = Path(__file__).resolve().parent
    config.templates_path = [*config.templates_path, str(here / "templates")]
    config.html_static_path = [*config.html_static_path, str(here / "static")]
    options = config.html_theme_options
    end = options.get("article_header_end", ["article-header-buttons.html"])
    end = [end] if isinstance(end, str) else list(end)
    if config.bqkv_editions and "bqkv-language-switch.html" not in end:
        options["article_header_end"] = ["bqkv-language-switch.html", *end]
    search = config.html_search_options or {}
    if search.get("bqkv_terms"):
        config.html_search_options = {**search, "bqkv_terms": str(Path(app.srcdir) / search["bqkv_terms"])}


def read_theme_catalog(po: Path) -> gettext.GNUTranslations:
    """A .po file as a gettext catalog (compiled in memory: nothing is written)."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po
    with open(po, "rb") as f:
        catalog = read_po(f, abort_invalid=True)
    buf = io.BytesIO()
    write_mo(buf, catalog)
    buf.seek(0)
    return gettext.GNUTranslations(buf)


def _theme_catalogs(app, config):
    """locales/<lang>/theme/<catalog>.po ahead of the catalogs Sphinx and the themes bundle."""
    if not config.language or config.language == "en":
        return
    for folder in (Path(app.srcdir) / d / config.language / "theme" for d in config.locale_dirs):
        for po in sorted(folder.glob("*.po")):
            mine = read_theme_catalog(po)
            key = ("general", po.stem)
            bundled = sphinx_locale.translators.get(key)
            if isinstance(bundled, gettext.GNUTranslations):  # every holder of it sees ours
                bundled._catalog.update({k: v for k, v in mine._catalog.items() if k})
            else:
                sphinx_locale.translators[key] = mine
                if po.stem == "sphinx":
                    app.translator = mine


ATTRIBUTE = re.compile(r'(\s(?:alt|title|aria-label|data-bs-title|placeholder)=")([^"<>]*)(")')


def translate_attributes(text: str, strings: dict[str, str]) -> str:
    """The attribute values (title, aria-label, tooltip, placeholder) listed in ``strings``."""
    def swap(m):
        value = html.unescape(m.group(2))
        return m.group(1) + html.escape(strings[value]) + m.group(3) if value in strings else m.group(0)
    return ATTRIBUTE.sub(swap, text)


def _hard_coded_attributes(app, exception):
    strings = app.config.bqkv_ui_strings or {}
    if exception is not None or not strings or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        new = translate_attributes(text, strings)
        if new != text:
            page.write_text(new, encoding="utf-8")


def setup(app):
    app.add_config_value("bqkv_notebooks_branch", "notebooks", "html")
    app.add_config_value("bqkv_notebooks_dir", "notebooks", "html")
    app.add_config_value("bqkv_editions", {}, "html")
    app.add_config_value("bqkv_ui_strings", {}, "env")
    app.connect("config-inited", _templates_and_assets)
    app.connect("config-inited", _theme_catalogs)
    app.connect("config-inited", _ui_strings)
    app.connect("build-finished", _hard_coded_attributes)
    app.add_css_file("bqkv_i18n.css")
    app.add_post_transform(TranslateUiStrings)
    app.add_transform(TranslateTocCaptions)
    app.add_source_parser(NotebookParser, override=True)
    app.add_search_language(ChineseSearch)
    # Before pydata-sphinx-theme drops the header components that render empty (priority 500).
    app.connect("html-page-context", _language_switch, priority=400)
    app.connect("html-page-context", _live_explorers, priority=500)
    app.connect("html-page-context", _clean, priority=900)
    app.connect("html-page-context", _reader_buttons, priority=900)
    app.connect("env-get-updated", _number_figures_per_chapter, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
