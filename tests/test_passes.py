"""tools/editions/passes.py: every edition is a composition of pure passes. An edition never
changes the notebook it is given (the same chapter can go through one edition after another),
and its recipe is the list of passes it composes."""
import copy

import nbformat
import pytest

from _book import CHAPTERS
from test_reader import BIB, _values

from editions import assignments, book, export_reader, otter_assign, passes, site_solutions, student
from editions.words import Words

# the chapters with every kind of cell an edition changes: hidden model answers, predictions,
# coding exercises, open questions with model answers, figures
SAMPLE = [p for p in CHAPTERS if p.stem[:2] in ("01", "08", "10")]


def _editions(path):
    nb = nbformat.read(path, as_version=4)
    ch, values = book.chapter_number(path), _values(nb)
    return nb, {
        "site": lambda n: site_solutions.site_version(n),
        "student": lambda n: student.student_version(n),
        "student_site": lambda n: student.student_version(n, keep_outputs=True),
        "reader": lambda n: export_reader.reader_version(n, values, BIB, ch, ref="0" * 40),
        "reader_zh": lambda n: export_reader.reader_version(n, values, BIB, ch, w=Words("zh_CN")),
        "translation": lambda n: export_reader.translated(n, path, "zh_CN"),
        "nbgrader": lambda n: assignments.source_version(n, values, BIB, ch),
        "otter": lambda n: otter_assign.otter_source(n, "ch", ch),     # from the nbgrader edition
    }


@pytest.mark.parametrize("path", SAMPLE, ids=lambda p: p.stem)
def test_no_edition_changes_the_notebook_it_is_given(path):
    nb, editions = _editions(path)
    for name, edition in editions.items():
        given = nb if name != "otter" else assignments.source_version(copy.deepcopy(nb), _values(nb), BIB,
                                                                      book.chapter_number(path))
        before = copy.deepcopy(given)
        out = edition(given)
        assert given == before, f"{path.stem}: the {name} edition changed its input"
        assert out is not given and out != before, f"{path.stem}: the {name} edition did nothing"


def test_an_edition_is_its_passes_in_order():
    seen = []

    def step(tag):
        def mark(nb):
            seen.append(tag)
            nb.cells.append(nbformat.v4.new_markdown_cell(tag))
        return passes.pure(mark)
    nb = nbformat.v4.new_notebook()
    out = passes.compose(step("a"), step("b"), passes.cellwise(lambda c: c.update(source=c.source * 2)))(nb)
    assert [c.source for c in out.cells] == ["aa", "bb"] and seen == ["a", "b"] and nb.cells == []


def test_the_editions_share_their_passes(monkeypatch):
    """The students' two editions strip the same way; the reader and nbgrader editions share the
    reader's Markdown (one pass, not two copies)."""
    assert student.STUDENT.passes[1:] == student.STUDENT_SITE.passes[1:]
    assert len(student.STUDENT.passes) == 3 and len(site_solutions.site_version.passes) == 1
    ran = []
    real = export_reader.reader_notebook

    def spy(nb, *args, **kwargs):
        ran.append(nb.metadata.get("kernelspec", {}).get("name"))
        return real(nb, *args, **kwargs)
    nb = nbformat.read(SAMPLE[0], as_version=4)
    monkeypatch.setattr(export_reader, "reader_notebook", spy)
    export_reader.reader_version(nb, _values(nb), BIB, 1)
    assignments.source_version(nb, _values(nb), BIB, 1)
    assert len(ran) == 2, "both editions go through export_reader.markdown_pass"


def test_a_pass_made_of_a_mutating_step_works_on_a_copy():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    out = passes.cellwise(lambda c: c.update(source="y = 2"))(nb)
    assert nb.cells[0].source == "x = 1" and out.cells[0].source == "y = 2"
    out = passes.stable_ids("k")(nb)
    assert [c.id for c in out.cells] == ["k-000"] and (out.nbformat, out.nbformat_minor) == (4, 5)
    assert nb.cells[0].id != "k-000"
