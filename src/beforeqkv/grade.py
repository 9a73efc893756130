"""Grade a homework notebook without nbgrader: run it, score every check.

    python -m beforeqkv.grade SUBMISSION.ipynb [MORE.ipynb ...] [--source DIR_OR_FILE] [--timeout 600]

Like nbgrader's autograder, the graded notebook is the instructor's version (``--source``:
a notebook, or a folder holding one of the same name; by default
``dist/instructor/source/``, written by ``make assignments``) with only the student's
answer cells (nbgrader ``solution`` cells, matched by grade id) taken from the
submission. Everything else comes from the instructor's version: the test cells with
their hidden tests, the points and the prose, so a student who edits a test cell or its
metadata changes nothing. Each hidden test asserts ``checks.grading.verify(...)``, which
runs the checker from a fresh copy in graded mode, so patching a checker or the check
mode in an answer cell, or setting ``BEFOREQKV_GRADING``, changes nothing either.

The notebook runs top to bottom in a fresh kernel with ``BEFOREQKV_GRADING=1``; a failed
check raises (with a message that never gives the answer) and the run goes on past it.
A test cell scores its points when it runs without error. Open questions are listed for
grading by hand (0 points until a person grades them).
"""
from __future__ import annotations

import argparse
import copy
import os
import sys
from pathlib import Path

import nbformat

UNANSWERED = ("YOUR ANSWER HERE", "")


def _tests(nb) -> list[tuple[int, dict]]:
    """(cell index, info) for every graded cell (the merged notebook's: the instructor's)."""
    tests = []
    for i, cell in enumerate(nb.cells):
        nbg = cell.metadata.get("nbgrader", {})
        if nbg.get("grade"):
            hw = cell.metadata.get("homework", {})
            tests.append((i, {"id": nbg["grade_id"], "points": nbg.get("points", 1),
                              "kind": hw.get("kind", "open" if cell.cell_type == "markdown" else "check"),
                              "exercise": hw.get("exercise", nbg["grade_id"])}))
    return tests


SOURCE = Path("dist") / "instructor" / "source"


def source_for(submission: Path, source: Path | None = None) -> Path:
    """The instructor's version of ``submission``: ``source`` itself, or the notebook of the
    same name in the folder ``source`` (default ``dist/instructor/source``)."""
    source = SOURCE if source is None else source
    path = source / submission.name if source.is_dir() else source
    if not path.is_file():
        raise FileNotFoundError(f"no instructor version for {submission.name} at {path}: run "
                                "`make assignments` or pass --source (a notebook or a folder)")
    return path


def merge(source, submission):
    """The instructor's notebook with the student's answer cells (nbgrader solution cells,
    by grade id); an answer the submission lacks stays empty."""
    answers = {}
    for cell in submission.cells:
        nbg = cell.metadata.get("nbgrader", {})
        if nbg.get("solution") and nbg.get("grade_id"):
            answers.setdefault(nbg["grade_id"], cell)
    merged = copy.deepcopy(source)
    for cell in merged.cells:
        nbg = cell.metadata.get("nbgrader", {})
        if nbg.get("solution"):
            given = answers.get(nbg["grade_id"])
            cell.source = given.source if given is not None and given.cell_type == cell.cell_type else ""
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return merged


def execute(path: Path, timeout: int = 600, source: Path | None = None):
    """The merged notebook (see :func:`merge`) after a graded run (errors recorded in the
    cells, never raised). ``source``: the instructor's notebook or its folder."""
    from nbclient import NotebookClient

    nb = merge(nbformat.read(source_for(path, source), as_version=4), nbformat.read(path, as_version=4))
    before = os.environ.get("BEFOREQKV_GRADING")
    os.environ["BEFOREQKV_GRADING"] = "1"  # the kernel inherits it
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        if before is None:
            os.environ.pop("BEFOREQKV_GRADING", None)
        else:
            os.environ["BEFOREQKV_GRADING"] = before
    return nb


def score(nb) -> list[dict]:
    """One row per graded cell: exercise, kind, points, score, status."""
    rows = []
    for i, info in _tests(nb):
        cell = nb.cells[i]
        if cell.cell_type == "markdown":
            answered = cell.source.strip() not in UNANSWERED
            rows.append(dict(info, score=0, status="grade by hand" if answered else "unanswered"))
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if errors:
            first = (errors[0].get("evalue") or errors[0].get("ename", "error")).splitlines()
            rows.append(dict(info, score=0, status=(first[0] if first else errors[0]["ename"])[:70]))
        else:
            rows.append(dict(info, score=info["points"], status="passed"))
    return rows


def table(rows: list[dict], title: str = "") -> str:
    auto = [r for r in rows if r["kind"] != "open"]
    lines = [title] if title else []
    lines.append(f"{'exercise':<22} {'kind':<10} {'score':>7}  status")
    for r in rows:
        lines.append(f"{str(r['exercise']):<22} {r['kind']:<10} {r['score']:>3}/{r['points']:<3}  {r['status']}")
    got, total = sum(r["score"] for r in auto), sum(r["points"] for r in auto)
    by_hand = sum(r["points"] for r in rows if r["kind"] == "open")
    lines.append(f"{'checked automatically':<33} {got:>3}/{total:<3}"
                 + (f"  (+ {by_hand} points of open questions to grade by hand)" if by_hand else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m beforeqkv.grade", description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    parser.add_argument("--source", type=Path, default=None,
                        help="the instructor's notebook, or its folder (default: dist/instructor/source)")
    args = parser.parse_args(argv)
    for path in args.notebooks:
        if not path.exists():
            parser.error(f"no such notebook: {path}")
        try:
            source_for(path, args.source)
        except FileNotFoundError as err:
            parser.error(str(err))
        print(table(score(execute(path, args.timeout, args.source)), title=f"== {path}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
