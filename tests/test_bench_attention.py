"""tools/bench_attention.py: every variant measured, ratios to direct SDPA, the 1.05x check."""
import csv

import pytest
import torch
import torch.nn.functional as F

import bench_attention
from beforeqkv import attention


def test_bench_writes_one_row_per_variant_and_length_with_ratios_to_direct_sdpa(tmp_path):
    out = tmp_path / "attention.csv"
    rc = bench_attention.main(["--T", "32", "64", "--batch", "1", "--heads", "2", "--d-head", "4",
                               "--repeats", "1", "--warmup", "0", "--host-time", "0.01", "--out", str(out),
                               "--no-check"])
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
    direct = [r for r in rows if r["variant"] == "direct SDPA"]
    for f, d in zip(fast, direct):  # bound = 1 + host time / the direct call's time, per row
        assert f["same_ops"] == "yes" and float(f["host_us"]) >= 0
        share = float(f["host_us"]) / (1e3 * float(d["ms"]))  # from the rounded columns
        assert float(f["bound"]) - 1 == pytest.approx(share, rel=0.05, abs=1e-3)
    assert all(r["bound"] == "" for r in rows if r["variant"] != "package fast")


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
            "--host-time", "0.01", "--levels", "kernel", "--out", str(tmp_path / "a.csv")]
    assert bench_attention.main(args) == 1
    assert bench_attention.main(args + ["--no-check"]) == 0


# ------------------------------------------------------------- the bound, and why it holds
LEVELS = [("kernel", "teaching (attend)"), ("module", "teaching (MultiHeadAttention)")]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("level,_", LEVELS)
def test_the_fast_path_dispatches_exactly_the_operators_of_a_direct_call(device, level, _, dtype):
    """Forward and backward, as the benchmark times them: the device runs the same kernels, so
    what the fast path can add is host time (the bound)."""
    fns = bench_attention._variants(level, 2, 16, 2, 8, device, dtype, torch.Generator().manual_seed(0))
    assert bench_attention.different_work(fns["package fast"], fns["direct SDPA"]) == ""


@pytest.mark.parametrize("level,teaching", LEVELS)
def test_the_operator_check_sees_other_work(level, teaching):
    fns = bench_attention._variants(level, 2, 16, 2, 8, torch.device("cpu"), torch.float32,
                                    torch.Generator().manual_seed(0))
    assert "computes" in bench_attention.different_work(fns[teaching], fns["direct SDPA"])


def test_the_operator_check_sees_a_mask_tensor_a_copy_an_extra_view_and_another_order():
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 8, 4, generator=gen).requires_grad_() for _ in range(3))
    g = torch.randn(1, 2, 8, 4, generator=gen)
    mask = torch.ones(8, 8, dtype=torch.bool).tril()
    sdpa = F.scaled_dot_product_attention
    direct = lambda: sdpa(q, k, v, is_causal=True).backward(g)  # noqa: E731
    work = bench_attention.different_work
    assert work(lambda: sdpa(q, k, v, is_causal=True).backward(g), direct) == ""
    assert "computes" in work(lambda: sdpa(q, k, v, attn_mask=mask).backward(g), direct)
    assert "computes" in work(lambda: sdpa(q.transpose(-1, -2).contiguous().transpose(-1, -2), k, v,
                                           is_causal=True).backward(g), direct)
    assert work(lambda: sdpa(q.view(1, 2, 8, 4), k, v, is_causal=True).backward(g), direct).startswith("views")
    two = lambda a, b: (a @ b.mT).sum() + (b @ a.mT).sum()  # noqa: E731
    assert work(lambda: (two(q, k) + (v * 2).sum()).backward(), lambda: ((v * 2).sum() + two(q, k)).backward())


def test_a_fast_path_with_other_operators_stops_the_benchmark(tmp_path, monkeypatch):
    real = bench_attention._variants

    def masked(level, B, T, H, d_head, device, dtype, gen):
        fns = real(level, B, T, H, d_head, device, dtype, gen)
        if level == "kernel":  # the old fast path: a (T, T) mask tensor instead of is_causal
            q, k, v = (torch.randn(B, H, T, d_head, generator=gen).requires_grad_() for _ in range(3))
            mask = attention.causal_mask(T)
            fns["package fast"] = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask).sum().backward()
        return fns

    monkeypatch.setattr(bench_attention, "_variants", masked)
    with pytest.raises(SystemExit, match="does not run the direct call's operators.*kernel, T=8"):
        bench_attention.main(["--T", "8", "--batch", "1", "--heads", "2", "--d-head", "4", "--repeats", "1",
                              "--warmup", "0", "--host-time", "0.01", "--levels", "kernel",
                              "--out", str(tmp_path / "a.csv")])


def test_a_ratio_over_1_05_passes_only_under_its_bound():
    row = {"variant": "package fast", "ratio": "1.120", "bound": "1.150"}
    assert bench_attention.too_slow([row]) == []
    assert bench_attention.too_slow([dict(row, bound="1.100")]) == [dict(row, bound="1.100")]
    assert bench_attention.too_slow([dict(row, ratio="1.040", bound="1.000")]) == []
    assert bench_attention.too_slow([{"variant": "direct SDPA", "ratio": "9", "bound": ""}]) == []
