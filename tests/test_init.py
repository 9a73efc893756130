"""Package set-up: device choice, seeding, threads, glue fallback."""
import random
import subprocess
import sys

import pytest
import torch

import beforeqkv


def test_get_device_prefers_cuda_then_mps_then_cpu_for_a_real_model(monkeypatch):
    monkeypatch.delenv("BEFOREQKV_DEVICE", raising=False)
    d = beforeqkv.get_device(real_model=True)
    if torch.cuda.is_available():
        assert d.type == "cuda"
    else:
        assert d.type in ("mps", "cpu")
    assert beforeqkv.get_device("cpu") == torch.device("cpu")


@pytest.mark.parametrize("accelerator", ["cuda", "mps"])
def test_the_device_policy_keeps_tiny_experiments_on_the_cpu_beside_a_gpu(monkeypatch, accelerator):
    """A GPU was no faster than two CPU cores for chapters 1-9 (book/gpu_and_colab.md): tiny models
    stay on the CPU unless BEFOREQKV_DEVICE forces the GPU; a real model takes the GPU."""
    monkeypatch.delenv("BEFOREQKV_DEVICE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: accelerator == "cuda")
    monkeypatch.setattr(beforeqkv._runtime, "_mps_available", lambda: accelerator == "mps")
    assert beforeqkv.get_device() == torch.device("cpu")
    assert beforeqkv.get_device(real_model=True) == torch.device(accelerator)
    monkeypatch.setenv("BEFOREQKV_DEVICE", accelerator)  # make gpu-check's way to run a chapter on the GPU
    assert beforeqkv.get_device() == torch.device(accelerator)
    monkeypatch.setenv("BEFOREQKV_DEVICE", "cpu")
    assert beforeqkv.get_device(real_model=True) == torch.device("cpu")
    assert beforeqkv.get_device(accelerator) == torch.device(accelerator)  # prefer beats the variable


def test_without_a_gpu_every_kind_of_model_gets_the_cpu(monkeypatch):
    monkeypatch.delenv("BEFOREQKV_DEVICE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(beforeqkv._runtime, "_mps_available", lambda: False)
    assert beforeqkv.get_device() == beforeqkv.get_device(real_model=True) == torch.device("cpu")


def test_runs_fork_beside_an_unused_gpu_and_never_once_cuda_is_in_use(monkeypatch):
    """Beside a GPU the tiny runs are on the CPU, so map_runs may fork; not after CUDA started."""
    from beforeqkv import train
    monkeypatch.setattr(train.sys, "platform", "linux")
    monkeypatch.setenv("BEFOREQKV_WORKERS", "2")
    monkeypatch.delenv("BEFOREQKV_DEVICE", raising=False)
    monkeypatch.delenv("BEFOREQKV_GRADING", raising=False)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    assert train.workers(8) == 2
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    assert train.workers(8) == 1
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    monkeypatch.setenv("BEFOREQKV_DEVICE", "cuda")
    assert train.workers(8) == 1


def test_get_device_rejects_unknown_or_missing_devices():
    with pytest.raises(ValueError):
        beforeqkv.get_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA"):
            beforeqkv.get_device("cuda")


def test_seed_everything_makes_every_generator_repeat():
    assert beforeqkv.seed_everything(5) is None  # nothing to display in a notebook
    a = (random.random(), torch.rand(3))
    beforeqkv.seed_everything(5)
    b = (random.random(), torch.rand(3))
    assert a[0] == b[0] and torch.equal(a[1], b[1])
    with pytest.raises(ValueError):
        beforeqkv.seed_everything("0")


def test_setup_uses_one_thread_and_flushes_denormals():
    before = torch.get_num_threads()
    try:
        info = beforeqkv.setup(quiet=True)
        assert info["threads"] == 1 and torch.get_num_threads() == 1
        assert torch.tensor([1e-40]).item() in (0.0, 1e-40)  # denormal either flushed or kept, no crash
        with pytest.raises(ValueError):
            beforeqkv.setup(threads=0, quiet=True)
    finally:
        torch.set_num_threads(before)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_setup_lets_freed_memory_be_reused_instead_of_faulting_in_fresh_pages():
    """Each training step makes its activations and gradients and frees them. By default glibc
    maps a block over its mmap threshold (at most 32 MB, however it adapts) fresh from the OS and
    unmaps it when freed, so the next step faults in new pages. After setup's allocator settings
    a 48 MB block comes from the heap and stays there once freed. The allocator's own
    bookkeeping (mallinfo2), not page-fault counters: the same answer on a busy machine.
    Fresh interpreters."""
    code = ("import ctypes, sys, torch, beforeqkv\n"
            "class Info(ctypes.Structure):\n"
            "    _fields_ = [(n, ctypes.c_size_t) for n in ('arena', 'ordblks', 'smblks', 'hblks',\n"
            "                'hblkhd', 'usmblks', 'fsmblks', 'uordblks', 'fordblks', 'keepcost')]\n"
            "libc = ctypes.CDLL(None)\n"
            "if not hasattr(libc, 'mallinfo2'): print('none'); sys.exit()\n"
            "libc.mallinfo2.restype = Info\n"
            "if sys.argv[1] == 'setup': assert beforeqkv._runtime.reuse_freed_memory()\n"
            "MB = 1 << 20\n"
            "start = libc.mallinfo2()\n"
            "x = torch.empty(48 * MB, dtype=torch.uint8)\n"
            "held = libc.mallinfo2()\n"
            "del x\n"
            "freed = libc.mallinfo2()\n"
            "print((held.hblkhd - start.hblkhd) // MB, (held.arena - start.arena) // MB,\n"
            "      (freed.arena - start.arena) // MB)\n")
    runs = {}
    for how in ("default", "setup"):
        out = subprocess.run([sys.executable, "-c", code, how], capture_output=True, text=True,
                             timeout=120, check=True).stdout.split()
        if out == ["none"]:
            pytest.skip("this C library has no mallinfo2 (glibc < 2.33)")
        runs[how] = dict(zip(("mapped", "heap", "heap_after_free"), map(int, out)))
    # by default: mapped from the OS, not the heap; after setup: from the heap, kept once freed.
    # Half the block as the line: the heap may already hold some free space at its top (seen: 47).
    assert runs["default"]["mapped"] >= 48 and runs["default"]["heap"] < 24, runs
    assert runs["setup"]["mapped"] < 24 and runs["setup"]["heap"] >= 24, runs
    assert runs["setup"]["heap_after_free"] >= 24, runs


def test_glue_returns_the_value_and_rejects_empty_names(capsys):
    assert beforeqkv.glue("x_test", 1.5) == 1.5
    with pytest.raises(ValueError):
        beforeqkv.glue("", 1)


def test_sci_writes_powers_of_ten_as_a_book_does():
    assert beforeqkv.sci(2.8e14) == "2.8 \u00d7 10\u00b9\u2074"
    assert beforeqkv.sci(6.2e-8, 0) == "6 \u00d7 10\u207b\u2078"
    assert beforeqkv.sci(1e-7, 0) == "10\u207b\u2077"
    assert beforeqkv.sci(0) == "0"
    with pytest.raises(ValueError):
        beforeqkv.sci(float("nan"))


def test_setup_turns_tf32_off_so_a_gpu_computes_float32_in_float32():
    """cuDNN multiplies float32 in TF32 by default (an LSTM then differs from the CPU by ~1e-3)."""
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = True
    info = beforeqkv.setup(plot_style=False, quiet=True)
    assert info["tf32"] is False
    assert torch.backends.cudnn.allow_tf32 is False and torch.backends.cuda.matmul.allow_tf32 is False
    assert torch.get_float32_matmul_precision() == "highest"


def test_idle_cores_reads_the_idle_share_of_all_cpus(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  600 0 200 1000 100 0 0 0 0 0\ncpu0 300 0 100 500 50 0 0 0 0 0\n"
                    "cpu1 300 0 100 500 50 0 0 0 0 0\nintr 1 2 3\n")
    assert beforeqkv._cpu_times(str(stat)) == (1100.0, 1900.0, 2)
    assert beforeqkv._cpu_times(str(tmp_path / "none")) is None
    snapshots = iter([(1100.0, 1900.0, 2), (1150.0, 2000.0, 2)])  # half of 2 cores idle
    assert beforeqkv._idle_cores(0.0, times=lambda: next(snapshots)) == 1.0
    assert beforeqkv._idle_cores(0.0, times=lambda: None) is None


@pytest.mark.skipif(not sys.platform.startswith("linux") or torch.cuda.is_available(),
                    reason="more than one worker on a Linux CPU only")
def test_cpu_threads_takes_no_core_that_another_program_keeps_busy(monkeypatch):
    """Chapter 8's model with two threads: 3.0 s beside an idle core, 13.0 s beside a busy one (one: 4.5 s)."""
    monkeypatch.setenv("BEFOREQKV_WORKERS", "2")
    for idle, want in ((2.0, 2), (1.9, 2), (1.0, 1), (1.5, 1), (0.1, 1), (None, 2)):
        monkeypatch.setattr(beforeqkv, "_idle_cores", lambda idle=idle: idle)
        with beforeqkv.cpu_threads() as n:
            assert n == want == torch.get_num_threads(), idle
    monkeypatch.setattr(beforeqkv, "_idle_cores", lambda: 0.0)
    with beforeqkv.cpu_threads(2) as n:
        assert n == 2, "an explicit count is kept"
