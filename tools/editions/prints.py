"""The chapters' own ``print()`` lines in another language, from a catalog per chapter.

    python -m editions.prints update book                 # locales/zh_CN/prints/<page>.po: new msgids in, gone ones out
    python -m editions.prints apply _exec_zh/book         # translate the print literals of every chapter, in place
    python -m editions.prints status book                 # translated / missing per chapter

What a chapter prints is part of what a reader of the Chinese edition reads: the outputs
under its code cells. A code cell's prose lives in the string literals it passes to
``print``: a plain string, an f-string, a ``"...".format(...)`` receiver, the operands of
``+`` or ``%`` (:func:`literals`). Each such literal that holds an English word is a message
whose msgid is its exact source text, ``f"{T:3d} tokens: h {tuple(h.shape)}"``, and whose
msgstr is the same kind of literal with the same replacement fields in the same order,
``f"{T:3d} 个标记：h {tuple(h.shape)}"`` (:func:`same_fields`). The Chinese execution
(``make execute``) and the Chinese reader notebooks apply the catalogs to the code before it
runs, so the code a Chinese reader sees prints Chinese. Nothing else in a code cell changes.
The catalogs sit outside ``LC_MESSAGES`` (``locales/<lang>/prints/``): Sphinx never reads them.
"""
from __future__ import annotations

import argparse
import ast
import re
import string
import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po

from .book import chapters
from .paths import ROOT
LOCALES = ROOT / "locales"
DEFAULT_LANG = "zh_CN"
ENGLISH = re.compile(r"[A-Za-z]{3,}")


def _code(source: str) -> str:
    """The cell's Python, IPython's ``%magic`` and ``!shell`` lines blanked (offsets kept)."""
    return "\n".join(" " * len(line) if line.lstrip().startswith(("%", "!")) else line
                     for line in source.split("\n"))


def _offset(lines: list[str], lineno: int, col: int) -> int:
    """The character offset in the source of ast's (line, UTF-8 byte column)."""
    line = lines[lineno - 1]
    return sum(len(x) + 1 for x in lines[:lineno - 1]) + len(line.encode("utf-8")[:col].decode("utf-8"))


def _prose_nodes(node: ast.AST):
    """The string literals of one print argument that a reader reads as text."""
    if isinstance(node, (ast.Constant, ast.JoinedStr)):
        if isinstance(node, ast.JoinedStr) or isinstance(node.value, str):
            yield node
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        yield from _prose_nodes(node.left)
        if isinstance(node.op, ast.Add):
            yield from _prose_nodes(node.right)
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
          and node.func.attr == "format"):
        yield from _prose_nodes(node.func.value)


def literals(source: str) -> list[tuple[int, int, str]]:
    """(start, end, text) of each print literal of a code cell that holds an English word."""
    code = _code(source)
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    lines = code.split("\n")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            for arg in node.args:
                for lit in _prose_nodes(arg):
                    start = _offset(lines, lit.lineno, lit.col_offset)
                    end = _offset(lines, lit.end_lineno, lit.end_col_offset)
                    text = source[start:end]
                    if ENGLISH.search(re.sub(r"\{[^{}]*\}", " ", text)):
                        found.append((start, end, text))
    return sorted(set(found))


def _fields(text: str) -> list[str] | None:
    """The kind and replacement fields of a literal, in order: an f-string's ``{expr!r:spec}``,
    a plain string's ``{}`` / ``{name}`` and ``%s``-style fields; None if it is not one literal."""
    try:
        tree = ast.parse("(" + text.strip() + "\n)", mode="eval").body  # a literal may span lines
    except SyntaxError:
        return None
    if isinstance(tree, ast.JoinedStr):
        return ["f-string"] + [ast.dump(v) for v in tree.values if isinstance(v, ast.FormattedValue)]
    if isinstance(tree, ast.Constant) and isinstance(tree.value, str):
        try:
            braces = [f"{name}!{conv}:{spec}" for _, name, spec, conv in string.Formatter().parse(tree.value)
                      if name is not None]
        except ValueError:
            braces = ["<unbalanced>"]
        percent = re.findall(r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[a-zA-Z%]", tree.value)
        return ["string"] + braces + percent
    return None


def same_fields(msgid: str, msgstr: str) -> bool:
    """Whether a translation is a literal of the same kind with the same fields in the same order."""
    a = _fields(msgid)
    return a is not None and a == _fields(msgstr)


def catalog_path(page: str, lang: str = DEFAULT_LANG, locales: Path = LOCALES) -> Path:
    return locales / lang / "prints" / f"{page}.po"


def lookup_for(page: str, lang: str = DEFAULT_LANG, locales: Path = LOCALES) -> dict[str, str]:
    """{msgid: msgstr} of a chapter's translated, non-fuzzy print messages that keep their fields."""
    path = catalog_path(page, lang, locales)
    if not path.is_file():
        return {}
    with path.open("rb") as f:
        catalog = read_po(f)
    return {m.id: m.string for m in catalog if m.id and m.string and not m.fuzzy and same_fields(m.id, m.string)}


def translate_code(source: str, lookup: dict[str, str]) -> tuple[str, int, int]:
    """(the cell's source with its print literals translated, how many were, how many were not)."""
    done = missing = 0
    for start, end, text in sorted(literals(source), reverse=True):
        new = lookup.get(text)
        if new is None:
            missing += 1
            continue
        source = source[:start] + new + source[end:]
        done += 1
    return source, done, missing


def translate_notebook(nb, lookup: dict[str, str]) -> tuple[int, int]:
    """Translate the print literals of every code cell of ``nb`` in place; (translated, missing)."""
    done = missing = 0
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source, d, m = translate_code(cell.source, lookup)
            done, missing = done + d, missing + m
    return done, missing


def messages(nb) -> list[str]:
    """The print msgids of a notebook, in order of appearance, each once."""
    seen: dict[str, None] = {}
    for cell in nb.cells:
        if cell.cell_type == "code":
            for _, _, text in literals(cell.source):
                seen.setdefault(text)
    return list(seen)


def _chapters(folder: Path) -> list[Path]:
    return chapters(folder)


def update(book: Path, lang: str = DEFAULT_LANG, locales: Path = LOCALES) -> None:
    """Bring every chapter's print catalog up to date: new msgids in (untranslated), gone ones out."""
    import nbformat
    for path in _chapters(book):
        ids = messages(nbformat.read(path, as_version=4))
        po = catalog_path(path.stem, lang, locales)
        old = {}
        if po.is_file():
            with po.open("rb") as f:
                old = {m.id: m for m in read_po(f) if m.id}
        catalog = Catalog(locale=lang, project="Before Q, K, and V: print lines", fuzzy=False)
        for msgid in ids:
            before = old.get(msgid)
            catalog.add(msgid, before.string if before else "", flags=before.flags if before else ())
        po.parent.mkdir(parents=True, exist_ok=True)
        with po.open("wb") as f:
            write_po(f, catalog, width=0, omit_header=False, sort_output=False)
        print(f"{po.relative_to(ROOT) if po.is_relative_to(ROOT) else po}: {len(ids)} messages")


def apply(folder: Path, lang: str = DEFAULT_LANG, locales: Path = LOCALES) -> int:
    """Translate the print literals of every chapter notebook in ``folder`` in place."""
    import nbformat
    total = 0
    for path in _chapters(folder):
        nb = nbformat.read(path, as_version=4)
        done, missing = translate_notebook(nb, lookup_for(path.stem, lang, locales))
        nbformat.write(nb, path)
        total += done
        if missing:
            print(f"{path.name}: {missing} print lines left in English", file=sys.stderr)
    print(f"== {total} print lines in {lang} ({folder})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["update", "apply", "status"])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--lang", default=DEFAULT_LANG)
    args = parser.parse_args(argv)
    if args.command == "update":
        update(args.folder, args.lang)
        return 0
    if args.command == "apply":
        return apply(args.folder, args.lang)
    import nbformat
    for path in _chapters(args.folder):
        ids = messages(nbformat.read(path, as_version=4))
        lookup = lookup_for(path.stem, args.lang)
        print(f"{path.stem}: {sum(i in lookup for i in ids)} of {len(ids)} translated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
