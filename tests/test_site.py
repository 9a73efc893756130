"""Tests on the built site (_build/html): run by .ci/run after `make site`."""
import re

import pytest

from _book import CHAPTERS, ROOT

HTML = ROOT / "_build" / "html"


@pytest.fixture(scope="module")
def site(request):
    # Only on request (.ci/run after `make site`): a stale local build must not fail `make test`.
    if not request.config.getoption("--require-site"):
        pytest.skip("site tests run with --require-site after `make site`")
    if not (HTML / "index.html").exists():
        pytest.fail("no built site in _build/html: run `make book`")
    return HTML


def page(site, chapter):
    return (site / "book" / f"{chapter.stem}.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_page_has_a_colab_launch_button(site, chapter):
    html = page(site, chapter)
    assert "colab.research.google.com" in html, f"{chapter.stem} has no Colab launch link"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_page_shows_executed_figures_and_no_errors(site, chapter):
    html = page(site, chapter)
    assert re.search(r"<img[^>]+src=\"[^\"]*\.png\"", html), f"{chapter.stem} shows no figure"
    assert "Traceback (most recent call last)" not in html
    assert "{glue:" not in html and "glue:text" not in html, "an unresolved glue role reached the page"
    assert "### BEGIN SOLUTION" in html or "BEGIN SOLUTION" in html  # solutions are in the book, folded


def test_index_links_to_the_first_chapter(site):
    assert "book/index.html" in (site / "index.html").read_text(encoding="utf-8")  # the root redirects
    assert "01_squished_memory.html" in (site / "book" / "index.html").read_text(encoding="utf-8")
