"""Passes: what an edition does to a notebook, as pure functions composed per edition.

A *pass* takes a notebook and returns a new one; it never changes the notebook it is given.
An *edition* is a sequence of passes applied in order (:func:`compose`), so two editions that
do the same thing share the same pass, and an edition's recipe reads as its list::

    STUDENT = compose(cellwise(clear_outputs), cellwise(strip_solution_cell),
                      cellwise(strip_model_answer_cell))

The editions and their recipes: ``site_solutions.site_version`` (the public site),
``student.STUDENT`` and ``STUDENT_SITE``, ``export_reader.reader_version`` (the reader
notebooks) and ``export_reader.translation`` (another language), ``assignments.source_version``
(nbgrader; it shares the reader's Markdown pass) and ``otter_assign.otter_source`` (otter,
from nbgrader's source version).

:func:`pure` and :func:`cellwise` make a pass of a step that changes a notebook, or one
cell, in place: the step works on a copy. ``tests/test_passes.py`` holds every edition to
leaving its input as it was.
"""
from __future__ import annotations

import copy
import functools
from typing import Callable

__all__ = ["Pass", "pure", "cellwise", "compose", "stable_ids"]

Pass = Callable[[object], object]       # notebook -> a new notebook


def pure(step: Callable) -> Pass:
    """A pass from ``step(nb)``, which may change ``nb`` in place and returns a notebook or None."""
    @functools.wraps(step)
    def run(nb):
        nb = copy.deepcopy(nb)
        out = step(nb)
        return nb if out is None else out
    return run


def cellwise(step: Callable) -> Pass:
    """A pass from ``step(cell)``, which changes one cell in place: every cell of a copy."""
    @functools.wraps(step)
    def run(nb):
        nb = copy.deepcopy(nb)
        for cell in nb.cells:
            step(cell)
        return nb
    return run


def compose(*passes: Pass, name: str | None = None) -> Pass:
    """The edition that applies ``passes`` in order; ``edition.passes`` lists them."""
    def edition(nb):
        for p in passes:
            nb = p(nb)
        return nb
    edition.passes = passes
    edition.__name__ = name or "edition"
    return edition


def stable_ids(prefix: str, nbformat_minor: int | None = 5) -> Pass:
    """Cell ids ``prefix-000``, ``prefix-001``, …, so that writing an edition twice gives the
    same file; ``nbformat_minor`` sets the version that has cell ids (4.5), None keeps it."""
    def ids(nb):
        for n, cell in enumerate(nb.cells):
            cell["id"] = f"{prefix}-{n:03d}"
        if nbformat_minor is not None:
            nb.nbformat, nb.nbformat_minor = 4, nbformat_minor
    ids.__name__ = f"stable_ids_{prefix}"
    return pure(ids)
