"""The GitHub workflow (.github/workflows/book.yml) and its preflight (tools/publish.py).

The workflow cannot run here; what can be checked is: actionlint finds nothing (syntax,
expressions, the job graph, actions on a Node runtime GitHub is retiring), the site deploys
after the chapters and never waits for the homework job, the one-time settings are checked
before the build, a fork's buttons point at the fork, and a release is the tagged version.
"""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from _book import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import publish  # noqa: E402

WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"
FLOW = yaml.safe_load(WORKFLOW.read_text())
JOBS = FLOW["jobs"]
TRIGGERS = FLOW[True]  # YAML 1.1 reads the key `on` as True


def needs(job: str) -> set:
    n = JOBS[job].get("needs", [])
    return {n} if isinstance(n, str) else set(n)


def runs(job: str) -> str:
    return "\n".join(step.get("run", "") for step in JOBS[job]["steps"])


def test_actionlint_finds_nothing_in_the_workflow():
    exe = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    if exe is None:
        pytest.skip("actionlint is not installed (requirements.txt installs it except on macOS)")
    r = subprocess.run([exe, "-no-color", str(WORKFLOW)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    bad = WORKFLOW.read_text().replace("actions/checkout@v6", "actions/checkout@v4")
    r = subprocess.run([exe, "-no-color", "-"], input=bad, capture_output=True, text=True)
    assert r.returncode == 1 and "node20" in r.stdout, "actionlint must flag an action on Node 20"


def test_the_site_deploys_after_the_chapters_and_never_waits_for_the_homework():
    assert needs("deploy") == {"book"} and needs("notebooks") == {"book"}
    assert needs("homework") == {"book"}
    assert ".ci/run book" in runs("book") and ".ci/run homework" in runs("homework")
    ci = (ROOT / ".ci" / "run").read_text()
    book_stage = ci.split('if [ "$STAGE" != homework ]; then', 1)[1].split("fi", 1)[0]
    assert "timed test;" in book_stage, "the chapters run in the stage the site deploys after"
    homework_stage = ci.split('if [ "$STAGE" != book ]; then', 1)[1].split("fi\n", 1)[0]
    assert all(t in homework_stage for t in ("test-homework", "test-otter", "test-colab"))
    for job in ("deploy", "notebooks"):
        assert "refs/heads/main" in JOBS[job]["if"] and "pull_request" in JOBS[job]["if"]
    assert all(JOBS[j].get("timeout-minutes") for j in JOBS), "every job has a time limit"


def test_the_one_time_settings_are_checked_before_the_build():
    steps = JOBS["book"]["steps"]
    at = {name: i for i, s in enumerate(steps) for name in [s.get("run", "") + s.get("uses", "")]}
    pre = next(i for n, i in at.items() if "publish.py preflight" in n)
    build = next(i for n, i in at.items() if ".ci/run book" in n)
    assert pre < build
    assert steps[pre]["env"]["GH_TOKEN"] == "${{ github.token }}"
    assert JOBS["book"]["permissions"]["pages"] == "read"
    assert FLOW["permissions"] == {"contents": "read"}, "write permissions only where a job needs them"
    assert JOBS["notebooks"]["permissions"] == {"contents": "write"}
    assert JOBS["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}


def test_the_homework_job_gets_a_finished_execution():
    """make's tools read _exec only after `make execute` finished (its executed.ok)."""
    upload = next(s for s in JOBS["book"]["steps"] if s.get("with", {}).get("name") == "executed")
    assert "_exec/executed.ok" in upload["with"]["path"] and "_exec_zh/book/" in upload["with"]["path"]
    assert any(s.get("with", {}).get("name") == "executed" for s in JOBS["homework"]["steps"]
               if "download-artifact" in s.get("uses", ""))
    makefile = (ROOT / "Makefile").read_text()
    assert "EXECUTED := $(EXEC)/executed.ok" in makefile and "| $(EXEC)/book" not in makefile


def test_the_notebooks_branch_is_pinned_to_the_commit_the_site_was_built_from():
    assert '--ref "$GITHUB_SHA"' in runs("notebooks")
    assert 'publish.py use "$GITHUB_REPOSITORY"' in runs("notebooks")


def test_a_release_is_a_tag_published_by_trusted_publishing():
    assert TRIGGERS["push"]["tags"] == ["v*"]
    job = JOBS["release"]
    assert job["if"] == "startsWith(github.ref, 'refs/tags/v')"
    assert needs("release") == {"book", "homework"}
    assert job["permissions"]["id-token"] == "write" and job["environment"]["name"] == "pypi"
    assert "publish.py release-tag" in runs("release") and "make dist" in runs("release")
    assert any(s.get("uses", "").startswith("pypa/gh-action-pypi-publish@") for s in job["steps"])
    assert "password" not in WORKFLOW.read_text(), "no PyPI token: trusted publishing"


def test_every_action_is_pinned_to_a_release():
    uses = [s["uses"] for j in JOBS.values() for s in j["steps"] if "uses" in s]
    assert uses and all("@" in u for u in uses)
    assert not [u for u in uses if u.split("@")[1] in ("main", "master", "latest")]


# ------------------------------------------------------------------ tools/publish.py
@pytest.fixture
def repo(tmp_path):
    """A git checkout holding the configured URL in the config, README and an install cell."""
    url = publish.configured_url()
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "README.md").write_text(f"See {url}.\n")
    (tmp_path / "cell.py").write_text(f'REPO = "{url}"\n')
    (tmp_path / "untracked.txt").write_text(url)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "_config.yml", "README.md", "cell.py"], cwd=tmp_path, check=True)
    return tmp_path


def env(**kw):
    base = {"GITHUB_REPOSITORY": "before-qkv/before-qkv", "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/heads/main", "GH_TOKEN": "t"}
    return {**base, **kw}


def test_pages_off_or_from_a_branch_fails_early_naming_the_setting(repo, capsys):
    for kind, words in ((None, "is off"), ("legacy", "from a branch")):
        assert publish.preflight(env(), repo, build_type=lambda *a, k=kind: k) == 1
        out = capsys.readouterr().out
        assert "::error" in out and words in out and 'Source: choose "GitHub Actions"' in out
    assert publish.preflight(env(), repo, build_type=lambda *a: "workflow") == 0


def test_pages_is_read_only_on_the_run_that_deploys(repo):
    def boom(*a):
        raise AssertionError("the Pages setting was read on a run that deploys nothing")
    assert publish.preflight(env(GITHUB_EVENT_NAME="pull_request", GITHUB_REF="refs/pull/1/merge"), repo, boom) == 0
    assert publish.preflight(env(GITHUB_REF="refs/tags/v0.1.0"), repo, boom) == 0
    assert publish.preflight({}, repo, boom) == 2, "outside GitHub Actions it says so"


def test_a_fork_builds_with_buttons_to_itself_and_a_warning(repo, capsys):
    fork = "https://github.com/someone/before-qkv"
    assert publish.preflight(env(GITHUB_REPOSITORY="someone/before-qkv"), repo, lambda *a: "workflow") == 0
    out = capsys.readouterr().out
    assert "::warning" in out and fork in out and "3 files repointed" in out
    assert publish.configured_url(repo) == fork
    assert fork in (repo / "README.md").read_text() and fork in (repo / "cell.py").read_text()
    assert "someone" not in (repo / "untracked.txt").read_text(), "only tracked files change"
    assert publish.use("https://github.com/SOMEONE/before-qkv.git", repo) == [], "same repository"


def test_the_pages_api_is_asked_with_the_token(monkeypatch):
    seen = {}

    class Answer:
        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def read(self):
            return b'{"build_type": "workflow"}'

    def urlopen(request, timeout):
        seen.update(url=request.full_url, auth=request.get_header("Authorization"))
        return Answer()

    monkeypatch.setattr(publish.urllib.request, "urlopen", urlopen)
    assert publish.pages_build_type("https://api.github.com", "o/n", "tok") == "workflow"
    assert seen == {"url": "https://api.github.com/repos/o/n/pages", "auth": "Bearer tok"}


def test_a_release_tag_must_be_the_package_version():
    version = publish.package_version()
    import beforeqkv
    assert version == beforeqkv.__version__
    assert publish.release_tag_problem(f"v{version}") is None
    assert "not the package's version" in publish.release_tag_problem("v999.0.0")
