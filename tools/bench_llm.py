"""Time SmolLM2's greedy decoding with the KV cache: tokens per second.

    python tools/bench_llm.py                    # 32 new tokens, 1 thread and torch's default
    python tools/bench_llm.py --new-tokens 64 --repeats 5 --threads 1 2 4
    make bench-llm

The prompt is "The capital of France is"; each timed run is ``lm.generate_ids`` as a
reader calls it (prompt pass included, no stop at the end-of-text token). Per thread
count: the median and the best of ``--repeats`` runs after one warm-up run, in tokens
per second of wall time, and (one thread) per second of this process's CPU time, which
other work on a shared machine disturbs less. The chapters run with one thread
(``beforeqkv.setup()``). Exits 1 if the text differs between runs or thread counts, or
is not the reference continuation.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

from beforeqkv.pretrained import WeightsMissing, load_smollm2

PROMPT = "The capital of France is"
REFERENCE = " Paris.\n\nThe answer is:"  # the first 8 greedy tokens (tests/test_pretrained_smollm2.py)


def bench(lm, ids, new_tokens: int, repeats: int) -> tuple[list[float], list[float], list[int]]:
    """Wall and CPU seconds of each of ``repeats`` greedy runs (after a warm-up), and the tokens."""
    out = lm.generate_ids(ids, new_tokens, stop_at_eos=False)  # warm-up
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        new = lm.generate_ids(ids, new_tokens, stop_at_eos=False)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        if new != out:
            raise SystemExit(f"greedy decoding is not deterministic: {new} != {out}")
    return walls, cpus, out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=None,
                        help="thread counts to time (default: 1 and torch's default)")
    args = parser.parse_args(argv)
    if args.new_tokens < 1 or args.repeats < 1:
        parser.error("--new-tokens and --repeats must be positive")
    default_threads = torch.get_num_threads()
    try:
        start = time.perf_counter()
        lm = load_smollm2()
        load_s = time.perf_counter() - start
    except WeightsMissing as err:
        print(f"skipped: {err}")
        return 0
    ids = lm.tokenize(PROMPT)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    print(f"SmolLM2 loaded in {load_s:.2f} s. {args.new_tokens} greedy tokens after {PROMPT!r} with the KV "
          f"cache; torch {torch.__version__}, {os.cpu_count()} CPUs, load average {load}")
    print(f"{'threads':>7}  {'median tok/s':>12}  {'best tok/s':>10}  {'CPU tok/s':>9}")
    texts = set()
    try:
        for n in args.threads or sorted({1, default_threads}):
            torch.set_num_threads(n)
            walls, cpus, new = bench(lm, ids, args.new_tokens, args.repeats)
            texts.add(tuple(new))
            per_cpu = f"{args.new_tokens / min(cpus):>9.1f}" if n == 1 else f"{'-':>9}"
            print(f"{n:>7}  {args.new_tokens / statistics.median(walls):>12.1f}  "
                  f"{args.new_tokens / min(walls):>10.1f}  {per_cpu}")
    finally:
        torch.set_num_threads(default_threads)
    text = lm.decode(list(next(iter(texts))))
    print(f"text: {text!r}")
    if len(texts) != 1:
        print("FAIL: the thread counts wrote different text")
        return 1
    if not (text.startswith(REFERENCE) or REFERENCE.startswith(text)):
        print(f"FAIL: the text is not the reference continuation {REFERENCE!r}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
