"""The book's shape, read one way by every edition and by the site (``_ext/bqkv_site.py``):
its pages in the order of ``_toc.yml``, which of them are chapters, and how figures are
numbered ("Figure 5.2": chapter 5's second figure, in page order; a page that is not a
chapter counts 1, 2, ...)."""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from .paths import ROOT

__all__ = ["toc_pages", "chapters", "chapter_number", "figure_numbers", "number_per_chapter"]


def toc_pages(toc_path: Path = ROOT / "_toc.yml") -> list[str]:
    """Every page of the book ("book/05_queries_keys"), root first, in the order of the table
    of contents."""
    toc = yaml.safe_load(Path(toc_path).read_text(encoding="utf-8"))
    pages = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                pages.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(toc.get("parts", toc.get("chapters", [])))
    return pages


def chapters(folder) -> list[Path]:
    """The chapter notebooks of a folder (``NN_slug.ipynb``; the book's or an edition's copy), in order."""
    return sorted(Path(folder).glob("[0-9][0-9]_*.ipynb"))


def chapter_number(page) -> int | None:
    """5 for "book/05_queries_keys", "05_queries_keys.ipynb" or a path to it; None for a page
    that is not a chapter."""
    m = re.match(r"(\d+)_", Path(str(page)).name)
    return int(m.group(1)) if m else None


def _label(number: tuple[int, ...]) -> str:
    return ".".join(map(str, number))


def figure_numbers(nb, chapter: int | None = None) -> dict[str, str]:
    """{figure label: its number} of a notebook's figures (a code cell's
    ``metadata.mystnb.figure.name``), in cell order: "5.2" for chapter 5's second figure."""
    names = [c.metadata.get("mystnb", {}).get("figure", {}).get("name") for c in nb.cells
             if c.cell_type == "code"]
    prefix = () if chapter is None else (chapter,)
    return {name: _label((*prefix, i)) for i, name in enumerate((n for n in names if n), start=1)}


def number_per_chapter(fignumbers: dict[str, dict[str, dict[str, tuple]]]) -> None:
    """Sphinx's book-wide figure numbers (``env.toc_fignumbers``: page -> kind -> id ->
    number) rewritten in place as (chapter, n), n counting in the page's own order, so the
    site says what :func:`figure_numbers` says."""
    for page, kinds in fignumbers.items():
        chapter = chapter_number(page)
        for numbers in kinds.values():
            order = sorted(numbers, key=lambda fid: numbers[fid])
            for i, fid in enumerate(order, start=1):
                numbers[fid] = (chapter, i) if chapter is not None else (i,)
