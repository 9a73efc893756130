"""The book's one solution grammar, used by every tool that reads or hides answers.

* A **solution block**: the lines between ``### BEGIN SOLUTION`` and ``### END SOLUTION``
  (nbgrader's markers, so nbgrader's ``ClearSolutions`` reads the same blocks).
* A **prediction**: a solution block holding one unindented ``name = value`` line; hidden,
  it becomes ``name = ...``, which never stops Run All.
* A **model answer**: ``<details><summary>Model answer</summary> ... </details>`` in Markdown.
* An **exercise heading**: ``### Exercise 5.2 · Title`` (``### 练习 5.2 · …`` in Chinese), the
  start of an exercise for every edition that cuts a chapter into exercises.

:mod:`editions.student` (students' site), :mod:`editions.export_reader` (reader notebooks),
:mod:`editions.site_solutions` (the public site), :mod:`editions.assignments` (nbgrader),
:mod:`editions.otter_assign` (otter) and :mod:`editions.marks` all import it from here.
"""
from __future__ import annotations

import re

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
# group 1: the indent of BEGIN; group 2: the body (ends with its newline)
BLOCK = re.compile(r"^([ \t]*)### BEGIN SOLUTION[^\n]*\n(.*?)^[ \t]*### END SOLUTION[^\n]*$", re.S | re.M)
# one marker line; group 1: its indent, group 2: BEGIN or END
MARKER = re.compile(r"^([ \t]*)### (BEGIN|END) SOLUTION[^\n]*$", re.M)
ASSIGNMENT = re.compile(r"^[ \t]*(\w+)\s*=\s*[^\n]+\n?$")
HEADING = re.compile(r"^### (?:Exercise|练习) (\d+\.\d+) · (.*)$", re.M)  # English, Chinese
DETAILS = re.compile(  # group 1: the model answer
    r"\n*<details>\s*<summary>\s*Model answer\s*</summary>\s*(.*?)</details>[ \t]*", re.S)


def is_prediction(body: str, indent: str = "") -> bool:
    """True for a prediction's solution block: one unindented ``name = value`` line."""
    return bool(ASSIGNMENT.match(body)) and not indent and "\n" not in body.strip()


def prediction_name(source: str) -> str | None:
    """The variable of the first prediction in a cell (``my_x`` of ``my_x = 3``), else None."""
    for m in BLOCK.finditer(source):
        if is_prediction(m.group(2), m.group(1)):
            return ASSIGNMENT.match(m.group(2)).group(1)
    return None


def strip_solutions(source: str, cell_type: str, comment: str = "your answer") -> str:
    """Every solution block replaced: code by nbgrader's stub (``# YOUR CODE HERE`` +
    ``raise NotImplementedError()``), a prediction by ``name = ...``, Markdown by
    ``YOUR ANSWER HERE``."""
    def stub(m):
        indent, body = m.group(1), m.group(2)
        if cell_type != "code":
            return f"{indent}YOUR ANSWER HERE"
        if is_prediction(body, indent):
            return f"{ASSIGNMENT.match(body).group(1)} = ...  # {comment}"
        return f"{indent}# YOUR CODE HERE\n{indent}raise NotImplementedError()"
    return BLOCK.sub(stub, source)


def strip_model_answers(source: str) -> str:
    return DETAILS.sub("", source)
