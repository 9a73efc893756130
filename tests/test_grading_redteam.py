"""A student who cheats: each trick is a submission, graded, and it scores no more than the same
notebook without the trick (``beforeqkv.grade`` and ``beforeqkv.sandbox``; nbgrader's autograde
runs the same grader, tested in ``test_homework.py``).

The notebooks are the nbgrader source versions of chapters 3 and 8 (``tools/editions/assignments.py``, with
stand-in glued numbers): the instructor's answers (full marks) and the same notebook with every
answer emptied as nbgrader's release empties it (0 points).
"""
import copy
import re

import nbformat
import pytest

from _book import BOOK

from editions import assignments
from editions import export_reader
from editions.solutions import BLOCK, prediction_name

from beforeqkv import grade, sandbox


def _source(name):
    path = next(BOOK.glob(f"{name}*.ipynb"))
    nb = nbformat.read(path, as_version=4)
    values = {m.group(1): 0.5 for c in nb.cells if c.cell_type == "markdown"
              for m in re.finditer(r"\{glue:?\w*\}`(\w+)", c.source)}
    return assignments.source_version(nb, values, export_reader.bib_entries(BOOK / "references.bib"))


def _emptied(source):
    """Every answer as the student receives it: a function raises NotImplementedError, a prediction is ``...``."""
    nb = copy.deepcopy(source)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
            name = prediction_name(cell.source)
            cell.source = (f"{name} = ..." if name else
                           BLOCK.sub(lambda m: f"{m.group(1)}raise NotImplementedError()", cell.source))
    return nb


@pytest.fixture(scope="module")
def ch3():
    source = _source("03_")
    return source, _emptied(source)


def _answer(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def _with(nb, grade_id, code, replace=False):
    nb = copy.deepcopy(nb)
    cell = _answer(nb, grade_id)
    cell.source = code if replace else cell.source + "\n" + code
    return nb


def _points(source, submission, only=None, **kw):
    rows = sandbox.grade_notebook(source, submission, timeout=120, only=only, **kw)
    return {r["id"]: r for r in rows}


CODE, CHECK = "ex3_1_code", "ex3_1_check"
RIGHT = _answer(_source("03_"), CODE).source  # the instructor's answer to Exercise 3.1

# Each trick in an answer cell of the emptied notebook (honest score: 0).
TRICKS = {
    "verify and mode replaced": "from beforeqkv.checks import grading, _core\n"
                                "grading.verify = lambda *a, **k: True\n_core.mode = lambda fn=None: 'lenient'",
    "checkers replaced through sys.modules": "import sys\nfor m in list(sys.modules):\n"
                                             "    if m.startswith('beforeqkv'):\n"
                                             "        sys.modules[m].check_window_mix = lambda *a: True",
    "an import hook": "import builtins\n_real = builtins.__import__\n"
                      "builtins.__import__ = lambda n, *a, **k: _real(n, *a, **k)",
    "a fake beforeqkv package in the working directory":
        "import pathlib\npathlib.Path('beforeqkv/checks').mkdir(parents=True, exist_ok=True)\n"
        "pathlib.Path('beforeqkv/__init__.py').write_text('')\n"
        "pathlib.Path('beforeqkv/checks/__init__.py').write_text('def __getattr__(n): return lambda *a, **k: True')",
    "the installed checker edited": "import beforeqkv.checks._core as c\n"
                                    "open(c.__file__, 'a').write('\\n_close = lambda *a, **k: True\\n')",
    "an IPython input transformer": "get_ipython().input_transformers_post.append(lambda lines: [])",
    "an exception hook that swallows errors": "get_ipython().set_custom_exc((Exception,), lambda *a, **k: None)",
    "a stack frame's reference": "def my_window_mix(x, k):\n    import sys\n    f = sys._getframe(1)\n"
                                 "    while 'reference' not in f.f_locals:\n        f = f.f_back\n"
                                 "    return f.f_locals['reference'](x, k)",
    "assert_close patched where the check runs": "def my_window_mix(x, k):\n"
                                                 "    torch.testing.assert_close = lambda *a, **kw: None\n"
                                                 "    return torch.zeros_like(x)",
    "os._exit while the answer is defined": "def my_window_mix(x, k, _=__import__('os')._exit(0)):\n    return x",
}


@pytest.mark.parametrize("trick", sorted(TRICKS))
def test_a_trick_scores_no_more_than_the_notebook_without_it(ch3, trick):
    source, empty = ch3
    code = TRICKS[trick]
    replace = code.startswith("def my_window_mix")
    rows = _points(source, _with(empty, CODE, code, replace=replace), only={CHECK})
    assert rows[CHECK]["score"] == 0, (trick, rows[CHECK])


def test_every_trick_with_the_right_answer_beside_it_is_still_flagged_or_harmless(ch3):
    """The right answer plus a trick outside its function: the trick's lines are never run."""
    source, empty = ch3
    for trick, code in TRICKS.items():
        if code.startswith("def my_window_mix"):
            continue
        row = _points(source, _with(empty, CODE, RIGHT + "\n" + code, replace=True), only={CHECK})[CHECK]
        assert row["score"] == 0 and row["status"].startswith(("reaches around", "calls the package")), (trick, row)


def test_top_level_lines_of_an_answer_never_run_and_are_listed(ch3):
    source, empty = ch3
    n = len(RIGHT.splitlines())
    sub = _with(empty, CODE, RIGHT + "\nx = 1\nmy_window_mix = None", replace=True)
    row = _points(source, sub, only={CHECK})[CHECK]
    assert row["score"] == 3, row  # the reassignment never ran: the function is graded
    assert row["dropped"] == [f"line {n + 1}: `x = 1`", f"line {n + 2}: `my_window_mix = None`"], row


def test_the_package_as_the_answer_scores_zero_unless_the_teacher_allows_it(ch3):
    source, empty = ch3
    answer = ("def my_window_mix(x, k):\n    from beforeqkv.checks import ch03\n"
              "    return ch03._mix(x, ch03._window_weights(x.shape[-2], k))")
    sub = _with(empty, CODE, answer, replace=True)
    row = _points(source, sub, only={CHECK})[CHECK]
    assert row["score"] == 0 and row["status"].startswith("calls the package's own code"), row
    allowed = _points(source, sub, only={CHECK}, allow_package=True)[CHECK]
    assert allowed["score"] == 3 and allowed["flags"]["package"], allowed


def test_code_that_gets_past_the_scan_still_runs_only_in_its_own_process(ch3, monkeypatch, tmp_path):
    """With the static scan switched off, an answer that exits the process, writes a hostile pickle
    as its records, or patches the comparison costs its own exercise and nothing else."""
    source, empty = ch3
    monkeypatch.setattr(sandbox, "scan", lambda *a, **k: {"package": [], "escape": []})
    right = copy.deepcopy(source)  # every other answer right
    marker = tmp_path / "pwned"
    hostile = (
        "def my_window_mix(x, k):\n    import os, sys, json, pickle\n"
        "    spec = json.load(open(sys.argv[1]))\n"
        "    class P:\n"
        f"        def __reduce__(self): return (open, ({str(marker)!r}, 'w'))\n"
        "    pickle.dump(P(), open(spec['out'], 'wb'))\n    os._exit(0)\n")
    for code in (hostile, "def my_window_mix(x, k):\n    import os\n    os._exit(3)",
                 "def my_window_mix(x, k):\n    import torch.testing\n"
                 "    torch.testing.assert_close = lambda *a, **kw: None\n    return x * 0"):
        rows = _points(source, _with(right, CODE, code, replace=True))
        assert rows[CHECK]["score"] == 0, rows[CHECK]
        others = [r for k, r in rows.items() if k != CHECK]
        assert others and all(r["score"] == r["points"] for r in others), others
    assert not marker.exists(), "the grader unpickled the student's object"


def test_a_submission_that_changes_the_package_stops_the_grading(ch3, monkeypatch, tmp_path):
    """The package's files are hashed before grading and checked after every throwaway process."""
    source, empty = ch3
    copy_dir = tmp_path / "pkg"
    (copy_dir / "checks").mkdir(parents=True)
    (copy_dir / "checks" / "_core.py").write_text("x = 1\n")
    monkeypatch.setattr(sandbox, "PACKAGE", copy_dir)
    real = sandbox._sandbox

    def poisoning(check, timeout, python):
        (copy_dir / "checks" / "_core.py").write_text("x = 2\n")
        return real(check, timeout, python)
    monkeypatch.setattr(sandbox, "_sandbox", poisoning)
    with pytest.raises(sandbox.PackageChanged, match="changed while grading"):
        _points(source, source, only={CHECK})


def test_an_honest_notebook_graded_after_a_cheater_scores_in_full(ch3):
    source, empty = ch3
    _points(source, _with(empty, CODE, TRICKS["the installed checker edited"]))
    rows = _points(source, source)
    assert all(r["score"] == r["points"] for r in rows.values()), rows


def test_edited_test_cells_and_points_change_nothing(ch3, tmp_path):
    source, empty = ch3
    for honest, want in ((empty, 0), (source, None)):
        nb = copy.deepcopy(honest)
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("grade") and cell.cell_type == "code":
                cell.source = "print('all good')"
                cell.metadata["nbgrader"]["points"] = 100
        nbformat.write(nb, tmp_path / "sub.ipynb")
        nbformat.write(source, tmp_path / "key.ipynb")
        rows = [r for r in grade.grade(tmp_path / "sub.ipynb", tmp_path / "key.ipynb", timeout=120)
                if r["kind"] != "open"]
        assert rows and all(r["points"] < 100 for r in rows)
        got = sum(r["score"] for r in rows)
        assert got == (want if want is not None else sum(r["points"] for r in rows)), grade.table(rows)


def test_the_scan_passes_every_instructor_answer_and_flags_the_package():
    """No answer of the book's instructor is flagged (so an honest student writing the same is not)."""
    for path in sorted(BOOK.glob("[0-9]*.ipynb")):
        source = _source(path.name[:3])
        for check in sandbox.plan(source, source):
            assert check.flags == {"package": [], "escape": []}, (path.name, check.grade_id, check.flags)
    flags = sandbox.scan("def f(x):\n    return attend(x, x, x)", {"attend"}, set())
    assert flags["package"] == ["line 2: uses `attend`"] and not flags["escape"]
    assert sandbox.scan("def f(x):\n    return x.__class__", set(), set())["escape"]


def test_grading_leaves_the_environment_as_it_found_it(ch3, monkeypatch):
    monkeypatch.delenv("BEFOREQKV_GRADING", raising=False)
    _points(ch3[0], ch3[1], only={CHECK})
    assert "BEFOREQKV_GRADING" not in __import__("os").environ


PREDICT, PREDICT_CHECK = "ex3_3_prediction", "ex3_3_check"  # ch3_depth_stack, a whole number


@pytest.mark.parametrize("answer, participation, key", [
    ("my_prediction = ...", 0, 0),             # unanswered, as released
    ("my_prediction = 'a lot'", 0, 0),         # not a number: not an answer
    ("my_prediction = 7", 1, 0),               # a number, not the instructor's
    (None, 1, 1),                              # the instructor's own answer
])
def test_predictions_count_for_participation_unless_the_teacher_grades_them_by_the_key(
        ch3, monkeypatch, answer, participation, key):
    """The experiment shows the answer once run, so an answered prediction scores by default; with
    predictions="key" the answer comes from the instructor's notebook: the package's hashed answers
    (the reader's self-check) are emptied here and grading does not notice."""
    import beforeqkv.checks._sealed as sealed
    source, empty = ch3
    monkeypatch.setattr(sealed, "SEALED", {})
    sub = source if answer is None else _with(empty, PREDICT, answer, replace=True)
    for mode, want in (("participation", participation), ("key", key)):
        row = _points(source, sub, only={PREDICT_CHECK}, predictions=mode)[PREDICT_CHECK]
        assert row["score"] == want * row["points"], (mode, row)
    with pytest.raises(ValueError, match="predictions"):
        sandbox.grade_notebook(source, sub, predictions="answers")
