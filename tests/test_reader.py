"""Reader notebooks (tools/editions/export_reader.py), the notebooks branch (tools/editions/notebooks_branch.py)
and the site's view of the solutions (tools/editions/site_solutions.py).

A reader notebook is what every button of the site opens: no raw MyST, no solution in view
(stubs in place, answers folded in an Answers section at the end), no prediction's answer
anywhere, and Run All reaches the end. These proofs run on files written the way
`make reader-notebooks` writes them, with stand-in glue values (tests/test_homework.py
checks the real ones against the executed run); tests/test_site.py checks the copies the
built site serves.
"""
import copy
import re

import nbformat
import pytest

from _book import BOOK, CHAPTERS, predictions, reader_problems, solution_lines

from editions import bootstrap
from editions import book
from editions import export_reader, myst
from editions import notebooks_branch
from editions import prints
from editions import site_solutions
from editions import solutions, words

BIB = export_reader.bib_entries(BOOK / "references.bib")
SMALL = "03_red_connections.ipynb"


def _values(nb):
    """Stand-ins for the executed run's glued values (prose and figure captions)."""
    texts = [c.source for c in nb.cells if c.cell_type == "markdown"]
    texts += [c.metadata.get("mystnb", {}).get("figure", {}).get("caption", "") for c in nb.cells]
    return {content.split(":")[0]: 0.5 for t in texts for name, content in myst.roles(t) if name.startswith("glue")}


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """The reader notebooks as files, written like `make reader-notebooks` writes them."""
    out = tmp_path_factory.mktemp("reader")
    for path in CHAPTERS:
        nb = nbformat.read(path, as_version=4)
        nb = export_reader.reader_version(nb, _values(nb), BIB, book.chapter_number(path))
        nbformat.write(nb, out / path.name)
    return out


@pytest.fixture(scope="module")
def reader_zh(reader):
    """The Chinese reader notebooks, written like `make site` writes dist/reader/zh."""
    out = reader / "zh"
    out.mkdir()
    zh = words.Words("zh_CN")
    for path in CHAPTERS:
        nb = export_reader.translated(nbformat.read(path, as_version=4), path, "zh_CN")
        nb = export_reader.reader_version(nb, _values(nb), BIB, book.chapter_number(path), w=zh)
        nbformat.write(nb, out / path.name)
    return out


def cjk(text: str) -> int:
    return len(re.findall(r"[\u4e00-\u9fff]", text))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_a_chinese_reader_notebook_is_the_english_one_translated_with_beforeqkv_lang_set(reader, reader_zh, chapter):
    """Same code, same cells but one (BEFOREQKV_LANG), no MyST, no solution in view, its own
    words (Answers, figure numbers) in Chinese, the catalog's translations in its Markdown."""
    source = nbformat.read(chapter, as_version=4)
    en = nbformat.read(reader / chapter.name, as_version=4)
    zh = nbformat.read(reader_zh / chapter.name, as_version=4)
    assert reader_problems(zh, source) == []
    lang = [c for c in zh.cells if 'os.environ["BEFOREQKV_LANG"] = "zh_CN"' in c.source]
    assert len(lang) == 1 and zh.cells.index(lang[0]) == 1 + next(
        k for k, c in enumerate(zh.cells) if c.cell_type == "code")
    code_en = [c.source for c in en.cells if c.cell_type == "code" and "@title" not in c.source]
    code_zh = [c.source for c in zh.cells if c.cell_type == "code" and "@title" not in c.source and c not in lang]
    lookup = prints.lookup_for(chapter.stem)  # its print lines in Chinese, nothing else of its code
    assert [prints.translate_code(c, lookup)[0] for c in code_en] == [
        c.replace("# 你的预测", "# your prediction") for c in code_zh]
    assert len(zh.cells) == len(en.cells) + 1
    text = "\n".join(c.source for c in zh.cells)
    assert "## 答案" in text and "## Answers" not in text
    assert not re.search(r"Figure \d+\.\d+", text) and (re.search(r"图 \d+\.\d+", text) or "{numref}" not in
                                                               "".join(c.source for c in source.cells))


def test_chapter_1_reads_in_chinese_as_the_site_does(reader_zh):
    """Chapter 1 is translated in full: every prose cell has Chinese, the title and an
    exercise heading are the catalog's, the figure numbers say 图."""
    from editions import translate_nb
    lookup = translate_nb.lookup_for("book/01_squished_memory")
    nb = nbformat.read(reader_zh / "01_squished_memory.ipynb", as_version=4)
    md = [c.source for c in nb.cells if c.cell_type == "markdown"]
    assert md[0].startswith("# 1 · 被挤压的记忆")
    assert lookup[translate_nb.key("Exercise 1.2 · Write the attention read")] in "\n".join(md)
    prose = [m for m in md if len(re.findall(r"[A-Za-z]{3,}", m)) >= 8]
    assert prose and all(cjk(m) >= 10 for m in prose), [m[:60] for m in prose if cjk(m) < 10]
    assert re.search(r"图 1\.\d", "\n".join(md))


def test_translate_markdown_replaces_paragraphs_list_items_headings_cells_and_directive_bodies():
    from editions import translate_nb
    lookup = {translate_nb.key(k): v for k, v in {
        "A title": "标题", "One line of a paragraph that goes on.": "一段。",
        "first item": "第一项", "a cell": "单元", "Inside a note.": "注释里。", "The alt.": "替代文字。",
        "with {glue:text}`x:.2f` kept": "保留 {glue:text}`x:.2f`"}.items()}
    src = ("## A title\n\nOne line of a\nparagraph that goes on.\n\n- first item\n- second item\n\n"
           "| a cell | other |\n|---|---|\n| 1 | 2 |\n\n:::{note}\nInside a note.\n:::\n\n"
           "```{figure} x.png\n:alt: The alt.\n\nwith {glue:text}`x:.2f` kept\n```")
    counter = translate_nb.Counter()
    out = translate_nb.translate_markdown(src, lookup, counter)
    assert out == ("## 标题\n\n一段。\n\n- 第一项\n- second item\n\n| 单元 | other |\n|---|---|\n| 1 | 2 |\n\n"
                   ":::{note}\n注释里。\n:::\n\n```{figure} x.png\n:alt: 替代文字。\n\n保留 {glue:text}`x:.2f`\n```")
    assert counter.translated == 7 and counter.missing == 2  # "second item", "other"


def test_the_language_cell_and_the_chinese_words_are_known_only_for_languages_with_a_catalog():
    assert export_reader.main("book", "_exec/book", "/nonexistent", "xx") == 1
    assert words.languages() == ["zh_CN"]
    with pytest.raises(ValueError, match="no editions in 'xx'"):
        words.Words("xx")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_a_reader_notebook_shows_no_solution_no_prediction_answer_and_no_myst(reader, reader_zh, chapter):
    """Both editions: nothing of an answer and no glued number printed before the Answers."""
    source = nbformat.read(chapter, as_version=4)
    for folder in (reader, reader_zh):
        nb = nbformat.read(folder / chapter.name, as_version=4)
        assert reader_problems(nb, source) == [], folder
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_answer_is_in_the_answers_section_folded(reader, chapter):
    source = nbformat.read(chapter, as_version=4)
    nb = nbformat.read(reader / chapter.name, as_version=4)
    heads = [i for i, c in enumerate(nb.cells) if c.source.startswith(export_reader.ANSWERS)]
    assert len(heads) == 1, "one Answers section"
    answers = nb.cells[heads[0]:]
    text = "\n".join(c.source for c in answers)
    expected = {ln for ln in solution_lines(source) if not myst.roles(ln)}  # no MyST
    assert expected <= {ln.strip() for ln in text.splitlines()}, "an answer is missing"
    code = [c for c in answers if c.cell_type == "code"]
    assert code and all(c.metadata["jupyter"]["source_hidden"] and c.metadata["cellView"] == "form"
                        for c in code)
    assert all(c.source.startswith("# @title Answer to exercise ") and "(double-click to show)"
               in c.source.splitlines()[0] for c in code)
    titles = [c.source for c in answers if c.source.startswith("### Answer to exercise ")]
    assert len(titles) == len(set(titles)) >= 2


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_exercise_cells_hold_the_student_stub_and_predictions_an_ellipsis(reader, chapter):
    source = nbformat.read(chapter, as_version=4)
    nb = nbformat.read(reader / chapter.name, as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    coding = sum(1 for c in source.cells for m in solutions.BLOCK.finditer(c.source)
                 if not solutions.is_prediction(m.group(2), m.group(1)))
    assert text.count("raise NotImplementedError()") >= coding
    for name, _ in predictions(source):
        assert f"{name} = ...  # your prediction" in text, name


def test_a_model_answer_becomes_a_pointer_and_moves_to_the_end():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("### Exercise 9.9 · Why?\nThink.\n\n<details><summary>Model answer"
                                      "</summary>\n\nBecause $x$.\n</details>\n\n### Exercise 9.10 · How?"),
        nbformat.v4.new_code_cell("def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION"),
        nbformat.v4.new_code_cell("### BEGIN SOLUTION\nguess = 3\n### END SOLUTION\n"
                                  "checks.check_prediction('k', guess)")])
    out = export_reader.answers_at_end(copy.deepcopy(nb))
    src = [c.source for c in out.cells]
    assert "Because" not in src[0] and export_reader.POINTER in src[0]
    assert src[1] == "def f(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()"
    assert src[2] == "guess = ...  # your prediction\nchecks.check_prediction('k', guess)"
    assert src[4:] == ["### Answer to exercise 9.9", out.cells[5].source, "### Answer to exercise 9.10",
                       "# @title Answer to exercise 9.10 (double-click to show)\ndef f(x):\n    return x"]
    assert "Because $x$." in src[5] and src[5].startswith("<details>")
    assert "3" not in "".join(src)
    assert export_reader.answers_at_end(copy.deepcopy(out)).cells == out.cells, "idempotent"


def test_an_untouched_reader_notebook_runs_to_the_end_under_run_all(reader, monkeypatch):
    """Chapter 3, the shortest: its checks print ✗ in a kernel, the answers only define."""
    from nbclient import NotebookClient
    monkeypatch.delenv("BEFOREQKV_GRADING", raising=False)
    monkeypatch.delenv("BEFOREQKV_CHECKS", raising=False)
    nb = nbformat.read(reader / SMALL, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(BOOK)}}).execute()
    out = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "\u2717" in out and "replace the `...`" in out and "YOUR CODE HERE" in out


def test_the_measurement_behind_a_model_answer_moves_to_the_answers_and_glue_cells_go(reader):
    """Chapter 8's hidden cell measuring Exercise 8.6's numbers is folded under 8.6's answer;
    no glue call is left anywhere (reader_problems checks the part before the Answers)."""
    nb = nbformat.read(reader / "08_transformer.ipynb", as_version=4)
    start = next(i for i, c in enumerate(nb.cells) if c.source.startswith("## Answers"))
    heads = [i for i, c in enumerate(nb.cells) if c.source.startswith("### Answer to exercise")]
    moved = [i for i, c in enumerate(nb.cells) if "peek_conf = probs.max(-1)" in c.source]
    assert len(moved) == 1 and moved[0] > start
    assert nb.cells[max(h for h in heads if h < moved[0])].source == "### Answer to exercise 8.6"
    assert nb.cells[moved[0]].metadata["jupyter"]["source_hidden"] is True
    for path in CHAPTERS:
        glued = [c.source[:40] for c in nbformat.read(reader / path.name, as_version=4).cells
                 if c.cell_type == "code" and "glue(" in c.source and "assert " not in c.source]
        assert glued == [], path.name


def _nb_with(*cells):
    install = nbformat.v4.new_code_cell(bootstrap.cell_source(nbformat.v4.new_notebook()),
                                        metadata={"tags": ["remove-cell"]})
    return nbformat.v4.new_notebook(cells=[install, *cells])


def test_a_hidden_cell_that_defines_what_a_later_cell_uses_is_an_error():
    hidden = nbformat.v4.new_code_cell("tau = 2.0\nglue('tau', tau)", metadata={"tags": ["remove-cell"]})
    later = nbformat.v4.new_code_cell("assert tau > 0")
    with pytest.raises(ValueError, match=r"defines \['tau'\], which a later cell uses"):
        export_reader.take_hidden_cells(_nb_with(hidden, later))
    inner = nbformat.v4.new_code_cell("glue('m', min(p for p in [1, 2]))", metadata={"tags": ["remove-cell"]})
    nb = _nb_with(inner, nbformat.v4.new_code_cell("p = 3\nprint(p)"))
    assert export_reader.take_hidden_cells(nb) == [] and len(nb.cells) == 2, "a comprehension's name is its own"


def test_reader_notebooks_install_the_commit_they_were_made_from(tmp_path):
    nb = nbformat.read(CHAPTERS[2], as_version=4)
    commit = "89abcdef0123456789abcdef0123456789abcdef"
    out = export_reader.reader_version(nb, _values(nb), BIB, 3, ref=commit)
    assert bootstrap.pinned_ref(out) == commit
    assert bootstrap.head_commit() is None or re.fullmatch(r"[0-9a-f]{40}", bootstrap.head_commit())


def test_the_notebooks_branch_refuses_notebooks_pinned_to_another_commit(reader, tmp_path):
    """The published notebooks install the commit the branch is made from: `make site` pins
    them to HEAD, the workflow assembles the branch with --ref $GITHUB_SHA (the same commit)."""
    pinned = tmp_path / "pinned"
    (pinned / "zh").mkdir(parents=True)
    for path in CHAPTERS:
        nb = nbformat.read(reader / path.name, as_version=4)
        bootstrap.pin(nb, "abc123")
        nbformat.write(nb, pinned / path.name)
        nbformat.write(nb, pinned / "zh" / path.name)
    written = notebooks_branch.assemble(pinned, tmp_path / "branch", ref="abc123")
    assert {bootstrap.pinned_ref(nbformat.read(p, as_version=4)) for p in written} == {"abc123"}
    with pytest.raises(SystemExit, match="install beforeqkv at abc123, not at fff999"):
        notebooks_branch.assemble(pinned, tmp_path / "branch2", ref="fff999")


def test_the_notebooks_branch_holds_the_reader_notebooks_and_a_light_binder(reader, reader_zh, tmp_path):
    out = tmp_path / "branch"
    written = notebooks_branch.assemble(reader, out, ref="main")
    assert [p.name for p in written] == [p.name for p in CHAPTERS] * 2
    folder = notebooks_branch.config()["sphinx"]["config"]["bqkv_notebooks_dir"]
    assert folder == "notebooks"  # the folder the buttons open (tests/test_site.py), not book/
    assert all((out / folder / p.name).read_bytes() == (reader / p.name).read_bytes() for p in CHAPTERS)
    # the Chinese edition's buttons open zh/notebooks/ (its folder in bqkv_editions)
    assert notebooks_branch.config()["sphinx"]["config"]["bqkv_editions"]["zh_CN"] == "zh/"
    assert all((out / "zh" / folder / p.name).read_bytes() == (reader_zh / p.name).read_bytes() for p in CHAPTERS)
    assert not (out / "book").exists()
    reqs = (out / "binder" / "requirements.txt").read_text().splitlines()
    url = notebooks_branch.config()["repository"]["url"].rstrip("/")
    assert f"beforeqkv @ git+{url}@main" in reqs and "." not in reqs
    assert "fonts-noto-cjk" in (out / "binder" / "apt.txt").read_text().split(), "the Chinese notebooks' font"
    assert (out / "binder" / "postBuild").is_file() and (out / "README.md").is_file()
    for name in ("requirements-data.txt", "requirements-real.txt"):  # postBuild reads them
        assert name in (out / "binder" / "postBuild").read_text() and (out / name).is_file()


# ---------------------------------------------------------------- the site's view
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_the_site_shows_solutions_without_markers_and_predictions_without_answers(chapter):
    source = nbformat.read(chapter, as_version=4)
    nb = site_solutions.site_version(copy.deepcopy(source))
    text = "\n".join(c.source for c in nb.cells)
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    for name, line in predictions(source):
        assert line not in text and f"{name} = ...  # your prediction" in text, name
    folded = [c for c in nb.cells if c.metadata.get("mystnb", {}).get("code_prompt_show")]
    solutions = [c for c in folded if c.metadata["mystnb"]["code_prompt_show"] == "Show solution"]
    assert solutions and all(c.metadata["mystnb"]["code_prompt_hide"] == "Hide solution" for c in solutions)
    assert solution_lines(source) <= {ln.strip() for ln in text.splitlines()}, "solutions stay, folded"
    assert site_solutions.site_version(copy.deepcopy(nb)).cells == nb.cells, "idempotent"


def test_the_site_removes_the_output_of_a_prediction_check():
    cell = nbformat.v4.new_code_cell("### BEGIN SOLUTION\nguess = 3\n### END SOLUTION\n"
                                     "checks.check_prediction('k', guess)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="\u2713 k: right. 3 because\n")]
    site_solutions.site_cell(cell)
    assert cell.source == "guess = ...  # your prediction\nchecks.check_prediction('k', guess)"
    assert cell.outputs == []


def test_the_reference_list_reads_the_bibtex_as_plain_unicode():
    """pybtex reads book/references.bib; LaTeX accents and dashes become Unicode."""
    lstm = BIB["hochreiter1997lstm"]
    assert lstm["author"] == "Hochreiter, Sepp and Schmidhuber, Jürgen" and lstm["year"] == "1997"
    assert lstm["pages"] == "1735–1780" and "{" not in lstm["title"]
    assert all("\\" not in v and "{" not in v for e in BIB.values() for v in e.values())


def test_the_chinese_language_cell_installs_a_cjk_font_on_colab_only():
    cell = export_reader.language_cell("zh_CN")
    assert cell.startswith("# 中文版：") and 'os.environ["BEFOREQKV_LANG"] = "zh_CN"' in cell
    assert f'"mplfonts=={export_reader.MPLFONTS}"' in cell and 'if "google.colab" in sys.modules:' in cell
    assert max(len(line) for line in cell.splitlines()) <= 76
    compile(cell, "<language cell>", "exec")
