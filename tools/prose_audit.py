"""Audit the chapters' prose (markdown and figure captions): glued numbers per paragraph, and judgment words.

    python tools/prose_audit.py [book/NN_x.ipynb ...]      # every chapter when none is given

A paragraph that quotes many glued numbers in a row is hard to read: the book keeps at most
``MAX_GLUE`` per paragraph (each list item counts as a paragraph; a table may hold more, that
is what tables are for). A judgment word ("nearly", "little", "most", ...) claims more than a
number: tests/test_prose.py maps each one in the audited chapters to the ``assert`` whose
threshold makes it true, or to the reason it needs none (a definition, a question, a bound
proved in the text). This prints, per chapter, the paragraphs over the limit and every
judgment word with its paragraph, so a writer sees what to back or drop.
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_GLUE = 3
GLUE = re.compile(r"\{glue(?::[a-z]+)?\}`")
# The words that judge a size; "at most" (a bound with its number) and "how much" (a question,
# or "how much and with which sign") are not judgments.
JUDGMENT = re.compile(r"\b(little|nearly|most|mostly|large|shut|barely|almost|much|tiny|"
                      r"essential|essentially|hardly|negligible)\b", re.IGNORECASE)
NOT_JUDGMENT = re.compile(r"\b(at most|how much)\b", re.IGNORECASE)
LIST_ITEM = re.compile(r"^(?:[-*]|\d+\.)\s+")


@dataclass(frozen=True)
class Paragraph:
    cell: int   # index of the markdown cell in the notebook
    text: str   # the paragraph's markdown, lines joined by spaces
    table: bool = False


def _blocks(markdown: str) -> list[str]:
    """Blank-line separated blocks, without fenced code and display maths."""
    markdown = re.sub(r"```.*?```", "", markdown, flags=re.DOTALL)
    markdown = re.sub(r"\$\$.*?\$\$", "", markdown, flags=re.DOTALL)
    return [b for b in re.split(r"\n\s*\n", markdown) if b.strip()]


def paragraphs_of(markdown: str, cell: int = 0) -> list[Paragraph]:
    """The paragraphs a reader sees in one markdown cell: each list item is one, a table is one."""
    out = []
    for block in _blocks(markdown):
        lines = block.strip().splitlines()
        if all(line.lstrip().startswith("|") for line in lines):
            out.append(Paragraph(cell, " ".join(line.strip() for line in lines), table=True))
            continue
        # a list may interrupt a paragraph ("In this chapter we" then "- load ..."); each item
        # starts at the margin, its continuation lines are indented
        parts: list[list[str]] = [[]]
        for line in lines:
            if LIST_ITEM.match(line):
                parts.append([LIST_ITEM.sub("", line, count=1)])
            else:
                parts[-1].append(line.strip())
        out += [Paragraph(cell, " ".join(part)) for part in parts if part]
    return out


def caption(cell: dict) -> str:
    """A code cell's figure caption (metadata mystnb.figure.caption), or ""."""
    figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
    return figure.get("caption", "") if isinstance(figure, dict) else ""


def paragraphs(path: str | Path) -> list[Paragraph]:
    """Every paragraph of a notebook's prose, in order: markdown cells and figure captions."""
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    out = []
    for i, c in enumerate(cells):
        if c["cell_type"] == "markdown":
            out += paragraphs_of("".join(c["source"]), i)
        elif caption(c):
            out.append(Paragraph(i, " ".join(caption(c).split())))
    return out


def glue_count(text: str) -> int:
    """How many glued values ({glue:text}`name`, {glue}`name`, ...) a text quotes."""
    return len(GLUE.findall(text))


def dense_paragraphs(path: str | Path, limit: int = MAX_GLUE) -> list[Paragraph]:
    """Paragraphs (not tables) that quote more than ``limit`` glued numbers."""
    return [p for p in paragraphs(path) if not p.table and glue_count(p.text) > limit]


def judgment_words_in(text: str) -> list[str]:
    """The judgment words of a text, lower case, in order (bounds and questions left out)."""
    text = NOT_JUDGMENT.sub(" ", text)
    return [m.group(1).lower() for m in JUDGMENT.finditer(text)]


def judgment_words(path: str | Path) -> list[tuple[str, Paragraph]]:
    """(word, paragraph) for every judgment word in a notebook's prose."""
    return [(w, p) for p in paragraphs(path) for w in judgment_words_in(p.text)]


def assert_lines(path: str | Path) -> list[str]:
    """Every line of a notebook's code cells that is an ``assert`` statement, stripped."""
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    return [line.strip() for c in cells if c["cell_type"] == "code"
            for line in "".join(c["source"]).splitlines() if line.strip().startswith("assert ")]


def main(argv: list[str]) -> int:
    paths = argv or sorted(str(p) for p in (ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
    for path in paths:
        name = Path(path).stem
        dense = dense_paragraphs(path)
        words = judgment_words(path)
        print(f"== {name}: {len(dense)} paragraphs over {MAX_GLUE} glued numbers, "
              f"{len(words)} judgment words")
        for p in dense:
            print(f"  dense  cell {p.cell:3d}  {glue_count(p.text):2d} glued  {p.text[:90]}")
        for p in paragraphs(path):
            for m in JUDGMENT.finditer(NOT_JUDGMENT.sub(lambda b: " " * len(b.group()), p.text)):
                print(f"  word   cell {p.cell:3d}  {m.group(1).lower():9s} "
                      f"...{p.text[max(0, m.start() - 60):m.end() + 40]}...")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
