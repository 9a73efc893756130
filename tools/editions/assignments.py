"""Homework notebooks, made the way nbgrader makes them.

    python -m editions.assignments book _exec/book dist/assignments dist/instructor
    python -m editions.assignments book _exec_zh/book dist/assignments/zh dist/instructor/zh zh_CN

For every chapter ``book/NN_*.ipynb`` (the instructor's notebook, solutions inside
``### BEGIN/END SOLUTION``) this writes

* ``dist/instructor/source/NN_*.ipynb``: the nbgrader *source* version (never in the
  students' folder). Markdown is
  reader Markdown (no raw MyST, glued numbers from the executed run in ``_exec/book``);
  every exercise cell carries nbgrader metadata: solution cells (the functions, the
  predictions, an answer cell per open question holding its model answer), and the
  check cells as autograder tests with points. A course using nbgrader copies these
  into ``source/<assignment>/`` and runs ``nbgrader generate_assignment``.
* ``dist/assignments/NN_*.ipynb``: the *release* version a student opens, produced
  from the source with nbgrader's own preprocessors (LockCells, ClearSolutions,
  ClearOutput, CheckCellMetadata, ComputeChecksums, ClearHiddenTests,
  ClearMarkScheme): solution code becomes ``# YOUR CODE HERE`` +
  ``raise NotImplementedError()`` inside the function the check calls, a prediction
  becomes ``...``, an open question's model answer becomes an empty answer cell.

Each check cell ends with a hidden test block (removed from the release) that asserts
``grading.verify(...)`` with the check's own arguments: when nbgrader's autograder
restores the source's test cells, a wrong answer raises and loses its points whatever the
student's cells patched; in the student's own Run All the visible check only prints
(nbgrader's Validate runs it in graded mode, so it reports a wrong answer).
Only ``source_version`` is needed without nbgrader; ``release_version`` imports it.

With a language (``zh_CN``) the same is written from the Chinese reader Markdown
(``export_reader.translated``: the site's catalogs, a cell setting ``BEFOREQKV_LANG`` so
the checks' hints are Chinese): ``make assignments`` writes ``dist/assignments/zh/`` and
``dist/instructor/zh/source/``.
"""
from __future__ import annotations

import copy
import functools
import re
import sys
from pathlib import Path

import nbformat

from . import book, export_reader
from .solutions import BEGIN, BLOCK, DETAILS, END, HEADING, prediction_name
from .cells import clear_outputs, unfold
from .passes import cellwise, compose, pure, stable_ids
from .words import ENGLISH, Words

HIDDEN = "### BEGIN HIDDEN TESTS\nfrom beforeqkv.checks import grading\n{asserts}\n### END HIDDEN TESTS"


def hidden_tests(source: str) -> str:
    """The hidden test block for a check cell: one ``assert grading.verify(...)`` per
    ``checks.check_*(...)`` call, with the same arguments. ``verify`` runs the checker from
    a fresh copy in graded mode, so nothing the student's kernel patched or set counts."""
    import ast
    asserts = []
    for node in ast.walk(ast.parse(source)):
        f = getattr(node, "func", None)
        if (isinstance(node, ast.Call) and isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                and f.value.id == "checks" and f.attr.startswith("check_")):
            args = [ast.get_source_segment(source, a) for a in node.args]
            args += [f"{k.arg}={ast.get_source_segment(source, k.value)}" for k in node.keywords]
            asserts.append(f"assert grading.verify({', '.join([repr(f.attr)] + args)})")
    if not asserts:
        raise ValueError(f"a graded cell calls no checks.check_*: {source[:80]!r}")
    return HIDDEN.format(asserts="\n".join(asserts))


def with_hidden_tests(source: str) -> str:
    return source.rstrip("\n") + "\n" + hidden_tests(source)
POINTS = {"coding": 3, "prediction": 1, "open": 2}


def _nbgrader(cell, grade_id: str, solution: bool, grade: bool, points: int | None = None, locked=False):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution}
    if grade:
        meta["points"] = points
    cell.metadata["nbgrader"] = meta
    unfold(cell, outputs=True)


def _split_headings(nb):
    """One markdown cell per exercise heading (a summary cell may hold the first ones)."""
    cells = []
    for cell in nb.cells:
        starts = [m.start() for m in HEADING.finditer(cell.source)] if cell.cell_type == "markdown" else []
        if not starts:
            cells.append(cell)
            continue
        exercises = cell.metadata.get("exercises", {})
        starts += [m.start() for m in re.finditer(r"^## ", cell.source, re.M) if m.start() > starts[0]]
        bounds = sorted(set([0] + starts + [len(cell.source)]))
        for a, b in zip(bounds, bounds[1:]):
            if not cell.source[a:b].strip():
                continue
            part = nbformat.v4.new_markdown_cell(cell.source[a:b].strip("\n"))
            m = HEADING.match(part.source)
            if m and m.group(1) in exercises:
                part.metadata["exercise"] = dict(exercises[m.group(1)], number=m.group(1), title=m.group(2))
            cells.append(part)
    nb.cells = cells


def exercises(nb) -> list[dict]:
    """The gradable exercises of a source version: grade id, kind, points, number, metadata."""
    found, current = [], {}
    for cell in nb.cells:
        if "exercise" in cell.metadata:
            current = cell.metadata["exercise"]
        nbg, hw = cell.metadata.get("nbgrader", {}), cell.metadata.get("homework", {})
        if nbg.get("grade"):
            found.append({"grade_id": nbg["grade_id"], "points": nbg["points"], "kind": hw.get("kind", ""),
                          "number": hw.get("exercise", ""), **{k: v for k, v in current.items() if k != "kind"}})
    return found


def source_version(nb, values: dict | None = None, bib: dict | None = None,
                   chapter: int | None = None, w: Words = ENGLISH):
    """The nbgrader source version of an instructor notebook (see the module docstring), a
    new notebook; ``values``: the glue values, for the reader's Markdown (the reader
    edition's pass, :func:`export_reader.markdown_pass`); ``w``: the words of the edition's
    language (``Words("zh_CN")``)."""
    markdown = [export_reader.markdown_pass(values, bib or {}, chapter, w)] if values is not None else []
    return compose(*markdown, pure(_split_headings), pure(functools.partial(_graded, w=w)),
                   stable_ids("cell"), cellwise(clear_outputs), name="nbgrader")(nb)


def _graded(nb, w: Words = ENGLISH) -> None:
    """Solutions, predictions and open answers as nbgrader cells, each check a locked graded cell."""
    cells, number, i = [], None, 0
    while i < len(nb.cells):
        cell = nb.cells[i]
        i += 1
        if cell.cell_type == "markdown":
            m = HEADING.match(cell.source)
            if m:
                number = m.group(1)
            answer = DETAILS.search(cell.source)
            cells.append(cell)
            if answer and number:
                cell.source = DETAILS.sub("", cell.source).rstrip()
                cell.metadata.setdefault("exercise", {})["kind"] = "open"
                gid = f"ex{number.replace('.', '_')}_answer"
                ans = nbformat.v4.new_markdown_cell(
                    f"{BEGIN}\n{answer.group(1).strip()}\n{END}")
                _nbgrader(ans, gid, solution=True, grade=True, points=POINTS["open"])
                ans.metadata["homework"] = {"kind": "open", "exercise": number}
                cells.append(ans)
            continue
        if BEGIN not in cell.source:
            cells.append(cell)
            continue
        pred = re.search(r"checks\.check_prediction\(\s*[\"'](\w+)[\"']", cell.source)
        if pred:  # answer and check share a cell in the book: split them
            key = pred.group(1)
            gid = f"ex{number.replace('.', '_')}" if number else key
            end = BLOCK.search(cell.source).end()
            answer = nbformat.v4.new_code_cell(cell.source[:end].rstrip("\n"))
            test = nbformat.v4.new_code_cell(with_hidden_tests(cell.source[end:].strip("\n")))
            _nbgrader(answer, f"{gid}_prediction", solution=True, grade=False)
            # what the student gets: a value, `name = ...`, which never raises (nbgrader's own
            # stub would be `raise NotImplementedError()`); the shipped nbgrader_config.py's
            # PredictionStubs writes it in generate_assignment, release_version below does too
            answer.metadata["homework"] = {
                "kind": "prediction",
                "stub": f"{prediction_name(answer.source)} = ...  # {w('your answer')}"}
            _nbgrader(test, f"{gid}_check", solution=False, grade=True, points=POINTS["prediction"], locked=True)
            test.metadata["homework"] = {"kind": "prediction", "exercise": number or key}
            cells += [answer, test]
            continue
        fn = re.search(r"def (\w+)\(", cell.source)
        gid = f"ex{number.replace('.', '_')}" if number else (fn.group(1) if fn else f"cell{i}")
        _nbgrader(cell, f"{gid}_code", solution=True, grade=False)
        cells.append(cell)
        while i < len(nb.cells) and nb.cells[i].cell_type == "code" and "checks.check_" not in nb.cells[i].source:
            cells.append(nb.cells[i])
            i += 1
        if i < len(nb.cells) and "checks.check_" in nb.cells[i].source:
            test = nb.cells[i]
            i += 1
            test.source = with_hidden_tests(test.source)
            _nbgrader(test, f"{gid}_check", solution=False, grade=True, points=POINTS["coding"], locked=True)
            test.metadata["homework"] = {"kind": "coding", "exercise": number or gid}
            cells.append(test)
    nb.cells = cells


def release_version(source):
    """What a student opens: nbgrader's preprocessors applied to the source version."""
    from nbgrader.preprocessors import (CheckCellMetadata, ClearHiddenTests, ClearMarkScheme, ClearOutput,
                                        ClearSolutions, ComputeChecksums, LockCells)
    nb = copy.deepcopy(source)
    resources = {}
    steps = [LockCells(), ClearSolutions(enforce_metadata=False), ClearOutput(), CheckCellMetadata(),
             ComputeChecksums(), ClearHiddenTests(), ClearMarkScheme()]
    for step in steps:
        nb, resources = step.preprocess(nb, resources)
    for cell in nb.cells:  # a prediction is a value: `name = ...`, which never raises
        stub = cell.metadata.get("homework", {}).get("stub")
        if stub and cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = stub
    nb, resources = ComputeChecksums().preprocess(nb, resources)
    return CheckCellMetadata().preprocess(nb, resources)[0]


def main(src: str = "book", executed: str = "_exec/book", dst: str = "dist/assignments",
         instructor: str = "dist/instructor", lang: str = "en") -> int:
    """Students' notebooks into ``dst``; the nbgrader source versions (solutions inside)
    into ``instructor/source``: two folders, so zipping the students' one hands out no
    solution."""
    out, keys = Path(dst), Path(instructor) / "source"
    if out.resolve() in keys.resolve().parents or keys.resolve() == out.resolve():
        raise SystemExit(f"{keys} must not be inside the students' folder {out}")
    out.mkdir(parents=True, exist_ok=True)
    keys.mkdir(parents=True, exist_ok=True)
    stale = out / "source"  # where earlier versions put the source versions
    if stale.is_dir():
        import shutil
        shutil.rmtree(stale)
    bib = export_reader.bib_entries(Path(src) / "references.bib")
    words = Words(lang)
    for path in book.chapters(src):
        run = Path(executed) / path.name
        if not run.exists():
            print(f"{run} is missing: run `make execute` first", file=sys.stderr)
            return 1
        nb = nbformat.read(path, as_version=4)
        if lang != "en":
            nb = export_reader.translated(nb, path, lang)
        try:
            source = source_version(nb, export_reader.glue_values(run), bib, book.chapter_number(path), words)
        except export_reader.MissingGlue as err:
            print(f"{path.name}: the value of glue {err.args[0]!r} is missing in {run}: that execution did not "
                  "finish or is stale; run `make execute` (then `make assignments` again)", file=sys.stderr)
            return 1
        nbformat.write(source, keys / path.name)
        nbformat.write(release_version(source), out / path.name)
        n = len(exercises(source))
        print(f"{path.name}: {n} graded cells, {sum(e['points'] for e in exercises(source))} points")
    print(f"wrote the students' notebooks to {out}/ and the instructor's (nbgrader source) to {keys}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:6]))
