"""all-MiniLM-L6-v2 in the package Transformer reproduces the reference sentence similarities."""
import json

import pytest
import torch
import torch.nn.functional as F

from beforeqkv import models
from beforeqkv.attention import with_weights
from beforeqkv.pretrained import WeightsMissing, require
from beforeqkv.pretrained.minilm import (DISTRIBUTION, MAX_SEQ_LENGTH, QK_ASYMMETRY_MEDIAN, REFERENCE_COSINES,
                                         REFERENCE_SENTENCES,
                                         hf_to_package, mean_pool, minilm_config)



def test_it_is_the_package_transformer_as_a_post_norm_encoder(minilm):
    assert isinstance(minilm.model, models.Transformer) and not isinstance(minilm.model, models.GPT)
    c = minilm.model.config
    assert (c.causal, c.prenorm, c.n_layers, c.n_heads, c.d_model, c.norm_eps) == (False, False, 6, 12, 384, 1e-12)
    assert minilm.load_seconds > 0
    with pytest.raises(ValueError, match="no unembedding"):
        minilm.model(torch.tensor([[101, 102]]))


def test_reference_cosines_are_reproduced(minilm):
    e = minilm.encode(REFERENCE_SENTENCES)
    assert e.shape == (3, 384)
    torch.testing.assert_close(e.norm(dim=-1), torch.ones(3))
    cos = e @ e.T  # (3, 3)
    for (i, j), want in REFERENCE_COSINES.items():
        assert abs(cos[i, j].item() - want) <= 1e-5, (i, j, cos[i, j].item(), want)


def test_a_padded_batch_equals_one_sentence_at_a_time(minilm):
    sentences = ["Hi.", "A much longer sentence, with commas, clauses and more than a dozen word pieces in it.",
                 "Two words"]
    batch = minilm.encode(sentences)
    alone = torch.cat([minilm.encode([s]) for s in sentences])
    torch.testing.assert_close(batch, alone, atol=1e-6, rtol=0)
    torch.testing.assert_close(minilm.encode(sentences, batch_size=2), batch, atol=1e-6, rtol=0)


def test_padding_is_masked_out_of_the_keys(minilm):
    tokens, mask = minilm.batch(["Hi.", "A longer sentence than the first one."])
    h_masked = minilm.model.hidden_states(tokens, mask=mask[:, None, None, :])
    h_open = minilm.model.hidden_states(tokens)
    short = int(mask[0].sum())
    assert not torch.allclose(h_masked[0, :short], h_open[0, :short], atol=1e-3)  # pads would change it
    torch.testing.assert_close(h_masked[1], h_open[1])  # the longest sentence has no pads


def test_tokenize_has_cls_and_sep_and_long_text_is_an_error(minilm):
    assert minilm.tokenize("The cat sat on the mat.") == [101, 1996, 4937, 2938, 2006, 1996, 13523, 1012, 102]
    assert minilm.tokens("Hi!") == ["[CLS]", "hi", "!", "[SEP]"]
    with pytest.raises(ValueError, match="context of 256"):
        minilm.encode(["word " * 300])


@pytest.mark.parametrize("bad", ["a single string", [], [1, 2]])
def test_encode_rejects_bad_input(minilm, bad):
    with pytest.raises(ValueError):
        minilm.encode(bad)


def test_batch_and_hidden_states_reject_bad_input(minilm):
    for bad in ([], "text", ["ok", None]):
        with pytest.raises(ValueError, match="non-empty list of strings"):
            minilm.batch(bad)


def test_per_head_ov_contributions_sum_to_the_attention_output(minilm):
    tokens, mask = minilm.batch(["The cat sat on the mat."])
    x = minilm.model.norm_embed(minilm.model.W_E(tokens) + minilm.model.W_pos.weight[:tokens.shape[1]])
    attn = minilm.model.blocks[0].attn
    y, (w,) = with_weights(attn, x)  # (1, T, d), (1, H, T, T)
    U = models.ov_matrices(attn)  # (H, d, d)
    per_head = torch.einsum("hij,hde,je->hid", w[0], U, x[0])  # (H, T, d)
    bias = attn.W_O.weight @ attn.W_V.bias + attn.W_O.bias  # (d,): weights sum to 1
    torch.testing.assert_close(per_head.sum(0) + bias, y[0], atol=1e-5, rtol=0)


def test_the_weight_map_rejects_a_foreign_checkpoint(minilm):
    with pytest.raises(ValueError, match="not an all-MiniLM"):
        hf_to_package({"encoder.layer.0.attention.self.query.weight": torch.zeros(1)})


def test_mean_pool_ignores_padding():
    h = torch.arange(12.0).view(1, 4, 3)  # (B, T, d)
    mask = torch.tensor([[True, True, False, False]])
    torch.testing.assert_close(mean_pool(h, mask), h[:, :2].mean(1))
    with pytest.raises(ValueError, match="bool mask"):
        mean_pool(h, mask.float())
    assert F.normalize(mean_pool(h, mask), dim=-1).norm().item() == pytest.approx(1.0)


def test_config_is_the_bert_recipe():
    c = minilm_config()
    assert (c.activation, c.positions, c.embed_norm, c.final_norm, c.bias) == ("gelu", "learned", True, False, True)


def test_the_shipped_files_say_what_chapter_10_quotes():
    """The sizes, the 256-token limit and exercise 10.4's model answer (trained on 128 tokens)."""
    try:
        files = {name: require(DISTRIBUTION, f"model/{name}").read_text(encoding="utf-8")
                 for name in ("config.json", "sentence_bert_config.json", "README.md")}
    except WeightsMissing as err:
        pytest.skip(str(err))
    hf, card = json.loads(files["config.json"]), files["README.md"]
    c = minilm_config()
    assert (c.n_layers, c.d_model, c.n_heads, c.d_mlp, c.d_vocab, c.n_ctx, c.norm_eps) == (
        hf["num_hidden_layers"], hf["hidden_size"], hf["num_attention_heads"], hf["intermediate_size"],
        hf["vocab_size"], hf["max_position_embeddings"], hf["layer_norm_eps"]) == (6, 384, 12, 1536, 30522, 512, 1e-12)
    assert json.loads(files["sentence_bert_config.json"])["max_seq_length"] == MAX_SEQ_LENGTH == 256
    assert "sequence length was limited to 128 tokens" in card
    assert "longer than 256 word pieces is truncated" in card


# ------------------------------------------------------------------ figures of chapter 10
def test_encoder_figures_draw_and_reject_mismatched_shapes():
    from beforeqkv.figures import ch10 as figs

    toks = ["[CLS]", "a", "b", "[SEP]"]
    w = torch.softmax(torch.randn(12, 4, 4, generator=torch.Generator().manual_seed(0)), -1)  # (H, T, T)
    def image(ax):  # the matrix an Axes shows
        return torch.as_tensor(ax.images[0].get_array().data)

    def ticks(axis):
        return [t.get_text() for t in axis.get_ticklabels()]

    grid = figs.attention_grid(w, toks, layer=0)  # 12 heads, 4 per row: 3 rows, token labels outside
    assert len(grid.axes) == 12 and [ax.get_title() for ax in grid.axes] == [f"head {h}" for h in range(12)]
    assert all(torch.allclose(image(ax), w[h]) for h, ax in enumerate(grid.axes))
    assert ticks(grid.axes[8].xaxis) == toks and ticks(grid.axes[0].yaxis) == toks
    assert not any(ticks(grid.axes[1].yaxis))
    assert grid._suptitle.get_text().startswith("layer 0:")
    head = figs.attention_head(w[3], toks, "head 3")
    ax = head.axes[0]
    assert torch.allclose(image(ax), w[3]) and ax.get_title() == "head 3"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("key (read from)", "query (reads)")
    assert ticks(ax.xaxis) == toks and ticks(ax.yaxis) == toks
    ratios = torch.rand(6, 12) * 2
    asym = figs.qk_asymmetry(ratios, random_ratio=1.41)
    assert torch.allclose(image(asym.axes[0]), ratios) and asym.axes[1].get_title() == "all 72 heads"
    assert sum(p.get_height() for p in asym.axes[1].patches) == 72  # the histogram counts every head
    assert "random W_Q, W_K" in [t.get_text() for t in asym.axes[1].get_legend().get_texts()]
    norms = torch.rand(12, 4)
    contrib = figs.head_contributions(norms, toks, layer=2)
    assert torch.allclose(image(contrib.axes[0]), norms) and contrib.axes[0].get_title().startswith("layer 2:")
    assert ticks(contrib.axes[0].yaxis) == [f"head {h}" for h in range(12)]
    sim = figs.similarity_matrix(torch.eye(3), ["x", "y", "z"])
    assert ticks(sim.axes[0].yaxis) == ["1  x", "2  y", "3  z"]
    assert [t.get_text() for t in sim.axes[0].texts] == ["1.00", "0.00", "0.00", "0.00", "1.00", "0.00",
                                                         "0.00", "0.00", "1.00"]
    with pytest.raises(ValueError, match="do not fit"):
        figs.attention_grid(w, toks[:3], layer=0)
    with pytest.raises(ValueError, match="do not fit"):
        figs.head_contributions(torch.rand(12, 5), toks, layer=0)
    with pytest.raises(ValueError, match="n_layers"):
        figs.qk_asymmetry(torch.rand(12))
    with pytest.raises(ValueError, match="do not fit"):
        figs.similarity_matrix(torch.eye(3), ["x"])


def test_post_norm_figure_shows_both_blocks_and_where_the_norms_sit():
    from beforeqkv.figures import ch10 as figs

    fig = figs.post_norm_block()
    drawn = " ".join(t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "get_fontsize")))
    for label in ["pre-norm (chapter 8, GPT-2)", "post-norm (BERT, MiniLM)", "x = LN(x + attn(x))",
                  "x = x + attn(LN(x))", "LayerNorm (norm_attn)", "LayerNorm (norm_mlp)", "MLP  (GELU)",
                  "no causal mask", "residual stream", "eps 1e-12"]:
        assert label in drawn, label
    assert "post-norm" in fig.alt_text and "LN(x + attn(x))" in fig.alt_text
    assert all(t.get_fontsize() >= 10 for t in fig.findobj(lambda a: hasattr(a, "get_fontsize")))


def test_the_restated_asymmetry_median_is_chapter_10s_measurement(minilm):
    """Chapter 11 puts its decoder beside QK_ASYMMETRY_MEDIAN: it must be what chapter 10 measures."""
    ratios = []
    for block in minilm.model.blocks:
        attn = block.attn
        W_Q = attn.W_Q.weight.view(attn.n_heads, attn.d_head, -1)  # (H, d_head, d)
        W_K = attn.W_K.weight.view(attn.n_heads, attn.d_head, -1)  # (H, d_head, d)
        A = W_Q.transpose(1, 2) @ W_K  # (H, d, d)
        ratios.append((A - A.transpose(1, 2)).flatten(1).norm(dim=1) / A.flatten(1).norm(dim=1))
    median = torch.cat(ratios).median().item()
    assert len(torch.cat(ratios)) == 72
    assert abs(median - QK_ASYMMETRY_MEDIAN) < 5e-4, median
