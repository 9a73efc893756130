"""_ext/bqkv_site.py: duplicate scripts go, Thebe goes, and a CDN script is a build warning."""
import pytest

pytest.importorskip("sphinx", reason="the site's Sphinx extension needs Sphinx (requirements.txt)")
import bqkv_site  # noqa: E402
from sphinx.builders.html._assets import _JavaScript  # noqa: E402


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


class _App:
    """The bits of a Sphinx app the button rewrite reads (as _config.yml sets them)."""

    class config:  # noqa: N801
        html_theme_options = {"repository_url": "https://github.com/org/repo",
                              "launch_buttons": {"notebook_interface": "classic",
                                                 "colab_url": "https://colab.research.google.com",
                                                 "binderhub_url": "https://mybinder.org"}}
        bqkv_notebooks_branch = "notebooks"
        bqkv_notebooks_dir = "notebooks"


def test_launch_urls_open_the_notebooks_branch():
    assert bqkv_site.launch_urls(_App, "book/05_x") == {
        "Colab": "https://colab.research.google.com/github/org/repo/blob/notebooks/notebooks/05_x.ipynb",
        "Binder": "https://mybinder.org/v2/gh/org/repo/notebooks?urlpath=tree/notebooks/05_x.ipynb"}


def test_the_theme_buttons_of_a_chapter_are_rewritten_and_other_pages_left_alone():
    def buttons():
        return [{"label": "download-buttons", "buttons": [
                    {"text": ".ipynb", "url": "../_sources/book/05_x.ipynb"}, {"text": ".pdf"}]},
                {"label": "launch-buttons", "buttons": [
                    {"text": "Binder", "url": "old"}, {"text": "Colab", "url": "old"}]}]
    ctx = {"header_buttons": buttons(), "pathto": lambda name, resource=0: f"../{name}"}
    bqkv_site._reader_buttons(_App, "book/05_x", "page.html", ctx, None)
    download, launch = ctx["header_buttons"]
    assert download["buttons"][0]["url"] == "../notebooks/05_x.ipynb"
    assert [b["url"] for b in launch["buttons"]] == [
        "https://mybinder.org/v2/gh/org/repo/notebooks?urlpath=tree/notebooks/05_x.ipynb",
        "https://colab.research.google.com/github/org/repo/blob/notebooks/notebooks/05_x.ipynb"]
    other = {"header_buttons": buttons(), "pathto": ctx["pathto"]}
    bqkv_site._reader_buttons(_App, "book/notation", "page.html", other, None)
    assert other["header_buttons"] == buttons()


class _AppZh(_App):
    class config(_App.config):  # noqa: N801
        language = "zh_CN"
        bqkv_editions = {"en": "", "zh_CN": "zh/"}


def test_the_chinese_editions_buttons_open_its_own_reader_notebooks():
    """zh/notebooks/05_x.ipynb on the branch (Colab, Binder) and in the site (download)."""
    assert bqkv_site.launch_urls(_AppZh, "book/05_x") == {
        "Colab": "https://colab.research.google.com/github/org/repo/blob/notebooks/zh/notebooks/05_x.ipynb",
        "Binder": "https://mybinder.org/v2/gh/org/repo/notebooks?urlpath=tree/zh/notebooks/05_x.ipynb"}
    seen = []
    ctx = {"header_buttons": [{"label": "download-buttons", "buttons": [{"text": ".ipynb", "url": "x"}]}],
           "pathto": lambda name, resource=0: seen.append(name) or f"../../{name}"}
    bqkv_site._reader_buttons(_AppZh, "book/05_x", "page.html", ctx, None)
    assert seen == ["../zh/notebooks/05_x.ipynb"]  # from the zh edition's root: up one, into zh/
