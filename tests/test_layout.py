"""The package's layout: the weight readers stay free of plotting."""
import subprocess
import sys


def test_importing_the_weight_readers_does_not_import_matplotlib():
    code = ("import sys, beforeqkv.pretrained, beforeqkv.pretrained.minilm, beforeqkv.pretrained.smollm2; "
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stdout + out.stderr


def test_no_module_under_pretrained_imports_matplotlib():
    from pathlib import Path

    import beforeqkv.pretrained as pretrained
    for path in Path(pretrained.__file__).parent.glob("*.py"):
        assert "matplotlib" not in path.read_text(), path.name


def _package_imports(folder: str = "src", package: str = "beforeqkv"):
    """{module: {package modules it imports, at any depth of its code}} for folder/package."""
    import ast
    from pathlib import Path
    src = Path(__file__).resolve().parents[1] / folder
    modules = {".".join(p.relative_to(src).with_suffix("").parts).removesuffix(".__init__"): p
               for p in (src / package).rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
                for alias in node.names:  # `from . import x`: the submodule x, or a name of the package
                    target = f"{base}.{alias.name}"
                    found.add(target if target in modules else base)
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def _assert_no_circle(graph):
    seen, done = set(), set()

    def visit(m, path):
        assert m not in seen - done, " -> ".join(path + [m])
        if m in done:
            return
        seen.add(m)
        for dep in sorted(graph[m]):
            visit(dep, path + [m])
        done.add(m)
    for m in sorted(graph):
        visit(m, [])


def test_the_package_has_no_import_circle_and_no_module_reads_the_root():
    """No module of beforeqkv imports the package root's namespace (``from . import get_device``
    in train.py did, while the root imported train: a circle); and no circle at all."""
    graph = _package_imports()
    assert len(graph) > 40 and "beforeqkv.train" in graph
    upward = sorted(m for m, deps in graph.items() if "beforeqkv" in deps)
    assert not upward, upward
    _assert_no_circle(graph)


def test_the_circle_finder_finds_a_circle():
    import pytest
    with pytest.raises(AssertionError, match="a -> b -> a"):
        _assert_no_circle({"a": {"b"}, "b": {"a"}})


def test_the_build_tools_are_one_package_without_a_circle():
    """tools/editions: no circle (assignments <-> export_reader was one, closed by an import
    inside a function), no module reads the package root, none imports the scripts beside
    the package (tools/*.py), the tests or the site's extension."""
    import ast
    from pathlib import Path
    graph = _package_imports("tools", "editions")
    assert {"editions.export_reader", "editions.assignments", "editions.myst", "editions.book"} <= set(graph)
    # __main__ (python -m editions) prints the root's guide: Python imports the root before it
    upward = sorted(m for m, deps in graph.items() if "editions" in deps and m != "editions.__main__")
    assert not upward, upward
    _assert_no_circle(graph)
    root = Path(__file__).resolve().parents[1]
    outside = {p.stem for p in (root / "tools").glob("*.py")} | {p.stem for p in (root / "tests").glob("*.py")} | {
        "bqkv_site", "_book", "conftest"}
    for path in (root / "tools" / "editions").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            bad = [n for n in names if n.split(".")[0] in outside]
            assert not bad, f"{path.name} imports {bad}"
