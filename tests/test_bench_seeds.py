"""tools/bench_seeds.py: the chapters' training claims rerun on other seeds (make bench-seeds).

The full run (every chapter, seeds 0-2) takes minutes; here: its settings are the chapters'
own, its report and exit code are right, and the cheapest chapters hold on one more seed.
"""
import ast
import csv

import pytest

from _book import BOOK, read

import bench_seeds


def _notebook_values(page: str, names) -> dict:
    """The values the chapter's code cells assign to ``names`` at top level (literals and dict(...))."""
    found = {}
    for cell in read(BOOK / f"{page}.ipynb").cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:  # a cell with IPython magics: no setting lives there
            continue
        for node in tree.body:
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
                continue
            target, value = node.targets[0], node.value
            pairs = [(target, value)]
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):  # N_ATTN, N_LSTM = [..], [..]
                pairs = list(zip(target.elts, value.elts))
            for t, v in pairs:
                if isinstance(t, ast.Name) and t.id in names and t.id not in found:
                    found[t.id] = eval(compile(ast.Expression(v), page, "eval"), {"dict": dict})
    return found


@pytest.mark.parametrize("page", sorted(bench_seeds.SETTINGS))
def test_the_bench_runs_each_chapter_on_the_chapters_own_setting(page):
    mine = bench_seeds.SETTINGS[page]
    theirs = _notebook_values(page, set(mine))
    assert set(theirs) == set(mine), f"{page}: the notebook no longer defines {set(mine) - set(theirs)}"
    for name, value in mine.items():
        assert theirs[name] == value, f"{page}: {name} is {theirs[name]!r} in the chapter, {value!r} in the bench"


def test_the_settings_check_sees_a_changed_setting(monkeypatch):
    changed = dict(bench_seeds.SETTINGS["07_scaling"], CONFIG=dict(bench_seeds.SETTINGS["07_scaling"]["CONFIG"],
                                                                   lr=0.2))
    monkeypatch.setitem(bench_seeds.SETTINGS, "07_scaling", changed)
    with pytest.raises(AssertionError, match="lr"):
        test_the_bench_runs_each_chapter_on_the_chapters_own_setting("07_scaling")


def test_every_training_chapter_from_1_to_9_has_a_runner():
    training = {p.name[:2] for p in BOOK.glob("0[1-9]_*.ipynb") if "train." in p.read_text()}
    assert training <= set(bench_seeds.RUNNERS), training - set(bench_seeds.RUNNERS)


def test_claims_record_value_threshold_and_pass():
    c = bench_seeds.Claims("07")
    c.at_least("a", 0.96, 0.95)
    c.at_most("b", 0.2, 0.1)
    c.below("c", -1.0, 0)
    c.equal("d", 2, 2)
    assert [(r.claim, r.passed) for r in c.rows] == [("a", True), ("b", False), ("c", True), ("d", True)]
    assert c.rows[1].threshold == "<= 0.1" and c.rows[1].value == 0.2


def test_a_failing_claim_is_written_reported_and_fails_the_run(tmp_path, monkeypatch, capsys):
    def fake(seed, device):
        c = bench_seeds.Claims("07")
        c.at_least("holds", 1.0, 0.5)
        c.at_least("fails on seed 1", 1.0 - seed, 0.5)
        return c.rows

    monkeypatch.setitem(bench_seeds.RUNNERS, "07", fake)
    monkeypatch.setattr(bench_seeds.beforeqkv, "setup", lambda **kw: {})
    out = tmp_path / "seeds.csv"
    assert bench_seeds.main(["--chapters", "07", "--seeds", "0", "1", "--devices", "cpu", "--out", str(out)]) == 1
    rows = list(csv.DictReader(out.open()))
    assert [(r["seed"], r["claim"], r["pass"]) for r in rows] == [
        ("0", "holds", "True"), ("0", "fails on seed 1", "True"), ("1", "holds", "True"),
        ("1", "fails on seed 1", "False")]
    assert rows[3]["threshold"] == ">= 0.5" and float(rows[3]["value"]) == 0.0
    log = capsys.readouterr().out
    assert "FAILS fails on seed 1: 0 (needs >= 0.5)" in log and "3/4 claims hold" in log
    monkeypatch.setitem(bench_seeds.RUNNERS, "07", lambda seed, device: fake(0, device))
    assert bench_seeds.main(["--chapters", "07", "--seeds", "5", "--devices", "cpu"]) == 0


@pytest.mark.slow
@pytest.mark.parametrize("chapter", ["07"])
def test_the_cheapest_chapters_claims_hold_on_one_more_seed(chapter):
    """Seed 3: neither the chapter's own run (0) nor the bench's default seeds (0-2)."""
    import torch
    rows = bench_seeds.RUNNERS[chapter](3, torch.device("cpu"))
    failed = [(r.claim, r.value, r.threshold) for r in rows if not r.passed]
    assert rows and not failed, failed
