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
from .cells import clear_outputs, unfold
from .passes import cellwise, compose


def clear_answer_outputs(cell) -> None:
    """The outputs of a solution or a check cell go (a passed prediction's output explains the answer)."""
    if BEGIN in cell.source or "checks.check_" in cell.source:
        clear_outputs(cell)


def strip_solution_cell(cell) -> None:
    """A solution becomes its stub; its cell is no longer folded."""
    if BEGIN in cell.source:
        cell.source = strip_solutions(cell.source, cell.cell_type)
        unfold(cell)


def strip_model_answer_cell(cell) -> None:
    """An open question's model answer goes (removed, not folded)."""
    if cell.cell_type == "markdown":
        cell.source = strip_model_answers(cell.source)


_STRIP = (cellwise(strip_solution_cell), cellwise(strip_model_answer_cell))
STUDENT = compose(cellwise(clear_outputs), *_STRIP, name="student")                  # notebooks
STUDENT_SITE = compose(cellwise(clear_answer_outputs), *_STRIP, name="student_site")  # executed, for the site


def student_version(nb, keep_outputs: bool = False):
    """The student edition of ``nb`` (a new notebook); ``keep_outputs``: an executed
    notebook for the students' site, which keeps every output but the answers'."""
    return (STUDENT_SITE if keep_outputs else STUDENT)(nb)


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
