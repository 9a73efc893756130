"""Otter-grader scores computed where the student's code never runs.

Otter runs a submission in a kernel and reads the kernel's results back into its own process,
so a submission that patches Python there can talk otter's own tests round. The autograder that
``tools/editions/otter_assign.py`` builds names this plugin (``otter_config.json``)::

    plugins:
      - beforeqkv.otter_plugin.SandboxGrading:
          source: 03_red_connections-instructor.json    # in the zip's files/
          predictions: participation                    # or key (see beforeqkv.sandbox)
          questions: {ex3_1: ex3_1_check, ...}            # otter question -> grade id

* ``before_execution`` hands otter an empty notebook: no line of the submission runs in otter's
  kernel or is read back into otter's process;
* ``after_grading`` scores each question with :func:`beforeqkv.sandbox.grade_notebook` (the
  student's definitions in a throwaway process, the verdict from data) and writes that score and
  the checker's message into otter's results.

Manual questions (open questions) are left as otter has them.
"""
from __future__ import annotations

import os
from pathlib import Path

try:
    from otter.plugins import AbstractOtterPlugin
except ImportError:  # otter is only needed where otter grades
    AbstractOtterPlugin = object

__all__ = ["SandboxGrading"]


def _find(name: str, submission: str) -> Path:
    here = Path(submission).resolve().parent
    for folder in (here, here.parent / "source" / "files", Path("/autograder/source/files"), Path.cwd()):
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f"the instructor's notebook {name} is not in the autograder's files/")


def as_nbgrader(submission, source):
    """The otter submission with the grade ids of ``source`` (the nbgrader source version) on its
    answer cells: otter's answer cells (tag ``otter_answer_cell``) are the source's solution code
    cells, in order. Returns None when their number differs (cells were added or removed)."""
    import copy
    def answers(nb):
        return [c for c in nb.cells if c.cell_type == "code"
                and {"otter_answer_cell", "otter_assign_solution_cell"} & set(c.metadata.get("tags", []))]
    mine = answers(submission)
    keys = [c for c in source.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")]
    if len(mine) != len(keys):
        return None
    nb = copy.deepcopy(submission)
    for cell, key in zip(answers(nb), keys):
        cell.metadata["nbgrader"] = {"solution": True, "grade": False,
                                     "grade_id": key.metadata["nbgrader"]["grade_id"]}
    return nb


class SandboxGrading(AbstractOtterPlugin):
    """See the module docstring."""

    def before_execution(self, submission):
        import nbformat
        if isinstance(submission, str):  # a script submission
            return ""
        return nbformat.v4.new_notebook(metadata=submission.get("metadata", {}))

    def after_grading(self, results):
        import nbformat

        from . import sandbox
        from otter.test_files.abstract_test import TestCaseResult

        config = self.plugin_config or {}
        source = nbformat.read(_find(config["source"], self.submission_path), as_version=4)
        submission = as_nbgrader(nbformat.read(self.submission_path, as_version=4), source)
        os.environ.setdefault("BEFOREQKV_PROGRESS", "0")
        rows = {} if submission is None else {r["id"]: r for r in sandbox.grade_notebook(
            source, submission, timeout=float(config.get("timeout", 600)),
            allow_package=bool(config.get("allow_package", False)),
            predictions=config.get("predictions", "participation"))}
        for question, grade_id in config.get("questions", {}).items():
            test = results.results.get(question)
            if test is None:
                continue
            row = rows.get(grade_id) or {"score": 0, "points": 1, "status": "the notebook's answer cells were "
                                         "added or removed: grade it by hand"}
            passed = row["score"] == row["points"]
            message = "passed" if passed else (row.get("message") or row["status"])
            test.test_case_results = [TestCaseResult(case, None if passed else message, passed)
                                      for case in test.test_cases]
            test.update_score(test.possible if passed else 0)
