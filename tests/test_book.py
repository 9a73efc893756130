"""Book-level tests: the toc, the chapter skeleton, stripped notebooks, glue and citations."""
from __future__ import annotations
import re

import nbformat
import pytest

from _book import BOOK, CHAPTERS, CITE, GLUE_USE, ROOT, glue_patterns, read, sources, toc_files


def test_there_are_chapters():
    assert len(CHAPTERS) >= 1


def test_every_toc_entry_exists():
    for entry in toc_files():
        assert any((ROOT / f"{entry}{ext}").exists() for ext in (".md", ".ipynb")), f"_toc.yml lists missing {entry}"


def test_every_page_in_book_is_in_the_toc():
    listed = set(toc_files())
    pages = [p for p in BOOK.glob("*") if p.suffix in (".md", ".ipynb")]
    for page in pages:
        assert f"book/{page.stem}" in listed, f"{page.name} is not in _toc.yml"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_notebook_is_stored_without_outputs(path):
    nb = read(path)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert not cell.outputs, f"{path.name} cell {i} has outputs: run `make strip`"
            assert cell.execution_count is None, f"{path.name} cell {i} has an execution count: run `make strip`"
    assert "widgets" not in nb.metadata, f"{path.name} stores widget state: run `make strip`"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_follows_the_skeleton(path):
    nb = read(path)
    number = int(path.name[:2])
    first = nb.cells[0]
    assert first.cell_type == "markdown"
    assert re.search(r"^\(ch-[a-z0-9-]+\)=\s*$", first.source, re.M), "title cell needs a (ch-slug)= label"
    assert re.search(rf"^# {number} · \S", first.source, re.M), f"title must read '# {number} · ...'"
    assert "Runs on a CPU in about" in first.source
    colab = nb.cells[1]
    assert colab.cell_type == "code" and "remove-cell" in colab.metadata.get("tags", [])
    assert 'find_spec("beforeqkv")' in colab.source
    setup = nb.cells[2].source
    # get_device("cpu") in a chapter whose reference numbers were computed on a CPU (chapter 11)
    for needle in ("beforeqkv.get_device(", "beforeqkv.setup()", "beforeqkv.seed_everything("):
        assert needle in setup, f"setup cell lacks {needle}"
    code = "\n".join(sources(nb, "code"))
    md = "\n".join(sources(nb, "markdown"))
    assert "sys.path" not in code, "no sys.path edits: the package is installed"
    for heading in ("## Summary", "## Exercises", "## References"):
        assert heading in md, f"missing {heading}"
    assert len(re.findall(r"^### Exercise \d+\.\d+ · ", md, re.M)) >= 3, "at least three exercises"
    assert "checks.check_prediction(" in code, "needs a checked predict-then-run question"
    assert re.search(r"checks\.check_(?!prediction)\w+\(", code), "needs a checked coding exercise"
    assert "### BEGIN SOLUTION" in code and "### END SOLUTION" in code
    assert re.search(r"^assert ", code, re.M), "every claim needs an assert"
    assert "widgets.explorer(" in code, "needs an explorer (after a static figure)"
    assert "{footbibliography}" in md, "end with the chapter's references: a footbibliography"
    assert "{cite" not in md, "use {footcite:t} / {footcite:p} in chapters (per-page references, no duplicates)"
    assert "skip-execution" not in str([c.metadata for c in nb.cells])


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_glued_number_in_the_prose_is_computed(path):
    nb = read(path)
    used = set(GLUE_USE.findall("\n".join(sources(nb, "markdown"))))
    patterns = glue_patterns("\n".join(sources(nb, "code")))
    assert used, "quote at least one measured number with {glue:text}"
    missing = sorted(u for u in used if not any(p.match(u) for p in patterns))
    assert not missing, f"glued in prose but never computed: {missing}"
    prefix = f"ch{int(path.name[:2])}_"
    assert all(p.pattern.startswith(prefix) for p in patterns), f"glue names must start with {prefix}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_prose_writes_powers_of_ten_as_a_book_does(path):
    """No {glue:text}`name:.1e` (or :g) in prose: it prints 2.8e+14 or 6e-08. Glue
    beforeqkv.sci(value) instead, a string such as 2.8 × 10¹⁴, and quote it without a spec."""
    prose = "\n".join(sources(read(path), "markdown"))
    specs = re.findall(r"\{glue(?::text|:any|)?\}`([A-Za-z0-9_]+):([^`]*)`", prose)
    exponent = [f"{name}:{spec}" for name, spec in specs if spec[-1:] in ("e", "E", "g", "G")]
    assert not exponent, f"{path.name}: exponent formats in prose: {exponent}"


def test_every_citation_is_in_the_bibliography():
    bib = (BOOK / "references.bib").read_text()
    keys = set(re.findall(r"^@\w+\{([^,]+),", bib, re.M))
    texts = [p.read_text() for p in BOOK.glob("*.md")] + [
        "\n".join(sources(read(p), "markdown")) for p in CHAPTERS]
    cited = {k.strip() for t in texts for group in CITE.findall(t) for k in group.split(",")}
    assert cited, "the book should cite its sources"
    assert cited <= keys, f"cited but not in references.bib: {sorted(cited - keys)}"


def test_readme_states_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    assert "make book" in readme and "make test" in readme
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci


MAX_CODE_WIDTH = 76  # characters a code cell shows at the page's column width (1280 px)
MAX_FOLDED_WIDTH = 75  # a folded cell (hide-input/hide-cell) is one character narrower


def _visible(cell) -> bool:
    tags = cell.metadata.get("tags", [])
    return cell.cell_type == "code" and not ({"remove-cell", "remove-input"} & set(tags))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_visible_code_fits_the_column(path):
    nb = nbformat.read(path, as_version=4)
    def limit(cell):
        folded = {"hide-input", "hide-cell"} & set(cell.metadata.get("tags", []))
        return MAX_FOLDED_WIDTH if folded else MAX_CODE_WIDTH

    wide = [(i, line) for i, cell in enumerate(nb.cells) if _visible(cell)
            for line in cell.source.splitlines() if len(line) > limit(cell)]
    assert not wide, (f"{path.name}: {len(wide)} visible code lines are wider than "
                      f"{MAX_CODE_WIDTH} characters ({MAX_FOLDED_WIDTH} in a folded cell), "
                      f"e.g. cell {wide[0][0]}: {wide[0][1]!r}")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_glue_is_bookkeeping_the_page_does_not_show(path):
    nb = nbformat.read(path, as_version=4)
    shown = [i for i, cell in enumerate(nb.cells) if _visible(cell)
             and re.search(r"^\s*(\w+\.)?glue\(", cell.source, re.M)]
    assert not shown, (f"{path.name}: cells {shown} show glue(...) calls on the page; move them "
                       "into a cell tagged remove-cell")


MAX_CELL_LINES = 15  # a visible code cell the reader takes in at one glance
HIDDEN_TAGS = {"hide-input", "remove-input", "remove-cell", "hide-cell"}
# Cells that hold one function and nothing else, longer than MAX_CELL_LINES: a cell
# boundary cannot cut a function, so only rewriting it would shorten them.
# (notebook stem, function name); an entry that no longer needs it fails the test.
LONG_FUNCTIONS = {
    ("02_keep_every_state", "fixed_memory_recall"),
    ("08_transformer", "spread_per_block"),
    ("10_real_encoder", "bert_layer"),
    ("10_real_encoder", "symmetric_head"),
    ("10_real_encoder", "head_writes"),
}


def long_code_cells(nb) -> list[tuple[int, int, str | None]]:
    """(cell index, lines, the function it alone defines or None) of every visible code
    cell longer than MAX_CELL_LINES; lines: len(source.strip().splitlines())."""
    import ast
    found = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or HIDDEN_TAGS & set(cell.metadata.get("tags", [])):
            continue
        n = len(cell.source.strip().splitlines())
        if n > MAX_CELL_LINES:
            try:
                body = ast.parse(cell.source).body
            except SyntaxError:
                body = []
            defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            only = body[0].name if len(body) == 1 and isinstance(body[0], defs) else None
            found.append((i, n, only))
    return found


def too_long(named_notebooks) -> tuple[list, set]:
    """([(notebook, cell index, lines)] over the limit and not allowed, the allowed entries
    used) for [(notebook stem, notebook)]."""
    bad, used = [], set()
    for stem, nb in named_notebooks:
        for i, n, only in long_code_cells(nb):
            if (stem, only) in LONG_FUNCTIONS:
                used.add((stem, only))
            else:
                bad.append((f"{stem}.ipynb", i, n))
    return bad, used


def test_every_visible_code_cell_is_at_most_15_lines():
    """A reader sees a cell at once: split a long one at a natural boundary (settings and
    helpers; the run, its table and its asserts), each part with the cell's metadata."""
    bad, used = too_long((p.stem, read(p)) for p in CHAPTERS)
    assert not bad, (f"{len(bad)} visible code cells are longer than {MAX_CELL_LINES} lines "
                     f"(notebook, cell index, lines): {bad}")
    assert used == LONG_FUNCTIONS, f"LONG_FUNCTIONS lists cells no longer long: {LONG_FUNCTIONS - used}"


def test_the_cell_length_check_catches_a_long_cell():
    long = "\n".join(f"x{k} = {k}" for k in range(MAX_CELL_LINES + 1))
    hidden = nbformat.v4.new_code_cell(long, metadata={"tags": ["hide-input"]})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("\n\n" + long[:20] + "\n\n"),
                                         nbformat.v4.new_code_cell(long), hidden])
    assert too_long([("99_x", nb)]) == ([("99_x.ipynb", 1, MAX_CELL_LINES + 1)], set())


def test_every_exercise_shows_its_difficulty_and_time():
    from editions import marks
    assert marks.main(["--check", *map(str, CHAPTERS)]) == 0, "run python -m editions.marks --write book/*.ipynb"
    assert marks.marked("### Exercise 1.1 · A\nText", {"1.1": {"difficulty": 2, "minutes": 5}}) == \
        "### Exercise 1.1 · A\n*Difficulty ★★☆ · about 5 min*\n\nText"
    with pytest.raises(ValueError, match="1.2"):
        marks.marked("### Exercise 1.2 · B", {})
