"""The instructor's bundle: what no public build contains.

    python -m editions.instructor book dist/instructor

Writes ``dist/instructor/answer_key.md``: per chapter, every prediction's answer and
explanation (from ``instructor/answers.json``, the key that ``tools/editions/seal.py`` seals into
the package) and every open question's model answer (from the chapters). ``make
instructor`` runs it after ``make assignments``, which puts the nbgrader source versions
(the instructor's notebooks, solutions inside) in ``dist/instructor/source/``; the otter
autograders go to ``dist/instructor/otter/``. The students' files are in
``dist/assignments/`` and the public site has none of these.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat

from .book import chapters
from . import assignments
from .paths import ROOT

KEY = ROOT / "instructor" / "answers.json"
PREDICTION = re.compile(r"checks\.check_prediction\(\s*[\"'](\w+)[\"']")


def _accepted(question: str) -> str:
    """`` (accepted within 0.05)`` for a numeric prediction with a stated tolerance, else ``""``."""
    from beforeqkv.checks import QUESTIONS
    tolerance = QUESTIONS.get(question, {}).get("tolerance")
    return "" if tolerance is None else f" (accepted within {tolerance:g})"


def _rows(path: Path, key: dict) -> list[str]:
    """The answer key lines of one chapter, in the order of its exercises."""
    source = assignments.source_version(nbformat.read(path, as_version=4))
    lines, number = [], None
    for cell in source.cells:
        meta = cell.metadata.get("exercise")
        if meta and "number" in meta:
            number = f"{meta['number']} · {meta['title']}"
        hw = cell.metadata.get("homework", {})
        m = PREDICTION.search(cell.source) if cell.cell_type == "code" else None
        if m and m.group(1) in key:
            entry = key[m.group(1)]
            where = f"Exercise {number}" if hw.get("exercise", "").replace(".", "").isdigit() else "In the text"
            lines.append(f"- **{where}** (`{m.group(1)}`): **{entry['answer']!r}**{_accepted(m.group(1))}. "
                         f"{entry['explanation']}")
        elif hw.get("kind") == "open" and cell.cell_type == "markdown":
            body = assignments.BLOCK.search(cell.source)
            text = (body.group(2) if body else cell.source).strip().replace("\n", " ")  # group 1 is the indent
            lines.append(f"- **Exercise {hw.get('exercise')}** (open, model answer): {text}")
    return lines


def render(book: Path) -> str:
    key = json.loads(KEY.read_text(encoding="utf-8"))
    parts = ["# Answer key (instructors only: do not publish)\n",
             "Predictions: the answer the check accepts, then the explanation a right answer shows. "
             "Open questions: the model answer (grade with the rubric of the teachers page). "
             "Coding exercises: the solutions are in `source/NN_*.ipynb` (nbgrader source versions).\n"]
    used = set()
    for path in chapters(book):
        rows = _rows(path, key)
        used |= {k for k in key if any(f"(`{k}`)" in r for r in rows)}
        parts += [f"## {path.stem}\n", *rows, ""]
    missing = sorted(set(key) - used)
    if missing:
        raise SystemExit(f"answers of no chapter's prediction cell: {missing}")
    return "\n".join(parts)


NBGRADER_CONFIG = """\
# nbgrader settings for Before Q, K, and V: copy this file into your course directory.
# The notebooks need the book's environment (torch, beforeqkv): run nbgrader where
# `import beforeqkv` works, or make the book's Python the "python3" kernel of nbgrader's
# environment (`make assignments` does so for .venv-homework):
#     .venv/bin/python -m ipykernel install --prefix <nbgrader's env> --name python3
# Without it the first cell tries to install the package at grading time and, offline,
# every check fails.
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "before-qkv"
c.ExecutePreprocessor.timeout = 600      # seconds per cell (nbgrader's default is 30)
c.ExecutePreprocessor.kernel_name = "python3"
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}
# Where release_assignment puts the notebooks and students' submit puts them back (nbgrader's
# default). It must exist and be writable by everyone: sudo mkdir -p it; sudo chmod 777 it.
c.Exchange.root = "/srv/nbgrader/exchange"

# Autograde never runs a submission in a kernel: the step below scores every check with
# `python -m beforeqkv.grade` (the kernel's Python), which runs each exercise's definitions in a
# throwaway process and computes the points from the data it returns (see beforeqkv.sandbox).
# A check cell gets an error output when its check fails: nbgrader then gives it 0 points.
ALLOW_PACKAGE = False  # True: an answer that calls the package's own implementation still scores
# The experiment below a prediction shows its answer once run: "participation" scores any answer in
# the question's form; "key" scores the answer in the source version (the instructor's notebook).
PREDICTIONS = "participation"


from nbconvert.preprocessors import ClearMetadataPreprocessor, Preprocessor
from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, IgnorePattern,
                                    LimitOutput, SaveAutoGrades)


class SandboxedChecks(Preprocessor):
    def __call__(self, nb, resources):  # always on (a Preprocessor is off unless enabled)
        return self.preprocess(nb, resources)

    def preprocess(self, nb, resources):
        import json
        import os
        import subprocess
        import tempfile

        import nbformat
        from jupyter_client.kernelspec import KernelSpecManager

        python = KernelSpecManager().get_kernel_spec("python3").argv[0]
        info = resources["nbgrader"]
        source = os.path.abspath(os.path.join("source", info["assignment"], info["notebook"] + ".ipynb"))
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, info["notebook"] + ".ipynb")
            nbformat.write(nb, path)
            run = subprocess.run([python, "-m", "beforeqkv.grade", path, "--source", source, "--json"]
                                 + (["--allow-package"] if ALLOW_PACKAGE else [])
                                 + ["--predictions", PREDICTIONS],
                                 capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if run.returncode != 0:
            raise RuntimeError("beforeqkv.grade failed: " + run.stderr[-3000:])
        rows = {r["id"]: r for r in json.loads(run.stdout.strip().splitlines()[-1])["rows"]}
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            cell.outputs, cell.execution_count = [], None
            row = rows.get(cell.metadata.get("nbgrader", {}).get("grade_id"))
            if row is None or row["kind"] == "open":
                continue
            if row["score"] == row["points"]:
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="passed\\n")]
            else:
                text = row.get("message") or row["status"]
                cell.outputs = [nbformat.v4.new_output("error", ename="CheckFailed", evalue=row["status"],
                                                       traceback=[text])]
        return nb, resources


# generate_assignment: a prediction's answer cell becomes the value `my_x = ...` its cell's
# metadata holds (nbgrader's own stub, `raise NotImplementedError()`, would stop Run All).
class PredictionStubs(Preprocessor):
    def __call__(self, nb, resources):  # always on (a Preprocessor is off unless enabled)
        return self.preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        stub = cell.metadata.get("homework", {}).get("stub")
        if stub and cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = stub
        return cell, resources


from nbgrader.converters import GenerateAssignment
from nbgrader.preprocessors import ClearSolutions

_steps = list(GenerateAssignment.class_traits()["preprocessors"].default())  # nbgrader's own list
_after = _steps.index(ClearSolutions) + 1
c.GenerateAssignment.preprocessors = _steps[:_after] + [PredictionStubs] + _steps[_after:]


# autograde first restores every locked cell from the gradebook and warns "Attribute 'checksum'
# for cell ... has changed!" when a submitted one differs. A test cell's hidden tests are never
# in the students' copy, so that warning would come for every test cell of every submission:
# HiddenTestsBack puts them back first where the rest of the cell is as released, so the
# warning is left for a cell the student edited (the cell is restored either way).
from nbgrader.api import MissingEntry
from nbgrader.converters import Autograde
from nbgrader.preprocessors import ClearHiddenTests, OverwriteCells


class HiddenTestsBack(OverwriteCells):
    def preprocess_cell(self, cell, resources, index):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id is not None:
            try:
                kept = self.gradebook.find_source_cell(grade_id, self.notebook_id, self.assignment_id)
            except MissingEntry:
                kept = None
            if kept is not None and kept.locked:
                import nbformat
                released = nbformat.NotebookNode(source=kept.source)
                ClearHiddenTests()._remove_hidden_test_region(released)
                if cell.source == released.source:
                    cell.source = kept.source
        return super().preprocess_cell(cell, resources, index)


_sanitize = list(Autograde.class_traits()["sanitize_preprocessors"].default())  # nbgrader's own list
c.Autograde.sanitize_preprocessors = [HiddenTestsBack if s is OverwriteCells else s for s in _sanitize]
c.Autograde.autograde_preprocessors = [SandboxedChecks, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
                                       SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
"""


def main(book: str = "book", out: str = "dist/instructor") -> int:
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "answer_key.md").write_text(render(Path(book)), encoding="utf-8")
    (folder / "nbgrader_config.py").write_text(NBGRADER_CONFIG, encoding="utf-8")
    print(f"wrote {folder}/answer_key.md and {folder}/nbgrader_config.py")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
