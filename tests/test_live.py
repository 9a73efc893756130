"""Live explorers (beforeqkv.live): the ONNX export gives PyTorch's numbers, bad input is refused
in words, and the site's component carries what its script needs. The browser's side is in
tests/test_browser.py (test_live_explorer_*), on the built site."""
import json
import re

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
