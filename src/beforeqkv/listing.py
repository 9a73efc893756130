"""Show a package object's source in a chapter: the models a chapter measures stay visible.

    from beforeqkv.listing import show_source
    show_source(RecallTransformer)            # the class, as it is in the package

In a notebook the result renders as highlighted code whose long lines wrap inside the
page column (HTML); as plain text it is the source itself. Put the call in a cell tagged
``hide-output`` so the site shows it collapsed under a "Show code" toggle.
"""
from __future__ import annotations

import html
import inspect
import textwrap

__all__ = ["Listing", "show_source"]


class Listing:
    """Source code of one object, displayed as code in Jupyter, Colab and on the site."""

    def __init__(self, name: str, code: str, where: str):
        self.name, self.code, self.where = name, code, where

    def __str__(self) -> str:
        return self.code

    def __repr__(self) -> str:
        return f"# {self.where}\n{self.code}"

    def _repr_html_(self) -> str:
        try:
            from pygments import highlight
            from pygments.formatters import HtmlFormatter
            from pygments.lexers import PythonLexer
            body = highlight(self.code, PythonLexer(), HtmlFormatter(nowrap=True))
        except ImportError:  # pragma: no cover - pygments ships with Jupyter and Sphinx
            body = html.escape(self.code)
        return (f'<div class="bqkv-listing"><div style="font-size:85%;opacity:.75">'
                f'{html.escape(self.where)}</div>'
                f'<div class="highlight"><pre style="white-space:pre-wrap;'
                f'overflow-wrap:anywhere">{body}</pre></div></div>')


def show_source(obj, *, start: str | None = None) -> Listing:
    """The source of ``obj`` (a class, function or method from the package) as a :class:`Listing`.

    ``start``: show only from the first line containing this text (e.g. ``"def forward"``).
    Raises ``ValueError`` when ``obj`` has no Python source (a builtin, an instance).
    """
    try:
        code = inspect.getsource(obj)
        path = inspect.getsourcefile(inspect.unwrap(obj)) or "?"  # past decorators
    except (TypeError, OSError) as err:
        raise ValueError(f"show_source: no Python source for {obj!r} ({err})") from None
    code = textwrap.dedent(code).rstrip() + "\n"
    if start is not None:
        at = code.find(start)
        if at < 0:
            raise ValueError(f"show_source: {start!r} does not occur in the source of {obj.__qualname__}")
        code = textwrap.dedent(code[code.rfind("\n", 0, at) + 1:])
    module = getattr(obj, "__module__", "") or ""
    qual = getattr(obj, "__qualname__", getattr(obj, "__name__", "?"))
    where = f"{module}.{qual}" if module else qual
    from .i18n import _
    return Listing(qual, code, _("source of {where} ({path})").format(where=where, path=path.split("src/")[-1]))
