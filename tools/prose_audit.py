"""Audit the chapters' prose (markdown and figure captions): glued numbers per paragraph, and judgment words.

    python tools/prose_audit.py [book/NN_x.ipynb ...]      # every chapter when none is given

A paragraph that quotes many glued numbers in a row is hard to read: the book keeps at most
``MAX_GLUE`` per paragraph (each list item counts as a paragraph; a table may hold more, that
is what tables are for). A judgment word ("nearly", "little", "most", ...) claims more than a
number: tests/test_prose.py maps each one in the audited chapters to the ``assert`` whose
threshold makes it true, or to the reason it needs none (a definition, a question, a bound
proved in the text). A glued time (``TIMINGS``) is the build machine's, so the paragraph
that quotes it says so (``WHOSE``). This prints, per chapter, the paragraphs over the limit,
every judgment word with its paragraph, and every timing quoted without saying whose, so a
writer sees what to back, drop or qualify.
"""
from __future__ import annotations

import ast
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_GLUE = 3
GLUE = re.compile(r"\{glue(?::[a-z]+)?\}`([A-Za-z0-9_]*)")  # a glue role; its group: the name
# The words that judge a size; "at most" (a bound with its number) and "how much" (a question,
# or "how much and with which sign") are not judgments.
JUDGMENT = re.compile(r"\b(little|nearly|most|mostly|large|shut|barely|almost|much|tiny|"
                      r"essential|essentially|hardly|negligible)\b", re.IGNORECASE)
NOT_JUDGMENT = re.compile(r"\b(at most|how much)\b", re.IGNORECASE)
LIST_ITEM = re.compile(r"^(?:[-*]|\d+\.)\s+")
# Glued numbers that are times, or ratios of times, measured while the page was built: the
# build machine's, which a reader's own run does not reproduce. tests/test_site.py keeps this
# set equal to the numbers the two editions' executions disagree on.
TIMINGS = frozenset({
    "ch1_cpu_attn", "ch1_cpu_lstm", "ch2_cpu", "ch2_ctrl_cpu",
    "ch3_rnn_ms", "ch3_attn_ms", "ch3_speedup", "ch3_big_rnn_ms", "ch3_big_attn_ms",
    "ch4_cpu", "ch5_cpu", "ch6_cpu", "ch6_pp_ratio", "ch6_pp_cpu_800", "ch7_cpu",
    "ch8_mask_cpu", "ch8_res_cpu", "ch8_lm_cpu", "ch9_cpu", "ch10_load_s",
    "ch11_load_s", "ch11_tps_cache", "ch11_tps_nocache",
})
WHOSE = "the machine that built this page"  # what a paragraph quoting a timing says
WHOSE_ZH = "构建本页的机器"  # the same words in the Chinese edition


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


def timings_in(text: str) -> list[str]:
    """The glued timings (``TIMINGS``) a text quotes, in order."""
    return [name for name in GLUE.findall(text) if name in TIMINGS]


def untold_timings(texts, whose: str = WHOSE) -> list[str]:
    """The texts that quote a glued timing without saying whose machine measured it."""
    return [text for text in texts if timings_in(text) and whose not in text]


def judgment_words(path: str | Path) -> list[tuple[str, Paragraph]]:
    """(word, paragraph) for every judgment word in a notebook's prose."""
    return [(w, p) for p in paragraphs(path) for w in judgment_words_in(p.text)]


def assert_lines(path: str | Path) -> list[str]:
    """Every ``assert`` statement of a notebook's code cells, stripped; one that goes on over
    more lines comes whole, its lines joined by newlines."""
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    out = []
    for c in cells:
        if c["cell_type"] != "code":
            continue
        lines = "".join(c["source"]).splitlines()
        for i, line in enumerate(lines):
            if line.strip().startswith("assert "):
                out.append(_whole_statement([ln.strip() for ln in lines[i:]]))
    return out


def _whole_statement(lines: list[str]) -> str:
    """The first statement of ``lines``: as many lines as it takes to parse."""
    for n in range(1, len(lines) + 1):
        text = "\n".join(lines[:n])
        try:
            ast.parse(text)
            return text
        except SyntaxError:
            continue
    return lines[0]


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
            if untold_timings([p.text]):
                print(f"  timing cell {p.cell:3d}  {', '.join(timings_in(p.text))} without {WHOSE!r}")
        for p in paragraphs(path):
            for m in JUDGMENT.finditer(NOT_JUDGMENT.sub(lambda b: " " * len(b.group()), p.text)):
                print(f"  word   cell {p.cell:3d}  {m.group(1).lower():9s} "
                      f"...{p.text[max(0, m.start() - 60):m.end() + 40]}...")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
