"""The book's one MyST grammar: markdown-it-py with the MyST plugins of mdit-py-plugins.

Every edition that reads the chapters' Markdown reads it through :func:`parse`: the
translation (:mod:`editions.translate_nb`, which cuts blocks as Sphinx's gettext builder
does) and the reader notebooks (:mod:`editions.export_reader`, which turns roles, targets
and directives into plain Markdown with :func:`rewrite`). It is the block and inline
structure MyST-Parser itself builds on, from two small packages, so the homework
environment needs no Sphinx.

What it recognises, and the token it gives:

* a **role** ``{name}`content``` -> an inline ``myst_role`` token (``meta["name"]``,
  ``content``);
* a **target** ``(label)=`` on its own line -> a block ``myst_target`` token;
* a **directive** ````` ```{name} arg ````` or ``:::{name} arg`` -> a ``fence`` or
  ``colon_fence`` token whose ``info`` starts with ``{`` (:func:`directive`); its body is
  not parsed further, :func:`rewrite` parses it when it holds Markdown;
* ``$...$`` / ``$$...$$`` math, tables, definition lists, as MyST enables them.
"""
from __future__ import annotations

import functools
import re
from typing import Callable

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.amsmath import amsmath_plugin
from mdit_py_plugins.colon_fence import colon_fence_plugin
from mdit_py_plugins.deflist import deflist_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.myst_blocks import myst_block_plugin
from mdit_py_plugins.myst_role import myst_role_plugin

__all__ = ["parse", "roles", "directive", "options_and_body", "rewrite", "raw_myst", "FENCES"]

FENCES = {"fence", "colon_fence"}
_DIRECTIVE = re.compile(r"^\{([\w-]+)\}\s*(.*)$")
_OPTION = re.compile(r"^:[\w-]+:")


@functools.cache
def _parser() -> MarkdownIt:
    return (MarkdownIt("commonmark").enable("table").use(amsmath_plugin).use(dollarmath_plugin)
            .use(colon_fence_plugin).use(deflist_plugin).use(myst_block_plugin).use(myst_role_plugin))


def parse(text: str) -> list[Token]:
    """The block tokens of ``text`` (inline tokens carry their ``children``), line maps included."""
    return _parser().parse(text)


def roles(text: str) -> list[tuple[str, str]]:
    """(name, content) of every role in ``text``, in reading order (directive bodies included)."""
    found = []
    for tok in parse(text):
        if tok.type == "inline":
            found += [(c.meta["name"], c.content) for c in tok.children or [] if c.type == "myst_role"]
        elif directive(tok) and directive(tok)[0] != "math":
            found += roles(options_and_body(tok)[1])
    return found


def directive(token: Token) -> tuple[str, str] | None:
    """(name, argument) of a directive's fence token, else None (a plain code fence)."""
    if token.type not in FENCES:
        return None
    m = _DIRECTIVE.match(token.info.strip())
    return (m.group(1), m.group(2).strip()) if m else None


def options_and_body(token: Token) -> tuple[list[str], str]:
    """A directive's options (``:option: value`` lines, or a YAML block between ``---`` lines,
    at the top of its body) and the rest."""
    lines = token.content.split("\n")
    k = 0
    if lines and lines[0].strip() == "---" and "---" in (line.strip() for line in lines[1:]):
        k = next(i for i in range(1, len(lines)) if lines[i].strip() == "---") + 1
    while k < len(lines) and _OPTION.match(lines[k]):
        k += 1
    return lines[:k], "\n".join(lines[k:])


Role = Callable[[str, str], str]  # (name, content) -> text
Directive = Callable[[str, str, str], str]  # (name, argument, body) -> text


# A code span, as CommonMark delimits it; not the backticks of a role (after its ``}``).
_CODE_SPAN = re.compile(r"(?<![`}\\])(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)


def _role_source(name: str, content: str, text: str, start: int) -> re.Match | None:
    """Where the role ``{name}`content``` is written in ``text``, at or after ``start``: its
    content as the parser gives it (a line break inside it read as a space), and not inside
    a code span that happens to spell the same role."""
    words = content.split()
    body = r"\s+".join(map(re.escape, words)) if words and content == " ".join(words) else re.escape(content)
    pattern = re.compile(r"\{" + re.escape(name) + r"\}(`+)" + body + r"\1")
    code = [m.span() for m in _CODE_SPAN.finditer(text)]
    for m in pattern.finditer(text, start):
        if not any(a <= m.start() < b for a, b in code):
            return m
    return None


def _indented(new: str, first_line: str, markup: str) -> list[str]:
    """A directive's replacement lines inside the container its fence was in (a list item's
    indent, a blockquote's ``>``): the fence line's prefix on the first line, its ``>`` marks
    and spaces on the others."""
    prefix = first_line[:first_line.find(markup)] if markup and markup in first_line else ""
    rest = re.sub(r"[^>\s]", " ", prefix)
    lines = new.split("\n")
    return [prefix + lines[0]] + [(rest + line) if line else rest.rstrip() for line in lines[1:]]


def rewrite(text: str, role: Role, directive_: Directive, *, drop_targets: bool = True) -> str:
    """``text`` with every role replaced by ``role(name, content)``, every directive by
    ``directive_(name, argument, body)`` (options dropped) and every target line removed;
    the rest of the source is kept as written. Called in reading order, so a caller that
    numbers what it meets (citations) numbers it as a reader reads it."""
    lines = text.split("\n")
    edits: dict[tuple[int, int], list[str] | str] = {}  # line range -> its new text
    cursor: dict[tuple[int, int], int] = {}
    for tok in parse(text):
        if tok.type == "myst_target" and drop_targets and tok.map:
            edits[tuple(tok.map)] = []
        elif (found := directive(tok)) and tok.map:
            _, body = options_and_body(tok)
            edits[tuple(tok.map)] = _indented(directive_(found[0], found[1], body), lines[tok.map[0]], tok.markup)
        elif tok.type == "inline" and tok.map:
            roles = [c for c in tok.children or [] if c.type == "myst_role"]
            if not roles:
                continue
            span = (tok.map[0], max(tok.map[1], tok.map[0] + 1))  # a definition term's map is empty
            source = edits.get(span, "\n".join(lines[span[0]:span[1]]))
            at = cursor.get(span, 0)
            for r in roles:
                m = _role_source(r.meta["name"], r.content, source, at)
                if m is None:
                    raise ValueError(f"role {{{r.meta['name']}}} of {r.content!r} not found in its source line")
                new = role(r.meta["name"], r.content)
                source = source[:m.start()] + new + source[m.end():]
                at = m.start() + len(new)
            edits[span], cursor[span] = source, at
    for (first, end), new in sorted(edits.items(), reverse=True):
        lines[first:end] = new if isinstance(new, list) else new.split("\n")
    return "\n".join(lines)


def raw_myst(text: str) -> list[str]:
    """The MyST constructs left in a Markdown text (empty when it is plain Markdown)."""
    found = []
    for tok in parse(text):
        if tok.type == "myst_target":
            found.append(f"({tok.content})=")
        elif directive(tok):
            found.append(f"{tok.markup}{tok.info}")
        elif tok.type == "inline":
            found += [f"{{{c.meta['name']}}}`{c.content}`" for c in tok.children or [] if c.type == "myst_role"]
    return found
