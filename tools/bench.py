"""Execute each chapter once and print a table of wall times (budget check).

    python tools/bench.py --budget 60 book/[0-9]*.ipynb
    python tools/bench.py --cells 3 book/01_squished_memory.ipynb   # and its 3 slowest cells

Runs every notebook in a fresh kernel from its own folder, like nbmake does, and
exits 1 if any chapter fails or takes longer than the budget. ``--cells N`` also lists
each chapter's N slowest cells (nbclient's timing metadata), to see where time goes.
"""
import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from beforeqkv._kernel_client import guard


def cell_seconds(nb) -> list[tuple[float, int, str]]:
    """(seconds, index, first line) of every executed code cell, from nbclient's timing."""
    from datetime import datetime
    out = []
    for i, cell in enumerate(nb.cells):
        t = cell.get("metadata", {}).get("execution", {})
        if cell.cell_type == "code" and "iopub.execute_input" in t and "shell.execute_reply" in t:
            a, b = (datetime.fromisoformat(t[k].replace("Z", "+00:00"))
                    for k in ("iopub.execute_input", "shell.execute_reply"))
            out.append(((b - a).total_seconds(), i, cell.source.strip().split("\n")[0][:60]))
    return out


def run(path: Path, cells: int = 0) -> tuple[float, str]:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", extra_arguments=["--IPKernelApp.log_level=ERROR"],
                            resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    try:
        client.execute()
        status = "ok"
    except Exception as err:  # report and go on with the other chapters
        status = f"FAILED: {type(err).__name__}"
    secs = time.perf_counter() - t0
    for cell_s, i, first in sorted(cell_seconds(nb), reverse=True)[:cells]:
        print(f"      cell {i:>3} {cell_s:6.1f} s  {first}")
    return secs, status


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("notebooks", nargs="+")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds allowed per chapter")
    ap.add_argument("--cells", type=int, default=0, help="also list each chapter's N slowest cells")
    args = ap.parse_args()
    os.environ.setdefault("BEFOREQKV_PROGRESS", "0")
    guard()  # a kernel reply is read when it arrives, not at the cell timeout
    os.environ.setdefault("BEFOREQKV_CHECKS", "strict")  # the source notebooks: a failed check fails the run
    rows, total, bad = [], 0.0, 0
    for p in map(Path, args.notebooks):
        secs, status = run(p, args.cells)
        total += secs
        over = secs > args.budget
        bad += over or status != "ok"
        rows.append((p.name, secs, status + (" (over budget)" if over else "")))
        print(f"  {p.name:<34} {secs:6.1f} s  {rows[-1][2]}", flush=True)
    print()
    print("| chapter | wall s | status |\n|---|---:|---|")
    for name, secs, status in rows:
        print(f"| {name} | {secs:.1f} | {status} |")
    print(f"| **total** | **{total:.1f}** | {'ok' if not bad else f'{bad} problem(s)'} |")
    print(f"\nbudget {args.budget:.0f} s per chapter; cores: {os.cpu_count()}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
