"""Time causal attention, forward + backward: teaching path, package fast path, torch.

    python tools/bench_attention.py                  # CPU fp32, T in 128 512 2048
    python tools/bench_attention.py --device cuda    # + T = 8192 and bf16
    make bench-attention                             # writes _build/bench/attention.csv

Two levels, each with its own reference measured in the same run:

* ``kernel``: q, k, v given (B, H, T, d_head). The teaching path (``attention.attend``
  with a causal mask), the package's fast path
  (``attention.scaled_dot_product_attention(causal=True)``) and
  ``F.scaled_dot_product_attention(is_causal=True)`` called directly (the reference).
* ``module``: x (B, T, d_model) with the same four projections. The package's
  ``MultiHeadAttention`` on its teaching path (``fast=False``) and on its fast
  path, the projections + direct SDPA written inline (the reference), and
  ``nn.MultiheadAttention(need_weights=False, is_causal=True)``.

Each time is the median of ``--repeats`` runs; the variants of one size are interleaved
(one run of each, round after round, starting with a different one each round) so that
load on a shared machine and cold caches hit them alike.
``ratio`` = time / reference time. ``saved_mb``: tensors autograd keeps for the backward
pass (any device); ``peak_mb``: peak allocated memory (CUDA only). Exits 1 when the
package's fast path is slower than the reference by more than it may be (``--no-check`` to
skip that): 1.05x, or its ``bound`` where that is larger.

The bound, and why. Before timing, each level checks on the device that the fast path runs
exactly the operators of the direct call, forward and backward (``same_ops``: those that
compute in the same order, the free views as the same multiset): the device does the same
work either way. What the package adds is host work, its checks and the module call, measured
as ``host_us`` on the smallest inputs, where the kernels cost next to nothing. At worst the
device waits for all of it, so the fast path takes at most ``direct + host_us``:
``bound = 1 + host_us / direct``. On a CPU or with long sequences the bound is under 1.05;
it can be over on a GPU with short sequences, whose time is the host's launching kernels.
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.benchmark as benchmark
from torch.utils._python_dispatch import TorchDispatchMode

from beforeqkv import attention

LIMIT = 1.05  # the package's fast path may be at most 5% slower than direct SDPA


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _saved_bytes(fn) -> int:
    """Bytes of the tensors autograd saves for backward during ``fn()`` (counted once each)."""
    seen, total = set(), 0

    def pack(t):
        nonlocal total
        key = (t.untyped_storage().data_ptr(), t.dtype, tuple(t.shape))
        if key not in seen:
            seen.add(key)
            total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return total


class _OpLog(TorchDispatchMode):
    """Records every aten operator dispatched while it is on, forward and backward."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func)
        return func(*args, **(kwargs or {}))


def dispatched_ops(fn) -> list:
    """The aten operators ``fn()`` dispatches, in order (forward and its backward)."""
    log = _OpLog()
    with log:
        fn()
    return log.ops


def _free(op) -> bool:
    """A view: its result aliases an input without writing it (the schema says so), so no kernel
    runs; _unsafe_view too. In-place operators (``add_``) alias what they write: they compute."""
    alias = op._schema.returns[0].alias_info if op._schema.returns else None
    return (alias is not None and not alias.is_write) or "view" in op._schema.name


def _views(ops) -> list:
    return sorted(str(op) for op in ops if _free(op))


def different_work(fn, reference) -> str:
    """'' when ``fn()`` dispatches the operators of ``reference()``: the ones that compute in the
    same order, and the free views (a view, a transpose, ...) as the same multiset; else what
    differs. The same operators on the same shapes run the same kernels on any device."""
    fn(), reference()  # both accumulate into the gradients the first call created
    a, b = dispatched_ops(fn), dispatched_ops(reference)
    work_a = [str(op) for op in a if not _free(op)]
    work_b = [str(op) for op in b if not _free(op)]
    if work_a != work_b:
        return f"computes {work_a} where the reference computes {work_b}"
    if _views(a) != _views(b):
        return f"views {_views(a)} where the reference has {_views(b)}"
    return ""


def host_us(level, device, dtype, seconds: float = 0.2) -> float:
    """Host time the package's fast path adds to a direct call, in microseconds: both timed on
    the smallest inputs (one head of width 2, T = 2), where the kernels cost next to nothing
    and a call's time is the host's; the median of 3 interleaved rounds, at least 0."""
    fns = _variants(level, 1, 2, 1, 2, device, dtype, torch.Generator().manual_seed(0))
    timers = {name: benchmark.Timer(stmt="fn()", globals={"fn": fns[name]})
              for name in ("package fast", "direct SDPA")}
    extra = []
    for _ in range(3):
        t = {name: timer.blocked_autorange(min_run_time=seconds).median for name, timer in timers.items()}
        extra.append(t["package fast"] - t["direct SDPA"])
    return max(0.0, 1e6 * statistics.median(extra))


def _variants(level, B, T, H, d_head, device, dtype, gen):
    """name -> a function that runs forward + backward once."""
    d_model = H * d_head
    if level == "kernel":
        shape = (B, H, T, d_head)
        q, k, v = (torch.randn(shape, generator=gen).to(device, dtype).requires_grad_() for _ in range(3))
        g = torch.randn(shape, generator=gen).to(device, dtype)
        mask = attention.causal_mask(T, device=device)  # (T, T)
        return {
            "teaching (attend)": lambda: attention.attend(q, k, v, mask=mask)[0].backward(g),
            "package fast": lambda: attention.scaled_dot_product_attention(q, k, v, causal=True).backward(g),
            "direct SDPA": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g),
        }
    x = torch.randn(B, T, d_model, generator=gen).to(device, dtype).requires_grad_()
    g = torch.randn(B, T, d_model, generator=gen).to(device, dtype)
    mha = attention.MultiHeadAttention(d_model, H).to(device, dtype)
    teaching = attention.MultiHeadAttention(d_model, H, fast=False).to(device, dtype)
    teaching.load_state_dict(mha.state_dict())
    torch_mha = nn.MultiheadAttention(d_model, H, bias=False, batch_first=True).to(device, dtype)
    blocked = ~attention.causal_mask(T, device=device)  # torch: True = may not attend

    def inline():
        def split(t):
            return t.view(B, T, H, d_head).transpose(1, 2)  # (B, H, T, d_head)

        q, k, v = split(mha.W_Q(x)), split(mha.W_K(x)), split(mha.W_V(x))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, d_head)
        mha.W_O(out.transpose(1, 2).reshape(B, T, d_model)).backward(g)  # (B, T, d_model)

    return {
        "teaching (MultiHeadAttention)": lambda: teaching(x, causal=True).backward(g),
        "package fast": lambda: mha(x, causal=True).backward(g),
        "direct SDPA": inline,
        "nn.MultiheadAttention": lambda: torch_mha(x, x, x, attn_mask=blocked, is_causal=True,
                                                   need_weights=False)[0].backward(g),
    }


def measure(level, B, T, H, d_head, device, dtype, repeats, warmup, host=0.0):
    """Rows of one level and length; ``host``: host_us() of this level, for the bound."""
    gen = torch.Generator().manual_seed(0)
    fns = _variants(level, B, T, H, d_head, device, dtype, gen)
    differs = different_work(fns["package fast"], fns["direct SDPA"])
    if differs:
        raise SystemExit(f"the package's fast path does not run the direct call's operators "
                         f"({level}, T={T}, {dtype}): it {differs}")
    times = {name: [] for name in fns}
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    names = list(fns)
    # torch.utils.benchmark's Timer (it synchronises CUDA around each run), one run per timeit(1)
    timers = {name: benchmark.Timer(stmt="fn()", globals={"fn": fn}) for name, fn in fns.items()}
    for i in range(repeats):
        # rotate the order every round, so no variant always runs right after the teaching
        # path (which frees a T x T tensor per head and leaves the allocator and caches cold)
        for name in names[i % len(names):] + names[:i % len(names)]:
            times[name].append(timers[name].timeit(1).times[0])
    rows = []
    ref = statistics.median(times["direct SDPA"])
    for name, fn in fns.items():
        peak = ""
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
            base = torch.cuda.memory_allocated(device)
            fn()
            _sync(device)
            peak = f"{(torch.cuda.max_memory_allocated(device) - base) / 2**20:.1f}"
        ms = 1e3 * statistics.median(times[name])
        fast = name == "package fast"
        rows.append(dict(device=device.type, dtype=str(dtype).replace("torch.", ""), level=level, T=T,
                         variant=name, ms=f"{ms:.3f}", ratio=f"{ms / (1e3 * ref):.3f}",
                         saved_mb=f"{_saved_bytes(fn) / 2**20:.3f}", peak_mb=peak,
                         same_ops="yes" if fast else "", host_us=f"{host:.1f}" if fast else "",
                         bound=f"{1 + host / (1e6 * ref):.3f}" if fast else ""))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--T", type=int, nargs="+", default=None, help="sequence lengths (default by device)")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--d-head", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--levels", nargs="+", default=["kernel", "module"], choices=["kernel", "module"])
    ap.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's)")
    ap.add_argument("--out", default="_build/bench/attention.csv")
    ap.add_argument("--host-time", type=float, default=0.2,
                    help="seconds per variant and round to time host_us (the bound's host time)")
    ap.add_argument("--no-check", action="store_true",
                    help="do not fail when the fast path is over 1.05x and over its bound")
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda, but CUDA is not available here")
    cuda = device.type == "cuda"
    lengths = args.T or ([128, 512, 2048, 8192] if cuda else [128, 512, 2048])
    dtypes = [torch.float32, torch.bfloat16] if cuda else [torch.float32]
    rows = []
    for dtype in dtypes:
        for level in args.levels:
            host = host_us(level, device, dtype, args.host_time)
            for T in lengths:
                new = measure(level, args.batch, T, args.heads, args.d_head, device, dtype, args.repeats,
                              args.warmup, host)
                rows += new
                for r in new:
                    print(f"  {r['dtype']:8s} {level:6s} T={T:<5d} {r['variant']:30s} {r['ms']:>10s} ms  "
                          f"x{r['ratio']:>6s}  saved {r['saved_mb']:>8s} MB  peak {r['peak_mb'] or '-':>8s} MB",
                          flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"\n{torch.get_num_threads()} CPU threads; B={args.batch}, {args.heads} heads x d_head {args.d_head}, "
          "causal, forward + backward, "
          f"median of {args.repeats}; ratio = time / direct SDPA at the same level -> {out}")
    print("| device | dtype | level | T | variant | ms | ratio | saved MB | peak MB | same ops | host µs | bound |\n"
          "|---|---|---|---:|---|---:|---:|---:|---:|---|---:|---:|")
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k in r) + " |")
    slow = too_slow(rows)
    for r in slow:
        print(f"FAIL: package fast path x{r['ratio']} > {allowed(r):.3f} ({r['dtype']} {r['level']} T={r['T']}; "
              f"{LIMIT}, or its bound {r['bound']})")
    if not slow:
        print(f"ok: the package's fast path runs the direct call's operators and is within {LIMIT}x of "
              "direct SDPA, or of its bound 1 + host_us / direct, at every T")
    return 1 if slow and not args.no_check else 0


def allowed(row: dict) -> float:
    """The largest ratio a fast-path row may have: 1.05, or its proved bound where larger."""
    return max(LIMIT, float(row["bound"] or 0))


def too_slow(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["variant"] == "package fast" and float(r["ratio"]) > allowed(r)]


if __name__ == "__main__":
    sys.exit(main())
