"""tools/bench_attention.py: every variant measured, ratios to direct SDPA, the 1.05x check."""
import csv


import bench_attention


def test_bench_writes_one_row_per_variant_and_length_with_ratios_to_direct_sdpa(tmp_path):
    out = tmp_path / "attention.csv"
    rc = bench_attention.main(["--T", "32", "64", "--batch", "1", "--heads", "2", "--d-head", "4",
                               "--repeats", "1", "--warmup", "0", "--out", str(out), "--no-check"])
    assert rc == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 2 * (3 + 4)  # kernel: 3 variants, module: 4, at two lengths
    assert {r["variant"] for r in rows} >= {"teaching (attend)", "package fast", "direct SDPA",
                                            "nn.MultiheadAttention"}
    assert all(float(r["ratio"]) == 1.0 for r in rows if r["variant"] == "direct SDPA")
    teaching = [r for r in rows if r["variant"].startswith("teaching")]
    fast = [r for r in rows if r["variant"] == "package fast"]
    # the teaching path keeps the (T, T) weights for backward; the fused kernel does not
    assert all(float(t["saved_mb"]) > float(f["saved_mb"]) for t, f in zip(teaching, fast))


def test_a_slow_fast_path_fails_the_check(tmp_path, monkeypatch):
    real = bench_attention.measure

    def slow(*args, **kwargs):
        rows = real(*args, **kwargs)
        for r in rows:
            if r["variant"] == "package fast":
                r["ratio"] = "1.200"
        return rows

    monkeypatch.setattr(bench_attention, "measure", slow)
    args = ["--T", "8", "--batch", "1", "--heads", "2", "--d-head", "4", "--repeats", "1", "--warmup", "0",
            "--levels", "kernel", "--out", str(tmp_path / "a.csv")]
    assert bench_attention.main(args) == 1
    assert bench_attention.main(args + ["--no-check"]) == 0
