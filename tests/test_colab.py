"""Colab, simulated (`make test-colab`, after `make dist`; slow, so only with --run-colab).

A bare venv holds what Colab has (torch, numpy, matplotlib, ipywidgets, a kernel) and no
beforeqkv; one chapter's reader notebook (dist/reader: what the Colab button opens) is copied
alone into an empty folder. Its install cell installs the package from the repository at the
commit the notebook was made from (``REF``); here a local git repository stands in for GitHub
(the sdist's files, committed), and the cell's ``REPO`` and ``REF`` lines are pointed at it,
nothing else. Then the whole chapter executes, and pip says which commit it installed.
BEFOREQKV_COLAB_CHAPTER picks the chapter (default: chapter 1).
"""
import json
import os
import shutil
import subprocess
import sys

import nbformat
import pytest

from _book import CHAPTERS, ROOT

from editions import bootstrap

pytestmark = pytest.mark.colab
TORCH = os.environ.get("TORCH_VERSION", "2.13.0")
COLAB_HAS = [f"torch=={TORCH}", "numpy", "matplotlib", "ipywidgets", "tqdm", "ipykernel", "nbclient",
             "nbformat"]


@pytest.fixture
def wheel(request):
    if not request.config.getoption("--run-colab"):
        pytest.skip("the Colab simulation runs with --run-colab (make test-colab)")
    wheels = sorted((ROOT / "dist").glob(f"beforeqkv-{bootstrap.release()}-*.whl"))
    if not wheels:
        pytest.fail("no wheel in dist/: run `make dist`")
    return wheels[-1]


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


def _stand_in_for_github(tmp_path, env):
    """A git repository holding the sdist's files in one commit: (its path, the commit)."""
    import tarfile
    sdist = ROOT / "dist" / f"beforeqkv-{bootstrap.release()}.tar.gz"
    assert sdist.is_file(), f"no {sdist}: run `make dist`"
    with tarfile.open(sdist) as t:
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        t.extractall(tmp_path / "unpacked", **safe)
    origin = tmp_path / "origin"
    shutil.move(next((tmp_path / "unpacked").iterdir()), origin)
    git = ["git", "-c", "user.name=ci", "-c", "user.email=ci@localhost"]
    for cmd in (["init", "-q"], ["add", "--all"], ["commit", "-q", "-m", "stand-in for GitHub"]):
        run(git + cmd, cwd=origin, env=env)
    return origin, run(["git", "rev-parse", "HEAD"], cwd=origin, env=env).stdout.strip()


def test_a_chapter_alone_installs_the_book_and_runs_as_on_colab(tmp_path, wheel):
    name = os.environ.get("BEFOREQKV_COLAB_CHAPTER", CHAPTERS[0].name)
    chapter = ROOT / "dist" / "reader" / name  # what the site's Colab button opens
    if not chapter.exists():
        pytest.fail(f"no {chapter}: run `make reader-notebooks`")
    venv, folder = tmp_path / "colab", tmp_path / "content"
    # nothing of this checkout leaks in: no PYTHONPATH, no BEFOREQKV_* (live explorers, as on Colab)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "BEFOREQKV_", "VIRTUAL_ENV"))}
    env.update(PIP_FIND_LINKS=str(wheel.parent), BEFOREQKV_PROGRESS="0",
               PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    run([sys.executable, "-m", "venv", str(venv)], env=env)   # no --system-site-packages
    py = venv / "bin" / "python"
    # a CPU torch (as `make install`): PyPI's default torch is a multi-GB CUDA build
    index = os.environ.get("TORCH_INDEX")
    extra = ["--retries", "0", "--timeout", "30", "--extra-index-url", index] if index else []
    run([str(py), "-m", "pip", "install", "-q", *extra, *COLAB_HAS], env=env)
    probe = run([str(py), "-c", "import importlib.util as u; print(u.find_spec('beforeqkv'))"],
                env=env, cwd=tmp_path)
    assert probe.stdout.strip() == "None", "the bare venv must not see beforeqkv"
    nb = nbformat.read(chapter, as_version=4)
    assert bootstrap.pinned_ref(nb) == bootstrap.head_commit(), "the reader notebook pins the commit it was made from"
    origin, commit = _stand_in_for_github(tmp_path, env)
    cell = bootstrap.bootstrap_cell(nb)
    # file://localhost/...: pip before 23.3 rejects `name @ git+file:///...` (no host)
    cell.source = bootstrap.REF_LINE.sub(f'REF = "{commit}"', bootstrap.REPO_LINE.sub(
        f'REPO = "file://localhost{origin}"', cell.source))
    folder.mkdir()
    nbformat.write(nb, folder / name)
    script = (
        "import nbformat, nbclient, sys\n"
        f"nb = nbformat.read({name!r}, as_version=4)\n"
        "nbclient.NotebookClient(nb, timeout=600, kernel_name='python3').execute()\n"
        f"nbformat.write(nb, 'executed-' + {name!r})\n")
    run([str(py), "-c", script], cwd=folder, env=env, timeout=1800)
    meta = json.loads(run([str(py), "-m", "pip", "inspect"], env=env).stdout)
    installed = {d["metadata"]["name"].lower(): d for d in meta["installed"]}
    assert installed["beforeqkv"]["metadata"]["version"] == bootstrap.release()
    assert installed["beforeqkv"]["direct_url"]["vcs_info"]["commit_id"] == commit, "not the pinned commit"
    executed = (folder / f"executed-{name}").read_text()
    assert "Traceback" not in executed
    assert "application/vnd.jupyter.widget-view+json" in executed, "the live explorer did not show"


def test_the_published_wheel_and_sdist_hold_no_answer_of_the_key(wheel):
    """What `pip install beforeqkv` gives: no prediction answer, no explanation, no key file."""
    import tarfile
    import zipfile

    from _book import answer_leaks, answer_markers
    markers = answer_markers()
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        assert not [n for n in names if "answers.json" in n or n.startswith("instructor/")], names
        for n in names:
            leaks = answer_leaks(z.read(n).decode("utf-8", errors="replace"), markers)
            assert not leaks, (n, leaks[:3])
    for sdist in (ROOT / "dist").glob("beforeqkv-*.tar.gz"):
        with tarfile.open(sdist) as t:
            for member in t.getmembers():
                assert "answers.json" not in member.name, member.name
                if member.isfile():
                    text = t.extractfile(member).read().decode("utf-8", errors="replace")
                    assert not answer_leaks(text, markers), member.name
