"""Grade a homework notebook without nbgrader: run it, score every check.

    python -m beforeqkv.grade SUBMISSION.ipynb [MORE.ipynb ...] [--timeout 600]

The notebook runs top to bottom in a fresh kernel with ``BEFOREQKV_GRADING=1``, so
every failed check raises (with a message that never gives the answer) and the run
goes on past it. A check cell scores its points when it runs without error. The
cells are found from their nbgrader metadata (``make assignments`` writes it); in a
notebook without it, every cell calling ``checks.check_*`` is worth one point. Open
questions are listed for grading by hand (0 points until a person grades them).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import nbformat

UNANSWERED = ("YOUR ANSWER HERE", "")


def _tests(nb) -> list[tuple[int, dict]]:
    """(cell index, info) for every graded cell."""
    tests = []
    for i, cell in enumerate(nb.cells):
        nbg = cell.metadata.get("nbgrader", {})
        if nbg.get("grade"):
            hw = cell.metadata.get("homework", {})
            tests.append((i, {"id": nbg["grade_id"], "points": nbg.get("points", 1),
                              "kind": hw.get("kind", "open" if cell.cell_type == "markdown" else "check"),
                              "exercise": hw.get("exercise", nbg["grade_id"])}))
    if tests:
        return tests
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and "checks.check_" in cell.source:
            tests.append((i, {"id": f"cell {i}", "points": 1, "kind": "check", "exercise": f"cell {i}"}))
    return tests


def execute(path: Path, timeout: int = 600):
    """The notebook after a graded run (errors recorded in the cells, never raised)."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
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
    args = parser.parse_args(argv)
    for path in args.notebooks:
        if not path.exists():
            parser.error(f"no such notebook: {path}")
        print(table(score(execute(path, args.timeout)), title=f"== {path}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
