"""SmolLM2-135M in the package's GPT reproduces the reference ids, logits and greedy text.

References (``REAL_MODELS.md``): a from-scratch forward matched the transformers GGUF
loader to 7e-5 on the logits; the top logits below are printed to 4 decimals (rounding
5e-5). A 1e-3 tolerance is 10x both and 1000x smaller than the gaps between them.
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from beforeqkv.attention import apply_rotary, rotary_tables
from beforeqkv.models import GPT
from beforeqkv.pretrained.gguf import dequantize
from beforeqkv.pretrained.smollm2 import WEIGHT_MAP, unpermute_rotary

PROMPT = "The capital of France is"
IDS = [504, 3575, 282, 4649, 314]
TOP3 = [(" Paris", 17.3713), (" the", 14.8886), (" London", 13.2450)]
GREEDY = " Paris.\n\nThe answer is:"


def _gguf_permute(w, n_heads):
    """What llama.cpp's converter does to W_Q / W_K rows (halves -> adjacent pairs)."""
    rows, d = w.shape
    return w.reshape(n_heads, 2, rows // n_heads // 2, d).transpose(1, 2).reshape(rows, d)


def test_unpermute_undoes_the_converter():
    w = torch.randn(3 * 8, 5)
    torch.testing.assert_close(unpermute_rotary(_gguf_permute(w, 3), 3), w, atol=0, rtol=0)
    with pytest.raises(ValueError, match="even width"):
        unpermute_rotary(torch.randn(9, 4), 3)


def test_adjacent_pair_rotation_of_permuted_rows_is_rotate_half_of_the_originals():
    d_head, T = 8, 5
    cos, sin = rotary_tables(T, d_head)  # (T, d_head), rotate-half layout
    q = torch.randn(T, d_head)
    perm = _gguf_permute(torch.eye(d_head), 1)  # (d_head, d_head) the converter's row order
    qp = q @ perm.T  # (T, d_head) the query as llama.cpp computes it
    pairs = qp.reshape(T, d_head // 2, 2)  # (T, d/2, 2) adjacent pairs
    c, s = cos[:, : d_head // 2], sin[:, : d_head // 2]
    rot = torch.stack([pairs[..., 0] * c - pairs[..., 1] * s, pairs[..., 0] * s + pairs[..., 1] * c], -1)
    torch.testing.assert_close(rot.reshape(T, d_head) @ perm, apply_rotary(q, cos, sin))


def test_the_weight_map_names_parameters_of_the_package_gpt():
    from beforeqkv.models import TransformerConfig
    model = GPT(TransformerConfig(d_vocab=8, n_ctx=4, d_model=8, n_heads=2, n_layers=1, n_kv_heads=1, norm="rmsnorm",
                          activation="swiglu", bias=False, positions="rotary", tie_embeddings=True))
    names = {n for n, _ in model.named_parameters()}  # W_U.weight is W_E.weight: listed once
    assert {dst.format(i=0) for dst in WEIGHT_MAP.values()} == names


def test_architecture_is_read_from_the_file(lm):
    c = lm.config
    assert (c.n_layers, c.d_model, c.n_heads, c.n_kv_heads, c.d_mlp, c.d_vocab) == (30, 576, 9, 3, 1536, 49152)
    assert isinstance(lm.model, GPT) and lm.model.W_U.weight is lm.model.W_E.weight


def test_reference_ids_without_bos(lm):
    assert lm.tokenize(PROMPT) == IDS


def test_top3_logits_match_the_reference(lm):
    logits = lm.logits(IDS)
    assert logits.shape == (5, 49152) and logits.dtype == torch.float32
    top = torch.topk(logits[-1], 3)
    got = [(lm.decode([i]), v) for i, v in zip(top.indices.tolist(), top.values.tolist())]
    assert [w for w, _ in got] == [w for w, _ in TOP3]
    for (_, v), (_, ref) in zip(got, TOP3):
        assert abs(v - ref) <= 1e-3, (got, TOP3)


def test_greedy_continuation_with_and_without_the_cache(lm):
    cached = lm.generate_ids(IDS, 8, use_cache=True)
    assert lm.decode(cached) == GREEDY
    assert lm.generate_ids(IDS, 8, use_cache=False) == cached
    assert lm.generate(PROMPT, 8) == GREEDY


def test_generate_ids_is_gpt_generate_with_the_end_of_text_token(lm, monkeypatch):
    calls = []
    real = lm.model.generate

    def spy(tokens, max_new_tokens, **options):
        calls.append(options)
        return real(tokens, max_new_tokens, **options)

    monkeypatch.setattr(lm.model, "generate", spy)
    assert lm.generate_ids(IDS, 2) == lm.generate_ids(IDS, 2, stop_at_eos=False, use_cache=False)
    assert [(c["stop_token"], c["use_cache"], c["temperature"]) for c in calls] == [
        (lm.eos_id, True, 0), (None, False, 0)]


def test_the_mapped_file_stays_readable_from_the_loaded_model(lm):
    raw = lm.gguf.raw("blk.0.ffn_down.weight")  # (nbytes,) uint8, a view into the mapped file
    assert raw.dtype == np.uint8 and raw.nbytes == 576 * 1536 // 32 * 20 and not raw.flags.owndata
    first = dequantize(raw[:20], 3, (32,))  # one Q4_1 block
    torch.testing.assert_close(first, lm.model.blocks[0].mlp.W_out.weight.reshape(-1, 32)[0], atol=0, rtol=0)


def test_sampling_is_seeded(lm):
    a = lm.generate_ids(IDS, 3, greedy=False, seed=1)
    assert a == lm.generate_ids(IDS, 3, greedy=False, seed=1) and len(a) == 3


def test_bad_inputs_are_value_errors(lm):
    with pytest.raises(ValueError, match="longer than SmolLM2's context of n_ctx=8192"):
        lm.logits([1] * 8193)
    with pytest.raises(ValueError, match="longer than SmolLM2's context"):
        lm.generate_ids(IDS, 8190)
    with pytest.raises(ValueError, match="non-empty list of ints"):
        lm.logits([])
    with pytest.raises(ValueError, match=r"in \[0, 49152\)"):
        lm.logits([49152])
    with pytest.raises(ValueError, match="max_new_tokens"):
        lm.generate(PROMPT, -1)


PROBE = """
import json, resource, torch
torch.set_num_threads(1)
from beforeqkv.pretrained import load_smollm2
def peak_gb():
    # VmHWM: this process's own peak. ru_maxrss also counts the parent's pages when the child
    # was started by (v)fork + exec, so a big pytest process would inflate it.
    try:
        kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kB on Linux
    return kb / 1e6
before = peak_gb()
lm = load_smollm2()
print(json.dumps({"seconds": lm.load_seconds, "before_gb": before, "added_gb": peak_gb() - before}))
"""


def test_loading_adds_at_most_1_gb_to_the_process_peak(lm):
    """What the loader costs, above what importing torch and the package cost: that depends on
    the torch build (a CUDA build maps its GPU libraries in: 0.74 GB before any model with torch
    2.15's, 0.23 GB with the CPU build), the loader's share does not (0.81 to 0.85 GB on both)."""
    src = str(Path(__file__).resolve().parents[1] / "src")
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"})
    stats = json.loads(out.stdout.strip().splitlines()[-1])
    assert 0.3 <= stats["added_gb"] <= 1.0, stats  # 0.3: a probe that saw no model load would pass


def test_the_recap_figure_labels_every_part_with_a_chapter():
    from beforeqkv.figures import ch11 as figs
    fig = figs.architecture_figure(30)
    texts = [t.get_text() for t in fig.axes[0].texts]
    notes = [t for t in texts if t.startswith("ch ")]
    assert len(notes) == len(figs._PARTS) and "× 30 blocks" in texts
    assert all(any(f"ch {n}" in t for t in notes) for n in (2, 4, 5, 6, 7, 8, 9, 11))


def test_attention_and_next_token_figures_draw():
    from beforeqkv.figures import ch11 as figs
    fig = figs.attention_figure(torch.eye(3), ["a", "b", "c"], layer=1, head=2)
    assert fig.axes[0].get_title() == "layer 1, head 2"
    fig = figs.next_token_figure([(" Paris", 0.7), (" the", 0.1)], "The capital")
    assert len(fig.axes[0].patches) == 2
    with pytest.raises(ValueError):
        figs.attention_figure(torch.ones(2, 2, 2), ["a", "b"], 0, 0)


def test_the_weights_are_laid_out_for_one_token_decoding_with_the_same_numbers(lm):
    """decode_layout: every linear weight is (out, in) in shape, (in, out) in memory; the
    numbers, the tie and the logits (to float rounding) are those of the usual layout."""
    import copy

    import torch.nn as nn
    linears = [m for m in lm.model.modules() if isinstance(m, nn.Linear)]
    assert len(linears) == 30 * 7 + 1
    assert all(m.weight.t().stride(-1) == 1 and m.weight.stride(-1) != 1 for m in linears)  # rows of W.T
    assert lm.model.W_U.weight is lm.model.W_E.weight
    from beforeqkv import decode
    for block in lm.model.blocks:  # W_Q, W_K, W_V side by side in one buffer; W_gate, W_in in another
        assert type(block.attn) is decode.JoinedAttention and type(block.mlp) is decode.JoinedMLP
        for module, names in ((block.attn, ("W_Q", "W_K", "W_V")), (block.mlp, ("W_gate", "W_in"))):
            buffer = module._joined[1]
            starts = [getattr(module, n).weight.data_ptr() for n in names]
            assert starts[0] == buffer.data_ptr() and starts == sorted(starts)
    usual = copy.deepcopy(lm.model)
    for m in usual.modules():
        if isinstance(m, nn.Linear):
            m.weight = nn.Parameter(m.weight.detach().contiguous(), requires_grad=False)
    ids = torch.tensor([lm.tokenize("The capital of France is")])
    with torch.no_grad():
        torch.testing.assert_close(lm.model(ids), usual(ids), atol=1e-4, rtol=0)


def test_the_joined_linears_give_the_separate_linears_numbers_and_step_aside_when_they_must(lm):
    """One product for W_Q, W_K, W_V (and W_gate, W_in) equals the three products; a replaced
    weight, a copied module or a weight being trained makes the module use its separate linears."""
    import copy

    import torch.nn as nn

    from beforeqkv import decode
    from beforeqkv.attention import MultiHeadAttention
    from beforeqkv.models.blocks import MLP
    block = lm.model.blocks[3]
    x = torch.randn(2, 5, block.attn.d_model)
    with torch.no_grad():
        for module, names in ((block.attn, ("W_Q", "W_K", "W_V")), (block.mlp, ("W_gate", "W_in"))):
            outs = decode.outputs(module, x)
            assert len(outs) == len(names)
            for out, name in zip(outs, names):
                torch.testing.assert_close(out, getattr(module, name)(x), atol=1e-5, rtol=0)
        assert decode.outputs(copy.deepcopy(block.attn), x) is None  # the copy's weights are copies
    attn = MultiHeadAttention(8, 2, n_kv_heads=1, bias=False)
    decode.decode_layout(nn.ModuleList([attn]))
    assert type(attn) is decode.JoinedAttention and attn._joined is not None
    x = torch.randn(2, 3, 8)
    assert decode.outputs(attn, x) is None  # its weights require grad: not while autograd records
    with torch.no_grad():
        before = attn(x)
        attn.W_K.weight = nn.Parameter(torch.zeros_like(attn.W_K.weight))
        assert not torch.allclose(attn(x), before)  # the new W_K is used...
        assert attn._joined is None  # ... and the stale buffer never again
    mlp = MLP(8, 12, activation="swiglu", bias=False)
    decode.decode_layout(nn.ModuleList([mlp]))
    assert type(mlp) is decode.JoinedMLP
    mlp(x).sum().backward()  # autograd records: the separate linears, so the gradients reach them
    assert mlp.W_gate.weight.grad.abs().sum() > 0 and mlp.W_in.weight.grad.abs().sum() > 0
    mlp.requires_grad_(False)
    torch.testing.assert_close(mlp(x), mlp.W_out(torch.nn.functional.silu(mlp.W_gate(x)) * mlp.W_in(x)))
    assert decode.outputs(mlp, x) is not None


def test_join_leaves_linears_with_a_bias_or_other_inputs_alone():
    import torch.nn as nn

    from beforeqkv import decode
    from beforeqkv.attention import MultiHeadAttention
    attn = MultiHeadAttention(8, 2, bias=True)
    assert not decode.join(attn, ("W_Q", "W_K", "W_V")) and getattr(attn, "_joined", None) is None
    decode.decode_layout(nn.ModuleList([attn]))
    assert type(attn) is MultiHeadAttention  # nothing to join: the teaching class stays
    mixed = nn.Module()
    mixed.a, mixed.b = nn.Linear(4, 3, bias=False), nn.Linear(5, 3, bias=False)
    assert not decode.join(mixed, ("a", "b"))


def test_the_teaching_classes_know_nothing_of_the_decode_speedups():
    """attention.py and models/blocks.py (chapters 6, 8, 9) hold no decode trick: the joined
    products and the transposed layout live in beforeqkv.decode, which chapter 11 names."""
    from pathlib import Path

    import beforeqkv
    root = Path(beforeqkv.__file__).parent
    for name in ("attention.py", "models/blocks.py", "models/transformer.py"):
        text = (root / name).read_text(encoding="utf-8")
        assert "_joined" not in text and "decode_layout" not in text and "from . import decode" not in text, name
