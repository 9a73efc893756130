"""tools/vendor.py: pinned tarballs are checked before use, and only the listed files are kept."""
import io
import tarfile

import pytest


import vendor


def tarball(files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class FakeResponse(io.BytesIO):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.fixture
def registry(monkeypatch):
    served = {"data": b"", "calls": 0}

    def urlopen(url, timeout):
        served["calls"] += 1
        return FakeResponse(served["data"])

    monkeypatch.setattr(vendor.shutil, "which", lambda name: None)   # no npm: plain HTTPS
    monkeypatch.setattr(vendor.urllib.request, "urlopen", urlopen)
    return served


def test_a_tarball_with_the_wrong_hash_is_refused_and_deleted(tmp_path, registry):
    good = tarball({"package/es5/tex-mml-chtml.js": b"mathjax"})
    registry["data"] = good + b"tampered"
    with pytest.raises(SystemExit, match="integrity mismatch"):
        vendor.fetch("mathjax", "3.2.2", vendor.integrity_of(good), tmp_path)
    assert not list(tmp_path.iterdir())


def test_a_pinned_tarball_is_fetched_once_then_reused(tmp_path, registry):
    good = tarball({"package/es5/tex-mml-chtml.js": b"mathjax"})
    registry["data"] = good
    pin = vendor.integrity_of(good)
    path = vendor.fetch("mathjax", "3.2.2", pin, tmp_path)
    assert path.read_bytes() == good and registry["calls"] == 1
    assert vendor.fetch("mathjax", "3.2.2", pin, tmp_path) == path and registry["calls"] == 1


def test_only_the_listed_files_are_unpacked(tmp_path):
    tgz = tmp_path / "t.tgz"
    tgz.write_bytes(tarball({"package/es5/tex-mml-chtml.js": b"a", "package/es5/input/x.js": b"b",
                             "package/es5/tex-svg.js": b"c", "package/../../evil.js": b"d"}))
    n = vendor.unpack(tgz, ("es5/tex-mml-chtml.js", "es5/input/"), tmp_path / "out")
    kept = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert n == 2 and kept == ["es5/input/x.js", "es5/tex-mml-chtml.js"]
    assert not (tmp_path.parent / "evil.js").exists()


def test_the_pins_are_sha512_integrity_strings():
    for name, (version, pin, keep) in vendor.PINS.items():
        assert pin.startswith("sha512-") and len(pin) == 7 + 88, name
        assert version.count(".") == 2 and keep
