"""Site hygiene for the book (a local Sphinx extension, see _config.yml).

* Every page's scripts are de-duplicated: sphinx-thebe and sphinx-togglebutton register
  their inline configuration twice under this jupyter-book/Sphinx pair, and the second
  `const THEBE_JS_URL` is a SyntaxError in every page's console.
* sphinx-thebe is dropped altogether: the book has no Thebe button (launch_buttons.thebe
  is off), and its loader points at a CDN.
* Nothing from a CDN: a page that would still load a script or stylesheet from another
  host gets a build warning, which `-W` (make site) turns into an error.
* Every button of a chapter opens its reader notebook (tools/export_reader.py: no raw
  MyST, no solution in view), never the author's source: Colab and Binder open
  ``notebooks/NN_x.ipynb`` (``bqkv_notebooks_dir``) on the branch named by ``bqkv_notebooks_branch`` (``_config.yml``,
  published by .github/workflows/book.yml), built from ``repository.url``; the download
  button's ``.ipynb`` is the copy ``make site`` puts in ``bqkv_notebooks_dir`` of the site.
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
    path = f"{app.config.bqkv_notebooks_dir}/{pagename.split('/')[-1]}.ipynb"
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
    download = context["pathto"](f"{app.config.bqkv_notebooks_dir}/{name}", 1)
    for group in context["header_buttons"]:
        for button in group.get("buttons", []):
            if group.get("label") == "launch-buttons" and button.get("text") in urls:
                button["url"] = urls[button["text"]]
            elif group.get("label") == "download-buttons" and button.get("text") == ".ipynb":
                button["url"] = download
                button["tooltip"] = "Download the notebook (answers at its end)"


def chapter_number(docname: str) -> int | None:
    """5 for 'book/05_queries_keys'; None for a page that is not a chapter."""
    m = re.match(r"(?:.*/)?(\d+)_", docname)
    return int(m.group(1)) if m else None


def _number_figures_per_chapter(app, env):
    """Rewrite Sphinx's book-wide figure numbers (assigned just before, by the toctree
    collector at the default priority) as (chapter, n) in page order."""
    for docname, kinds in env.toc_fignumbers.items():
        chapter = chapter_number(docname)
        for numbers in kinds.values():
            order = sorted(numbers, key=lambda fid: numbers[fid])
            for i, fid in enumerate(order, start=1):
                numbers[fid] = (chapter, i) if chapter is not None else (i,)
    return []


def setup(app):
    app.add_config_value("bqkv_notebooks_branch", "notebooks", "html")
    app.add_config_value("bqkv_notebooks_dir", "notebooks", "html")
    app.connect("html-page-context", _clean, priority=900)
    app.connect("html-page-context", _reader_buttons, priority=900)
    app.connect("env-get-updated", _number_figures_per_chapter, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
