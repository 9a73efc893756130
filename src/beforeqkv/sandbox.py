"""Grading in which the student's code never runs where the points are counted.

For every graded check cell of a homework notebook:

1. **The student's definitions only.** From the submission's answer cell of that exercise the
   grader keeps the ``def`` and ``class`` statements and the imports (for a prediction, the
   assignment of its name); every other top-level statement is dropped and listed. The other
   exercises' answer cells are the instructor's, so one exercise's code never changes another's
   score; the notebook's own cells contribute only the statements the answer needs (imports, the
   definitions and values it reads), found by name.
2. **A throwaway process.** Those statements run in a new Python (``python -I``, an empty temporary
   folder as working directory, a bare environment, a time limit). There the check runs in
   *collect* mode (``checks._record``): each call of the student's code on one of the checker's
   inputs is recorded as data (tensors, numbers, text, an error's type and message) and written with
   ``torch.save``. Nothing else comes back; the process and its folder are then gone.
3. **The verdict, from data.** In the grading process (which never imports the student's code) the
   same check runs in *replay* mode: the student's functions and classes are placeholders, each call
   is answered from the records (``torch.load(weights_only=True)``: tensors and plain values only),
   looked up by the inputs this process computed itself; the reference, the hints and the verdict are
   computed here. The package's files are hashed when grading starts and checked again around every
   throwaway process: a submission that wrote into them stops the grading with an error.
4. **The package is not an answer.** An answer cell that names the package (``beforeqkv``, ``checks``,
   a name the notebook imported from it that the instructor's own answer does not use) or reaches
   around the language (``__import__``, ``eval``, ``getattr``, frames, ``sys``, dunder attributes ...)
   is flagged in the report and scores 0 for that exercise unless ``allow_package`` is set.
5. **Predictions for participation.** The experiment below a predict-then-run question shows its
   answer once run, so by default a prediction scores when it is an answer in the question's form;
   ``predictions="key"`` compares it with the answer in the instructor's version of the notebook.
   Neither reads the package's hashed answers (the reader's self-check, not a secret).

Used by ``python -m beforeqkv.grade``, and by nbgrader's autograde through the preprocessor in the
``nbgrader_config.py`` that ``make assignments`` writes.
"""
from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Check", "plan", "grade_notebook", "scan", "package_digest", "PackageChanged", "PREDICTIONS"]

PACKAGE = Path(__file__).resolve().parent
HIDDEN = re.compile(r"^### BEGIN HIDDEN TESTS\n(.*?)^### END HIDDEN TESTS", re.S | re.M)
ALLOWED_MODULES = {"torch", "math", "numpy", "functools", "itertools", "collections", "typing", "dataclasses",
                   "string", "re", "einops", "operator", "statistics", "fractions", "decimal", "random",
                   "warnings"}
FORBIDDEN_NAMES = {"__import__", "eval", "exec", "compile", "globals", "locals", "vars", "getattr", "setattr",
                   "delattr", "open", "breakpoint", "input", "__builtins__", "help", "exit", "quit", "get_ipython"}
PACKAGE_NAMES = {"beforeqkv", "checks", "grading"}
FORBIDDEN_ATTRS = {"sys", "modules", "os", "builtins", "importlib", "inspect", "gc", "_getframe", "f_back",
                   "f_globals", "f_locals", "f_builtins", "f_code", "gi_frame", "cr_frame", "ag_frame", "tb_frame",
                   "tb_next", "subprocess", "ctypes", "pickle", "marshal", "_record", "_core", "checks", "grading",
                   "load", "save", "hub", "_C", "ops", "library", "classes", "utils"}
DUNDERS_OK = {"__init__", "__call__"}


class PackageChanged(RuntimeError):
    """The package's files changed while grading: a submission wrote into them."""


# ---------------------------------------------------------------- reading the notebooks
def _code(source: str) -> str:
    """A cell's Python: IPython magics and shell lines dropped."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _statements(source: str) -> list[ast.stmt]:
    try:
        return ast.parse(_code(source)).body
    except SyntaxError:
        return []


def _segment(source: str, node: ast.AST) -> str:
    return ast.get_source_segment(_code(source), node) or ""


def _bound(node: ast.stmt) -> set[str]:
    """The names a top-level statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
    names = set()
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    for t in targets:
        if t is not None:
            names |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _read(node: ast.AST) -> set[str]:
    """The global names a statement reads (its functions' and classes' free names included)."""
    import symtable
    try:
        table = symtable.symtable(ast.unparse(node), "<statement>", "exec")
    except SyntaxError:
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    names = set()

    def walk(t):
        for s in t.get_symbols():
            if s.is_referenced() and (s.is_global() if t.get_type() != "module" else not s.is_imported()):
                names.add(s.get_name())
        for child in t.get_children():
            walk(child)
    walk(table)
    return names


@dataclass
class Check:
    """One graded check cell: its checks, and what the throwaway process runs for it."""
    grade_id: str
    points: float
    kind: str
    exercise: str
    calls: list = field(default_factory=list)  # [(checker name, [argument source, ...])]
    student: str = ""  # the student's definitions for this exercise
    student_names: set = field(default_factory=set)
    dropped: list = field(default_factory=list)  # the student's top-level lines not run
    context: str = ""  # the notebook's statements the answer and the arguments need
    parent_context: str = ""  # the notebook's statements the non-student arguments need
    flags: dict = field(default_factory=lambda: {"package": [], "escape": []})  # see scan()
    prediction: bool = False  # a predict-then-run question (see grade_notebook's ``predictions``)
    expected: object = None  # a prediction's answer in the instructor's version (a Python literal)


def _calls(test_source: str) -> list:
    block = HIDDEN.search(test_source)
    calls = []
    for node in ast.walk(ast.parse(block.group(1) if block else test_source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "verify"
                and node.args and isinstance(node.args[0], ast.Constant)):
            src = block.group(1) if block else test_source
            calls.append((node.args[0].value, [ast.get_source_segment(src, a) for a in node.args[1:]]))
    return calls


def _answer_id(test_id: str, answers: dict) -> str | None:
    stem = test_id.removesuffix("_check")
    return next((f"{stem}{k}" for k in ("_code", "_prediction") if f"{stem}{k}" in answers), None)


def _definitions(source: str, prediction: bool) -> tuple[str, set, list]:
    """The student's def/class/import statements (a prediction: its assignment), their names,
    and the lines left out."""
    kept, names, dropped = [], set(), []
    code = _code(source)
    try:
        body = ast.parse(code).body
    except SyntaxError as err:
        return "", set(), [f"line {err.lineno}: a syntax error ({err.msg})"]
    for node in body:
        ok = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom))
        if prediction and isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            ok = all(isinstance(t, ast.Name) for t in targets)
        if ok:
            kept.append(ast.get_source_segment(code, node, padded=False))
            # decorators are part of a definition's statement but start above it
            if getattr(node, "decorator_list", None):
                lines = code.splitlines()[node.decorator_list[0].lineno - 1:node.end_lineno]
                kept[-1] = "\n".join(lines)
            names |= _bound(node)
        else:
            dropped.append(f"line {node.lineno}: `{code.splitlines()[node.lineno - 1].strip()[:60]}`")
    return "\n\n".join(kept), names, dropped


def _needed(pool: list[tuple[int, ast.stmt, str]], wanted: set[str], before: int) -> str:
    """The statements of ``pool`` (cell index, statement, its cell's source) before cell ``before``
    that bind ``wanted``, with what they read in turn, and every import, in notebook order."""
    chosen: dict[tuple[int, int], tuple[ast.stmt, str]] = {}
    for k, (i, node, src) in enumerate(pool):
        if i < before and isinstance(node, (ast.Import, ast.ImportFrom)):
            chosen[(i, k)] = (node, src)
    todo, seen = set(wanted), set()
    while todo:
        name = todo.pop()
        seen.add(name)
        for k in range(len(pool) - 1, -1, -1):
            i, node, src = pool[k]
            if i < before and name in _bound(node):
                if (i, k) not in chosen:
                    chosen[(i, k)] = (node, src)
                    todo |= _read(node) - seen
                break
    return "\n".join(_segment(src, node) for __, (node, src) in sorted(chosen.items()))


def _package_names(pool) -> set[str]:
    names = set()
    for __, node, __ in pool:
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "beforeqkv":
            names |= _bound(node)
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "beforeqkv" for a in node.names):
            names |= _bound(node)
    return names


def scan(answer: str, package_names: set[str] = frozenset(), allowed: set[str] = frozenset()) -> dict:
    """What in ``answer`` (an answer cell's code) uses the package (``"package"``: its modules, or a
    name the notebook imported from it that ``allowed``, the instructor's own answer, does not use)
    or reaches around the language (``"escape"``: other imports, ``eval``, ``getattr``, frames,
    ``sys``, dunder attributes ...): lines for each, empty lists when it does neither."""
    found: dict = {"package": [], "escape": []}
    try:
        tree = ast.parse(_code(answer))
    except SyntaxError:
        return found
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            for m in mods:
                root = m.split(".")[0]
                if root in PACKAGE_NAMES:
                    found["package"].append(f"line {line}: imports {m}")
                elif root not in ALLOWED_MODULES:
                    found["escape"].append(f"line {line}: imports {m or '.'}")
        elif isinstance(node, ast.Name):
            if node.id in FORBIDDEN_NAMES:
                found["escape"].append(f"line {line}: uses `{node.id}`")
            elif (node.id in PACKAGE_NAMES or node.id in package_names) and node.id not in allowed:
                found["package"].append(f"line {line}: uses `{node.id}`")
        elif isinstance(node, ast.Attribute):
            a = node.attr
            if a in FORBIDDEN_ATTRS or (a.startswith("__") and a.endswith("__") and a not in DUNDERS_OK):
                found["escape"].append(f"line {line}: uses `.{a}`")
    return {k: list(dict.fromkeys(v)) for k, v in found.items()}


def _assigned(source: str):
    """The value a prediction's answer cell assigns (the instructor's answer), else None."""
    for node in _statements(source):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            try:
                return ast.literal_eval(node.value)
            except ValueError:
                return None
    return None


def plan(source, submission) -> list[Check]:
    """The graded check cells of the instructor's notebook ``source``, each with the submission's
    definitions for its exercise and the notebook statements they need."""
    answers = {}
    for cell in submission.cells:
        nbg = cell.metadata.get("nbgrader", {})
        if nbg.get("solution") and nbg.get("grade_id") and cell.cell_type == "code":
            answers.setdefault(nbg["grade_id"], cell.source)
    keys = {c.metadata["nbgrader"]["grade_id"]: c.source for c in source.cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")}
    pool = []  # the instructor's statements: its own cells, every answer cell in the instructor's version
    tests = []
    for i, cell in enumerate(source.cells):
        if cell.cell_type != "code":
            continue
        nbg = cell.metadata.get("nbgrader", {})
        if nbg.get("grade"):
            tests.append((i, cell))
            continue
        for node in _statements(cell.source):
            pool.append((i, node, cell.source))
    package = _package_names(pool)
    checks = []
    for i, cell in tests:
        nbg, hw = cell.metadata["nbgrader"], cell.metadata.get("homework", {})
        check = Check(nbg["grade_id"], nbg.get("points", 1), hw.get("kind", "check"),
                      str(hw.get("exercise", nbg["grade_id"])), _calls(cell.source))
        aid = _answer_id(check.grade_id, keys)
        own = set()
        if aid is not None:
            prediction = aid.endswith("_prediction")
            check.student, check.student_names, check.dropped = _definitions(answers.get(aid, ""), prediction)
            check.prediction = prediction
            if prediction:
                check.expected = _assigned(keys[aid])
            own = {n for node in _statements(keys[aid]) for n in _bound(node)}
            allowed = {n.id for n in ast.walk(ast.parse(_code(keys[aid]))) if isinstance(n, ast.Name)} & package
            if not prediction:
                check.flags = scan(answers.get(aid, ""), package, allowed)
        own_pool = [p for p in pool if source.cells[p[0]].metadata.get("nbgrader", {}).get("grade_id") != aid]
        student_args = set()
        other_args = set()
        for __, args in check.calls:
            for a in args:
                names = _read(ast.parse(a, mode="eval"))
                (student_args if names & (own | check.student_names) else other_args).update(names)
        student_reads = set()
        for node in _statements(check.student):
            student_reads |= _read(node)
        wanted = (student_reads | other_args | student_args) - check.student_names - own
        check.context = _needed(own_pool, wanted, i)
        check.parent_context = _needed(own_pool, other_args - own - check.student_names, i)
        checks.append(check)
    return checks


# ---------------------------------------------------------------- the package, untouched
def package_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".mo", ".json", ".txt") and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(PACKAGE)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


# ---------------------------------------------------------------- the throwaway process
def _sandbox(check: Check, timeout: float, python: str) -> tuple[dict | None, str]:
    """Run ``check``'s calls on the student's definitions in a new process: (records, problem)."""
    import torch
    work = Path(tempfile.mkdtemp(prefix="bqkv-sandbox-"))
    try:
        spec = {"context": check.context, "answer": check.student, "calls": check.calls,
                "student": sorted(check.student_names), "out": str(work / "records.pt")}
        (work / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work), "BEFOREQKV_GRADING": "1",
               "BEFOREQKV_PROGRESS": "0", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
        for name in ("BEFOREQKV_LANG", "BEFOREQKV_DEVICE", "LANG", "LC_ALL", "OMP_NUM_THREADS", "BEFOREQKV_DATA"):
            if name in os.environ:
                env[name] = os.environ[name]
        try:
            run = subprocess.run([python, "-I", "-m", "beforeqkv.sandbox", str(work / "spec.json")], cwd=work,
                                 env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, f"your code ran longer than {timeout:g} s"
        out = work / "records.pt"
        if run.returncode != 0 or not out.is_file():
            tail = run.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
            return None, f"your code stopped the grading process (exit code {run.returncode}) {tail[0][:120]}".strip()
        if out.stat().st_size > 1 << 30:
            return None, "your code's outputs are over 1 GiB"
        try:
            with warnings.catch_warnings():  # a protocol note from torch's safe unpickler
                warnings.simplefilter("ignore")
                return torch.load(out, weights_only=True), ""
        except Exception as err:
            return None, f"the grading process wrote unreadable records ({type(err).__name__})"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _child(spec_path: str) -> int:
    """Inside the throwaway process: run the definitions and the checks in collect mode."""
    import linecache

    import torch

    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    from beforeqkv import checks
    from beforeqkv.checks import _record
    ns: dict = {"__name__": "__main__"}
    exec(compile(spec["context"], "<notebook>", "exec"), ns)  # the instructor's statements
    answer = spec["answer"]
    linecache.cache["<your answer>"] = (len(answer), None, answer.splitlines(True), "<your answer>")
    result: dict = {"answer_error": "", "calls": []}
    try:
        exec(compile(answer, "<your answer>", "exec"), ns)
    except Exception as err:
        result["answer_error"] = f"{type(err).__name__}: {err}"[:500]
    for name, args in spec["calls"]:
        records: dict = {}
        _record.collecting(records)
        values, shown = [], []
        try:
            values = [eval(a, ns) for a in args]
            shown = [_record.encode(v) if a in spec["student"] else ("x", "given") for a, v in zip(args, values)]
        except Exception as err:
            result["calls"].append({"records": {}, "args": [], "error": f"{type(err).__name__}: {err}"[:500]})
            continue
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                getattr(checks, name)(*values)
            except Exception:
                pass
        result["calls"].append({"records": records, "args": shown, "error": ""})
    _record.live()
    torch.save(result, spec["out"])
    return 0


# ---------------------------------------------------------------- the verdict, from data
def _verdict(check: Check, data: dict, parent_ns: dict) -> tuple[bool, str]:
    from beforeqkv import checks
    from beforeqkv.checks import _record
    if data.get("answer_error") and not check.student_names:
        return False, f"your answer cell did not run: {data['answer_error']}"
    messages = []
    for (name, args), got in zip(check.calls, data["calls"]):
        if got.get("error"):
            return False, got["error"]
        values = []
        for a, shown in zip(args, got["args"]):
            if a in check.student_names:  # the student's value (a prediction) or a placeholder
                values.append(_record.Placeholder(a) if shown[0] == "x" else _record.decode(shown))
            else:
                values.append(eval(a, parent_ns))
        _record.replaying(got["records"])
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                result = getattr(checks, name)(*values)
        except _record.ReplayMiss as err:
            return False, f"could not be replayed ({err}): grade it by hand"
        except AssertionError as err:
            return False, str(err).strip()
        except Exception as err:
            return False, f"{type(err).__name__}: {err}"
        finally:
            _record.live()
        if not result:
            return False, getattr(result, "message", "") or out.getvalue().strip()
        messages.append(out.getvalue().strip())
    return True, " ".join(m.splitlines()[0] for m in messages if m)[:200]


def _prediction_verdict(check: Check, data: dict, predictions: str) -> tuple[bool, str]:
    """A prediction's verdict from the student's value alone: ``participation`` (any answer in the
    question's form) or ``key`` (the instructor's answer, from the instructor's notebook; never the
    package's hash)."""
    from beforeqkv.checks import _core, _record
    for (name, args), got in zip(check.calls, data["calls"]):
        if name != "check_prediction" or len(args) != 2:
            continue
        if got.get("error"):
            return False, got["error"]
        shown = got["args"][1] if len(got["args"]) > 1 else ("x", "missing")
        value = None if shown[0] == "x" else _record.decode(shown)
        if predictions == "key" and check.expected is None:
            return False, "the instructor's version has no answer for this prediction: grade it by hand"
        return _core.grade_prediction(ast.literal_eval(args[0]), value,
                                      check.expected if predictions == "key" else None)
    return False, "no prediction check in this cell: grade it by hand"


PREDICTIONS = ("participation", "key")


def grade_notebook(source, submission, *, timeout: float = 600, allow_package: bool = False,
                   python: str | None = None, digest: str | None = None, only=None,
                   predictions: str = "participation") -> list[dict]:
    """One row per graded cell of ``source`` (the instructor's notebook) for ``submission``:
    grade id, exercise, kind, points, score, status (the check's message), flags, dropped lines.

    ``predictions``: ``"participation"`` (default) scores a prediction answered in its question's
    form, since the experiment below the question shows the answer once run; ``"key"`` scores it
    against the answer in the instructor's version of the notebook (``source``)."""
    if predictions not in PREDICTIONS:
        raise ValueError(f"predictions must be one of {PREDICTIONS}, got {predictions!r}")
    before = os.environ.get("BEFOREQKV_GRADING")
    os.environ["BEFOREQKV_GRADING"] = "1"  # graded mode: a failed check raises, never shows an answer
    try:
        return _grade(source, submission, timeout, allow_package, python or sys.executable,
                      digest or package_digest(), only, predictions)
    finally:
        if before is None:
            os.environ.pop("BEFOREQKV_GRADING", None)
        else:
            os.environ["BEFOREQKV_GRADING"] = before


def _grade(source, submission, timeout, allow_package, python, digest, only, predictions) -> list[dict]:
    rows, parent_ns = [], {}
    contexts: dict[str, dict] = {}
    for check in plan(source, submission):
        if only is not None and check.grade_id not in only:
            continue
        row = {"id": check.grade_id, "exercise": check.exercise, "kind": check.kind, "points": check.points,
               "score": 0, "status": "", "flags": check.flags, "dropped": check.dropped}
        if check.flags["escape"]:
            row["status"] = "reaches around Python (read it by hand): " + "; ".join(check.flags["escape"][:3])
            rows.append(row)
            continue
        if check.flags["package"] and not allow_package:
            row["status"] = "calls the package's own code: " + "; ".join(check.flags["package"][:3])
            rows.append(row)
            continue
        if check.parent_context not in contexts:
            ns: dict = {"__name__": "__grading__"}
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(check.parent_context, "<notebook>", "exec"), ns)
            contexts[check.parent_context] = ns
        parent_ns = contexts[check.parent_context]
        data, problem = _sandbox(check, timeout, python)
        if package_digest() != digest:
            raise PackageChanged(f"the files of {PACKAGE} changed while grading {check.grade_id}: a submission "
                                 "wrote into them. Reinstall beforeqkv and grade again.")
        if data is None:
            row["status"] = problem
        else:
            ok, message = (_prediction_verdict(check, data, predictions) if check.prediction
                           else _verdict(check, data, parent_ns))
            row["score"] = check.points if ok else 0
            row["status"] = "passed" if ok else (message.splitlines() or ["failed"])[0][:160]
            row["message"] = message
        rows.append(row)
    return rows


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1]))
