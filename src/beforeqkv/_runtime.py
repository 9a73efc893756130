"""Where and how the book computes: the device policy, seeds, and how many processes run side by side.

A leaf module: the package root and :mod:`beforeqkv.train` both import from it, and it imports
neither of them.
"""
from __future__ import annotations

import os
import random
import sys

import numpy as np
import torch

_DEVICE_ENV = "BEFOREQKV_DEVICE"


def get_device(prefer: str | None = None, *, real_model: bool = False) -> torch.device:
    """Return the device to compute on; by the book's device policy, the CPU for tiny models.

    * ``real_model=False`` (the default, every experiment of chapters 1-9): the CPU, even
      where a GPU exists. Their models have a few thousand to a few hundred thousand
      parameters and train on batches of 64 to 256, so a GPU step is a string of tiny kernel
      launches: on an NVIDIA H200 every chapter 1-9 took 15-36 s on CUDA, no faster than two
      CPU cores (chapter 5: 33.6 s on the GPU, 22.2 s on the same machine's CPU). On the CPU
      the chapters also run their independent runs side by side (:func:`beforeqkv.train.map_runs`).
    * ``real_model=True`` (a pretrained model, chapters 10-11): cuda, then mps, then cpu.
    * ``prefer``, or else the environment variable ``BEFOREQKV_DEVICE``, forces one for
      both kinds: ``BEFOREQKV_DEVICE=cuda`` runs the tiny experiments on the GPU too (``make
      gpu-check`` does, to check every claim there); ``get_device("cpu")`` keeps a real
      model on the CPU. The policy is written out in book/gpu_and_colab.md.
    """
    choice = prefer or os.environ.get(_DEVICE_ENV)
    if choice:
        choice = str(choice).lower()
        if choice not in {"cpu", "cuda", "mps"} and not choice.startswith("cuda:"):
            raise ValueError(f"unknown device {choice!r}: use 'cpu', 'cuda', 'cuda:N' or 'mps'")
        if choice.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"device {choice!r} requested but CUDA is not available here")
        if choice == "mps" and not _mps_available():
            raise ValueError("device 'mps' requested but MPS is not available here")
        return torch.device(choice)
    if not real_model:
        return torch.device("cpu")
    if torch.cuda.is_available():
        return torch.device("cuda")
    if _mps_available():
        return torch.device("mps")
    return torch.device("cpu")


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def seed_everything(seed: int = 0) -> None:
    """Seed Python, NumPy and torch (CPU and CUDA) with ``seed``.

    Data sets in :mod:`beforeqkv.tasks` take their own ``generator=`` (use
    ``torch.Generator().manual_seed(s)``) so that an experiment's data does not depend
    on how many random numbers a model drew.
    """
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ValueError(f"seed must be an int, got {type(seed).__name__}")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def workers(n_items: int | None = None) -> int:
    """How many processes :func:`map_runs` uses: ``BEFOREQKV_WORKERS`` if set, else one per
    CPU core this process may use; 1 (run in this process) once this process uses CUDA
    (:func:`_uses_cuda`: a forked child cannot), off Linux, inside a worker, for a single
    item, or in a graded run (``BEFOREQKV_GRADING``, nbgrader's ``NBGRADER_EXECUTION``): a
    grader's kernel never forks, so nothing of a fork reaches its report. On a GPU machine
    the chapters' tiny runs stay on the CPU (:func:`beforeqkv.get_device`) and so still
    spread over its cores."""
    env = os.environ.get("BEFOREQKV_WORKERS", "")
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ValueError(f"BEFOREQKV_WORKERS must be a positive integer, got {env!r}")
        n = int(env)
    else:
        n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    import multiprocessing as mp
    graded = os.environ.get("BEFOREQKV_GRADING", "") not in ("", "0") or os.environ.get("NBGRADER_EXECUTION")
    if not sys.platform.startswith("linux") or _uses_cuda() or mp.current_process().daemon or graded:
        n = 1
    return max(1, min(n, n_items if n_items is not None else n))


def _uses_cuda() -> bool:
    """Whether this process has started CUDA, or is told to compute on it (``BEFOREQKV_DEVICE``):
    CUDA does not survive a fork, so :func:`map_runs` then runs its items in this process."""
    forced = os.environ.get("BEFOREQKV_DEVICE", "").lower().startswith("cuda")
    return forced or (torch.cuda.is_available() and torch.cuda.is_initialized())


# ------------------------------------------------ process-wide settings setup() makes (speed, numerics)
def full_float32() -> None:
    """Compute float32 products in float32 on NVIDIA GPUs too (a no-op on a CPU).

    By default cuDNN (convolutions, ``nn.RNN``/``nn.LSTM``) multiplies float32 tensors in TF32,
    a tensor-core format with a 10-bit mantissa: on a GPU the book's LSTMs then differ from the
    same weights on a CPU by ~1e-3 instead of ~1e-6. The book's policy is the same numbers, to
    float32 rounding, on every device, so TF32 is off for matrix products and cuDNN alike
    (both ``allow_tf32`` flags).
    Its models are small enough that full float32 costs nothing noticeable.
    """
    # The allow_tf32 flags, not torch 2.9's fp32_precision: they exist in every torch the
    # package accepts, and after fp32_precision is set torch refuses to read them (other code may).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def reuse_freed_memory() -> bool:
    """Let glibc's allocator reuse freed blocks of up to 64 MB instead of giving them back.

    By default a block over 128 KB is mapped fresh from the operating system and returned
    when freed, so every step of a training run faults in new zeroed pages for its
    activations and gradients (120 to 320 page faults a step for chapter 2's attention read,
    measured on the build machine; tests/test_init.py checks where the blocks come from).
    Serving them from the heap and trimming it only past 256 MB of free space makes those
    steps 10-14 % faster (measured on a 2-core CPU); larger blocks, like a real model's
    weights, are still mapped and returned. A no-op off glibc
    (macOS, Windows, musl).
    """
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    return bool(mallopt(m_mmap_threshold, 64 << 20)) and bool(mallopt(m_trim_threshold, 256 << 20))
