"""The environment the tests run in holds what they need, so no skip can hide a lost install.

Some tests skip when a module of the site's build stack is missing (onnxruntime, Sphinx, myst-nb,
Playwright, jieba) or a weights package is: that is for the workflow's `versions` rows, which
install a reader's stack (requirements-versions.txt) on the oldest and newest Python and torch
and on Colab's, and set BEFOREQKV_STACK=reader. Anywhere else, here and in CI, every pinned
requirement must be installed at its pinned version, or this test fails and names it."""
import os
import re
from importlib import metadata

import pytest
from packaging.requirements import Requirement

from _book import ROOT

READER_STACK = os.environ.get("BEFOREQKV_STACK") == "reader"
FILES = ("requirements.txt", "requirements-real.txt", "requirements-data.txt")


def requirements(text: str) -> list:
    """The requirements a file names for this machine (not -e lines, options or other platforms)."""
    found = []
    for line in text.splitlines():
        line = re.sub(r"\s+#.*|^#.*", "", line).strip()
        line = re.sub(r"\s+--hash=\S+", "", line).rstrip(" \\")
        if line and not line.startswith("-"):
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate():
                found.append(req)
    return found


def missing(reqs) -> list:
    """Each requirement this environment does not satisfy, with what it has instead."""
    out = []
    for req in reqs:
        try:
            have = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            out.append(f"{req} (not installed)")
            continue
        if req.specifier and not req.specifier.contains(have, prereleases=True):
            out.append(f"{req} (installed: {have})")
    return out


@pytest.mark.skipif(READER_STACK, reason="BEFOREQKV_STACK=reader: a versions row, with a reader's stack "
                    "(requirements-versions.txt), where the build stack's tests skip")
@pytest.mark.parametrize("name", FILES)
def test_every_pinned_requirement_is_installed_so_no_test_skips_for_want_of_it(name):
    reqs = requirements((ROOT / name).read_text())
    assert reqs, f"{name} names no requirement: is the parser reading it?"
    assert not missing(reqs), f"not as {name} pins it: {missing(reqs)}: run `make install`"


def test_the_check_names_a_missing_package_and_a_wrong_version():
    reqs = requirements("pytest>=1  # the runner\nno-such-package-bqkv==1.0 --hash=sha256:00\n"
                        "pytest==0.0.1\n-e .\nnever ; sys_platform == 'no-such-os'\n")
    assert [r.name for r in reqs] == ["pytest", "no-such-package-bqkv", "pytest"]
    assert missing(reqs) == ["no-such-package-bqkv==1.0 (not installed)",
                             f"pytest==0.0.1 (installed: {metadata.version('pytest')})"]

