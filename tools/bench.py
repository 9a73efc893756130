"""Execute each chapter once and print a table of wall times (budget check).

    python tools/bench.py --budget 60 book/[0-9]*.ipynb

Runs every notebook in a fresh kernel from its own folder, like nbmake does, and
exits 1 if any chapter fails or takes longer than the budget.
"""
import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def run(path: Path) -> tuple[float, str]:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", extra_arguments=["--IPKernelApp.log_level=ERROR"],
                            resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    try:
        client.execute()
        status = "ok"
    except Exception as err:  # report and go on with the other chapters
        status = f"FAILED: {type(err).__name__}"
    return time.perf_counter() - t0, status


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("notebooks", nargs="+")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds allowed per chapter")
    args = ap.parse_args()
    os.environ.setdefault("BEFOREQKV_PROGRESS", "0")
    os.environ.setdefault("BEFOREQKV_CHECKS", "strict")  # the source notebooks: a failed check fails the run
    rows, total, bad = [], 0.0, 0
    for p in map(Path, args.notebooks):
        secs, status = run(p)
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
