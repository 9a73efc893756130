"""The GitHub workflow (.github/workflows/book.yml) and its preflight (tools/editions/publish.py).

The workflow cannot run here; what can be checked is: actionlint finds nothing (syntax,
expressions, the job graph, actions on a Node runtime GitHub is retiring), the site deploys
after the chapters and never waits for the homework job, the one-time settings are checked
before the build, a fork's buttons point at the fork, and a release is the tagged version.
"""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from _book import ROOT

from editions import publish

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
    pre = next(i for n, i in at.items() if "editions.publish preflight" in n)
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
    assert 'editions.publish use "$GITHUB_REPOSITORY"' in runs("notebooks")


def test_every_job_that_runs_the_build_tools_installs_them_first():
    """A step that runs ``python -m editions.<tool>`` on the runner's own Python (before make
    installs anything) installs the package editable first: from a copy it would not find the book."""
    for name, job in JOBS.items():
        installed = False
        for step in job.get("steps", []):
            run = step.get("run", "")
            for line in run.splitlines():
                installed = installed or "pip install --quiet --no-deps -e ./tools" in line
                if "python -m editions." in line:
                    assert installed, f"job {name}: {line.strip()!r} before the tools are installed"


def test_a_release_is_a_tag_published_by_trusted_publishing():
    assert TRIGGERS["push"]["tags"] == ["v*"]
    job = JOBS["release"]
    assert job["if"] == "startsWith(github.ref, 'refs/tags/v')"
    assert needs("release") == {"book", "homework"}
    assert job["permissions"]["id-token"] == "write" and job["environment"]["name"] == "pypi"
    assert "editions.publish release-tag" in runs("release") and "make dist" in runs("release")
    assert any(s.get("uses", "").startswith("pypa/gh-action-pypi-publish@") for s in job["steps"])
    assert "password" not in WORKFLOW.read_text(), "no PyPI token: trusted publishing"


def test_every_action_is_pinned_to_a_release():
    uses = [s["uses"] for j in JOBS.values() for s in j["steps"] if "uses" in s]
    assert uses and all("@" in u for u in uses)
    assert not [u for u in uses if u.split("@")[1] in ("main", "master", "latest")]


# ------------------------------------------------------------------ tools/editions/publish.py
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


# ------------------------------------------------------------------ the version matrix and the floors
PYPROJECT = (ROOT / "pyproject.toml").read_text()
# An API the package calls -> the oldest torch that has it. The floor in pyproject.toml must be
# at least the newest of those the source uses.
TORCH_APIS = {
    "F.rms_norm(": (2, 4),
    "nn.RMSNorm(": (2, 4),
    "sdpa_kernel(": (2, 3),
    "get_default_device(": (2, 3),
    "assign=True": (2, 1),
}
# Newer APIs used only behind a version check (the fallback is tested on the pinned torch's path).
GUARDED = {"enable_gqa=": "_SDPA_GQA"}


def floors(pyproject: str = PYPROJECT) -> dict:
    """{"python": (3, 9), "torch": (2, 4)}: the lower bounds pyproject.toml declares."""
    python = re.search(r'^requires-python = ">=(\d+)\.(\d+)"', pyproject, re.M)
    torch_ = re.search(r'^\s*"torch>=(\d+)\.(\d+)"', pyproject, re.M)
    return {"python": tuple(map(int, python.groups())), "torch": tuple(map(int, torch_.groups()))}


def rows() -> dict:
    return {r["row"]: r for r in JOBS["versions"]["strategy"]["matrix"]["include"]}


def test_the_torch_floor_covers_every_api_the_package_calls(floor=None):
    floor = floor or floors()["torch"]
    source = "\n".join(p.read_text() for p in (ROOT / "src" / "beforeqkv").rglob("*.py"))
    needs = {api: v for api, v in TORCH_APIS.items() if api in source}
    assert needs, "the scan found no API at all: is it reading src/?"
    too_new = {api: v for api, v in needs.items() if v > floor}
    assert not too_new, f"pyproject.toml allows torch {floor} but the package calls {too_new}"
    for api, guard in GUARDED.items():
        assert api not in source or guard in source, f"{api} needs its version check {guard}"


def test_the_api_scan_fails_a_floor_below_rms_norm():
    with pytest.raises(AssertionError, match="rms_norm"):
        test_the_torch_floor_covers_every_api_the_package_calls(floor=(2, 2))


PYTHON_FILES = ("src", "tools", "tests", "_ext")


def runtime_unions(source: str) -> list:
    """Lines where ``X | Y`` sits in an annotation that Python evaluates when the module runs
    (a def's parameters and return, a module's or a class's annotated names) in a module
    without ``from __future__ import annotations``: valid syntax on 3.9, but a TypeError there
    on import, which ``ast.parse(feature_version=...)`` does not see."""
    import ast
    tree = ast.parse(source)
    if any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
           and any(a.name == "annotations" for a in n.names) for n in tree.body):
        return []

    def union(node):
        return node is not None and any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr)
                                        for n in ast.walk(node))

    lines = []

    def visit(body, in_function=False):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                params = a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]
                if union(node.returns) or any(union(x.annotation) for x in params):
                    lines.append(node.lineno)
                visit(node.body, in_function=True)
            elif isinstance(node, ast.ClassDef):
                visit(node.body)
            elif isinstance(node, ast.AnnAssign) and not in_function and union(node.annotation):
                lines.append(node.lineno)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    visit(getattr(node, field, []) or [], in_function)
    visit(tree.body)
    return lines


def test_the_python_floor_parses_and_imports_every_source_file():
    import ast
    floor = floors()["python"]
    paths = [p for folder in PYTHON_FILES for p in (ROOT / folder).rglob("*.py")]
    assert len(paths) > 100, "the scan found too few files: is it reading the repository?"
    for path in paths:
        source = path.read_text()
        ast.parse(source, filename=str(path), feature_version=floor)
        if floor < (3, 10):
            lines = runtime_unions(source)
            assert not lines, f"{path.relative_to(ROOT)}: X | Y annotations (lines {lines}) fail on import in {floor}"
    with pytest.raises(SyntaxError):  # the check sees syntax newer than the floor
        ast.parse("match x:\n    case 1:\n        pass\n", feature_version=(3, 9))


def test_the_union_scan_sees_what_fails_on_import_under_python_3_9():
    assert runtime_unions("def f(x: int | None) -> str:\n    pass\n") == [1]
    assert runtime_unions("class A:\n    x: int | None = None\n") == [2]
    assert runtime_unions("def f():\n    def g() -> list | None:\n        pass\n") == [2]
    assert runtime_unions("if True:\n    y: int | str = 1\n") == [2]
    # evaluated later or never: a local annotation, a string, the __future__ import
    assert runtime_unions("def f():\n    y: int | None = None\n") == []
    assert runtime_unions("def f(x: 'int | None'):\n    pass\n") == []
    assert runtime_unions("from __future__ import annotations\ndef f(x: int | None):\n    pass\n") == []


def test_the_version_matrix_runs_the_floors_the_newest_and_colabs_stack():
    r, floor = rows(), floors()
    assert set(r) == {"oldest", "newest", "colab"}, set(r)
    assert r["oldest"]["python"] == "%d.%d" % floor["python"], "the oldest row must run pyproject's Python floor"
    assert r["oldest"]["torch"] == "torch==%d.%d.0" % floor["torch"], "the oldest row must run pyproject's torch floor"
    assert r["newest"]["torch"] == "torch", "the newest row takes the newest torch (unpinned)"
    newest_python = tuple(map(int, r["newest"]["python"].split(".")))
    assert newest_python > floor["python"]
    pins = r["colab"]["pins"].split()
    assert any(p.startswith("ipywidgets==7.") for p in pins) and any(p.startswith("ipython==7.") for p in pins)
    colab_torch = tuple(map(int, r["colab"]["torch"].split("==")[1].split(".")[:2]))
    assert colab_torch >= floor["torch"], "Colab's torch is below the floor: the package would not install there"
    steps = runs("versions")
    if ".ci/versions" in steps:  # the row's script, which runs a row here too
        steps += (ROOT / ".ci" / "versions").read_text()
    assert "pytest tests" in steps, "each row runs the unit tests"
    assert len(re.findall(r"book/\d\d_\w+\.ipynb", steps)) >= 2, "each row runs at least two chapters"
    assert JOBS["versions"]["strategy"]["fail-fast"] is False, "one failing row must not hide the others"


def test_the_versions_rows_install_a_readers_stack_and_say_so():
    """The rows run .ci/versions, which installs a reader's stack, not the build's, and sets the
    variable that lets the build stack's tests skip there (tests/test_stack.py)."""
    from test_stack import requirements
    assert runs("versions").strip() == ".ci/versions", "each row runs the row script"
    script = (ROOT / ".ci" / "versions").read_text()
    assert "-r requirements-versions.txt" in script and "export BEFOREQKV_STACK=reader" in script
    names = {r.name for r in requirements((ROOT / "requirements-versions.txt").read_text())}
    assert {"pytest", "nbmake", "ipykernel"} <= names
    build = {"sphinx", "jupyter-book", "myst-nb", "playwright", "onnxruntime"}
    assert not names & build, "a reader's stack, not the build's"


def test_the_gpu_page_lists_the_rows_the_workflow_runs_with_their_versions():
    """book/gpu_and_colab.md's table of measured rows names each row's Python, torch and
    notebook stack as the matrix pins them (a row changed in the workflow is measured again),
    and says what passed on them."""
    page = (ROOT / "book" / "gpu_and_colab.md").read_text()
    section = page[page.index("## Which versions are tested"):].split("\n## ")[0]
    lines = {line.split("|")[1].strip().lower(): [c.strip() for c in line.strip().strip("|").split("|")]
             for line in section.splitlines() if line.startswith("| ") and not line.startswith("| row")}
    assert set(lines) == set(rows()), f"the page's rows {sorted(lines)} are not the workflow's {sorted(rows())}"
    for name, row in rows().items():
        _, python, torch_, stack = lines[name]
        assert python.startswith(row["python"] + "."), (name, python)
        if row["torch"] != "torch":
            assert torch_ == row["torch"].split("==")[1], (name, torch_)
        for pin in row["pins"].split():
            if pin.split("==")[0] in ("ipython", "ipywidgets", "ipykernel"):
                assert pin.split("==")[1] in stack.split(" / "), (name, pin, stack)
    chapters = re.findall(r"book/(\d\d)_", (ROOT / ".ci" / "versions").read_text())
    said = re.search(r"On each row, [\d,]+ unit tests passed and [\d,]+ were skipped, and chapters ([\d, and]+) ran",
                     " ".join(section.split()))
    assert said and re.findall(r"\d+", said.group(1)) == [c.lstrip("0") for c in chapters], (said, chapters)


def test_every_place_that_installs_torch_states_the_same_floor():
    floor = ">=%d.%d" % floors()["torch"]
    assert f'"torch{floor}"' in (ROOT / "Makefile").read_text()
    assert f"torch{floor}" in (ROOT / "binder" / "requirements.txt").read_text()
    assert f"`torch{floor}`" in (ROOT / "book" / "gpu_and_colab.md").read_text()
