"""The line under every exercise heading: its difficulty and time, from the cell's metadata.

    python -m editions.marks --check book/*.ipynb   # exit 1 if a line is missing or stale
    python -m editions.marks --write book/*.ipynb   # insert or update the lines

An exercise heading (``### Exercise 5.2 · Title``) lives in a markdown cell whose
``exercises`` metadata gives, per number, ``difficulty`` (1-3) and ``minutes``; the same
metadata feeds book/teachers.md (tools/editions/teachers.py), so the page and the guide agree.
"""
from __future__ import annotations

import re
import sys

import nbformat

from .solutions import HEADING

MARK = re.compile(r"^\*Difficulty [★☆]{3} · about \d+ min\*$")


def mark(meta: dict) -> str:
    d = int(meta["difficulty"])
    return f"*Difficulty {'★' * d}{'☆' * (3 - d)} · about {int(meta['minutes'])} min*"


def marked(source: str, exercises: dict) -> str:
    """``source`` with the mark line right under each exercise heading."""
    lines, out, i = source.split("\n"), [], 0
    while i < len(lines):
        out.append(lines[i])
        m = HEADING.match(lines[i])
        if m:
            if m.group(1) not in exercises:
                raise ValueError(f"exercise {m.group(1)} has no metadata (difficulty, minutes)")
            out += [mark(exercises[m.group(1)]), ""]  # its own paragraph
            if i + 1 < len(lines) and MARK.match(lines[i + 1]):
                i += 1  # replace the old line
                if i + 1 < len(lines) and not lines[i + 1].strip():
                    i += 1
        i += 1
    return "\n".join(out)


def main(argv: list[str]) -> int:
    write = argv[:1] == ["--write"]
    stale = []
    for path in (a for a in argv if not a.startswith("--")):
        nb = nbformat.read(path, as_version=4)
        changed = False
        for cell in nb.cells:
            if cell.cell_type != "markdown" or not HEADING.search(cell.source):
                continue
            new = marked(cell.source, cell.metadata.get("exercises", {}))
            if new != cell.source:
                stale.append(path)
                cell.source, changed = new, True
        if write and changed:
            nbformat.write(nb, path)
            print(f"{path}: exercise marks written")
    if stale and not write:
        for path in sorted(set(stale)):
            print(f"{path}: exercise marks missing or stale (python -m editions.marks --write)",
                  file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
