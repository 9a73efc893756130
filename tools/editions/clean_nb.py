"""Strip outputs and noise from notebooks so they are committed clean.

    python -m editions.clean_nb book/*.ipynb

Removes outputs, execution counts, widget state and editor metadata; keeps cell tags, a
figure's `mystnb` alt text and caption, exercise metadata and the per-notebook execution
timeout; sets the python3 kernelspec.
"""
import sys

import nbformat
from .cells import clear_outputs

KEEP_NB_META = {"kernelspec", "language_info", "execution"}
# mystnb: a figure's alt text and caption; exercises: difficulty, time, exam (tools/editions/teachers.py)
KEEP_CELL_META = {"tags", "mystnb", "exercises"}


def clean(path: str) -> bool:
    nb = nbformat.read(path, as_version=4)
    before = nbformat.writes(nb)
    nb.metadata = {k: v for k, v in nb.metadata.items() if k in KEEP_NB_META}
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    for cell in nb.cells:
        cell.metadata = {k: v for k, v in cell.metadata.items() if k in KEEP_CELL_META and v}
        clear_outputs(cell)
        cell.pop("attachments", None) if cell.cell_type != "markdown" else None
        cell.pop("id", None)
    nb.nbformat, nb.nbformat_minor = 4, 4
    after = nbformat.writes(nb)
    if after != before:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(after)
        return True
    return False


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(("cleaned " if clean(p) else "clean   ") + p)
