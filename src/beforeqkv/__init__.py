"""beforeqkv: the one package every chapter of *Before Q, K, and V* imports.

A chapter derives a component in the open, checks it against the canonical
version in this package, and from then on uses the package's version.

    import beforeqkv
    DEVICE = beforeqkv.get_device()
    beforeqkv.setup()
    beforeqkv.seed_everything(0)
"""
from __future__ import annotations

import contextlib
import os
import time

import numpy as np
import torch

from ._runtime import _DEVICE_ENV, get_device, seed_everything, workers  # noqa: F401  (the public API)
from ._runtime import full_float32, reuse_freed_memory
from ._validate import check_positive

__version__ = "0.1.0"

__all__ = ["get_device", "setup", "seed_everything", "cpu_threads", "glue", "sci", "__version__"]

def setup(threads: int | None = None, plot_style: bool = True, quiet: bool = False) -> dict:
    """Make tiny models fast and figures consistent; return what was set.

    * CPU: ``torch.set_num_threads(1)`` by default. Tiny models run fastest on
      one thread: with two, OpenMP threads spin and a loaded 2-core laptop runs
      them 20-37x slower (measured while writing the book).
    * Flush denormal floats to zero: a saturated softmax produces denormals,
      which are ~4x slower on CPUs (chapter 7).
    * Keep freed memory for reuse (Linux): :func:`beforeqkv._runtime.reuse_freed_memory`.
    * float32 is float32 on every device: :func:`beforeqkv._runtime.full_float32` turns TF32 off.
    * One matplotlib style for every figure.
    """
    reused = reuse_freed_memory()
    full_float32()
    if threads is None:
        threads = int(os.environ.get("BEFOREQKV_THREADS", "1"))
    check_positive(threads=threads)
    torch.set_num_threads(threads)
    flushed = bool(torch.set_flush_denormal(True))
    if plot_style:
        from .plot import enable_notebook_display, use_book_style

        use_book_style()
        enable_notebook_display()
    info = {
        "torch": torch.__version__,
        "device": str(get_device()),
        "threads": torch.get_num_threads(),
        "flush_denormal": flushed,
        "tf32": False,  # full_float32
        "reuse_freed_memory": reused,
    }
    if not quiet:
        # Two short lines: the banner is the first output of every chapter (<= 76 characters).
        from .i18n import _

        print(_("beforeqkv {version} · torch {torch} · device {device}\n"
                "{threads} CPU thread(s) · denormals flushed: {flush_denormal}").format(
                    version=__version__, **info))
    return info


@contextlib.contextmanager
def cpu_threads(threads: int | None = None):
    """Run a block on ``threads`` CPU threads, then go back to the thread count before it.

    The default is the number of cores :func:`beforeqkv.train.map_runs` would use (1 once this
    process computes on a GPU, or with ``BEFOREQKV_WORKERS=1``), but no more than the cores that are idle right now
    (:func:`_idle_cores`): a second thread on a core another program keeps busy spins and
    waits. Chapter 8's character model, 150 steps on a 2-core CPU: one thread 4.5 s, two
    threads 3.0 s when the other core is idle, 13.0 s when a CPU-bound process runs on it.
    For the one run in the book big enough to gain from a second thread; the tiny models run
    fastest on one. The numbers of a seeded run depend on the thread count only in the last
    digits of floating point, and are the same every time for a given count.
    """
    n = threads
    if n is None:
        n = workers()
        idle = _idle_cores() if n > 1 else None
        if idle is not None:
            n = max(1, min(n, int(idle + 0.2)))
    check_positive(threads=n)
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield n
    finally:
        torch.set_num_threads(before)


def _cpu_times(stat: str = "/proc/stat") -> tuple[float, float, int] | None:
    """(idle, total) jiffies of all CPUs and their number, from Linux's /proc/stat (None elsewhere)."""
    try:
        with open(stat) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    fields = [float(x) for x in lines[0].split()[1:9]]  # user nice system idle iowait irq softirq steal
    n_cpus = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    return fields[3] + fields[4], sum(fields), n_cpus


def _idle_cores(seconds: float = 0.2, times=_cpu_times) -> float | None:
    """How many CPU cores no program used over the next ``seconds`` (this process sleeps
    meanwhile); None where the system does not say (off Linux)."""
    before = times()
    if before is None:
        return None
    time.sleep(seconds)
    after = times()
    total = after[1] - before[1]
    return None if total <= 0 else (after[0] - before[0]) / total * after[2]


def glue(name: str, value, display: bool = False):
    """Store ``value`` under ``name`` for the book's prose (``{glue:text}`name```).

    Uses ``myst_nb.glue`` when it is installed (the book build); elsewhere, e.g. on
    Colab, it just prints the value so the reader still sees the number.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("glue needs a non-empty string name")
    try:
        from myst_nb import glue as _glue
    except ImportError:  # plain Jupyter / Colab
        print(f"{name} = {value}")
        return value
    _glue(name, value, display=display)
    return value


_SUPERSCRIPT = str.maketrans("0123456789-", "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b")


def sci(value: float, digits: int = 1) -> str:
    """``value`` as a book prints it: ``sci(2.8e14)`` is ``"2.8 \u00d7 10\u00b9\u2074"``.

    Glue the string and quote it with a plain ``{glue:text}`name``` (no format spec):
    the site and the reader notebooks then show ``2.8 \u00d7 10\u00b9\u2074``, not ``2.8e+14``.
    ``digits`` is the number of decimals of the mantissa; a mantissa of exactly 1 is
    dropped (``sci(1e-7, 0)`` is ``"10\u207b\u2077"``) and 0 is ``"0"``.
    """
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"sci needs a finite number, got {value}")
    if not isinstance(digits, int) or digits < 0:
        raise ValueError(f"digits must be an int >= 0, got {digits!r}")
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.{digits}e}".split("e")
    power = "10" + str(int(exponent)).translate(_SUPERSCRIPT)
    if mantissa.lstrip("-") == "1":
        return ("\u2212" if mantissa.startswith("-") else "") + power
    return mantissa.replace("-", "\u2212") + " \u00d7 " + power
