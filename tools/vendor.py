"""Fetch the scripts the site serves itself (no CDN): pinned npm tarballs, integrity-checked.

    python tools/vendor.py _build/vendor

Each package is fetched once with `npm pack NAME@VERSION` (or, without npm, straight from
the npm registry over HTTPS), checked against the pinned sha512 integrity below, and the
files the site needs are unpacked into DEST/NAME/. A tarball already in DEST with the
right hash is reused, so a second run needs no network.
"""
from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

# name -> (version, npm "integrity", files to keep: prefixes inside the tarball's package/)
PINS = {
    "onnxruntime-web": (
        "1.30.0",
        "sha512-q0y+JrrtukXSzsBWEMccVfqX25LRmosXHF+CaRJmg8pZClzcV7svNc4rKY3jL02Vb7QmRMDs1SigqR4CXAfKYQ==",
        # the live explorers (book/_static/bqkv-live.js): the WebAssembly build only, one thread
        ("dist/ort.wasm.min.js", "dist/ort-wasm-simd-threaded.mjs", "dist/ort-wasm-simd-threaded.wasm"),
    ),
    "mathjax": (
        "3.2.2",
        "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
        # the component Sphinx loads, plus what it loads lazily (TeX extensions, fonts,
        # the menu, accessibility and its speech rules); not the other combined builds.
        ("LICENSE", "es5/tex-mml-chtml.js", "es5/input/", "es5/output/chtml", "es5/a11y/",
         "es5/ui/", "es5/sre/", "es5/adaptors/"),
    ),
}
REGISTRY = "https://registry.npmjs.org"
# A tarball without its licence gets ours beside it: name -> files in tools/licenses/
LICENSES = {"onnxruntime-web": ("onnxruntime-web.LICENSE", "onnxruntime-web.NOTICE")}
HERE = Path(__file__).resolve().parent


def integrity_of(data: bytes) -> str:
    """npm's "integrity" string (Subresource Integrity, sha512) of some bytes."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def integrity(path: Path) -> str:
    return integrity_of(path.read_bytes())


def fetch(name: str, version: str, expected: str, dest: Path) -> Path:
    tgz = dest / f"{name}-{version}.tgz"
    if tgz.exists() and integrity(tgz) == expected:
        return tgz
    tgz.unlink(missing_ok=True)
    if shutil.which("npm"):
        subprocess.run(["npm", "pack", f"{name}@{version}", "--pack-destination", str(dest),
                        "--silent"], check=True, stdout=subprocess.DEVNULL)
    else:
        url = f"{REGISTRY}/{name}/-/{name}-{version}.tgz"
        with urllib.request.urlopen(url, timeout=60) as r:
            tgz.write_bytes(r.read())
    got = integrity(tgz)
    if got != expected:
        tgz.unlink()
        raise SystemExit(f"vendor: {name}@{version} integrity mismatch: got {got}, pinned {expected}")
    return tgz


def unpack(tgz: Path, keep: tuple, out: Path) -> int:
    if out.exists():
        shutil.rmtree(out)
    n = 0
    with tarfile.open(tgz) as tar:
        for member in tar.getmembers():
            rel = member.name.split("/", 1)[1] if "/" in member.name else member.name
            if not member.isfile() or not rel.startswith(keep) or ".." in Path(rel).parts:
                continue
            target = out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tar.extractfile(member).read())
            n += 1
    return n


def main(dest: str) -> int:
    root = Path(dest)
    root.mkdir(parents=True, exist_ok=True)
    for name, (version, expected, keep) in PINS.items():
        tgz = fetch(name, version, expected, root)
        out = root / name
        stamp = out / "VERSION"   # copied into the site: which release it serves
        if stamp.exists() and stamp.read_text() == f"{version} {expected}":
            continue
        n = unpack(tgz, keep, out)
        for extra in LICENSES.get(name, ()):
            shutil.copyfile(HERE / "licenses" / extra, out / extra.split(".", 1)[1])
        stamp.write_text(f"{version} {expected}")
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        print(f"== vendored {name}@{version}: {n} files, {size / 1e6:.1f} MB in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "_build/vendor"))
