"""Grade homework notebooks without nbgrader: every check scored where the student's code never runs.

    python -m beforeqkv.grade SUBMISSION.ipynb [MORE.ipynb ...] [--source DIR_OR_FILE] [--timeout 600]
                              [--allow-package] [--predictions participation|key] [--json]

The instructor's version (``--source``: a notebook, or a folder holding one of the same name; by
default ``dist/instructor/source/``, written by ``make assignments``) says what is graded: its check
cells, their hidden tests and points. From the submission only the answer cells are read (nbgrader
``solution`` cells, matched by grade id), so editing a test cell or its metadata changes nothing.

Each check is scored by :mod:`beforeqkv.sandbox`: the student's definitions for that exercise (not
their other top-level statements) run in a throwaway process, which returns only data; the
comparison and the points are computed in this process. Patching the checkers, the check mode or
Python's import machinery, writing files, exiting the process or installing exception hooks in an
answer cell therefore changes no other exercise's score and no other submission's. An answer that
calls the package's own implementation is flagged and scores 0 (``--allow-package`` scores it).
A prediction scores when it is answered in its question's form (``--predictions participation``, the
default: the experiment below the question shows the answer once run); ``--predictions key`` compares
it with the answer in the instructor's version.
Open questions are listed for grading by hand (0 points until a person grades them).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import nbformat

from .sandbox import PREDICTIONS

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


def grade(path: Path, source: Path | None = None, timeout: float = 600, allow_package: bool = False,
          python: str | None = None, predictions: str = "participation") -> list[dict]:
    """One row per graded cell (exercise, kind, points, score, status) of the submission ``path``.

    Checks are scored by :mod:`beforeqkv.sandbox`: the student's definitions run in a throwaway
    process, the verdict is computed here from the data it returns. Open questions are listed
    for grading by hand (0 points until a person grades them)."""
    from . import sandbox
    src = nbformat.read(source_for(path, source), as_version=4)
    sub = nbformat.read(path, as_version=4)
    checked = {r["id"]: r for r in sandbox.grade_notebook(src, sub, timeout=timeout, allow_package=allow_package,
                                                           python=python, predictions=predictions)}
    given = {c.metadata["nbgrader"]["grade_id"]: c.source for c in sub.cells
             if c.metadata.get("nbgrader", {}).get("grade_id") and c.metadata["nbgrader"].get("solution")}
    rows = []
    for __, info in _tests(src):
        if info["id"] in checked:
            rows.append(dict(info, **{k: v for k, v in checked[info["id"]].items() if k not in info}))
            rows[-1]["score"], rows[-1]["status"] = checked[info["id"]]["score"], checked[info["id"]]["status"]
        else:  # an open question: its answer cell is the graded cell
            answered = given.get(info["id"], "").strip() not in UNANSWERED
            rows.append(dict(info, score=0, status="grade by hand" if answered else "unanswered"))
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
    parser.add_argument("--timeout", type=int, default=600, help="seconds per exercise")
    parser.add_argument("--source", type=Path, default=None,
                        help="the instructor's notebook, or its folder (default: dist/instructor/source)")
    parser.add_argument("--allow-package", action="store_true",
                        help="score answers that call the package's own implementation (flagged either way)")
    parser.add_argument("--predictions", choices=PREDICTIONS, default="participation",
                        help="participation (default): a prediction scores when answered in its question's form; "
                             "key: when it is the answer in the instructor's version")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON (one list per notebook)")
    args = parser.parse_args(argv)
    for path in args.notebooks:
        if not path.exists():
            parser.error(f"no such notebook: {path}")
        try:
            source_for(path, args.source)
        except FileNotFoundError as err:
            parser.error(str(err))
    for path in args.notebooks:
        rows = grade(path, args.source, args.timeout, args.allow_package, predictions=args.predictions)
        if args.json:
            print(json.dumps({"notebook": str(path), "rows": rows}))
        else:
            print(table(rows, title=f"== {path}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
