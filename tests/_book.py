"""Helpers for the book-level tests: where the chapters are and what they contain."""
import re
from pathlib import Path

import nbformat
from editions.book import chapters, toc_pages

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
CHAPTERS = chapters(BOOK)


def toc_files():
    return toc_pages(ROOT / "_toc.yml")


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
    markers = {entry[field][:48] for entry in key.values() for field in ("explanation", "explanation_zh_CN")}
    markers |= {f"{name}: right." for name in key} | {f"{name}：正确。" for name in key}
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


# ---------------------------------------------------------------- reader notebooks
def _tools():
    from editions import solutions
    return solutions


def solution_lines(nb):
    """Every non-trivial line of a chapter's code solutions and model answers."""
    solutions = _tools()
    lines = set()
    for cell in nb.cells:
        for m in solutions.BLOCK.finditer(cell.source):
            if not solutions.is_prediction(m.group(2), m.group(1)):
                lines |= {ln.strip() for ln in m.group(2).splitlines()}
        for m in solutions.DETAILS.finditer(cell.source):
            lines |= {ln.strip() for ln in m.group(1).splitlines()}
    return {ln for ln in lines if len(ln) > 12 and not ln.startswith("#")}


def predictions(nb):
    """[(name, its answer line)] for every prediction (``name = value`` in a solution block)."""
    solutions = _tools()
    found = []
    for cell in nb.cells:
        for m in solutions.BLOCK.finditer(cell.source):
            if solutions.is_prediction(m.group(2), m.group(1)):
                line = m.group(2).strip()
                found.append((solutions.ASSIGNMENT.match(line).group(1), line))
    return found


def printed_before(cells):
    """Cells that would print an answer or a glued number in a reader's kernel: a ``glue``
    call (outside the book's build it prints its value) or a cell the site hides
    (``remove-cell``), the install cell excepted."""
    _tools()
    from editions import bootstrap
    problems = []
    for cell in (c for c in cells if c.cell_type == "code"):
        if re.search(r"(?<![\w.])glue\(|beforeqkv\.glue\(", cell.source):
            problems.append(f"a glue call prints a number: {cell.source[:50]!r}")
        elif "remove-cell" in cell.metadata.get("tags", []) and not (
                "pip" in cell.source and cell.source.startswith(bootstrap.FIRST_LINE)):
            problems.append(f"a cell the site hides: {cell.source[:50]!r}")
    return problems


def reader_problems(reader, source):
    """What a reader notebook shows that it must not: raw MyST, a solution marker, a line of
    a solution outside its folded Answers section, a prediction's answer anywhere, a cell
    that prints a glued number or an answer before the Answers section."""
    from editions import export_reader, words
    catalogs = [words.Words(lang) for lang in words.languages()]
    answers = {"## Answers"} | {w("## Answers") for w in catalogs}
    answer_title = tuple({"### Answer to exercise"} | {"### " + w("Answer to exercise {number}").split("{")[0]
                                                       for w in catalogs})
    heads = [i for i, c in enumerate(reader.cells) if c.source.split("\n")[0] in answers]
    start = heads[0] if heads else len(reader.cells)
    visible = {ln.strip() for c in reader.cells[:start] for ln in c.source.splitlines()}
    everything = "\n".join(c.source for c in reader.cells)
    problems = [f"raw MyST {r!r}" for c in reader.cells if c.cell_type == "markdown"
                for r in export_reader.has_raw_myst(c.source)]
    if "BEGIN SOLUTION" in everything or "END SOLUTION" in everything:
        problems.append("a solution marker")
    problems += [f"solution line in view: {ln!r}" for ln in sorted(solution_lines(source) & visible)]
    for name, line in predictions(source):
        if line in everything or re.search(rf"^\s*{name}\s*=(?!\s*\.\.\.)", everything, re.M):
            problems.append(f"the answer of prediction {name!r}")
    problems += printed_before(reader.cells[:start])
    for cell in reader.cells[start + 1:]:
        if cell.cell_type == "code":
            hidden = cell.metadata.get("jupyter", {}).get("source_hidden") is True
            form = cell.metadata.get("cellView") == "form" and cell.source.startswith("# @title ")
            if not (hidden and form):
                problems.append(f"an answer cell not folded: {cell.source[:40]!r}")
        elif "<details>" not in cell.source and not cell.source.startswith(answer_title):
            problems.append(f"an answer in view: {cell.source[:40]!r}")
    return problems


def all_solution_lines(nb):
    """Every non-trivial line inside a solution block (predictions included) or a model answer
    of an instructor's notebook: none may show in a student's version."""
    solutions = _tools()
    lines = set()
    for cell in nb.cells:
        for m in solutions.BLOCK.finditer(cell.source):
            lines |= {ln.strip() for ln in m.group(2).splitlines()}
        for m in solutions.DETAILS.finditer(cell.source):
            lines |= {ln.strip() for ln in m.group(1).splitlines()}
    return {ln for ln in lines if len(ln) > 12 and not ln.startswith("#")}
