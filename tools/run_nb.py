"""Execute one notebook into a copy with outputs (for looking at it), print errors and time.

    python tools/run_nb.py book/01_squished_memory.ipynb /tmp/out.ipynb
"""
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

src, dst = Path(sys.argv[1]), Path(sys.argv[2])
nb = nbformat.read(src, as_version=4)
t0 = time.perf_counter()
try:
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(src.parent)}}).execute()
    status = 0
except CellExecutionError as err:
    print(str(err)[-3000:])
    status = 1
nbformat.write(nb, dst)
print(f"{src.name}: {time.perf_counter() - t0:.1f} s wall, {'ok' if status == 0 else 'FAILED'} -> {dst}")
sys.exit(status)
