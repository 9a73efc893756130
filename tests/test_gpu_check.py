"""tools/gpu_check.py: the GPU check that runs with what a machine has (here: no CUDA)."""
import json

import pytest
import torch


import gpu_check


def notebook(path, *cells):
    """A notebook file of code cells: (source, tags)."""
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {"tags": list(tags)}, "source": src, "outputs": [],
         "execution_count": None} for src, tags in cells]}))
    return path


GOOD = [(gpu_check.INSTALL_CELL + "\nimport sys  # a script skips it, a kernel runs it", ["remove-cell"]),
        ("%matplotlib inline\nimport beforeqkv\nx = beforeqkv.get_device().type", []),
        ("display(x)\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])", []),
        ("raise ValueError('shown on purpose')", ["raises-exception"]),
        ("import os\nassert x == os.environ['BEFOREQKV_DEVICE'] == 'cpu', x", [])]


def test_a_chapter_runs_as_a_script_where_nbclient_is_missing(tmp_path):
    path = notebook(tmp_path / "01_ok.ipynb", *GOOD)
    seconds, status = gpu_check.run_chapter(path, "cpu", "script")
    assert status == "ok" and seconds > 0
    bad = notebook(tmp_path / "02_bad.ipynb", *GOOD[:2], ("assert x == 'cuda', 'wrong device'", []))
    assert gpu_check.run_chapter(bad, "cpu", "script")[1] == "FAILED: AssertionError: wrong device"
    quiet = notebook(tmp_path / "03_quiet.ipynb", ("x = 1", ["raises-exception"]))
    assert "tagged raises-exception but ran" in gpu_check.run_chapter(quiet, "cpu", "script")[1]


def test_a_chapter_without_its_weights_is_skipped_naming_the_package(tmp_path, monkeypatch):
    monkeypatch.setitem(gpu_check.DATA, "load_imaginary", "imaginary_weights_pkg")
    path = notebook(tmp_path / "11_x.ipynb", ("m = pretrained.load_imaginary()", []))
    assert gpu_check.run_chapter(path, "cpu", "script") == (
        0.0, "skipped: needs imaginary_weights_pkg (not installed)")


@pytest.mark.skipif(torch.cuda.is_available(), reason="the report of a machine without CUDA")
def test_without_cuda_the_report_says_so_and_a_failure_fails_the_check(tmp_path, capsys):
    good = notebook(tmp_path / "01_ok.ipynb", *GOOD)
    assert gpu_check.main(["--out", str(tmp_path / "out"), "--skip-unit", "--chapters", str(good)]) == 0
    text = (tmp_path / "out" / "report.md").read_text()
    assert "CUDA: none: the chapters ran on the CPU only" in text
    assert "| 01_ok.ipynb | 0.0 | no CUDA device |" in text and "| ok |" in text
    assert "skipped: no CUDA device" in text
    bad = notebook(tmp_path / "02_bad.ipynb", ("assert False, 'no'", []))
    assert gpu_check.main(["--out", str(tmp_path / "out"), "--skip-unit", "--chapters", str(bad)]) == 1


def test_the_data_packages_and_the_install_cell_are_bootstraps():
    from editions import bootstrap
    assert gpu_check.DATA == {use: module for module, uses in bootstrap.PACKAGES.values() for use in uses}
    assert gpu_check.INSTALL_CELL == bootstrap.FIRST_LINE
