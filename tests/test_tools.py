"""The repository tools: student versions, notebook cleaning, the JUnit summary."""
import subprocess
import sys

import nbformat
import pytest

from _book import CHAPTERS, ROOT

from editions import clean_nb
import junit_summary
from editions import solutions
from editions import student


def test_student_version_removes_every_solution():
    for path in CHAPTERS:
        nb = student.student_version(nbformat.read(path, as_version=4))
        text = "\n".join(c.source for c in nb.cells)
        assert "### BEGIN SOLUTION" not in text and "### END SOLUTION" not in text, path.name
        assert "raise NotImplementedError()" in text, path.name


def test_student_stub_keeps_indentation_and_the_function_signature():
    src = "def f(x):\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION\n"
    out = solutions.strip_solutions(src, "code")
    assert out == "def f(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()\n"
    namespace = {}
    exec(out, namespace)
    try:
        namespace["f"](1)
    except NotImplementedError:
        pass
    else:
        raise AssertionError("the stub must raise NotImplementedError")


def test_clean_nb_strips_outputs_and_is_idempotent(tmp_path):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("1 + 1", execution_count=3, metadata={"tags": ["hide-input"], "x": 1})
    cell.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=3)]
    nb.cells = [cell]
    nb.metadata["widgets"] = {"state": {}}
    path = tmp_path / "n.ipynb"
    nbformat.write(nb, path)
    assert clean_nb.clean(str(path)) is True
    assert clean_nb.clean(str(path)) is False
    out = nbformat.read(path, as_version=4)
    assert out.cells[0].outputs == [] and out.cells[0].execution_count is None
    assert out.cells[0].metadata == {"tags": ["hide-input"]} and "widgets" not in out.metadata


def test_junit_summary_counts_and_fails_on_failures(tmp_path, capsys):
    ok = tmp_path / "ok.xml"
    ok.write_text('<testsuites><testsuite tests="5" failures="0" errors="0" skipped="1"/></testsuites>')
    bad = tmp_path / "bad.xml"
    bad.write_text('<testsuites><testsuite tests="2" failures="1" errors="0" skipped="0"/></testsuites>')
    assert junit_summary.main([str(ok)]) == 0
    assert "total: 4 passed, 0 failed, 1 skipped" in capsys.readouterr().out
    assert junit_summary.main([str(ok), str(bad)]) == 1
    assert junit_summary.main([str(tmp_path / "missing.xml")]) == 1


def test_make_student_writes_to_dist_not_book(tmp_path):
    r = subprocess.run([sys.executable, "-m", "editions.student", str(ROOT / "book"), str(tmp_path)],
                       capture_output=True, text=True, check=True)
    assert len(list(tmp_path.glob("*.ipynb"))) == len(CHAPTERS), r.stdout


def test_no_tool_or_test_edits_sys_path_to_reach_the_tools():
    """The build tools are a package (``editions``, installed by requirements.txt); pytest's
    pythonpath (pyproject.toml) puts the scripts of tools/ and the Sphinx extension of _ext/ on
    the path for the tests. No file edits ``sys.path`` to reach them (this test names the call)."""
    call = "sys.path." + "insert"
    files = [p for d in ("tools", "tests", "_ext") for p in sorted((ROOT / d).rglob("*.py"))]
    found = [str(p.relative_to(ROOT)) for p in files if call in p.read_text(encoding="utf-8")]
    assert not found, found


def test_share_static_keeps_one_copy_of_each_large_identical_file(tmp_path):
    """The second edition reads the first edition's copy of a large identical file; a file
    that differs, or a small one, stays; the script's table says where each shared file is."""
    from editions import share_static
    script = (ROOT / "book" / "_static" / "bqkv-live.js").read_text(encoding="utf-8")
    for edition in ("", "zh"):
        static = tmp_path / edition / "_static"
        (static / "ort").mkdir(parents=True)
        (static / "live").mkdir()
        (static / "bqkv-live.js").write_text(script, encoding="utf-8")
        (static / "ort" / "runtime.wasm").write_bytes(b"w" * 2000)
        (static / "live" / "model.onnx").write_bytes(b"m" * 2000)
        (static / "live" / "small.json").write_bytes(b"s" * 10)
        (static / "live" / "trained.onnx").write_bytes(edition.encode() + b"t" * 2000)  # differs
    shared = share_static.share(tmp_path, "zh", min_bytes=1000)
    assert shared == {"live/model.onnx": "../", "ort/runtime.wasm": "../"}
    zh = tmp_path / "zh" / "_static"
    assert sorted(p.name for p in (zh / "live").iterdir()) == ["small.json", "trained.onnx"]
    assert not (zh / "ort" / "runtime.wasm").exists() and (tmp_path / "_static" / "ort" / "runtime.wasm").exists()
    js = (zh / "bqkv-live.js").read_text(encoding="utf-8")
    assert 'var SHARED = {"live/model.onnx": "../", "ort/runtime.wasm": "../"};' in js
    with pytest.raises(ValueError, match="expected one line"):      # filled once, never twice
        share_static.share(tmp_path, "zh", min_bytes=1000)
