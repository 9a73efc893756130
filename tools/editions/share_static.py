"""One copy of each large file the two editions share: the second reads the first's.

Both editions serve the live explorers' runtime (onnxruntime-web, ``_static/ort/``) and
models (``_static/live/``): the same vendored files, and for a model read from a file
(chapter 10's MiniLM, chapter 11's SmolLM2) the same bytes, over 150 MB of them. A file of
at least ``MIN_BYTES`` in the second edition that is byte for byte the first edition's file
at the same place is removed there, and the second edition's ``bqkv-live.js`` gets a table
(``SHARED``) that sends the page to the first edition's copy. A file that differs (a model
trained again in the second execution) stays where it is.

    python -m editions.share_static SITE EDITION      # e.g. _build/html zh
"""
from __future__ import annotations

import filecmp
import json
import sys
from pathlib import Path

MIN_BYTES = 1_000_000
FOLDERS = ("ort", "live")
MARK = "var SHARED = {};"          # book/_static/bqkv-live.js, as written


def share(site, edition: str, min_bytes: int = MIN_BYTES) -> dict:
    """Remove the second edition's copies of the first's large files; returns the table
    {"ort/NAME" or "live/NAME": the way up to the site's root} written into its script."""
    site = Path(site)
    mine, first = site / edition / "_static", site / "_static"
    script = mine / "bqkv-live.js"
    text = script.read_text(encoding="utf-8")
    if text.count(MARK) != 1:
        raise ValueError(f"{script}: expected one line {MARK!r} to fill, found {text.count(MARK)}")
    up = "../" * len(Path(edition).parts)
    shared = {}
    for folder in FOLDERS:
        for path in sorted((mine / folder).glob("*")):
            twin = first / folder / path.name
            if (path.is_file() and path.stat().st_size >= min_bytes and twin.is_file()
                    and filecmp.cmp(path, twin, shallow=False)):
                shared[f"{folder}/{path.name}"] = up
    for name in shared:
        (mine / name).unlink()
    script.write_text(text.replace(MARK, f"var SHARED = {json.dumps(shared, sort_keys=True)};"), encoding="utf-8")
    return shared


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    shared = share(argv[0], argv[1])
    saved = sum((Path(argv[0]) / "_static" / name).stat().st_size for name in shared)
    print(f"== {argv[1]}/ reads {len(shared)} files from the first edition's copy ({saved / 1e6:.0f} MB once, "
          f"not twice)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
