"""The public site's view of the solutions: a transform of the executed copy `make site` builds.

    python -m editions.site_solutions _exec_site/book     # in place, before jupyter-book build

The chapters keep their solutions on the site, folded (tag ``hide-cell``). This step, run
on a scratch copy of the executed notebooks (never on ``book/`` or ``_exec/``):

* drops the ``### BEGIN SOLUTION`` / ``### END SOLUTION`` lines of a coding solution and
  labels its fold "Show solution" / "Hide solution" (myst-nb's per-cell
  ``metadata.mystnb.code_prompt_show`` / ``code_prompt_hide``);
* turns a prediction (one ``name = value`` line between the markers) into
  ``name = ...  # your prediction`` and removes the output of that cell, whose
  ``checks.check_prediction(...)`` would say "right." and why: the experiment after it
  shows the answer, the answer key stays private.

The solution grammar is ``tools/editions/solutions.py``'s, as in every tool; ``make book-students``
(tools/editions/student.py) removes the solutions instead.
"""
from __future__ import annotations

import sys

import nbformat

from .book import chapters
from .solutions import BLOCK, is_prediction, strip_solutions
from .cells import clear_outputs
from .passes import cellwise, compose

SHOW, HIDE = "Show solution", "Hide solution"
PREDICTION_SHOW, PREDICTION_HIDE = "Show the prediction cell", "Hide the prediction cell"


def _prompts(cell, show: str, hide: str) -> None:
    mystnb = cell.metadata.setdefault("mystnb", {})
    mystnb["code_prompt_show"], mystnb["code_prompt_hide"] = show, hide


def site_cell(cell) -> None:
    """One code cell as the public site shows it (see the module docstring)."""
    blocks = list(BLOCK.finditer(cell.source))
    if cell.cell_type != "code" or not blocks:
        return
    if any(is_prediction(m.group(2), m.group(1)) for m in blocks):
        cell.source = strip_solutions(cell.source, "code", comment="your prediction")
        clear_outputs(cell)
        _prompts(cell, PREDICTION_SHOW, PREDICTION_HIDE)
        return
    cell.source = BLOCK.sub(lambda m: m.group(2).rstrip("\n"), cell.source)
    _prompts(cell, SHOW, HIDE)


site_version = compose(cellwise(site_cell), name="site_version")   # the site's one pass


def main(folder: str) -> int:
    paths = chapters(folder)
    if not paths:
        print(f"no chapters in {folder}/", file=sys.stderr)
        return 1
    for path in paths:
        nbformat.write(site_version(nbformat.read(path, as_version=4)), path)
    print(f"solutions folded as 'Show solution', predictions without answers: "
          f"{len(paths)} notebooks in {folder}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:2]))
