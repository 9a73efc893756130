"""_ext/bqkv_site.py: duplicate scripts go, Thebe goes, and a CDN script is a build warning."""
import sys

import pytest
from sphinx.builders.html._assets import _JavaScript

from _book import ROOT

sys.path.insert(0, str(ROOT / "_ext"))
import bqkv_site  # noqa: E402


def test_duplicates_and_thebe_are_dropped_and_order_is_kept():
    toggle = "var togglebuttonSelector = '.toggle';"
    ctx = {"script_files": [
        _JavaScript("doctools.js"), _JavaScript(None, body=toggle),
        _JavaScript(None, body='const THEBE_JS_URL = "https://unpkg.com/thebe"'),
        _JavaScript("sphinx-thebe.js", **{"async": "async"}), _JavaScript(None, body=toggle),
        _JavaScript("doctools.js"), _JavaScript("mathjax/es5/tex-mml-chtml.js", defer="defer")]}
    bqkv_site._clean(None, "p", "page.html", ctx, None)
    assert [(bqkv_site._url(s), s.attributes.get("body")) for s in ctx["script_files"]] == [
        ("doctools.js", None), ("", toggle), ("mathjax/es5/tex-mml-chtml.js", None)]


def test_a_script_from_another_host_is_a_warning(monkeypatch):
    warned = []
    monkeypatch.setattr(bqkv_site.logger, "warning", lambda msg, **kw: warned.append(msg))
    ctx = {"script_files": [_JavaScript("https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js")]}
    bqkv_site._clean(None, "book/x", "page.html", ctx, None)
    assert len(warned) == 1 and "cdn.jsdelivr.net" in warned[0]


@pytest.mark.parametrize("url", ["_static/x.js", "../_static/x.js"])
def test_local_scripts_are_not_warnings(monkeypatch, url):
    warned = []
    monkeypatch.setattr(bqkv_site.logger, "warning", lambda msg, **kw: warned.append(msg))
    bqkv_site._clean(None, "p", "page.html", {"script_files": [_JavaScript(url)]}, None)
    assert not warned


def test_figures_are_numbered_per_chapter_in_page_order():
    class Env:
        toc_fignumbers = {
            "book/01_a": {"figure": {"fig-a2": (2,), "fig-a1": (1,)}},
            "book/05_b": {"figure": {"fig-b1": (15,), "fig-b2": (16,)}, "table": {"t": (3,)}},
            "book/notation": {"figure": {"fig-n": (40,)}},
        }
    env = Env()
    assert bqkv_site._number_figures_per_chapter(None, env) == []
    assert env.toc_fignumbers["book/01_a"]["figure"] == {"fig-a1": (1, 1), "fig-a2": (1, 2)}
    assert env.toc_fignumbers["book/05_b"]["figure"] == {"fig-b1": (5, 1), "fig-b2": (5, 2)}
    assert env.toc_fignumbers["book/05_b"]["table"] == {"t": (5, 1)}
    assert env.toc_fignumbers["book/notation"]["figure"] == {"fig-n": (1,)}
