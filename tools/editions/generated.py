"""A file the tools generate from the book (the teachers page, the sealed answers): written, or
with ``--check`` compared with what it would be, so a stale copy fails a test instead of a reader."""
from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["write_or_check"]


def write_or_check(path: Path, text: str, check: bool, remedy: str) -> int:
    """0 when ``path`` was written (or, with ``check``, already holds ``text``); 1 with
    "``path`` is out of date: run ``remedy``" on stderr when a check finds it stale or missing."""
    path = Path(path)
    if check:
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            print(f"{path} is out of date: run `{remedy}`", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    return 0
