"""Site hygiene for the book (a local Sphinx extension, see _config.yml).

* Every page's scripts are de-duplicated: sphinx-thebe and sphinx-togglebutton register
  their inline configuration twice under this jupyter-book/Sphinx pair, and the second
  `const THEBE_JS_URL` is a SyntaxError in every page's console.
* sphinx-thebe is dropped altogether: the book has no Thebe button (launch_buttons.thebe
  is off), and its loader points at a CDN.
* Nothing from a CDN: a page that would still load a script or stylesheet from another
  host gets a build warning, which `-W` (make site) turns into an error.
* Figures are numbered per chapter, "Figure 5.2" for chapter 5's second figure (Sphinx
  alone counts on across the whole book when the toc is not numbered); other pages
  number theirs from 1. tools/export_reader.py numbers the reader notebooks the same way.
"""
from __future__ import annotations

import re

from sphinx.util import logging

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


def chapter_number(docname: str) -> int | None:
    """5 for 'book/05_queries_keys'; None for a page that is not a chapter."""
    m = re.match(r"(?:.*/)?(\d+)_", docname)
    return int(m.group(1)) if m else None


def _number_figures_per_chapter(app, env):
    """Rewrite Sphinx's book-wide figure numbers (assigned just before, by the toctree
    collector at the default priority) as (chapter, n) in page order."""
    for docname, kinds in env.toc_fignumbers.items():
        chapter = chapter_number(docname)
        for figtype, numbers in kinds.items():
            order = sorted(numbers, key=lambda fid: numbers[fid])
            for i, fid in enumerate(order, start=1):
                numbers[fid] = (chapter, i) if chapter is not None else (i,)
    return []


def setup(app):
    app.connect("html-page-context", _clean, priority=900)
    app.connect("env-get-updated", _number_figures_per_chapter, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
