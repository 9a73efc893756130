"""No answer before its question: a predict-then-run question is checked before the
chapter glues, quotes or asserts the value that answers it.

Each question names the glued values that give its answer away (``register_question(...,
reveals=...)``); in the chapter, none of them may be glued (``glue("name", ...)``), quoted
in the prose (a ``{glue:...}`name``` role) or asserted before the cell that calls
``checks.check_prediction("key", ...)``.
"""
import re
from pathlib import Path

import nbformat
import pytest

from beforeqkv import checks
from beforeqkv.checks import QUESTIONS

BOOK = Path(__file__).resolve().parents[1] / "book"
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))
CHECK = re.compile(r"check_prediction\(\s*['\"]([\w.-]+)['\"]")


def _mentions(cell, name: str) -> bool:
    if cell.cell_type == "markdown":
        return re.search(r"\{glue(?::\w+)?\}`" + re.escape(name) + r"(?:[:`])", cell.source) is not None
    return re.search(r"glue\(\s*['\"]" + re.escape(name) + r"['\"]", cell.source) is not None


def _questions(nb):
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            for key in CHECK.findall(cell.source):
                yield i, key


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_glued_answer_before_its_prediction_is_checked(path):
    nb = nbformat.read(path, as_version=4)
    asked = list(_questions(nb))
    for i, key in asked:
        assert key in QUESTIONS, f"{path.name}: check_prediction({key!r}) names no registered question"
        reveals = QUESTIONS[key]["reveals"]
        assert reveals, (f"{path.name}: question {key!r} names no value that reveals its answer "
                         "(register_question(..., reveals=[...]); glue that value after the check)")
        for name in reveals:
            uses = [j for j, cell in enumerate(nb.cells) if _mentions(cell, name)]
            assert uses, f"{path.name}: {key!r} reveals {name!r}, which the chapter never glues"
            early = [j for j in uses if j < i]
            assert not early, (f"{path.name}: {name!r} (the answer to {key!r}) appears in cell(s) "
                               f"{early}, before the check in cell {i}")


def test_the_test_catches_an_answer_given_first():
    checks.register_question("_t_answer_first", digits=0, reveals=["_t_value"])
    try:
        cells = [nbformat.v4.new_markdown_cell("It is {glue:text}`_t_value:.0f`."),
                 nbformat.v4.new_code_cell('checks.check_prediction("_t_answer_first", p)')]
        nb = nbformat.v4.new_notebook(cells=cells)
        (i, key), = _questions(nb)
        assert _mentions(nb.cells[0], "_t_value") and 0 < i
    finally:
        QUESTIONS.pop("_t_answer_first", None)
