"""tools/bench_llm.py: tokens/s of SmolLM2's greedy decoding, and a failure when the text is wrong."""



import bench_llm


def test_bench_prints_tokens_per_second_and_the_reference_text(lm, monkeypatch, capsys):
    monkeypatch.setattr(bench_llm, "load_smollm2", lambda: lm)
    assert bench_llm.main(["--new-tokens", "2", "--repeats", "1", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line.strip().startswith("1 "))
    assert len(row) == 4 and all(float(x) > 0 for x in row[1:])
    assert "text: ' Paris.'" in out


def test_bench_fails_when_the_text_is_not_the_reference(lm, monkeypatch, capsys):
    monkeypatch.setattr(bench_llm, "load_smollm2", lambda: lm)
    monkeypatch.setattr(bench_llm, "REFERENCE", " London.")
    assert bench_llm.main(["--new-tokens", "2", "--repeats", "1", "--threads", "1"]) == 1
    assert "FAIL" in capsys.readouterr().out
