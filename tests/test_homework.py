"""Proofs for the homework: nothing to copy, nothing raw, Run All never stops, grades are right.

The fast proofs run everywhere. Those on the release notebooks need them built with
nbgrader: set ``BEFOREQKV_ASSIGNMENTS=dist/assignments`` after ``make assignments`` (CI
does; then a missing folder fails), or have nbgrader importable; otherwise they skip.
The execution proofs use chapter 3, the shortest chapter.
"""
import copy
import json
import os
import re
from pathlib import Path

import nbformat
import pytest

from _book import BOOK, CHAPTERS, ROOT, all_solution_lines, printed_before

from editions import assignments
from editions import book
from editions import export_reader
from editions import student
from editions import teachers, words

SMALL = BOOK / "03_red_connections.ipynb"
EXECUTED = ROOT / "_exec" / "book"  # make execute
BIB = export_reader.bib_entries(BOOK / "references.bib")


def _glue_names(nb):
    """The names the prose reads (stand-ins for an executed run's values in the fast proofs)."""
    return {m.group(1) for c in nb.cells if c.cell_type == "markdown"
            for m in re.finditer(r"\{glue:?\w*\}`(\w+)", c.source)}


def _fake_values(nb):
    return {name: 0.5 for name in _glue_names(nb)}


def _visible_lines(nb):
    return {ln.strip() for c in nb.cells for ln in c.source.splitlines()}


# ---------------------------------------------------------------- fast proofs
def test_every_exercise_heading_has_difficulty_time_and_what_it_checks():
    for path in CHAPTERS:
        source = assignments.source_version(nbformat.read(path, as_version=4))
        for cell in source.cells:
            if assignments.HEADING.match(cell.source or ""):
                meta = cell.metadata.get("exercise", {})
                assert meta.get("difficulty") in (1, 2, 3) and meta.get("minutes", 0) > 0, (path.name, cell.source[:60])
                assert meta.get("checks") and isinstance(meta.get("exam"), bool), (path.name, cell.source[:60])


def test_every_check_is_a_graded_cell_right_after_its_answer():
    for path in CHAPTERS:
        source = assignments.source_version(nbformat.read(path, as_version=4))
        graded = [c for c in source.cells if c.metadata.get("nbgrader", {}).get("grade")]
        checks_ = [c for c in source.cells if "checks.check_" in c.source]
        assert checks_ and all(c.metadata["nbgrader"]["grade"] for c in checks_), path.name
        assert all("assert grading.verify(" in c.source.split("### BEGIN HIDDEN TESTS")[1] for c in checks_), path.name
        ids = [c.metadata["nbgrader"]["grade_id"] for c in source.cells if "nbgrader" in c.metadata]
        assert len(ids) == len(set(ids)), path.name
        assert len(graded) >= 3, path.name


def test_student_versions_hold_no_line_of_a_solution_or_model_answer():
    for path in CHAPTERS:
        nb = nbformat.read(path, as_version=4)
        leaked = all_solution_lines(nb) & _visible_lines(student.student_version(nb))
        assert not leaked, (path.name, leaked)


def test_reader_markdown_has_no_raw_myst():
    text = ("(sec-x)=\n## Title\nWe reach {glue:text}`acc:.2f` as {footcite:t}`vaswani2017attention` "
            "showed {footcite:p}`hochreiter1997lstm`; see {ref}`the scale <sec-x>`.\n\n"
            "```{note}\nA note.\n```\n\n## References\n```{footbibliography}\n```\n")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])
    out = export_reader.reader_notebook(nb, {"acc": 0.91234}, BIB).cells[0].source
    assert export_reader.has_raw_myst(out) == [], out
    assert "We reach 0.91 as Vaswani et al. (2017) showed (Hochreiter and Schmidhuber, 1997)" in out
    assert "see the scale." in out and "> **Note**" in out and "- Vaswani, Ashish" in out


def test_figure_references_become_numbers_and_captions_follow_their_figures():
    fig = nbformat.v4.new_code_cell("plot()", metadata={"mystnb": {"figure": {
        "name": "fig-b", "caption": "Loss as {glue:text}`acc:.1f` grows."}}})
    first = nbformat.v4.new_code_cell("plot()", metadata={"mystnb": {"figure": {"name": "fig-a"}}})
    text = nbformat.v4.new_markdown_cell("{numref}`fig-b` beats {numref}`Figure %s <fig-a>`.")
    nb = nbformat.v4.new_notebook(cells=[text, first, fig])
    out = export_reader.reader_notebook(copy.deepcopy(nb), {"acc": 0.91}, BIB)
    assert out.cells[0].source == "Figure 2 beats Figure 1."
    assert [c.source for c in out.cells if c.cell_type == "markdown"][-1] == "**Figure 2.** Loss as 0.9 grows."
    chapter = export_reader.reader_notebook(nb, {"acc": 0.91}, BIB, book.chapter_number("05_x.ipynb"))
    assert chapter.cells[0].source == "Figure 5.2 beats Figure 5.1."  # as the site numbers them
    bad = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("{numref}`fig-zz`")])
    with pytest.raises(KeyError, match="fig-zz"):
        export_reader.reader_notebook(bad, {}, BIB)


def test_a_missing_glue_value_is_an_error_not_a_silent_gap():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("{glue:text}`nope:.2f`")])
    with pytest.raises(export_reader.MissingGlue):
        export_reader.reader_notebook(nb, {}, BIB)


def test_no_chapter_keeps_raw_myst_in_its_reader_version():
    for path in CHAPTERS:
        nb = nbformat.read(path, as_version=4)
        reader = export_reader.reader_notebook(nb, _fake_values(nb), BIB)
        raw = [r for c in reader.cells if c.cell_type == "markdown" for r in export_reader.has_raw_myst(c.source)]
        assert not raw, (path.name, raw[:3])


def test_glue_values_are_read_from_a_really_executed_notebook(tmp_path):
    """myst-nb keeps a glued value under application/papermill.record/text/plain."""
    pytest.importorskip("myst_nb", reason="the site's glue is myst-nb's (requirements.txt)")
    from nbclient import NotebookClient
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from myst_nb import glue\nglue('x', 0.25, display=False)\nglue('n', 3, display=False)")])
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    nbformat.write(nb, tmp_path / "run.ipynb")
    assert export_reader.glue_values(tmp_path / "run.ipynb") == {"x": 0.25, "n": 3}


def test_an_empty_glue_value_stops_the_export_naming_chapter_and_glue(tmp_path, capsys):
    (tmp_path / "book").mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "book" / "references.bib").write_text("")
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("{glue:text}`x:.2f`")]),
                   tmp_path / "book" / "01_x.ipynb")
    cell = nbformat.v4.new_code_cell("glue('x', '')")
    cell.outputs = [nbformat.v4.new_output("display_data", {"application/papermill.record/text/plain": ""},
                                           metadata={"scrapbook": {"name": "x",
                                                                   "mime_prefix": "application/papermill.record/"}})]
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), tmp_path / "run" / "01_x.ipynb")
    with pytest.raises(export_reader.MissingGlue):
        export_reader.glue_values(tmp_path / "run" / "01_x.ipynb")
    assert export_reader.main(str(tmp_path / "book"), str(tmp_path / "run"), str(tmp_path / "out")) == 1
    err = capsys.readouterr().err
    assert "01_x.ipynb" in err and "'x'" in err and "empty" in err


def test_homework_from_an_unfinished_execution_says_what_to_run_without_a_traceback(tmp_path, capsys):
    """A stale or half-finished _exec: `make assignments` names the chapter, the glue and the command."""
    (tmp_path / "book").mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "book" / "references.bib").write_text("")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("{glue:text}`ch8_lm_steps`")])
    nbformat.write(nb, tmp_path / "book" / "08_x.ipynb")
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "run" / "08_x.ipynb")  # not executed
    args = [str(tmp_path / d) for d in ("book", "run", "assignments", "instructor")]
    assert assignments.main(*args) == 1
    err = capsys.readouterr().err
    assert "08_x.ipynb" in err and "'ch8_lm_steps'" in err and "run `make execute`" in err
    assert "Traceback" not in err


def test_every_glued_number_of_every_chapter_has_a_value_in_the_executed_run():
    runs = [EXECUTED / p.name for p in CHAPTERS]
    if not all(r.exists() for r in runs):
        pytest.skip("no executed run in _exec/book: run `make execute`")
    for path, run in zip(CHAPTERS, runs):
        values = export_reader.glue_values(run)
        names = _glue_names(nbformat.read(path, as_version=4))
        missing = sorted(n for n in names if values.get(n) in (None, ""))
        assert names and not missing, (path.name, missing)


def test_the_students_set_up_is_one_line_that_installs_the_cpu_torch_wheel():
    """The line on the teachers' page takes torch from the index `make install` uses for a CPU build."""
    import re
    index = re.search(r"^TORCH_INDEX \?= (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    assert teachers.CPU_TORCH_INDEX == index
    line = teachers.STUDENT_SETUP
    assert line.startswith("pip install ") and "\n" not in line
    assert f"--extra-index-url {index} torch " in line and "jupyterlab" in line and "ipywidgets" in line
    assert f"```bash\n{line}\n```" in (BOOK / "teachers.md").read_text()


def test_teachers_page_is_generated_from_the_notebooks():
    assert teachers.main(["--check", str(BOOK), str(BOOK / "teachers.md")]) == 0, "run `make teachers`"


TOTALS = re.compile(r"(\d+) points checked automatically \+ (\d+) graded by hand")
ROW = re.compile(r"^\| (\S+) \| .*? \| ([a-z +]+) \| (\d+) \+ (\d+) \| ", re.M)


def _nbgrader_split(source) -> dict:
    """{exercise: [automatic, by hand]} as nbgrader reads a source version's cells: a graded
    cell that is not a solution is an autograder test; a graded solution cell is graded by hand."""
    split = {}
    for cell in source.cells:
        nbg = cell.metadata.get("nbgrader", {})
        if nbg.get("grade"):
            row = split.setdefault(cell.metadata["homework"]["exercise"], [0, 0])
            row[1 if nbg.get("solution") else 0] += nbg["points"]
    return split


def _otter_questions(source, chapter) -> list[tuple[int, bool]]:
    """(points, manual) of each question in otter's source format, in order."""
    from editions import otter_assign
    nb = otter_assign.otter_source(source, "chapter", chapter)
    found = []
    for cell in nb.cells:
        if cell.cell_type == "raw" and cell.source.startswith("# BEGIN QUESTION"):
            conf = dict(line.split(": ", 1) for line in cell.source.splitlines()[1:])
            found.append((int(conf["points"]), conf.get("manual") == "true"))
    return found


def _check_split(text: str, path: Path):
    """Each exercise's points on the teachers' page (automatic + by hand) and the chapter's
    totals are what nbgrader's cell metadata says; otter's questions say the same."""
    section = text.split(f"### {teachers._title(path)}\n", 1)[1].split("\n### ", 1)[0]
    rows = {m.group(1): [int(m.group(3)), int(m.group(4))] for m in ROW.finditer(section)}
    source = assignments.source_version(nbformat.read(path, as_version=4))
    split = _nbgrader_split(source)
    assert rows == split, path.name
    said = [int(n) for n in TOTALS.search(section).groups()]
    assert said == [sum(a for a, __ in split.values()), sum(h for __, h in split.values())], path.name
    graded = [cell.metadata["nbgrader"] for cell in source.cells if cell.metadata.get("nbgrader", {}).get("grade")]
    otter = _otter_questions(source, book.chapter_number(path))
    assert otter == [(g["points"], bool(g.get("solution"))) for g in graded], path.name
    for m in ROW.finditer(section):  # an open part is by hand, any other part automatic
        auto, by_hand = rows[m.group(1)]
        assert ("open" in m.group(2)) == (by_hand > 0) and (m.group(2) != "open") == (auto > 0), m.group(0)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_teachers_page_split_is_the_graders_metadata(path):
    """Per exercise and per chapter, book/teachers.md splits the points as the graders do."""
    _check_split((BOOK / "teachers.md").read_text(encoding="utf-8"), path)


def test_the_split_check_rejects_an_open_part_counted_as_automatic():
    """The old mistake of chapters 6, 7 and 9 (a predict-then-explain exercise counted as all
    automatic) fails the check, in the row and in the totals."""
    text = (BOOK / "teachers.md").read_text(encoding="utf-8")
    row = next(m for m in ROW.finditer(text) if m.group(2) == "prediction + open")
    path = next(p for p in CHAPTERS if row.group(1).startswith(f"{book.chapter_number(p)}."))
    _check_split(text, path)
    auto, by_hand = int(row.group(3)), int(row.group(4))
    wrong_row = text.replace(row.group(0), row.group(0).replace(f"| {auto} + {by_hand} |", f"| {auto + by_hand} + 0 |"))
    with pytest.raises(AssertionError):
        _check_split(wrong_row, path)
    section = text.split(f"### {teachers._title(path)}\n", 1)[1]
    a, h = (int(n) for n in TOTALS.search(section).groups())
    wrong_total = text.replace(TOTALS.search(section).group(0),
                               f"{a + h} points checked automatically + 0 graded by hand")
    with pytest.raises(AssertionError):
        _check_split(wrong_total, path)


def test_the_answer_key_holds_every_model_answer():
    """No open question of a real chapter is left empty in dist/instructor/answer_key.md."""
    from editions import instructor
    key = json.loads(instructor.KEY.read_text(encoding="utf-8"))
    opens = []
    for path in CHAPTERS:
        opens += [(path, r) for r in instructor._rows(path, key) if "(open, model answer)" in r]
    assert len({p for p, __ in opens}) >= 10
    for path, row in opens:
        answer = row.split("(open, model answer):", 1)[1].strip()
        assert len(answer) > 80 and "SOLUTION" not in answer, (path.name, row[:120])


def test_the_answer_key_gives_a_numeric_predictions_tolerance():
    from editions import instructor
    key = json.loads(instructor.KEY.read_text(encoding="utf-8"))
    rows = instructor._rows(BOOK / "08_transformer.ipynb", key)
    assert any("(`ch8_iid_floor`)" in r and "(accepted within 0.05)" in r for r in rows)
    assert not any("(`ch8_residual_no_norm`)" in r and "accepted within" in r for r in rows)


# ---------------------------------------------------------------- release notebooks (nbgrader)
@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """chapter name -> (source, release) notebooks."""
    folder = os.environ.get("BEFOREQKV_ASSIGNMENTS")
    if folder:
        folder = Path(folder)
        keys = Path(os.environ.get("BEFOREQKV_INSTRUCTOR", folder.parent / "instructor")) / "source"
        assert folder.is_dir() and keys.is_dir(), f"{folder} or {keys} is missing: run `make assignments`"
        assert not (folder / "source").exists(), "the students' folder holds the instructor's versions"
        return {p.name: (nbformat.read(keys / p.name, as_version=4),
                         nbformat.read(folder / p.name, as_version=4)) for p in CHAPTERS}
    pytest.importorskip("nbgrader", reason="needs nbgrader (make assignments) or BEFOREQKV_ASSIGNMENTS")
    out = {}
    for p in CHAPTERS:
        nb = nbformat.read(p, as_version=4)
        source = assignments.source_version(nb, _fake_values(nb), BIB)
        out[p.name] = (source, assignments.release_version(source))
    return out


def test_release_notebooks_hold_no_solution_and_no_raw_myst(released):
    for path in CHAPTERS:
        _, release = released[path.name]
        nb = nbformat.read(path, as_version=4)
        leaked = all_solution_lines(nb) & _visible_lines(release)
        assert not leaked, (path.name, leaked)
        text = "\n".join(c.source for c in release.cells)
        assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text and "BEFOREQKV_GRADING" not in text
        raw = [r for c in release.cells if c.cell_type == "markdown" for r in export_reader.has_raw_myst(c.source)]
        assert not raw, (path.name, raw[:3])
        assert all(not c.get("outputs") for c in release.cells if c.cell_type == "code")


@pytest.fixture(scope="module")
def released_zh():
    """chapter name -> the Chinese release (make assignments: dist/assignments/zh)."""
    folder = os.environ.get("BEFOREQKV_ASSIGNMENTS")
    if folder:
        folder = Path(folder) / "zh"
        assert folder.is_dir(), f"{folder} is missing: make assignments writes the Chinese homework"
        return {p.name: nbformat.read(folder / p.name, as_version=4) for p in CHAPTERS}
    pytest.importorskip("nbgrader", reason="needs nbgrader (make assignments) or BEFOREQKV_ASSIGNMENTS")
    zh = words.Words("zh_CN")
    out = {}
    for p in CHAPTERS:
        nb = export_reader.translated(nbformat.read(p, as_version=4), p, "zh_CN")
        out[p.name] = assignments.release_version(assignments.source_version(nb, _fake_values(nb), BIB, w=zh))
    return out


def test_no_student_notebook_prints_a_glued_number_or_a_model_answer(released, released_zh):
    """A student notebook has no Answers section: no cell that the site hides (a glue call,
    the measurement behind a model answer) is in it, in either language."""
    for path in CHAPTERS:
        for release in (released[path.name][1], released_zh[path.name]):
            assert printed_before(release.cells) == [], path.name


def test_the_chinese_homework_is_the_english_one_in_chinese_and_leaks_nothing(released, released_zh):
    """Same graded cells and points, no solution line, Chinese Markdown, BEFOREQKV_LANG set."""
    for path in CHAPTERS:
        _, release = released[path.name]
        zh = released_zh[path.name]
        nb = nbformat.read(path, as_version=4)
        assert not all_solution_lines(nb) & _visible_lines(zh), path.name
        graded = [(c.metadata["nbgrader"]["grade_id"], c.metadata["nbgrader"].get("points"))
                  for c in zh.cells if c.metadata.get("nbgrader", {}).get("grade")]
        assert graded == [(c.metadata["nbgrader"]["grade_id"], c.metadata["nbgrader"].get("points"))
                          for c in release.cells if c.metadata.get("nbgrader", {}).get("grade")], path.name
        assert any('os.environ["BEFOREQKV_LANG"] = "zh_CN"' in c.source for c in zh.cells), path.name
        md = "\n".join(c.source for c in zh.cells if c.cell_type == "markdown")
        assert not [r for c in zh.cells if c.cell_type == "markdown" for r in export_reader.has_raw_myst(c.source)]
        if path.name.startswith("01_"):  # translated in full
            assert len(re.findall(r"[\u4e00-\u9fff]", md)) > 1000 and "### 练习 1.2 · " in md
        for c in zh.cells:
            if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code" and "def " not in c.source:
                assert re.fullmatch(r"\w+ = \.\.\.  # 你的答案", c.source), c.source


def test_release_predictions_are_ellipses_and_functions_raise(released):
    for path in CHAPTERS:
        _, release = released[path.name]
        answers = [c for c in release.cells if c.metadata.get("nbgrader", {}).get("solution")]
        kinds = {("..." in c.source, "NotImplementedError" in c.source, c.cell_type) for c in answers}
        assert all(e or r or t == "markdown" for e, r, t in kinds), (path.name, kinds)
        for c in answers:
            if c.cell_type == "code" and "def " not in c.source:
                assert re.fullmatch(r"\w+ = \.\.\.  # your answer", c.source), c.source


# ---------------------------------------------------------------- execution proofs (chapter 3)
@pytest.fixture(scope="module")
def small(released, tmp_path_factory):
    folder = tmp_path_factory.mktemp("hw")
    source, release = released[SMALL.name]
    nbformat.write(source, folder / "instructor.ipynb")
    nbformat.write(release, folder / "student.ipynb")
    return folder


def _run(path, monkeypatch, graded):
    from nbclient import NotebookClient
    monkeypatch.delenv("BEFOREQKV_GRADING", raising=False)
    monkeypatch.delenv("BEFOREQKV_CHECKS", raising=False)
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(BOOK)}}).execute()
    return nb


def test_an_untouched_student_notebook_runs_to_the_end_under_run_all(small, monkeypatch):
    nb = _run(small / "student.ipynb", monkeypatch, graded=False)  # raises on the first error
    out = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "\u2717" in out and "replace the `...`" in out and "YOUR CODE HERE" in out
    noise = [o.get("text", "")[:120] for c in nb.cells for o in c.get("outputs", [])
             if o.get("name") == "stderr" or "Warning" in o.get("text", "")]
    assert noise == [], "a student's Run All prints warnings"


def test_the_release_grades_zero_and_the_instructors_answers_full(small):
    """beforeqkv.grade on the real release (nbgrader's stubs): 0; on the instructor's version: full
    marks. The tricks a student might try are in test_grading_redteam.py."""
    from beforeqkv import grade
    for name, full in (("student", False), ("instructor", True)):
        rows = grade.grade(small / f"{name}.ipynb", small / "instructor.ipynb", timeout=300)
        auto = [r for r in rows if r["kind"] != "open"]
        assert auto and sum(r["score"] for r in auto) == (sum(r["points"] for r in auto) if full else 0), \
            grade.table(rows)
        if not full:
            assert all(r["status"] == "unanswered" for r in rows if r["kind"] == "open")


def test_grading_needs_the_instructors_version(tmp_path):
    from beforeqkv import grade
    with pytest.raises(FileNotFoundError, match="make assignments"):
        grade.source_for(tmp_path / "03_red_connections.ipynb", tmp_path)


@pytest.mark.parametrize("strict", [True, False])
def test_in_a_kernel_a_failed_check_raises_only_when_strict_is_set(strict, monkeypatch):
    """A kernel runs lenient by default (a reader's Run All reaches the end), even with a
    solution block in view: the mode is never read from the code. BEFOREQKV_CHECKS=strict, as
    book/conftest.py and make execute set for the source notebooks, makes it fail loudly."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    monkeypatch.delenv("BEFOREQKV_GRADING", raising=False)
    if strict:
        monkeypatch.setenv("BEFOREQKV_CHECKS", "strict")
    else:
        monkeypatch.delenv("BEFOREQKV_CHECKS", raising=False)
    begin, end = "### BEGIN" + " SOLUTION", "### END" + " SOLUTION"
    body = f"    {begin}\n    return torch.ones(T, T).triu(1).bool()  # True = blocked\n    {end}\n"
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(f"import torch\nfrom beforeqkv import checks\n\ndef my_mask(T):\n{body}"),
        nbformat.v4.new_code_cell("checks.check_causal_mask(my_mask)"),
        nbformat.v4.new_code_cell(
            f"{begin}\nanswer = 2\n{end}\nchecks.check_prediction('ch6_one_head_routings', answer)"),
        nbformat.v4.new_code_cell("print('the end')"),
    ])
    client = NotebookClient(nb, timeout=120, kernel_name="python3")
    if strict:
        with pytest.raises(CellExecutionError, match="BLOCKED"):
            client.execute()
        return
    client.execute()
    outs = ["".join(o.get("text", "") for o in c.outputs) for c in nb.cells]
    assert outs[1].startswith("\u2717") and "BLOCKED" in outs[1] and "Traceback" not in outs[1]
    assert outs[2].startswith("\u2717") and "not what the experiment shows" in outs[2]
    assert outs[3] == "the end\n"


def test_the_students_site_has_no_solution_and_no_model_answer():
    site = ROOT / "_build" / "html-students" / "book"
    if not site.is_dir():
        pytest.skip("no students' site: run `make book-students`")
    for path in CHAPTERS:
        html = (site / f"{path.stem}.html").read_text(encoding="utf-8")
        assert "Model answer" not in html and "BEGIN SOLUTION" not in html, path.name
        assert "YOUR CODE HERE" in html and ": right." not in html, path.name


# ---------------------------------------------------------------- nbgrader itself (chapter 3)
NBGRADER_SCORES = """
import sys
from nbgrader.api import Gradebook
with Gradebook("sqlite:///" + sys.argv[1]) as gb:
    for student in sys.argv[2:]:
        nb = gb.find_submission_notebook("03_red_connections", "ch03", student)
        code = [g for g in nb.grades if g.cell.cell_type == "code"]
        print(student, sum(g.score for g in code), sum(g.max_score for g in code))
"""


def _nbgrader_env(venv):
    """nbgrader's environment as a teacher has it: its venv's bin first (it calls `alembic`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BEFOREQKV_", "PYTHONPATH"))}
    env["PATH"] = f"{Path(venv).resolve() / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture(scope="module")
def nbgrader_course(released, tmp_path_factory):
    """A course with chapter 3 as assignment ch03, two submissions (the untouched release and
    the instructor's answers), autograded by nbgrader with the kernel `make assignments` set up."""
    import shutil
    import subprocess
    venv = os.environ.get("NBGRADER_VENV")
    if not venv:
        pytest.skip("set NBGRADER_VENV (make test-homework does)")
    course = tmp_path_factory.mktemp("course")
    source, release = released[SMALL.name]
    for folder, nb in [("source/ch03", source), ("submitted/alice/ch03", release),
                       ("submitted/teacher/ch03", source), ("submitted/warner/ch03", _warning_answers(source)),
                       ("submitted/cheater/ch03", _cheating(release))]:
        (course / folder).mkdir(parents=True)
        nbformat.write(nb, course / folder / SMALL.name)
    keys = Path(os.environ.get("BEFOREQKV_INSTRUCTOR", ROOT / "dist" / "instructor"))
    shutil.copy(keys / "nbgrader_config.py", course / "nbgrader_config.py")
    nbgrader = str(Path(venv).resolve() / "bin" / "nbgrader")
    env = _nbgrader_env(venv)
    for args in (["generate_assignment", "ch03", "--force"], ["autograde", "ch03", "--create", "--force"]):
        run = subprocess.run([nbgrader, *args], cwd=course, env=env, capture_output=True, text=True, timeout=900)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    out = subprocess.run([str(Path(venv).resolve() / "bin" / "python"), "-c", NBGRADER_SCORES,
                          str(course / "gradebook.db"), "alice", "teacher", "warner", "cheater"],
                         capture_output=True, text=True, check=True).stdout
    return course, {line.split()[0]: tuple(float(x) for x in line.split()[1:]) for line in out.splitlines()}


def _cheating(release):
    """The untouched release with the two lines that used to give full marks in every grader, and
    every test cell replaced (nbgrader restores them from its database)."""
    nb = copy.deepcopy(release)
    answer = next(c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution"))
    answer.source += ("\nfrom beforeqkv.checks import grading, _core\n"
                      "grading.verify = lambda *a, **k: True\n_core.mode = lambda fn=None: 'lenient'\n")
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade") and cell.cell_type == "code":
            cell.source = "print('all good')"
    return nb


def _warning_answers(source):
    """The instructor's answers, each coding solution warning when called (as deprecated calls do)."""
    import re
    nb = copy.deepcopy(source)
    solutions = [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")
                 and re.search(r"^def \w+\(.*\):$", c.source, re.M)]
    assert solutions, "chapter 3 has a coding exercise"
    for cell in solutions:
        cell.source = re.sub(r"^(def \w+\(.*\):)$", "\\1\n    import warnings\n"
                             "    warnings.warn('something deprecated', UserWarning)", cell.source, count=1, flags=re.M)
    return nb


def test_nbgrader_autograde_scores_the_untouched_release_zero_and_the_instructor_full(nbgrader_course):
    _, scores = nbgrader_course
    print("nbgrader autograde, chapter 3 (score, max):", scores)
    assert scores["alice"][0] == 0 and scores["alice"][1] > 0
    assert scores["teacher"][0] == scores["teacher"][1] > 0
    assert scores["warner"] == scores["teacher"], "a right answer that prints a warning loses no point"
    assert scores["cheater"][0] == 0, "patching the grader in an answer cell gives no point"


def test_nbgrader_validate_reports_a_wrong_answer(nbgrader_course, released, tmp_path):
    """Validate runs the student's notebook with NBGRADER_EXECUTION set: checks raise there."""
    import subprocess
    _, release = released[SMALL.name]
    nbformat.write(release, tmp_path / SMALL.name)
    nbgrader = str(Path(os.environ["NBGRADER_VENV"]).resolve() / "bin" / "nbgrader")
    env = _nbgrader_env(os.environ["NBGRADER_VENV"])
    run = subprocess.run([nbgrader, "validate", SMALL.name], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=600)
    report = run.stdout + run.stderr
    assert "VALIDATION FAILED" in report and "not implemented yet" in report, report[-2000:]


def test_the_guides_nbgrader_steps_work_as_written(released, tmp_path):
    """The teachers' guide, followed with nbgrader's own commands and the shipped config (its
    exchange moved into a temporary folder): generate_assignment gives exactly the students'
    notebook of dist/assignments (predictions `my_x = ...`), release_assignment, the student's
    fetch_assignment and submit, collect, autograde. The time of each step is printed."""
    import getpass
    import shutil
    import subprocess
    import time
    venv = os.environ.get("NBGRADER_VENV")
    if not venv:
        pytest.skip("set NBGRADER_VENV (make test-homework does)")
    source, release = released[SMALL.name]
    course, student, exchange = tmp_path / "course", tmp_path / "student", tmp_path / "exchange"
    for folder in (course / "source" / "ch03", student, exchange):
        folder.mkdir(parents=True)
    exchange.chmod(0o777)
    nbformat.write(source, course / "source" / "ch03" / SMALL.name)
    keys = Path(os.environ.get("BEFOREQKV_INSTRUCTOR", ROOT / "dist" / "instructor"))
    shutil.copy(keys / "nbgrader_config.py", course / "nbgrader_config.py")
    nbgrader = str(Path(venv).resolve() / "bin" / "nbgrader")
    env = _nbgrader_env(venv)
    times = {}

    def step(where, *args):
        start = time.perf_counter()
        run = subprocess.run([nbgrader, *args, f"--Exchange.root={exchange}"], cwd=where, env=env,
                             capture_output=True, text=True, timeout=900)
        times[args[0]] = time.perf_counter() - start
        assert run.returncode == 0, (args, run.stdout[-2000:] + run.stderr[-3000:])
        return run.stdout + run.stderr

    step(course, "generate_assignment", "ch03")
    generated = nbformat.read(course / "release" / "ch03" / SMALL.name, as_version=4)
    assert [c.source for c in generated.cells] == [c.source for c in release.cells]
    assert any(re.fullmatch(r"my_\w+ = \.\.\..*", c.source) for c in generated.cells)
    step(course, "release_assignment", "ch03")
    step(student, "fetch_assignment", "ch03", "--course", "before-qkv")
    fetched = student / "ch03" / SMALL.name
    nb = nbformat.read(fetched, as_version=4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in source.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    for cell in nb.cells:  # a student who answers everything as the instructor did
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    nbformat.write(nb, fetched)
    step(student, "submit", "ch03", "--course", "before-qkv")
    step(course, "collect", "ch03")
    me = getpass.getuser()
    assert (course / "submitted" / me / "ch03" / SMALL.name).is_file()
    log = step(course, "autograde", "ch03", "--create")
    print("nbgrader, chapter 3, seconds per step:", {k: round(v, 1) for k, v in times.items()})

    def scores():
        out = subprocess.run([str(Path(venv).resolve() / "bin" / "python"), "-c", NBGRADER_SCORES,
                              str(course / "gradebook.db"), me], capture_output=True, text=True, check=True).stdout
        return tuple(float(x) for x in out.split()[1:])
    got, best = scores()
    assert got == best > 0
    # nbgrader's "checksum ... has changed" warning is left for an edited cell: none here,
    # though every test cell's hidden tests came back from the gradebook
    assert "has changed" not in log, log[-3000:]
    submitted = course / "submitted" / me / "ch03" / SMALL.name
    nb = nbformat.read(submitted, as_version=4)
    test = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")
                and not c.metadata["nbgrader"].get("solution"))
    test.source = "pass  # the student edited this test cell\n" + test.source
    nbformat.write(nb, submitted)
    log = step(course, "autograde", "ch03", "--force")
    changed = re.findall(r"Attribute 'checksum' for cell (\S+) has changed", log)
    assert changed == [test.metadata["nbgrader"]["grade_id"]], log[-3000:]
    assert scores() == (best, best)  # the cell came back as written, hidden tests and all


def test_no_student_file_holds_an_answer_of_the_key():
    """The students' notebooks, the reader notebooks and the students' site: no prediction
    answer line, no explanation, no "right." output of a check."""
    from _book import answer_leaks, answer_markers
    markers = answer_markers()
    folders = [os.environ.get("BEFOREQKV_ASSIGNMENTS"), ROOT / "dist" / "reader", ROOT / "_build" / "html-students"]
    scanned = 0
    for folder in filter(None, folders):
        for path in Path(folder).rglob("*"):
            if path.suffix in (".ipynb", ".html", ".py", ".md", ".txt", ".json") and path.is_file():
                scanned += 1
                leaks = answer_leaks(path.read_text(encoding="utf-8", errors="replace"), markers)
                assert not leaks, (str(path), leaks[:3])
    if not scanned:
        pytest.skip("no students' files built: make test-homework builds them")
