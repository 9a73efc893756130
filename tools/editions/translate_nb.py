"""A chapter notebook's Markdown in another language, from the site's own catalogs.

    python -m editions.translate_nb book/01_squished_memory.ipynb OUT.ipynb [--lang zh_CN]

The Chinese edition has one source: the English notebook plus
``locales/<lang>/LC_MESSAGES/book/<page>.po`` (the catalogs Sphinx builds the Chinese site
from). This module applies those catalogs to the notebook itself, for the notebooks a
reader opens (``python -m editions.export_reader book _exec_zh/book dist/reader/zh zh_CN``)
and the homework built from them: each paragraph, heading, list item and table cell of a
Markdown cell (and inside directives such as ``{figure}`` or admonitions), and each figure
caption in a code cell's ``mystnb`` metadata, is looked up the way Sphinx's gettext builder cut it (the block's
text, lines joined by spaces) and replaced by its translation. A block without a
translation, or with a fuzzy one, stays English, as on the site. Code cells are not
touched. The MyST that remains (roles, glue, math) is what the English has, so the
reader export turns it into plain Markdown the same way.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

from . import i18n, myst

TEXT_BLOCKS = {"paragraph_open", "heading_open"}
CELLS = {"th_open", "td_open"}
OPTION = re.compile(r"^(\s*:(?:alt|caption|name|width|align|class|label|figclass|figwidth)?[\w-]*:)(\s*)(.*)$")


def key(text: str) -> str:
    return " ".join(text.split())


def lookup_for(page: str, lang: str = i18n.DEFAULT_LANG, locales: Path = i18n.LOCALES) -> dict[str, str]:
    """{whitespace-normalised msgid: msgstr} of the page's translated, non-fuzzy messages."""
    po = locales / lang / "LC_MESSAGES" / f"{page}.po"
    if not po.is_file():
        return {}
    return {key(msgid): msgstr for msgid, (msgstr, fuzzy) in i18n.translations(po).items() if msgstr and not fuzzy}


class Counter:
    def __init__(self):
        self.translated = self.missing = 0


def translate_markdown(text: str, lookup: dict[str, str], counter: Counter | None = None) -> str:
    """``text`` with every block that ``lookup`` translates replaced by its translation."""
    counter = counter or Counter()
    lines = text.split("\n")
    tokens = myst.parse(text)
    edits = []  # (first line, end line, new lines)
    for k, tok in enumerate(tokens):
        if tok.type in TEXT_BLOCKS and tok.map:
            content = tokens[k + 1].content
            new = lookup.get(key(content))
            if new is None:
                counter.missing += 1
                continue
            counter.translated += 1
            first = lines[tok.map[0]]
            head = content.split("\n", 1)[0].strip()
            at = first.find(head) if head else -1
            if at < 0:  # e.g. a setext heading: leave it
                counter.translated -= 1
                counter.missing += 1
                continue
            edits.append((tok.map[0], tok.map[1] if tok.type == "paragraph_open" else tok.map[0] + 1,
                          [first[:at] + new.replace("\n", " ")]))
        elif tok.type == "tr_open" and tok.map:
            row = lines[tok.map[0]]
            j = k + 1
            while j < len(tokens) and tokens[j].type != "tr_close":
                if tokens[j].type in CELLS:
                    content = tokens[j + 1].content.strip()
                    new = lookup.get(key(content)) if content else None
                    if new is not None and content in row:
                        row = row.replace(content, new.replace("|", "\\|"), 1)
                        counter.translated += 1
                    elif content and re.search(r"[A-Za-z]{3}", content):
                        counter.missing += 1
                j += 1
            edits.append((tok.map[0], tok.map[0] + 1, [row]))
        elif myst.directive(tok) and tok.map:
            start, end = tok.map
            body = lines[start + 1:end - 1]
            opts, rest = [], body
            while rest and OPTION.match(rest[0]):
                m = OPTION.match(rest[0])
                value = m.group(3)
                new = lookup.get(key(value)) if value.strip() else None
                opts.append(f"{m.group(1)}{m.group(2)}{new}" if new else rest[0])
                counter.translated += bool(new)
                rest = rest[1:]
            inner = translate_markdown("\n".join(rest), lookup, counter)
            edits.append((start + 1, end - 1, opts + inner.split("\n")))
    for first, end, new in sorted(edits, key=lambda e: -e[0]):
        lines[first:end] = new
    return "\n".join(lines)


def translate_notebook(nb, lookup: dict[str, str]) -> tuple[object, Counter]:
    """The notebook with its Markdown and figure captions translated (in place); counts."""
    counter = Counter()
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = translate_markdown(cell.source, lookup, counter)
        figure = cell.metadata.get("mystnb", {}).get("figure", {})
        if figure.get("caption"):
            new = lookup.get(key(figure["caption"]))
            if new:
                figure["caption"] = new
    return nb, counter


def page_of(path: Path) -> str:
    return f"book/{Path(path).stem}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--lang", default=i18n.DEFAULT_LANG)
    args = ap.parse_args(argv)
    nb = nbformat.read(args.src, as_version=4)
    nb, counter = translate_notebook(nb, lookup_for(page_of(args.src), args.lang))
    nbformat.write(nb, args.out)
    print(f"{args.out}: {counter.translated} blocks translated, {counter.missing} left in English")
    return 0


if __name__ == "__main__":
    sys.exit(main())
