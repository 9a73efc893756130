"""Live explorers (beforeqkv.live): the ONNX export gives PyTorch's numbers, bad input is refused
in words, and the site's component carries what its script needs. The browser's side is in
tests/test_browser.py (test_live_explorer_*), on the built site."""
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from _book import ROOT

from beforeqkv import live, models, widgets

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is in requirements.txt")


def _models(*ns, seed=0):
    torch.manual_seed(seed)
    return {n: models.RecallAttention() for n in ns}


def _run_onnx(path, pairs, query):
    keys, values = live.parse_pairs(pairs)
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    logits, weights = s.run(None, {"keys": np.array([keys]), "values": np.array([values]),
                                   "query": np.array([query])})
    return weights[0], logits[0]


@pytest.mark.parametrize("text,keys,values", [
    ("12:3 40:7", [12, 40], [3, 7]),
    ("12:3,40:7 ,  5:0", [12, 40, 5], [3, 7, 0]),
    ("63:15", [63], [15]),
])
def test_parse_pairs_reads_pairs(text, keys, values):
    assert live.parse_pairs(text) == (keys, values)


@pytest.mark.parametrize("text,words", [
    ("12-3", "not a pair"), ("12:", "not a pair"), ("a:b", "not a pair"), ("-1:3", "not a pair"),
    ("64:3", "keys go from 0 to 63"), ("3:16", "values from 0 to 15"),
    ("4:1 4:2", "stored twice"), ("", "at least one pair"), ("  , ", "at least one pair"),
    (None, "as text"),
])
def test_parse_pairs_refuses_bad_input_in_words(text, words):
    with pytest.raises(ValueError, match=words):
        live.parse_pairs(text)


def test_the_export_gives_pytorchs_numbers_for_any_number_of_pairs(tmp_path):
    recall = live.Recall(_models(2, 8))
    spec = recall.export(tmp_path)
    assert spec["files"] == {"2": "ch01-recall-n2.onnx", "8": "ch01-recall-n8.onnx"}
    assert json.loads((tmp_path / "ch01-recall.json").read_text()) == spec
    assert len(spec["fixtures"]) == 2 * len(live.Recall.FIXTURES)
    for f in spec["fixtures"]:            # 6, 3 and 10 pairs: the file was traced at 3
        w, lo = _run_onnx(tmp_path / spec["files"][str(f["n"])], f["pairs"], f["query"])
        assert np.abs(w - f["weights"]).max() <= 1e-5
        assert np.abs(lo - f["logits"]).max() <= 1e-5
        assert abs(sum(f["weights"]) - 1) <= 1e-5
    many = " ".join(f"{k}:{k % 16}" for k in range(64))   # every key, more than trained on
    w, lo = _run_onnx(tmp_path / "ch01-recall-n8.onnx", many, 17)
    w_t, lo_t = recall.run(8, many, 17)
    assert w.shape == (64,) and np.abs(w - w_t.numpy()).max() <= 1e-5
    assert np.abs(lo - lo_t.numpy()).max() <= 1e-5


def test_the_parity_check_catches_a_model_that_changed_after_export(tmp_path):
    """The comparison the browser test makes can fail: a model changed after its export
    gives other numbers than the file."""
    ms = _models(4)
    recall = live.Recall(ms)
    spec = recall.export(tmp_path)
    with torch.no_grad():
        ms[4].W_Q.weight.mul_(3.0)
    f = spec["fixtures"][0]
    w, _ = _run_onnx(tmp_path / spec["files"]["4"], f["pairs"], f["query"])
    w_now, _ = recall.run(4, f["pairs"], f["query"])
    assert np.abs(w - w_now.numpy()).max() > 1e-3


def test_the_component_carries_its_spec_and_the_fallback(tmp_path):
    recall = live.Recall(_models(2, 4), pairs="1:2 3:4", query=3)
    recall.export(tmp_path)
    page = recall.html(fallback='<div class="bqkv-explorer">frames</div>')
    spec = json.loads(re.search(r'<script type="application/json" class="bqkv-live-spec">(.*?)</script>',
                                page, re.S).group(1))
    assert spec["files"] == {"2": "ch01-recall-n2.onnx", "4": "ch01-recall-n4.onnx"}
    assert spec["start"] == 4 and spec["pairs"] == "1:2 3:4" and spec["query"] == 3
    assert set(spec["words"]["errors"]) == {"pair", "range", "twice", "empty", "query"}
    assert page.index('class="bqkv-live"') < page.index('class="bqkv-explorer"')
    assert "<noscript>" in page


def test_a_bad_start_or_models_are_refused():
    with pytest.raises(ValueError, match="not one of the models"):
        live.Recall(_models(2), start=8)
    with pytest.raises(ValueError, match="trained RecallAttention"):
        live.Recall({})
    with pytest.raises(ValueError, match="stored twice"):
        live.Recall(_models(2), pairs="1:1 1:2")
    with pytest.raises(ValueError, match="from 0 to 63"):
        live.Recall(_models(2)).run(2, "1:1", 64)


def test_the_site_build_exports_and_shows_the_component(tmp_path, monkeypatch):
    def fig(n_pairs=2):
        import matplotlib.pyplot as plt
        f, ax = plt.subplots(figsize=(1, 1))
        ax.set_title(str(n_pairs))
        return f

    recall = live.Recall(_models(2))
    monkeypatch.setenv(widgets.MODE_ENV, "static")
    monkeypatch.delenv(live.LIVE_DIR_ENV, raising=False)
    alone = widgets.explorer(fig, n_pairs=[2, 3], live=recall)
    assert "bqkv-live" not in alone._repr_html_()      # no folder for the files: static only
    monkeypatch.setenv(live.LIVE_DIR_ENV, str(tmp_path / "live"))
    both = widgets.explorer(fig, n_pairs=[2, 3], live=recall)
    page = both._repr_html_()
    assert 'class="bqkv-live"' in page and 'class="bqkv-explorer"' in page
    assert (tmp_path / "live" / "ch01-recall-n2.onnx").exists()
    assert (tmp_path / "live" / "ch01-recall.json").exists()


def test_the_notebook_widget_is_the_same_explorer():
    pytest.importorskip("ipywidgets")
    recall = live.Recall(_models(2, 4))
    ui = recall.widget()
    values = {c.description: c.value for c in ui.children[:3]}
    assert values["N"] == 4 and values[live._("pairs")] == recall.pairs
    fig = recall.figure(4, "1:2 5:3", 5)
    assert fig.axes[0].get_title().startswith("model trained at N = 4: reads value")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["1:2", "5:3"]


def test_the_pages_script_reads_the_same_rules_as_python():
    """bqkv-live.js mirrors parse_pairs: its pattern and its bounds are the same."""
    js = (ROOT / "book" / "_static" / "bqkv-live.js").read_text()
    assert r"/^(\d+):(\d+)$/" in js and live._PAIR.pattern == r"^(\d+):(\d+)$"
    assert 'replace(/,/g, " ").split(/\\s+/)' in js
    assert "k >= spec.n_keys || v >= spec.n_values" in js
    assert "keys.indexOf(k) >= 0" in js


# ---------------------------------------------------------------- chapter 8: a prompt
@pytest.fixture(scope="module")
def char_gpt():
    from beforeqkv import corpus
    vocab = corpus.CharVocab(sorted(set("Ham.\nWhat sh To be, or not to be, that is KING:My lord")))
    torch.manual_seed(0)
    cfg = models.TransformerConfig(d_vocab=len(vocab), n_ctx=16, d_model=16, n_heads=2, n_layers=2)
    return models.GPT(cfg), vocab


def test_a_prompt_exports_with_every_layers_weights_and_gives_pytorchs_numbers(tmp_path, char_gpt):
    lm, vocab = char_gpt
    p = live.Prompt(lm, vocab)
    spec = p.export(tmp_path)
    s = ort.InferenceSession(str(tmp_path / spec["files"]["model"]), providers=["CPUExecutionProvider"])
    assert [o.name for o in s.get_outputs()] == ["logits", "weights0", "weights1"]
    for f in spec["fixtures"]:
        ids = np.array([p.encode(f["prompt"])])
        assert ids.shape[1] == min(len(f["prompt"]), 16)       # the last n_ctx characters
        logits, *weights = s.run(None, {"tokens": ids})
        assert np.abs(logits[0, -1] - f["logits"]).max() <= 1e-5
        for got, want in zip(weights, f["weights"]):
            assert got.shape == (1, 2, ids.shape[1], ids.shape[1])
            assert np.abs(got.ravel() - want).max() <= 1e-5
        ref = lm.generate(torch.tensor(p.encode(f["prompt"])), p.GREEDY, temperature=0)
        assert f["greedy"] == "".join(vocab.chars[i] for i in ref[ids.shape[1]:].tolist())
    one = s.run(None, {"tokens": np.array([[3]])})[0]          # a single character
    assert np.abs(one[0, -1] - p.run(vocab.chars[3])[0].numpy()).max() <= 1e-5


@pytest.mark.parametrize("text,words", [("", "at least one character"), ("héllo", "alphabet: 'é'"),
                                        (None, "at least one character")])
def test_a_prompt_outside_the_alphabet_is_refused_in_words(char_gpt, text, words):
    p = live.Prompt(*char_gpt)
    with pytest.raises(ValueError, match=words):
        p.encode(text)


def test_the_prompt_widget_and_figure(char_gpt):
    pytest.importorskip("ipywidgets")
    p = live.Prompt(*char_gpt)
    ui = p.widget()
    assert ui.children[0].value == p.prompt and ui.children[1].max == 1.5
    fig = p.figure("What sh", 0.5, 10, seed=1)
    titles = [ax.get_title() for ax in fig.axes]
    assert "next character at temperature 0.5" in titles and "layer 1, head 1" in titles


def test_a_size_passes_as_a_tensor_only_while_torch_traces_for_onnx():
    """torch.onnx's tracer hands sizes over as 0-dim tensors (the GPT's causal mask needs
    them as variables); anywhere else a tensor for a size is refused."""
    import warnings
    from beforeqkv._validate import check_positive

    def f(x):
        check_positive(t=torch.tensor(x.shape[0]))
        return x * 2
    with pytest.raises(ValueError, match="positive int"):
        f(torch.ones(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(f, torch.ones(2), check_trace=False)
    assert traced(torch.ones(2)).tolist() == [2.0, 2.0]
    with pytest.raises(ValueError, match="positive int"):
        check_positive(t=torch.tensor(0.5))


# ---------------------------------------------------------------- chapter 10: MiniLM in 8 bits
def test_weights_in_8_bits_keep_the_products_close_and_the_file_small(tmp_path, char_gpt):
    """quantize_weights: int8 matrices (one scale per column of a MatMul, per row of an
    embedding), float32 arithmetic; the logits move by about the rounding, not more."""
    lm, vocab = char_gpt
    full = live.export_onnx(lm, (torch.tensor([[0, 1, 2]]),), tmp_path / "f.onnx", ("tokens",),
                            ("logits", "w0", "w1"), {"tokens": {1: "T"}})
    small = live.quantize_weights(full, tmp_path / "q.onnx", min_size=256)
    assert small.stat().st_size < 0.85 * full.stat().st_size     # MiniLM: 90.9 MB -> 23 MB
    ids = np.array([[3, 1, 4, 1, 5, 9, 2, 6]])
    a = ort.InferenceSession(str(full)).run(None, {"tokens": ids})[0]
    b = ort.InferenceSession(str(small)).run(None, {"tokens": ids})[0]
    rel = np.linalg.norm(a - b) / np.linalg.norm(a)
    assert 0 < rel < 0.02, rel                        # changed, by about 8 bits' rounding
    with pytest.raises(ValueError, match="no weight matrix"):
        live.quantize_weights(full, tmp_path / "none.onnx", min_size=10**9)



def test_minilm_in_8_bits_keeps_the_embeddings_and_the_tokens(tmp_path, minilm):
    s = live.Sentences(minilm)
    spec = s.export(tmp_path)
    assert spec["files"] == {"model": "ch10-minilm-int8.onnx", "vocab": "ch10-minilm-vocab.txt"}
    assert (tmp_path / "ch10-minilm-vocab.txt").read_text().split("\n")[:-1] == minilm.tokenizer.pieces
    assert 15 <= s.mb <= 30                       # 22.7 M numbers, one byte each
    for f in spec["fixtures"]:
        for side in (f["first"], f["second"]):
            assert side["ids"] == minilm.tokenize(side["text"])
            assert np.linalg.norm(np.array(side["embedding_int8"]) - side["embedding"]) <= 0.06
        ref = minilm.encode([f["first"]["text"], f["second"]["text"]])
        assert abs(float(ref[0] @ ref[1]) - float(np.dot(f["first"]["embedding"], f["second"]["embedding"]))) <= 1e-5


# ---------------------------------------------------------------- chapters 5 and 6: heads
NAMES = [f"{'RSP'[i % 3]}{i // 3}" for i in range(24)]
BEATS = [3 * (i // 3) + (i + 1) % 3 for i in range(24)]
SUCC = [r * 8 + (k + 1) % 8 for r in range(4) for k in range(8)]
PRED = [r * 8 + (k - 1) % 8 for r in range(4) for k in range(8)]


def _triads(seed=0):
    torch.manual_seed(seed)
    return live.Heads({"full bilinear": models.TriadModel("full bilinear"), "cosine": models.TriadModel("cosine")},
                      "ch05-triads", NAMES, [("", BEATS)], "R0:3 P0:1 S0:5 R2:0 S2:7 P2:2")


def _rings(seed=0):
    torch.manual_seed(seed)
    return live.Heads({f"H={h}": models.RingHeads(n_heads=h) for h in (1, 2, 4)}, "ch06-ring",
                      [str(i) for i in range(32)], [("s", SUCC), ("p", PRED)],
                      "8:3 9:5 10:1 11:7 12:0 13:2 14:6 15:4", start="H=2")


def _run_heads(path, items, payloads):
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return s.run(None, {"items": np.array([items]), "payloads": np.array([payloads])})


@pytest.mark.parametrize("text,items,payloads", [
    ("R0:3 P0:1", [0, 2], [3, 1]), ("S7:7,R1:0 ,  P1:6", [22, 3, 5], [7, 0, 6]), ("P7:0", [23], [0]),
])
def test_parse_sequence_reads_items_by_name(text, items, payloads):
    assert live.parse_sequence(text, NAMES, 8) == (items, payloads)


@pytest.mark.parametrize("text,words", [
    ("R0-3", "not item:payload, e.g. R0:3 \\(items R0 to P7\\)"), ("R0:", "not item:payload"),
    ("X0:1", "not item:payload"), ("R8:1", "not item:payload"), ("r0:1", "not item:payload"),
    (":1", "not item:payload"), ("R0:-1", "not item:payload"), ("R0:³", "not item:payload"),
    ("R0:8", "payloads go from 0 to 7"), ("R0:1 R0:2", "item R0 appears twice"),
    ("", "at least one item:payload, e.g. R0:3"), (" , ", "at least one"), (None, "as text"),
])
def test_parse_sequence_refuses_bad_input_in_words(text, words):
    with pytest.raises(ValueError, match=words):
        live.parse_sequence(text, NAMES, 8)


@pytest.mark.parametrize("make", [_triads, _rings], ids=["triads", "rings"])
def test_heads_export_gives_pytorchs_numbers_at_any_length(tmp_path, make):
    heads = make()
    spec = heads.export(tmp_path)
    assert list(spec["files"]) == list(heads.models)
    assert len(spec["fixtures"]) == 3 * len(heads.models)
    for f in spec["fixtures"]:       # 6 (or 8), reversed, and half: the files were traced at 3
        items, payloads = heads.parse(f["sequence"])
        logits, weights = _run_heads(tmp_path / spec["files"][f["model"]], items, payloads)
        assert np.abs(logits.ravel() - f["logits"]).max() <= 1e-5
        assert np.abs(weights.ravel() - f["weights"]).max() <= 1e-5
        t = len(items)
        assert np.allclose(np.asarray(f["weights"]).reshape(-1, t, t).sum(-1), 1, atol=1e-5)
    assert {f["sequence"] for f in spec["fixtures"]} == set(heads.fixture_inputs())


@pytest.mark.parametrize("make", [_triads, _rings], ids=["triads", "rings"])
def test_no_model_of_chapters_5_and_6_sees_positions(make):
    """What the chapters' prose says of *shuffle*: the weights move with the tokens."""
    heads = make(seed=3)
    tokens = heads.sequence.split()
    order = [3, 0, 5, 1, 4, 2] + list(range(6, len(tokens)))
    moved = " ".join(tokens[i] for i in order)
    for label in heads.models:
        lo, w = heads.run(label, heads.sequence)
        lo2, w2 = heads.run(label, moved)
        assert torch.allclose(w2, w[:, order][:, :, order], atol=1e-6)
        assert torch.allclose(lo2, lo[order], atol=1e-5)


def test_heads_marks_each_target_and_counts_right_payloads():
    rings = _rings()
    items, _unused = rings.parse("8:3 9:5 11:7")
    assert rings.targets(items) == [[1, None], [None, 0], [None, None]]   # 10 and 15 absent
    fig = rings.figure("H=2", "8:3 9:5 10:1")
    assert len(fig.axes) == 2 and "of 4" in fig.axes[0].get_title()   # 11 and 15 absent
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["8:3", "9:5", "10:1"]


def test_heads_refuses_bad_models_marks_and_start():
    ring = {"H=1": models.RingHeads(n_heads=1)}
    with pytest.raises(ValueError, match="trained model"):
        live.Heads({}, "x", ["a", "b"], [("s", [1, 0])], "a:1")
    with pytest.raises(ValueError, match="a target for every item"):
        live.Heads(ring, "x", ["a", "b"], [("s", [1])], "a:1")
    with pytest.raises(ValueError, match="not one of the models"):
        live.Heads(ring, "x", ["a", "b"], [("s", [1, 0])], "a:1", start="H=2")
    with pytest.raises(ValueError, match="appears twice"):
        live.Heads(ring, "x", ["a", "b"], [("s", [1, 0])], "a:1 a:2")


def test_the_heads_widget_and_component(tmp_path):
    pytest.importorskip("ipywidgets")
    triads = _triads()
    ui = triads.widget()
    assert [c.value for c in ui.children[:2]] == ["full bilinear", triads.sequence]
    triads.export(tmp_path)
    spec = json.loads(re.search(r'class="bqkv-live-spec">(.*?)</script>', triads.html(), re.S).group(1))
    assert spec["kind"] == "heads" and spec["names"] == NAMES and spec["marks"] == [{"letter": "", "target": BEATS}]
    assert set(spec["words"]["errors"]) == {"token", "payload", "twice", "empty"}


def test_the_pages_script_reads_the_same_sequence_rules_as_python():
    """bqkv-live.js mirrors parse_sequence: the last colon splits, ASCII digits, the bound, distinct items."""
    js = (ROOT / "book" / "_static" / "bqkv-live.js").read_text()
    assert 'token.lastIndexOf(":")' in js and "/^[0-9]+$/.test(p)" in js
    assert "parseInt(p, 10) >= spec.n_payloads" in js and "items.indexOf(id) >= 0" in js


# ---------------------------------------------------------------- chapter 9: slots
@pytest.fixture(scope="module")
def memories():
    from beforeqkv import tasks
    keys, target = tasks.random_facts(32, d_model=32, generator=torch.Generator().manual_seed(1))
    torch.manual_seed(0)
    return {"trained": models.MLPMemory(32, 16, 16),
            "by hand": models.handwritten_memory(keys, target, d_mlp=16)}, keys, target


def test_slots_export_gives_pytorchs_numbers(tmp_path, memories):
    mems, keys, target = memories
    slots = live.Slots(mems, keys, target)
    spec = slots.export(tmp_path)
    assert spec["files"] == {"trained": "ch09-slots-0.onnx", "by hand": "ch09-slots-1.onnx"}
    assert len(spec["fixtures"]) == 2 * len(live.Slots.FIXTURES)
    for f in spec["fixtures"]:
        s = ort.InferenceSession(str(tmp_path / spec["files"][f["memory"]]), providers=["CPUExecutionProvider"])
        w, logits, votes = s.run(None, {"a": np.array([f["a"]]), "b": np.array([f["b"]]),
                                        "t": np.array([f["t"]], dtype=np.float32)})
        for got, want in ((w, f["weights"]), (logits, f["logits"]), (votes, f["votes"])):
            assert np.abs(got.ravel() - want).max() <= 1e-5
    # the votes are the slot weights times the value rows: their sum over slots is the logits less the bias
    f = spec["fixtures"][1]
    votes = torch.tensor(f["votes"]).view(16, 16)
    bias = mems[f["memory"]].W_out.bias.detach()
    assert torch.allclose(votes.sum(0) + bias, torch.tensor(f["logits"]), atol=1e-5)


def test_a_blend_of_0_or_1_reads_fact_a_or_fact_b(memories):
    mems, keys, target = memories
    slots = live.Slots(mems, keys, target)
    for label, memory in mems.items():
        with torch.no_grad():
            for a, b in ((3, 20), (17, 5)):
                assert torch.allclose(slots.run(label, a, b, 0.0)[1], memory(keys[a]), atol=1e-6)
                assert torch.allclose(slots.run(label, a, b, 1.0)[1], memory(keys[b]), atol=1e-6)
    # the hand-written memory: fact 3 has slot 3, fact 20 none (facts 16-31 have no slot)
    w3, _l, _v = slots.run("by hand", 3, 20, 0.0)
    w20, _l, _v = slots.run("by hand", 20, 3, 0.0)
    assert int(w3.argmax()) == 3 and float(w3.max()) > 0 and float(w20.max()) == 0


@pytest.mark.parametrize("a,b,t,words", [
    (32, 0, 0.0, "from 0 to 31"), (-1, 0, 0.0, "from 0 to 31"), (0, 1.5, 0.0, "from 0 to 31"),
    (True, 0, 0.0, "from 0 to 31"), (0, 1, 1.01, "blend goes from 0"), (0, 1, -0.1, "blend goes from 0"),
])
def test_slots_refuse_bad_facts_and_blends_in_words(memories, a, b, t, words):
    mems, keys, target = memories
    with pytest.raises(ValueError, match=words):
        live.Slots(mems, keys, target).run("trained", a, b, t)


def test_slots_widget_figure_and_component(tmp_path, memories):
    pytest.importorskip("ipywidgets")
    mems, keys, target = memories
    slots = live.Slots(mems, keys, target, fact=5, other=9, blend=0.25, start="by hand")
    assert [c.value for c in slots.widget().children[:4]] == ["by hand", 5, 9, 0.25]
    fig = slots.figure("by hand", 5, 9, 0.25)
    assert fig.axes[1].get_title().startswith(f"fact 5's class {int(target[5])}")
    slots.export(tmp_path)
    spec = json.loads(re.search(r'class="bqkv-live-spec">(.*?)</script>', slots.html(), re.S).group(1))
    assert spec["kind"] == "slots" and spec["target"] == target.tolist() and spec["start"] == "by hand"
    with pytest.raises(ValueError, match="MLPMemory"):
        live.Slots({"x": torch.nn.Linear(2, 2)}, keys, target)
    with pytest.raises(ValueError, match="not one of the memories"):
        live.Slots(mems, keys, target, start="other")


# ---------------------------------------------------------------- chapter 4: rows
@pytest.fixture(scope="module")
def mixers():
    torch.manual_seed(0)
    return {"static": models.StaticMixer(), "content": models.ContentMixer(),
            "content, no positions": models.ContentMixer(positions=False)}


@pytest.mark.parametrize("text,tokens", [
    ("3 9 14 0 9 5 1 12 7 7 2 15 4 0 11 6", [3, 9, 14, 0, 9, 5, 1, 12, 7, 7, 2, 15, 4, 0, 11, 6]),
    (",".join(["15"] * 16), [15] * 16), ("0 " * 16, [0] * 16),
])
def test_parse_tokens_reads_sixteen_tokens(text, tokens):
    assert live.parse_tokens(text) == tokens


@pytest.mark.parametrize("text,words", [
    ("1 2 3", "type 16 tokens, one per position; there are 3"), ("", "there are 0"),
    ("1 " * 17, "there are 17"), ("16 " + "0 " * 15, "'16' is not a token: tokens go from 0 to 15"),
    ("-1 " + "0 " * 15, "is not a token"), ("1.5 " + "0 " * 15, "is not a token"),
    ("٣ " + "0 " * 15, "is not a token"), (None, "as text"),
])
def test_parse_tokens_refuses_bad_input_in_words(text, words):
    with pytest.raises(ValueError, match=words):
        live.parse_tokens(text)


def test_rows_export_gives_pytorchs_numbers_for_every_mixer(tmp_path, mixers):
    rows = live.Rows(mixers)
    spec = rows.export(tmp_path)
    assert spec["files"] == {m: f"ch04-pointer-{k}.onnx" for k, m in enumerate(mixers)}
    assert len(spec["fixtures"]) == len(live.Rows.FIXTURES)
    for f in spec["fixtures"]:
        weights, logits = [], []
        for m in mixers:
            s = ort.InferenceSession(str(tmp_path / spec["files"][m]), providers=["CPUExecutionProvider"])
            lo, w = s.run(None, {"tokens": np.array([live.parse_tokens(f["tokens"])]), "query": np.array([f["query"]])})
            weights += w.ravel().tolist()
            logits += lo.ravel().tolist()
        assert np.abs(np.array(weights) - f["weights"]).max() <= 1e-5
        assert np.abs(np.array(logits) - f["logits"]).max() <= 1e-5
        assert len(weights) == 3 * 16 and len(logits) == 3 * 16


def test_rows_widget_figure_and_refusals(mixers):
    pytest.importorskip("ipywidgets")
    rows = live.Rows(mixers, query=4)
    assert [c.value for c in rows.widget().children[:2]] == [rows.tokens, 4]
    fig = rows.figure(rows.tokens, 4)
    assert "read position 4 (answer 9)" in fig.axes[0].get_title()
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == rows.tokens.split()
    assert rows._spec()["labels"] == ["static", "content", "content, no positions"]
    with pytest.raises(ValueError, match="position from 0 to 15"):
        rows.run(rows.tokens, 16)
    with pytest.raises(ValueError, match="trained mixer"):
        live.Rows({})


def test_the_pages_script_reads_the_same_token_rules_as_python():
    js = (ROOT / "book" / "_static" / "bqkv-live.js").read_text()
    assert "!/^[0-9]+$/.test(item) || parseInt(item, 10) >= spec.d_vocab" in js
    assert "tokens.length !== spec.n_ctx" in js


def test_the_model_names_on_the_page_are_the_figures_names_in_the_edition(memories):
    from beforeqkv import i18n
    mems, keys, target = memories
    i18n.set_language("zh_CN")
    try:
        triads, slots = _triads()._spec(), live.Slots(mems, keys, target)._spec()
        rings = _rings()._spec()
    finally:
        i18n.set_language(None)
    assert triads["models"] == ["full bilinear", "cosine"] and triads["labels"] == ["完整双线性", "余弦"]
    assert slots["labels"] != slots["memories"] and rings["labels"] == rings["models"]   # H=1 is H=1


def test_every_widget_says_a_refused_input_in_words_instead_of_raising(capsys):
    pytest.importorskip("ipywidgets")
    ui = live.Recall(_models(2)).widget()
    ui.children[1].value = "1:1 1:2"                  # the pairs: a key stored twice
    assert "key 1 is stored twice" in capsys.readouterr().out
    ui = _triads().widget()
    ui.children[1].value = "R0:9"
    assert "payloads go from 0 to 7" in capsys.readouterr().out


def test_each_widgets_controls_are_its_figures_arguments(char_gpt, mixers, memories):
    """_interactive calls figure(**controls): a control named otherwise would fail silently."""
    import inspect
    pytest.importorskip("ipywidgets")
    mems, keys, target = memories
    for explorer in (live.Recall(_models(2)), live.Rows(mixers), _triads(), _rings(),
                     live.Slots(mems, keys, target), live.Prompt(*char_gpt)):
        wanted = [p for p in inspect.signature(explorer.figure).parameters]
        assert list(explorer.widget().kwargs) == wanted, type(explorer).__name__


# ---------------------------------------------------------------- chapter 7: one softmax row
def _softmax_row(log2_d, scaled, seed):
    """Chapter 7's function, as the chapter writes it."""
    from beforeqkv.measure import saturation
    g = torch.Generator().manual_seed(seed)
    scores = saturation.random_scores(2 ** log2_d, n_queries=1, T=32, scaled=scaled, generator=g)
    a = torch.softmax(scores, dim=-1)
    g = torch.Generator().manual_seed(seed)
    return a[0], saturation.row_gradient(a, g).item()


@pytest.fixture(scope="module")
def rows7():
    return live.SoftmaxRow(_softmax_row)


def test_softmax_row_stores_the_chapters_draws_for_every_setting(rows7):
    """Every width, draw and scale of the range: the stored draws give the chapter's numbers."""
    for log2_d in range(13):
        for seed in range(21):
            for scaled in (False, True):
                a, grad = rows7.run(log2_d, scaled, seed)
                want, want_grad = _softmax_row(log2_d, scaled, seed)
                assert torch.allclose(a, want, atol=1e-7), (log2_d, scaled, seed)
                assert abs(grad - want_grad) <= 1e-6 * max(1.0, want_grad), (log2_d, scaled, seed)
    # the chapter's claim, from the table: unscaled at d = 1024 a spike, scaled spread out
    assert rows7.run(10, False, 3)[0].max() > 0.99 and rows7.run(10, True, 3)[0].max() < 0.5


def test_softmax_row_export_gives_pytorchs_numbers_and_stays_small(tmp_path, rows7):
    spec = rows7.export(tmp_path)
    path = tmp_path / spec["files"]["model"]
    assert spec["kind"] == "softmax" and len(spec["fixtures"]) == len(live.SoftmaxRow.FIXTURES)
    assert path.stat().st_size < 60_000          # 13 widths x 21 draws x 32 scores, and 21 gradients
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for f in spec["fixtures"]:
        a, grad = s.run(None, {"log2_d": np.array([f["log2_d"]]), "seed": np.array([f["seed"]]),
                               "scaled": np.array([float(f["scaled"])], dtype=np.float32)})
        assert np.abs(a[0] - f["weights"]).max() <= 1e-5 and abs(grad[0] - f["grad"]) <= 1e-5 * max(1, f["grad"])


@pytest.mark.parametrize("wrong", [
    lambda k, scaled, seed: _softmax_row(k, scaled, seed + 1),                        # another draw
    lambda k, scaled, seed: _softmax_row(k, False, seed),                              # never scaled
    lambda k, scaled, seed: (_softmax_row(k, scaled, seed)[0], 2 * _softmax_row(k, scaled, seed)[1]),  # gradient
])
def test_softmax_row_refuses_a_function_that_is_not_the_chapters(wrong):
    with pytest.raises(ValueError, match="does not draw what the explorer stores"):
        live.SoftmaxRow(wrong)


@pytest.mark.parametrize("ranges,words", [
    (dict(log2_d=(0, 17)), "0 <= lo <= hi <= 16"), (dict(log2_d=(5, 2)), "0 <= lo <= hi <= 16"),
    (dict(seeds=(-1, 3)), "0 <= first <= last"), (dict(seeds=(0, 10_000)), "more than 1024 widths x seeds"),
])
def test_softmax_row_refuses_ranges_it_cannot_store(ranges, words):
    with pytest.raises(ValueError, match=words):
        live.SoftmaxRow(_softmax_row, **ranges)


@pytest.mark.parametrize("setting,words", [
    ((13, False, 0), "log2_d is a whole number from 0 to 12"), ((-1, False, 0), "from 0 to 12"),
    ((2.0, False, 0), "from 0 to 12"), ((True, False, 0), "from 0 to 12"),
    ((2, False, 21), "seed is a whole number from 0 to 20"), ((2, "yes", 0), "scaled is True or False"),
])
def test_softmax_row_refuses_settings_outside_its_range_in_words(rows7, setting, words):
    with pytest.raises(ValueError, match=words):
        rows7.run(*setting)


def test_softmax_row_in_jupyter_is_the_chapters_explorer_and_on_the_site_a_component(tmp_path, rows7):
    pytest.importorskip("ipywidgets")
    ui = widgets.explorer(lambda log2_d=6, scaled=False, seed=3: None, log2_d=(0, 12, 1), scaled=False,
                          seed=(0, 20, 1), live=rows7)
    assert type(ui).__name__ == "interactive"       # the controls alone, no second copy of them
    rows7.export(tmp_path)
    spec = json.loads(re.search(r'class="bqkv-live-spec">(.*?)</script>', rows7.html(), re.S).group(1))
    assert spec["kind"] == "softmax" and spec["log2_d"] == [0, 12] and spec["seeds"] == [0, 20]
    assert spec["start"] == [6, False, 3]
    for key in ("scaled_title", "unscaled_title"):     # the script fills {d}, {w} and {g}, no format specs
        assert re.findall(r"\{(\w+)\}", spec["words"][key]) == ["d", "w", "g"] and ":." not in spec["words"][key]




# ---------------------------------------------------------------- chapter 11: SmolLM2's next token
def _graph(weights: dict, make_nodes):
    """A one-input ONNX model (ids (1, T) int64 -> y) with ``weights`` stored in it."""
    import onnx
    from onnx import helper, numpy_helper
    nodes, y = make_nodes(helper)
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("ids", onnx.TensorProto.INT64, [1, None])],
                              [helper.make_tensor_value_info(y, onnx.TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, n) for n, w in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _on_grids(v=40, d=64, n=96, seed=0):
    """An embedding on the 8-bit grid (Q8_0), a matrix on the 4-bit one (Q4_1), the tied
    unembedding, and a matrix on no grid: ids -> ((E[ids] W4) W_off) E^T."""
    g = np.random.default_rng(seed)
    table = g.standard_normal((v, d // 32, 32))
    step8 = np.abs(table).max(-1, keepdims=True) / 127
    table = np.round(table / step8) * step8
    lo, step = g.standard_normal((n, d // 32, 1)), g.random((n, d // 32, 1)) * 0.1 + 0.01
    w4 = g.integers(0, 16, (n, d // 32, 32)).astype(np.float64)
    w4[..., 0], w4[..., 1] = 0, 15                         # each block spans its grid, as Q4_1's do
    w4 = (w4 * step + lo).astype(np.float32).reshape(n, d).T   # (d, n)
    weights = {"E": table.reshape(v, d).astype(np.float32), "W4": w4,
               "Woff": g.standard_normal((n, d)).astype(np.float32),
               "Et": np.ascontiguousarray(table.reshape(v, d).T).astype(np.float32)}

    def nodes(h):
        return [h.make_node("Gather", ["E", "ids"], ["x"]), h.make_node("MatMul", ["x", "W4"], ["a"]),
                h.make_node("MatMul", ["a", "Woff"], ["b"]), h.make_node("MatMul", ["b", "Et"], ["y"])], "y"
    return _graph(weights, nodes)


def test_grid_weights_stores_each_matrix_on_its_grid_and_computes_the_same(tmp_path):
    import onnx
    src, out = tmp_path / "f.onnx", tmp_path / "g.onnx"
    onnx.save(_on_grids(), str(src))
    live.grid_weights(src, out)
    assert live._grids(out) == {4: 1, 8: 1, 0: 1}           # W4, the tied E^T; Woff stays float32
    names = {t.name for t in onnx.load(str(out)).graph.initializer}
    assert {"E", "Et", "W4"}.isdisjoint(names) and "Woff" in names   # one 8-bit copy of E serves both
    ids = np.array([[3, 0, 39, 3, 17]])
    want = ort.InferenceSession(str(src)).run(None, {"ids": ids})[0]
    got = ort.InferenceSession(str(out)).run(None, {"ids": ids})[0]
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()
    assert out.stat().st_size < 0.6 * src.stat().st_size


def test_grid_weights_leaves_weights_on_no_grid_and_says_so(tmp_path):
    import onnx
    g = np.random.default_rng(1)
    weights = {"W": g.standard_normal((64, 8)).astype(np.float32), "E": g.standard_normal((10, 64)).astype(np.float32)}
    model = _graph(weights, lambda h: ([h.make_node("Gather", ["E", "ids"], ["x"]),
                                        h.make_node("MatMul", ["x", "W"], ["y"])], "y"))
    onnx.save(model, str(tmp_path / "f.onnx"))
    with pytest.raises(ValueError, match="no weight matrix sits on a 4- or 8-bit grid"):
        live.grid_weights(tmp_path / "f.onnx", tmp_path / "g.onnx")


def test_a_matrix_nearly_on_a_grid_is_not_rounded_onto_it(tmp_path):
    """One weight moved by a thousandth of its block's step: the grid no longer holds it."""
    import onnx
    model = _on_grids()
    w4 = next(t for t in model.graph.initializer if t.name == "W4")
    from onnx import numpy_helper
    w = numpy_helper.to_array(w4).copy()
    w[5, 7] += 1e-3 * (w[:32, 7].max() - w[:32, 7].min()) / 15
    w4.CopyFrom(numpy_helper.from_array(w, "W4"))
    onnx.save(model, str(tmp_path / "f.onnx"))
    live.grid_weights(tmp_path / "f.onnx", tmp_path / "g.onnx")
    assert live._grids(tmp_path / "g.onnx") == {8: 1, 0: 2}


@pytest.fixture(scope="module")
def smol_export(lm, tmp_path_factory):
    where = tmp_path_factory.mktemp("ch11")
    nt = live.NextToken(lm)
    return nt, nt.export(where), where


def test_next_token_export_is_the_gguf_files_numbers_and_pytorchs_probabilities(smol_export):
    nt, spec, where = smol_export
    assert spec["files"] == {"model": "ch11-smollm2.onnx", "tokenizer": "ch11-smollm2-tokenizer.json"}
    assert live._grids(where / "ch11-smollm2.onnx") == {4: 7 * 30, 8: 1}
    s = ort.InferenceSession(str(where / "ch11-smollm2.onnx"), providers=["CPUExecutionProvider"])
    assert len(spec["fixtures"]) == len(live.NextToken.FIXTURES) >= 10
    for f in spec["fixtures"]:
        assert f["ids"] == nt.lm.tokenize(f["prompt"])
        probs = s.run(["probs"], {"ids": np.array([f["ids"]])})[0]
        assert np.argsort(-probs)[:nt.k].tolist() == f["top"] or f["probs"][-2] - f["probs"][-1] < 1e-4
        assert np.abs(probs[f["top"]] - np.array(f["probs"])).max() <= 1e-5, f["prompt"]
        assert f["labels"] == [repr(nt.lm.decode([i])) for i in f["top"]]


def test_next_token_tokenizer_file_is_the_models_tokenizer(smol_export):
    from beforeqkv.pretrained.bpe import BPETokenizer
    nt, spec, where = smol_export
    t = json.loads((where / spec["files"]["tokenizer"]).read_text("utf-8"))
    again = BPETokenizer(t["tokens"], t["merges"], special=set(t["special"]), unknown=t["unknown"])
    for text in live.NextToken.FIXTURES:
        assert again.encode(text) == nt.lm.tokenize(text)
    assert t["special"] == sorted(nt.lm.tokenizer.special) and t["unknown"] == nt.lm.tokenizer.unknown


@pytest.mark.parametrize("text,words", [("", "at least one token"),
                                        (" word" * 80, "80 tokens long, longer than the 64")])
def test_next_token_refuses_a_prompt_it_cannot_read_in_words(lm, text, words):
    with pytest.raises(ValueError, match=words):
        live.NextToken(lm).encode(text)
    with pytest.raises(ValueError, match="SmolLM2"):
        live.NextToken(object())


def test_next_token_widget_figure_and_component(smol_export):
    pytest.importorskip("ipywidgets")
    nt, spec, where = smol_export
    assert list(nt.widget().kwargs) == ["prompt"]
    fig = nt.figure("The capital of France is")
    assert "' Paris'" in [t.get_text() for t in fig.axes[0].get_yticklabels()]
    page = nt.html()
    assert 'data-kind="nexttoken"' in page and '"mb": ' in page and "ch11-smollm2.onnx" in page


@pytest.mark.parametrize("change", ["probs", "grids"])
def test_the_export_refuses_a_model_that_does_not_give_the_chapters_numbers(smol_export, tmp_path, change):
    """The export's process checks its file against the chapter's probabilities and the GGUF
    file's grids: a model that changed in the notebook (here: fixtures moved by 2e-5), or
    weights on other grids, is not kept."""
    import shutil
    nt, spec, where = smol_export
    f = dict(spec["fixtures"][0])
    grids = {4: 210, 8: 1}
    if change == "probs":
        f["probs"] = [p + 2e-5 for p in f["probs"]]
    else:
        grids = {4: 211}
    copy = Path(shutil.copy(where / "ch11-smollm2.onnx", tmp_path / "x.onnx"))
    live._keep_if_same(copy, spec["fixtures"], {4: 210, 8: 1})        # the file as exported: kept
    assert copy.exists()
    with pytest.raises(ValueError, match="would not compute with the chapter's numbers"):
        live._keep_if_same(copy, [f], grids)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- chapter 2: crosstalk
def _recall(n_pairs, d_k=16, sharpness=None, n_values=16, trials=2000, seed=0):
    """Chapter 2's function, as the chapter writes it."""
    import torch.nn.functional as F
    from beforeqkv import attention
    g = torch.Generator().manual_seed(seed)
    keys = F.normalize(torch.randn(trials, n_pairs, d_k, generator=g), dim=-1)
    E = F.normalize(torch.randn(n_values, 16, generator=g), dim=-1)
    ids = torch.randint(n_values, (trials, n_pairs), generator=g)
    q = keys[:, :1]
    if sharpness is None:
        read = attention.linear_attention(q, keys, E[ids], via_memory=True)
    else:
        read = attention.scaled_dot_product_attention(q, keys, E[ids], scale=sharpness)
    return ((read[:, 0] @ E.T).argmax(-1) == ids[:, 0]).float().mean().item()


@pytest.fixture(scope="module")
def crosstalk():
    return live.Crosstalk(_recall)


def test_crosstalk_stores_the_chapters_draws_for_every_width_and_scale(crosstalk):
    """The stored draws give exactly the chapter's fractions: both reads, every width, scales
    inside and between the chapter's six."""
    for d_k in (8, 16, 32, 64):
        for scale in (0.1, 0.37, 1.0, 7.3, 30.0, 100.0):
            soft, fixed = crosstalk.run(d_k, scale)
            assert soft == [_recall(n, d_k, sharpness=scale) for n in crosstalk.n_sweep], (d_k, scale)
            assert fixed == [_recall(n, d_k) for n in crosstalk.n_sweep], d_k


def test_crosstalk_export_gives_the_chapters_numbers_and_stays_small(tmp_path, crosstalk):
    spec = crosstalk.export(tmp_path)
    assert spec["files"] == {"model": "ch02-crosstalk.onnx"} and (tmp_path / "ch02-crosstalk.onnx").stat().st_size < 6e6
    s = ort.InferenceSession(str(tmp_path / "ch02-crosstalk.onnx"), providers=["CPUExecutionProvider"])
    assert len(spec["fixtures"]) == len(live.Crosstalk.FIXTURES)
    for f in spec["fixtures"]:
        assert f["scale"] == pytest.approx(0.1 * 10 ** (f["position"] / 100))
        soft, fixed = s.run(None, {"width": np.array([crosstalk.widths.index(f["d_k"])]),
                                   "scale": np.array([f["scale"]], np.float32)})
        assert soft.tolist() == f["soft"] and fixed.tolist() == f["fixed"], f["d_k"]
    assert len({tuple(f["soft"]) for f in spec["fixtures"]}) >= 4          # fixtures that differ


@pytest.mark.parametrize("wrong", [
    lambda n, d_k, sharpness=None: _recall(n, d_k, sharpness, seed=1),                 # other draws
    lambda n, d_k, sharpness=None: _recall(n, d_k, None if sharpness is None else 2 * sharpness),
    lambda n, d_k, sharpness=None: _recall(n, d_k, sharpness, trials=500),
])
def test_crosstalk_refuses_a_function_that_is_not_the_chapters(wrong):
    with pytest.raises(ValueError, match="does not draw what the explorer stores"):
        live.Crosstalk(wrong)


@pytest.mark.parametrize("setting,words", [((12, 1.0), "d_k is one of"), ((16, 0.05), "from 0.1 to 100"),
                                           ((16, 101), "from 0.1 to 100"), ((True, 1.0), "d_k is one of"),
                                           ((16, "1"), "from 0.1 to 100")])
def test_crosstalk_refuses_settings_outside_its_range_in_words(crosstalk, setting, words):
    with pytest.raises(ValueError, match=words):
        crosstalk.run(*setting)


def test_crosstalk_refuses_sizes_it_cannot_store():
    with pytest.raises(ValueError, match="at most 2,000,000"):
        live.Crosstalk(_recall, widths=(8, 16, 32, 64, 128), trials=10_000)
    with pytest.raises(ValueError, match="0 < lowest scale < highest"):
        live.Crosstalk(_recall, scales=(10, 1))


def test_crosstalk_in_jupyter_is_the_chapters_explorer_and_on_the_site_a_component(tmp_path, crosstalk):
    assert crosstalk.widget() is None
    crosstalk.export(tmp_path)
    page = crosstalk.html()
    assert 'data-kind="crosstalk"' in page and '"positions": 300' in page and '"start": [16, 248]' in page
