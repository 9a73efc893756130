"""editions.book and editions.cells: what the site and every edition read the same way."""
import nbformat
from editions import book, cells
from _book import ROOT


def test_chapter_numbers_from_any_spelling_of_a_page():
    assert book.chapter_number("book/05_queries_keys") == 5
    assert book.chapter_number("05_queries_keys.ipynb") == 5
    assert book.chapter_number(ROOT / "book" / "11_modern_llm.ipynb") == 11
    assert book.chapter_number("book/teachers") is None


def _figures(*names):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("text")]
    for name in names:
        cell = nbformat.v4.new_code_cell("plot()")
        if name:
            cell.metadata["mystnb"] = {"figure": {"name": name}}
        nb.cells.append(cell)
    return nb


def test_the_reader_notebooks_and_the_site_number_figures_alike():
    assert book.figure_numbers(_figures("fig-a", None, "fig-b"), 5) == {"fig-a": "5.1", "fig-b": "5.2"}
    assert book.figure_numbers(_figures("fig-a"), None) == {"fig-a": "1"}
    site = {"book/05_x": {"figure": {"id2": (3,), "id1": (2,)}}, "book/teachers": {"figure": {"f": (7,)}}}
    book.number_per_chapter(site)
    assert site == {"book/05_x": {"figure": {"id1": (5, 1), "id2": (5, 2)}}, "book/teachers": {"figure": {"f": (1,)}}}


def test_the_toc_walk_lists_every_page_root_first():
    pages = book.toc_pages()
    assert pages[0] and "book/05_queries_keys" in pages and len(pages) == len(set(pages))


def test_clear_outputs_clears_code_and_leaves_markdown():
    code = nbformat.v4.new_code_cell("1", outputs=[nbformat.v4.new_output("stream", text="1")], execution_count=3)
    text = nbformat.v4.new_markdown_cell("hi")
    cells.clear_outputs(code)
    cells.clear_outputs(text)
    assert code.outputs == [] and code.execution_count is None and "outputs" not in text


def _words_written(path, function):
    """The English words a module hands to ``function`` (string literals and module constants)."""
    import ast
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants = {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 for t in node.targets if isinstance(t, ast.Name) and isinstance(node.value, ast.Constant)}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == function:
            arg = node.args[-1]
            found.add(arg.value if isinstance(arg, ast.Constant) else constants[arg.id])
    return found


def test_every_word_the_editions_write_is_in_each_language_s_catalog():
    """One store: the reader export's words, its language cell's comment, the site's fold
    prompts and tooltip all come from locales/<lang>/editions.po, each translated."""
    from editions import export_reader, site_solutions, words
    wanted = _words_written(ROOT / "tools" / "editions" / "export_reader.py", "w")
    wanted |= _words_written(ROOT / "_ext" / "bqkv_site.py", "ui_string")
    wanted |= {export_reader.LANGUAGE_COMMENT, site_solutions.SHOW, site_solutions.HIDE,
               site_solutions.PREDICTION_SHOW, site_solutions.PREDICTION_HIDE, "Model answer"}
    assert len(wanted) >= 15 and "Figure" in wanted and "Download the notebook (answers at its end)" in wanted
    assert words.languages()
    for lang in words.languages():
        missing = sorted(wanted - set(words.catalog(lang)))
        assert not missing, f"locales/{lang}/editions.po lacks {missing}"


def test_python_m_editions_lists_every_tool_of_the_package():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "editions"], capture_output=True, text=True, check=True).stdout
    tools = {p.stem for p in (ROOT / "tools" / "editions").glob("*.py")} - {
        "__init__", "__main__", "myst", "solutions", "book", "words", "cells", "passes", "paths", "generated"}
    missing = sorted(t for t in tools if f"``{t}``" not in out)
    assert not missing, f"tools/editions/__init__.py does not list {missing}"
