"""An uncased BERT WordPiece tokenizer built from a ``vocab.txt`` (chapter 10).

Text -> ids in two stages, as BERT does it:

1. *basic* splitting: drop control characters and map whitespace to spaces, put spaces
   around CJK ideographs, strip accents (NFD, then drop combining marks), lowercase,
   split on whitespace and on every punctuation character;
2. *WordPiece*: cut each word into the longest vocabulary pieces, left to right, the
   pieces after the first marked ``##``; a word that cannot be cut (or is longer than
   100 characters) becomes ``[UNK]``.

Any string tokenizes: what the vocabulary lacks becomes ``[UNK]``.
"""
from __future__ import annotations

import os
import unicodedata
from pathlib import Path

__all__ = ["WordPiece", "basic_split"]

MAX_WORD_CHARS = 100  # BERT's max_input_chars_per_word

# CJK ideograph blocks (BERT's list): each gets spaces around it, so it is a word alone
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
        (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _is_cjk(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _CJK)


def _is_whitespace(ch: str) -> bool:
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch: str) -> bool:  # every "other" category (Cc, Cf, Cn, Co, Cs), as the reference does
    return ch not in "\t\n\r" and unicodedata.category(ch).startswith("C")


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)  # all non-alphanumeric ASCII counts, e.g. $ ^ ` (not Unicode "P*")
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def basic_split(text: str) -> list[str]:
    """Clean, space CJK, strip accents, lowercase, split on whitespace and punctuation.

    The order and the character classes follow the reference (Rust) ``BertNormalizer`` and
    ``BertPreTokenizer`` that produced the model's training data, e.g. lowercasing is one
    character at a time, so a final capital sigma becomes σ, not ς.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    chars = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or _is_control(ch):
            continue
        if _is_whitespace(ch):
            chars.append(" ")
        elif _is_cjk(cp):
            chars.append(f" {ch} ")
        else:
            chars.append(ch)
    words = []
    for word in "".join(chars).split():
        word = unicodedata.normalize("NFD", word)  # strip accents, then lowercase one char at a time
        word = "".join(ch.lower() for ch in word if unicodedata.category(ch) != "Mn")
        current = []
        for ch in word:
            if _is_punctuation(ch):
                if current:
                    words.append("".join(current))
                    current = []
                words.append(ch)
            else:
                current.append(ch)
        if current:
            words.append("".join(current))
    return words


class WordPiece:
    """Uncased BERT WordPiece: ``encode(text) -> ids`` with ``[CLS]`` ... ``[SEP]``.

    vocab: a list of pieces (the id is the position) or the path of a ``vocab.txt``.
    ``max_length`` (counting ``[CLS]`` and ``[SEP]``): longer text raises ``ValueError``
    instead of being cut silently.
    """

    def __init__(self, vocab, max_length: int | None = None, unk: str = "[UNK]",
                 cls: str = "[CLS]", sep: str = "[SEP]", pad: str = "[PAD]"):
        if isinstance(vocab, (str, os.PathLike)):
            vocab = Path(vocab).read_text(encoding="utf-8").split("\n")
            if vocab and vocab[-1] == "":
                vocab = vocab[:-1]
        vocab = list(vocab)
        if not vocab or not all(isinstance(p, str) for p in vocab):
            raise ValueError("vocab must be a non-empty list of strings (or a vocab.txt path)")
        self.pieces = vocab
        self.ids = {piece: i for i, piece in enumerate(vocab)}
        if len(self.ids) != len(vocab):
            raise ValueError("vocab has duplicate pieces")
        for special in (unk, cls, sep, pad):
            if special not in self.ids:
                raise ValueError(f"vocab lacks the special token {special!r}")
        if max_length is not None and (not isinstance(max_length, int) or max_length < 2):
            raise ValueError(f"max_length must be an int >= 2 (room for [CLS] and [SEP]), got {max_length!r}")
        self.max_length = max_length
        self.unk_id, self.cls_id, self.sep_id, self.pad_id = (self.ids[s] for s in (unk, cls, sep, pad))

    def __len__(self) -> int:
        return len(self.pieces)

    def word_pieces(self, word: str) -> list[str]:
        """Greedy longest-match-first pieces of one word; ``[UNK]`` if it cannot be cut."""
        if len(word) > MAX_WORD_CHARS:
            return [self.pieces[self.unk_id]]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.ids:
                    break
                end -= 1
            else:  # no piece fits at this point: the whole word is unknown
                return [self.pieces[self.unk_id]]
            pieces.append(piece)
            start = end
        return pieces

    def tokenize(self, text: str) -> list[str]:
        """The pieces of ``text`` (without ``[CLS]``/``[SEP]``)."""
        return [p for word in basic_split(text) for p in self.word_pieces(word)]

    def encode(self, text: str) -> list[int]:
        """``[CLS]`` + the ids of the pieces of ``text`` + ``[SEP]``."""
        ids = [self.cls_id] + [self.ids[p] for p in self.tokenize(text)] + [self.sep_id]
        if self.max_length is not None and len(ids) > self.max_length:
            raise ValueError(f"the text is {len(ids)} tokens long (with [CLS] and [SEP]), longer than the "
                             f"model's context of {self.max_length} tokens: split it into shorter pieces")
        return ids

    def decode(self, ids) -> list[str]:
        """The pieces of a list of ids."""
        out = []
        for i in ids:
            if not isinstance(i, int) or not 0 <= i < len(self.pieces):
                raise ValueError(f"token id {i!r} is not in [0, {len(self.pieces)})")
            out.append(self.pieces[i])
        return out
