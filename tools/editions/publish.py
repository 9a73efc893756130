"""Publishing on GitHub: the checks the workflow makes before it builds anything.

    python -m editions.publish preflight      # in GitHub Actions, first step of the book job
    python -m editions.publish use OWNER/NAME # point every button and install cell at OWNER/NAME
    python -m editions.publish release-tag v0.2.0   # the tag must be the package's version

``preflight`` reads the variables GitHub Actions sets (GITHUB_REPOSITORY, GITHUB_SERVER_URL,
GITHUB_API_URL, GITHUB_EVENT_NAME, GITHUB_REF) and fails in seconds, with the setting to
change, where the 20-minute build would otherwise fail at its very end:

* **the repository**: ``_config.yml`` names the repository that the launch buttons, the
  install cells and Binder open. A fork builds with it repointed to itself (``use``, on the
  runner's copy only) and is told so in a warning, so its buttons never open someone
  else's notebooks;
* **GitHub Pages** (pushes to main only): the repository's Pages source must be "GitHub
  Actions" (Settings → Pages → Build and deployment → Source), a one-time setting that
  nothing in a workflow can make with its own token.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from .paths import ROOT
PAGES_HELP = ("Settings → Pages → Build and deployment → Source: choose \"GitHub Actions\" "
              "(once; README.md, \"Publishing\"), then re-run this workflow")


def configured_url(root: Path = ROOT) -> str:
    """The repository URL in ``_config.yml`` (the one place it is written)."""
    return yaml.safe_load((root / "_config.yml").read_text())["repository"]["url"].rstrip("/")


def same_repository(a: str, b: str) -> bool:
    """GitHub's names are case-insensitive; a trailing slash or ``.git`` changes nothing."""
    def norm(url: str) -> str:
        return re.sub(r"(\.git)?/*$", "", url.strip()).lower()
    return norm(a) == norm(b)


def use(url: str, root: Path = ROOT) -> list[Path]:
    """Replace the configured repository URL by ``url`` in every tracked text file (the
    config, README, pyproject, every chapter's install cell); return the files changed."""
    old = configured_url(root)
    if same_repository(old, url):
        return []
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    changed = []
    for name in filter(None, tracked.decode().split("\0")):
        path = root / name
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if old in text:
            path.write_text(text.replace(old, url.rstrip("/")), encoding="utf-8")
            changed.append(path)
    return changed


def pages_build_type(api: str, repository: str, token: str) -> str | None:
    """How GitHub Pages publishes ``repository``: "workflow", "legacy" (from a branch), or
    None when Pages is off (the API answers 404)."""
    request = urllib.request.Request(f"{api}/repos/{repository}/pages", headers={
        "Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.load(answer).get("build_type")
    except urllib.error.HTTPError as err:
        if err.code == 404:
            return None
        raise


def pages_problem(build_type: str | None, repository: str) -> str | None:
    """What is wrong with the Pages setting for a deploy from this workflow (None: nothing)."""
    if build_type == "workflow":
        return None
    state = "off" if build_type is None else f"set to publish from a branch ({build_type})"
    return f"GitHub Pages is {state} for {repository}, so the deploy job cannot publish the site. {PAGES_HELP}."


def publishes(env: dict) -> bool:
    """A push to main (or a manual run on main): the run that deploys the site."""
    return env.get("GITHUB_EVENT_NAME") in ("push", "workflow_dispatch") and env.get("GITHUB_REF") == "refs/heads/main"


def preflight(env: dict, root: Path = ROOT, build_type=pages_build_type) -> int:
    repository = env.get("GITHUB_REPOSITORY")
    if not repository:
        print("publish.py preflight runs in GitHub Actions (GITHUB_REPOSITORY is not set)", file=sys.stderr)
        return 2
    here = f"{env.get('GITHUB_SERVER_URL', 'https://github.com')}/{repository}"
    configured = configured_url(root)
    if not same_repository(configured, here):
        changed = use(here, root)
        print(f"::warning title=Buttons repointed::_config.yml names {configured}, but this workflow runs in "
              f"{here}: this build's launch buttons, install cells and Binder open {here} "
              f"({len(changed)} files repointed on the runner). To make it permanent, run "
              f"`python -m editions.publish use {repository}` and commit.")
    else:
        print(f"the buttons open {configured}, the repository this workflow runs in")
    if not publishes(env):
        print("not a push to main: nothing is deployed, the Pages setting is not checked")
        return 0
    try:
        kind = build_type(env.get("GITHUB_API_URL", "https://api.github.com"), repository, env.get("GH_TOKEN", ""))
    except (urllib.error.URLError, OSError, ValueError) as err:
        print(f"::error title=GitHub Pages::could not read the Pages setting of {repository} ({err}); "
              "the book job needs `permissions: pages: read`")
        return 1
    problem = pages_problem(kind, repository)
    if problem:
        print(f"::error title=GitHub Pages::{problem}")
        return 1
    print(f"GitHub Pages publishes {repository} from GitHub Actions")
    return 0


def package_version(root: Path = ROOT) -> str:
    """``beforeqkv.__version__``, read from the source (the one place it is written)."""
    text = (root / "src" / "beforeqkv" / "__init__.py").read_text()
    return re.search(r'^__version__\s*=\s*"([^"]+)"', text, re.M).group(1)


def release_tag_problem(tag: str, root: Path = ROOT) -> str | None:
    version = package_version(root)
    if tag != f"v{version}":
        return (f"the tag {tag} is not the package's version v{version}: set __version__ in "
                f"src/beforeqkv/__init__.py to the release, commit, and tag that commit v<version>")
    return None


def main(argv: list[str]) -> int:
    if argv[:1] == ["preflight"]:
        return preflight(dict(os.environ))
    if argv[:1] == ["use"] and len(argv) == 2:
        url = argv[1] if "://" in argv[1] else f"https://github.com/{argv[1]}"
        changed = use(url)
        print(f"{len(changed)} files now name {url}" if changed else f"already {url}")
        return 0
    if argv[:1] == ["release-tag"] and len(argv) == 2:
        problem = release_tag_problem(argv[1])
        print(f"::error title=Release::{problem}" if problem else f"releasing beforeqkv {package_version()}")
        return 1 if problem else 0
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
