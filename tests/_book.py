"""Helpers for the book-level tests: where the chapters are and what they contain."""
import re
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))


def toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(toc.get("parts", toc.get("chapters", [])))
    return files


def read(path):
    return nbformat.read(path, as_version=4)


def sources(nb, kind):
    return [c.source for c in nb.cells if c.cell_type == kind]


GLUE_USE = re.compile(r"\{glue:(?:text|)\}`([A-Za-z0-9_]+)")
GLUE_DEF = re.compile(r"glue\(\s*[\"']([A-Za-z0-9_]+)[\"']")
GLUE_DEF_F = re.compile(r"glue\(\s*f(?:\"([^\"]+)\"|'([^']+)')")  # glue(f"ch4_{task}_{model}", ...)


def glue_patterns(code: str):
    """Regexes for every glue name a chapter's code can define (literal or f-string)."""
    pats = [re.escape(n) for n in GLUE_DEF.findall(code)]
    pats += [re.sub(r"\\\{[^}]*\\\}", ".+", re.escape(f)) for f in map("".join, GLUE_DEF_F.findall(code))]
    return [re.compile(p + "$") for p in pats]


CITE = re.compile(r"\{(?:foot)?cite(?::[a-z]+)?\}`([^`]+)`")


# ---------------------------------------------------------------- the answer key must not leak
PREDICTION_LINE = re.compile(r"### BEGIN SOLUTION[^\n]*\n[ \t]*(\w+\s*=\s*[^\n]+?)[ \t]*\n[ \t]*### END SOLUTION")


def answer_markers():
    """Strings that only a leaked answer key would contain: each prediction's answer line as
    the chapters write it (``my_prediction = "no"``), the start of each explanation (shown
    only after a right answer), and a check's "right." line."""
    import json
    key = json.loads((ROOT / "instructor" / "answers.json").read_text(encoding="utf-8"))
    markers = {entry["explanation"][:48] for entry in key.values()}
    markers |= {f"{name}: right." for name in key}
    for path in CHAPTERS:
        for cell in read(path).cells:
            if cell.cell_type == "code" and "check_prediction" in cell.source:
                markers |= {m.group(1).strip() for m in PREDICTION_LINE.finditer(cell.source)}
    return markers


def answer_leaks(text: str, markers=None) -> list[str]:
    """The answer-key strings present in ``text`` (HTML entities for quotes undone)."""
    import html
    text = html.unescape(text)
    return sorted(m for m in (markers or answer_markers()) if m in text)
