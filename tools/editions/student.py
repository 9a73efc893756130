"""Student versions of the chapters, without solutions or model answers.

    python -m editions.student book dist/student      # notebooks, outputs cleared
    python -m editions.student --site _exec_students/book   # executed notebooks, in place,
                                                         # for `make book-students`

Inside code cells, everything between ``### BEGIN SOLUTION`` and ``### END SOLUTION``
becomes ``# YOUR CODE HERE`` + ``raise NotImplementedError()`` (nbgrader's convention),
except a prediction (``name = value``), which becomes ``name = ...``: the check after it
then asks for an answer instead of stopping Run All. Open questions lose their
``<details>`` model answer (removed, not collapsed). The outputs of solution and check
cells are removed (a passed prediction's output explains the answer). For the graded
assignments with nbgrader metadata and reader Markdown, see ``tools/editions/assignments.py``.
"""
import sys
from pathlib import Path

import nbformat

from .book import chapters
from .solutions import (BEGIN, BLOCK, DETAILS, is_prediction, strip_model_answers,  # noqa: F401
                       strip_solutions)
from .cells import clear_outputs


def student_version(nb, keep_outputs: bool = False):
    for cell in nb.cells:
        had_solution = BEGIN in cell.source
        if had_solution:
            cell.source = strip_solutions(cell.source, cell.cell_type)
            tags = [t for t in cell.metadata.get("tags", []) if t not in ("hide-cell", "hide-input")]
            cell.metadata["tags"] = tags
        if cell.cell_type == "markdown":
            cell.source = strip_model_answers(cell.source)
        elif not keep_outputs or had_solution or "checks.check_" in cell.source:
            clear_outputs(cell)
    return nb


def main(src: str, dst: str) -> int:
    out = Path(dst)
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for path in chapters(src):
        nb = student_version(nbformat.read(path, as_version=4))
        nbformat.write(nb, out / path.name)
        n += 1
    print(f"wrote {n} student notebooks to {out}/")
    return 0


def site(folder: str) -> int:
    paths = chapters(folder)
    for path in paths:
        nbformat.write(student_version(nbformat.read(path, as_version=4), keep_outputs=True), path)
    print(f"removed solutions and model answers from {len(paths)} executed notebooks in {folder}/")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--site"]:
        sys.exit(site(sys.argv[2]))
    sys.exit(main(*sys.argv[1:3]))
