"""Reader notebooks: the chapters as a reader opens them in Jupyter or Colab, no raw MyST.

    python -m editions.export_reader book _exec/book dist/reader
    python -m editions.export_reader book _exec_zh/book dist/reader/zh zh_CN   # the Chinese edition

Generated from the one source notebook per chapter (``book/NN_*.ipynb``), never edited
by hand: ``{glue:text}`name:fmt``` becomes the value of the book's executed run (read
from the glue outputs of ``_exec/book/NN_*.ipynb``; a value that is missing or empty
stops the export with the chapter and the glue name), ``{footcite:t}``/``{footcite:p}``
become "Author (year)" / "(Author, year)" and the ``{footbibliography}`` directive a
plain reference list, ``(label)=`` lines are dropped, other roles keep their text and
other directives become plain Markdown. Outputs are cleared. The site keeps glue.

No solution is in view (:func:`answers_at_end`), because a reader who opens the notebook
should try each exercise before seeing its answer:

* a coding exercise's cell gets the student stub of ``tools/editions/student.py`` (``# YOUR CODE
  HERE`` + ``raise NotImplementedError()``); its full solution (markers dropped) goes to
  an ``## Answers`` section at the end of the notebook, under ``### Answer to exercise
  N.k``, in a code cell whose source is folded: ``metadata.jupyter.source_hidden`` in
  JupyterLab and Notebook 7, Colab's form view (``metadata.cellView = "form"`` and a
  first line ``# @title ...``; double-click shows the code) in Colab;
* an open question's ``<details>`` model answer moves to the same section (a
  ``<details>`` block there too, folded in every viewer);
* a prediction (one ``name = value`` line) becomes ``name = ...  # your prediction`` and
  its answer is nowhere in the notebook: the experiment after the check measures it.

Nothing the site hides reaches a reader either (:func:`take_hidden_cells`): a code cell
tagged ``remove-cell`` (glue calls, the computations behind a model answer's numbers) would
print its values in Jupyter, where ``glue`` prints. In the chapter such a cell is dropped
(its numbers are already in the prose, and no later cell may use a name it defines); after
the first exercise a cell that measures and asserts moves, folded, to the Answers section
of its exercise. The install
cell stays, pinned to the commit the notebooks are made from (``bootstrap.pin``).

Run All still reaches the end: in a kernel, a check whose notebook holds no solution
block prints ``✗`` and a hint instead of raising (``beforeqkv.checks``), and the answer
cells only define the reference functions. ``reader_notebook`` alone (the MyST-free
Markdown, solutions kept) is what ``tools/editions/assignments.py`` builds on.

With a language (``zh_CN``), the Markdown is first translated from the site's catalogs
(``tools/editions/translate_nb.py``: a block without a translation stays English, as on the site),
the words this export writes itself (figure numbers, the Answers section) are in that
language, and a cell after the install cell sets ``BEFOREQKV_LANG``, so the checkers'
hints, the banner and the figures speak it too.
"""
from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

import nbformat

from . import bootstrap, myst, prints
from .book import chapter_number, chapters, figure_numbers
from .solutions import BLOCK, DETAILS, HEADING, is_prediction, strip_solutions
from .translate_nb import lookup_for, page_of, translate_notebook
from .words import ENGLISH, Words
from .cells import clear_outputs, unfold
from .passes import Pass, compose, pure

ADMONITIONS = {"note", "tip", "warning", "important", "hint", "caution", "attention", "danger", "error", "seealso",
               "admonition", "margin", "sidebar", "dropdown"}

MPLFONTS = "0.0.11"  # a CJK font for matplotlib on Colab (beforeqkv.plot.cjk_font finds it)
LANGUAGE_COMMENT = (  # the language cell's comment, in the edition's language (editions.words)
    "# This edition's language for the checkers' hints, the set-up messages\n"
    "# and the words in the figures (beforeqkv reads BEFOREQKV_LANG). Colab\n"
    "# has no font for it: install one (mplfonts carries Noto Sans CJK SC;\n"
    "# elsewhere install the system's fonts-noto-cjk).")


def language_cell(lang: str) -> str:
    """The cell after the install cell of a translated notebook: it sets BEFOREQKV_LANG, so
    the checkers' hints, the banner and the figures speak the edition's language."""
    return (f"{Words(lang)(LANGUAGE_COMMENT)}\n"
            "import importlib\n"
            "import os\n"
            "import subprocess\n"
            "import sys\n\n"
            f"os.environ[\"BEFOREQKV_LANG\"] = \"{lang}\"\n"
            "if \"google.colab\" in sys.modules:\n"
            "    subprocess.run([sys.executable, \"-m\", \"pip\", \"install\", \"-q\",\n"
            f"                    \"mplfonts=={MPLFONTS}\"], check=False)\n"
            "    importlib.invalidate_caches()")


class MissingGlue(KeyError):
    """A glue role names a value that the executed notebook does not hold (or holds empty)."""


def _glue_text(out) -> str | None:
    """The text of one glue output: myst-nb stores it under its mime prefix
    (``application/papermill.record/text/plain``); plain ``text/plain`` as a fallback."""
    meta = out.get("metadata", {}).get("scrapbook", {})
    data = out.get("data", {})
    for key in (meta.get("mime_prefix", "") + "text/plain", "text/plain"):
        if key in data:
            text = data[key]
            return "".join(text) if isinstance(text, list) else text
    return None


def glue_values(executed: Path) -> dict[str, object]:
    """name -> value for every ``glue(name, value)`` output of an executed notebook;
    :class:`MissingGlue` (name, "empty") for a glue output without a value."""
    values: dict[str, object] = {}
    nb = nbformat.read(executed, as_version=4)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            meta = out.get("metadata", {}).get("scrapbook")
            if not meta:
                continue
            text = (_glue_text(out) or "").strip()
            if not text:
                raise MissingGlue(meta["name"], "empty")
            try:
                values[meta["name"]] = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                values[meta["name"]] = text.strip("'\"")
    return values


def bib_entries(bib: Path) -> dict[str, dict[str, str]]:
    """key -> {author, title, year, ...} from a BibTeX file, read by pybtex (Sphinx's own
    BibTeX reader), LaTeX turned into plain Unicode: {\\"u} -> \u00fc, -- -> \u2013."""
    from pybtex.database import parse_file
    from pybtex.richtext import Text

    def plain(latex: str) -> str:
        return Text.from_latex(latex).render_as("text")

    entries = {}
    for key, entry in parse_file(str(bib), bib_format="bibtex").entries.items():
        fields = {name.lower(): plain(value).strip() for name, value in entry.fields.items()}
        if "author" in entry.persons:
            fields["author"] = " and ".join(plain(str(p)) for p in entry.persons["author"])
        entries[key] = fields
    return entries


def _surnames(author: str) -> str:
    names = [a.split(",")[0].strip() if "," in a else a.strip().split()[-1] for a in author.split(" and ")]
    if len(names) > 2:
        return f"{names[0]} et al."
    return " and ".join(names)


def _cite(keys: str, bib: dict, textual: bool, cited: list) -> str:
    parts = []
    for key in (k.strip() for k in keys.split(",")):
        e = bib.get(key, {})
        if key not in cited:
            cited.append(key)
        who, year = _surnames(e.get("author", key)), e.get("year", "n.d.")
        parts.append(f"{who} ({year})" if textual else f"{who}, {year}")
    return "; ".join(parts) if textual else "(" + "; ".join(parts) + ")"


def _glue(content: str, values: dict) -> str:
    name, _, spec = content.partition(":")
    value = values.get(name)
    if value is None or value == "":
        raise MissingGlue(name)
    try:
        return format(value, spec) if spec else str(value)
    except (ValueError, TypeError):
        return str(value)


def _reference_list(cited: list, bib: dict, w: Words) -> str:
    lines = []
    for key in cited:
        e = bib.get(key, {})
        venue = e.get("journal") or e.get("booktitle") or e.get("publisher") or e.get("howpublished", "")
        lines.append(f"- {e.get('author', key).replace(' and ', ', ')} ({e.get('year', 'n.d.')}). "
                     f"*{e.get('title', key)}*." + (f" {venue}." if venue else ""))
    return "\n".join(lines) if lines else w("(no references cited in this chapter)")


def _directive(name: str, arg: str, body: str, plain) -> str:
    """One directive as plain Markdown; ``plain`` turns its body's MyST into Markdown."""
    if name == "footbibliography":
        return "\0REFERENCES\0"
    if name == "math":
        return f"$$\n{body.strip()}\n$$"
    body = plain(body)
    if name in ("figure", "image"):
        return f"![{body.strip()}]({arg})"
    if name in ADMONITIONS:
        title = arg or name.capitalize()
        return "\n".join([f"> **{title}**", ">"] + [f"> {line}" if line else ">" for line in body.strip().splitlines()])
    return body.strip()


def reader_markdown(text: str, values: dict, bib: dict, cited: list,
                    figures: dict | None = None, w: Words = ENGLISH) -> str:
    """One markdown cell without MyST syntax (read by :mod:`editions.myst`); ``cited``
    collects the citation keys in reading order; ``w``: the words of the edition's language."""
    def role(kind: str, content: str) -> str:
        if kind == "numref":
            label = re.sub(r"^.*<([^>]*)>$", r"\1", content).strip()
            if label not in (figures or {}):
                raise KeyError(f"{{numref}} names {label!r}, which is no figure of this page")
            return f"{w('Figure')} {figures[label]}"
        if kind.startswith("glue"):
            return _glue(content, values)
        if kind.startswith("footcite") or kind.startswith("cite"):
            return _cite(content, bib, textual=kind.endswith(":t"), cited=cited)
        if kind == "math":
            return f"${content}$"
        target = re.match(r"(.*?)\s*<[^>]*>$", content)
        return target.group(1) if target else content  # {ref}`text <label>` -> text

    def plain(body: str) -> str:
        return myst.rewrite(body, role, directive)

    def directive(name: str, arg: str, body: str) -> str:
        return _directive(name, arg, body, plain)

    return plain(text)


def reader_notebook(nb, values: dict, bib: dict, chapter: int | None = None, w: Words = ENGLISH):
    """The notebook with every markdown cell in plain Markdown and outputs cleared;
    ``chapter`` numbers its figures as the site does ("Figure 5.2"). The cells the site hides
    are dropped (:func:`reader_version` moves those after the exercises to the Answers)."""
    take_hidden_cells(nb)
    cited: list = []
    figures = figure_numbers(nb, chapter)
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        if cell.cell_type == "markdown":
            cell.source = reader_markdown(cell.source, values, bib, cited, figures, w)
            continue
        clear_outputs(cell)
        figure = cell.metadata.get("mystnb", {}).get("figure", {})
        if figure.get("name") in figures:  # the site's caption, under the figure
            caption = reader_markdown(figure.get("caption", ""), values, bib, cited, figures, w)
            cells.append(nbformat.v4.new_markdown_cell(
                f"**{w('Figure')} {figures[figure['name']]}.** {caption}".rstrip()))
    nb.cells = cells
    for cell in nb.cells:
        if cell.cell_type == "markdown" and "\0REFERENCES\0" in cell.source:
            cell.source = cell.source.replace("\0REFERENCES\0", _reference_list(cited, bib, w))
    return nb


ANSWERS = "## Answers"
ANSWERS_INTRO = ("For after your own attempt. Each code answer is folded: click the bar "
                 "to the left of the cell (JupyterLab, Jupyter Notebook) or double-click it "
                 "(Colab) to see it. Running it defines the reference version; run the "
                 "exercise's check after it to compare.")
POINTER = "*The model answer is at the end of this notebook, under* **Answers**."


def _exercise_at(text: str, pos: int, current: str | None) -> str | None:
    """The number of the last exercise heading before ``pos`` in ``text``, else ``current``."""
    found = [m.group(1) for m in HEADING.finditer(text) if m.start() < pos]
    return found[-1] if found else current


def _answer_title(number: str | None, w: Words) -> str:
    return w("Answer to exercise {number}").format(number=number) if number else w("Answer")


def _answer_code(number: str | None, solution: str, w: Words):
    cell = nbformat.v4.new_code_cell(f"# @title {_answer_title(number, w)}{w(' (double-click to show)')}\n{solution}")
    cell.metadata.update({"jupyter": {"source_hidden": True}, "cellView": "form"})
    return cell


def _answer_text(body: str, w: Words):
    return nbformat.v4.new_markdown_cell(
        f"<details><summary>{w('Model answer (click to show)')}</summary>\n\n{body.strip()}\n\n</details>")


def _exercise_key(number: str | None) -> tuple:
    """Sort key of an exercise number ("8.10" after "8.9"); stable for equal numbers."""
    return tuple(int(p) for p in number.split(".")) if number else ()


_OWN_SCOPE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
              ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _bound_names(tree: ast.AST) -> set[str]:
    """The names a cell binds in the notebook's namespace (assignments, loops, imports,
    definitions, ``with ... as``; not the names inside a function or a comprehension)."""
    names, todo = set(), [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        if not isinstance(node, _OWN_SCOPE):
            todo += ast.iter_child_nodes(node)
    return names


def _loaded_names(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def take_hidden_cells(nb) -> list[tuple[str, str]]:
    """Take every code cell the site hides (tag ``remove-cell``) out of ``nb``, the install
    cell excepted; return (exercise number, source) of those after the first exercise
    heading that measure and assert (a model answer's numbers), whose place is the Answers
    section; the rest (glue calls: their numbers are in the prose) are dropped. Neither may
    define a name a later cell uses (moved, it would run after that cell): that is a
    ValueError naming the names."""
    install = bootstrap.bootstrap_cell(nb)
    kept, taken, number = [], [], None
    dropped: list[tuple[int, set]] = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            number = _exercise_at(cell.source, len(cell.source), number)
        hidden = (cell.cell_type == "code" and cell is not install
                  and "remove-cell" in cell.metadata.get("tags", []))
        tree = ast.parse(cell.source) if hidden else None
        if not hidden:
            kept.append(cell)
        else:
            if number and any(isinstance(node, ast.Assert) for node in tree.body):
                taken.append((number, cell.source))  # a model answer's measurement, with its checks
            dropped.append((len(kept), _bound_names(tree)))
    code = [(i, ast.parse(c.source)) for i, c in enumerate(kept) if c.cell_type == "code"]
    loads = [(i, _loaded_names(tree)) for i, tree in code]
    binds = [(i, _bound_names(tree)) for i, tree in code]
    for at, names in dropped:
        used = names & set().union(*(n for i, n in loads if i >= at))
        rebound = set().union(*(n for i, n in binds if i < at))
        if used - rebound:
            raise ValueError(f"a cell the site hides (remove-cell) defines {sorted(used - rebound)}, "
                             "which a later cell uses: compute them in a visible cell")
    nb.cells = kept
    return taken


def _hide_code_solution(cell, number, answers: list, w: Words) -> None:
    if any(is_prediction(m.group(2), m.group(1)) for m in BLOCK.finditer(cell.source)):
        cell.source = strip_solutions(cell.source, "code", comment=w("your prediction"))
    else:
        solution = BLOCK.sub(lambda m: m.group(2).rstrip("\n"), cell.source)
        cell.source = strip_solutions(cell.source, "code")
        answers.append((number, _answer_code(number, solution, w)))
    unfold(cell)


def _move_model_answers(cell, number, answers: list, w: Words) -> str | None:
    def move(m):
        answers.append((_exercise_at(cell.source, m.start(), number), _answer_text(m.group(1), w)))
        return f"\n\n{w(POINTER)}"
    source = cell.source
    cell.source = DETAILS.sub(move, source)
    return _exercise_at(source, len(source), number)


def answers_at_end(nb, hidden: list | None = None, w: Words = ENGLISH):
    """No solution in view: stubs in place, answers in an ``## Answers`` section at the end,
    predictions reduced to ``name = ...`` with no answer anywhere (see the module docstring);
    ``hidden``: (exercise number, source) of the site's hidden cells after the exercises
    began (:func:`take_hidden_cells`), folded under their exercise's answer."""
    number, answers = None, []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            number = _move_model_answers(cell, number, answers, w)
        elif BLOCK.search(cell.source):
            _hide_code_solution(cell, number, answers, w)
    answers += [(n, _answer_code(n, source, w)) for n, source in hidden or []]
    if not answers:
        return nb
    cells = [nbformat.v4.new_markdown_cell(f"{w(ANSWERS)}\n\n{w(ANSWERS_INTRO)}")]
    seen = set()
    for number, cell in sorted(answers, key=lambda a: _exercise_key(a[0])):
        if number not in seen:
            seen.add(number)
            cells.append(nbformat.v4.new_markdown_cell(f"### {_answer_title(number, w)}"))
        cells.append(cell)
    for k, cell in enumerate(cells):  # stable ids: exporting twice writes the same file
        cell["id"] = f"answers-{k:03d}"
    nb.cells += cells
    return nb


ANSWER_OF = "editions_answer_of"     # a set-aside hidden cell's metadata: its exercise's number


def set_aside_hidden_answers(nb) -> None:
    """The site's hidden cells out (:func:`take_hidden_cells`); those that are a model
    answer's measurement wait at the end, marked with their exercise, for :func:`answers_pass`."""
    for number, source in take_hidden_cells(nb):
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata[ANSWER_OF] = number
        nb.cells.append(cell)


def markdown_pass(values: dict, bib: dict, chapter: int | None = None, w: Words = ENGLISH) -> Pass:
    """The pass the reader and the nbgrader editions share: :func:`reader_notebook`."""
    return pure(functools.partial(reader_notebook, values=values, bib=bib, chapter=chapter, w=w))


def answers_pass(w: Words = ENGLISH) -> Pass:
    """:func:`answers_at_end`, with the hidden cells :func:`set_aside_hidden_answers` marked."""
    def answers(nb):
        hidden = [(c.metadata[ANSWER_OF], c.source) for c in nb.cells if ANSWER_OF in c.metadata]
        nb.cells = [c for c in nb.cells if ANSWER_OF not in c.metadata]
        return answers_at_end(nb, hidden, w)
    return pure(answers)


def _ids_for_its_format(nb) -> None:
    if (nb.nbformat, nb.nbformat_minor) < (4, 5):  # cell ids are nbformat 4.5
        for cell in nb.cells:
            cell.pop("id", None)


def reader_version(nb, values: dict, bib: dict, chapter: int | None = None, ref: str | None = None,
                   w: Words = ENGLISH):
    """What ``make reader-notebooks`` writes (a new notebook): reader Markdown, answers at the
    end, the install cell pinned to ``ref`` (a commit) when one is given, the export's own
    words from ``w`` (``Words("zh_CN")`` for the Chinese edition)."""
    pin = [pure(functools.partial(bootstrap.pin, ref=ref))] if ref else []
    return compose(pure(set_aside_hidden_answers), markdown_pass(values, bib, chapter, w), answers_pass(w),
                   *pin, pure(_ids_for_its_format), name="reader")(nb)


def has_raw_myst(text: str) -> list[str]:
    """The raw MyST constructs left in a markdown text (empty when clean)."""
    return myst.raw_myst(text)


def translation(path: Path, lang: str) -> Pass:
    """The pass to ``lang``: the Markdown and the print lines of the chapter at ``path`` from the
    catalogs (``editions.translate_nb``, ``editions.prints``), a cell setting BEFOREQKV_LANG
    after the install cell (the first code cell)."""
    def translate(nb):
        nb, _ = translate_notebook(nb, lookup_for(page_of(path), lang))
        prints.translate_notebook(nb, prints.lookup_for(path.stem, lang))  # what its code cells print
        first = next((k for k, c in enumerate(nb.cells) if c.cell_type == "code"), -1)
        cell = nbformat.v4.new_code_cell(language_cell(lang))
        cell["id"] = f"language-{lang.lower()}"
        nb.cells.insert(first + 1, cell)
        return nb
    return pure(translate)


def translated(nb, path: Path, lang: str):
    """The notebook in ``lang`` (a new notebook): :func:`translation`."""
    return translation(path, lang)(nb)


def main(src: str = "book", executed: str = "_exec/book", dst: str = "dist/reader", lang: str = "en") -> int:
    try:
        words = Words(lang)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 1
    out = Path(dst)
    out.mkdir(parents=True, exist_ok=True)
    bib = bib_entries(Path(src) / "references.bib")
    ref = bootstrap.head_commit()
    if ref is None:
        print("not a git checkout: the install cells install the branch, not a pinned commit", file=sys.stderr)
    for path in chapters(src):
        run = Path(executed) / path.name
        if not run.exists():
            print(f"{run} is missing: run `make execute` first", file=sys.stderr)
            return 1
        try:
            nb = nbformat.read(path, as_version=4)
            if lang != "en":
                nb = translated(nb, path, lang)
            nb = reader_version(nb, glue_values(run), bib, chapter_number(path), ref, words)
        except MissingGlue as err:
            why = "is empty" if err.args[1:] == ("empty",) else "is missing"
            print(f"{path.name}: the value of glue {err.args[0]!r} {why} in {run}: a stale run "
                  "or a failed glue(...) call; run `make execute`", file=sys.stderr)
            return 1
        nbformat.write(nb, out / path.name)
    print(f"wrote reader notebooks to {out}/" + (f" ({lang})" if lang != "en" else "")
          + (f", installing beforeqkv at {ref[:12]}" if ref else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
