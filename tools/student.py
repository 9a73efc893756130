"""Make the homework (student) version of every chapter.

    python tools/student.py book dist/student

Inside code cells, everything between ``### BEGIN SOLUTION`` and ``### END SOLUTION``
becomes ``# YOUR CODE HERE`` + ``raise NotImplementedError()`` (nbgrader's convention,
so the same notebooks also work with nbgrader). In markdown cells the block becomes
"YOUR ANSWER HERE". Outputs are cleared. The generated notebooks go to ``dist/``.
"""
import re
import sys
from pathlib import Path

import nbformat

BLOCK = re.compile(r"^([ \t]*)### BEGIN SOLUTION[^\n]*\n.*?^[ \t]*### END SOLUTION[^\n]*$", re.S | re.M)


def strip_solutions(source: str, cell_type: str) -> str:
    if cell_type == "code":
        return BLOCK.sub(lambda m: f"{m.group(1)}# YOUR CODE HERE\n{m.group(1)}raise NotImplementedError()", source)
    return BLOCK.sub(lambda m: f"{m.group(1)}YOUR ANSWER HERE", source)


def student_version(nb):
    for cell in nb.cells:
        if "### BEGIN SOLUTION" in cell.source:
            cell.source = strip_solutions(cell.source, cell.cell_type)
            tags = [t for t in cell.metadata.get("tags", []) if t not in ("hide-cell", "hide-input")]
            cell.metadata["tags"] = tags
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def main(src: str, dst: str) -> int:
    out = Path(dst)
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for path in sorted(Path(src).glob("[0-9]*.ipynb")):
        nb = student_version(nbformat.read(path, as_version=4))
        nbformat.write(nb, out / path.name)
        n += 1
    print(f"wrote {n} student notebooks to {out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
