"""A GPT-2 byte-level BPE tokenizer built from a vocabulary and a merge list (chapter 11).

1. Pre-split the text with a regular expression into words, numbers (one digit at a
   time), runs of punctuation and whitespace; a leading space stays with the next word.
2. Turn each piece into bytes (UTF-8), and each byte into a printable character
   (GPT-2's byte-to-unicode table: a space becomes ``Ġ``), so any text, emoji and CJK
   included, is a string over 256 symbols that are all in the vocabulary.
3. Merge adjacent symbols, always the pair that comes first in the merge list, until
   no listed pair is left; look up each resulting symbol's id.

Decoding maps ids back to symbols, symbols to bytes, bytes to UTF-8 text, so
``decode(encode(text)) == text`` for every string.
"""
from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["BPETokenizer", "bytes_to_unicode", "PRETOKENIZE"]

# words (letters only), single digits, punctuation runs, whitespace (SmolLM2 / GPT-2 style)
PRETOKENIZE = r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+"""


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's table byte -> printable character: printable bytes map to themselves, others to 256+."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


class BPETokenizer:
    """Byte-level BPE: ``encode(text) -> list[int]`` and ``decode(ids) -> str``; no BOS is added.

    tokens: the vocabulary (id -> symbol string); merges: ``"a b"`` strings, best first.
    ``special``: ids of control tokens (``<|im_start|>`` ...), which ``decode`` can skip.
    ``unknown``: the id for a byte whose symbol is missing from the vocabulary (SmolLM2
    lacks 21 of the 256: six rare control characters and bytes that valid UTF-8 never
    or almost never uses); with ``unknown=None`` every byte must have its symbol.
    """

    def __init__(self, tokens: list[str], merges: list[str], special: set[int] | None = None,
                 unknown: int | None = None, pattern: str = PRETOKENIZE):
        if not tokens:
            raise ValueError("a BPE tokenizer needs a non-empty vocabulary")
        self.tokens = list(tokens)
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        self.ranks = {}
        for rank, merge in enumerate(merges):
            parts = merge.split(" ")
            if len(parts) != 2:
                raise ValueError(f"merge #{rank} {merge!r} is not two symbols separated by one space")
            self.ranks[tuple(parts)] = rank
        self.byte_to_char = bytes_to_unicode()
        self.char_to_byte = {c: b for b, c in self.byte_to_char.items()}
        self.missing_bytes = sorted(b for b, c in self.byte_to_char.items() if c not in self.ids)
        if unknown is not None and not 0 <= unknown < len(self.tokens):
            raise ValueError(f"unknown token id {unknown} is outside the vocabulary [0, {len(self.tokens)})")
        self.unknown = unknown
        missing = [self.byte_to_char[b] for b in self.missing_bytes]
        if missing and unknown is None:
            raise ValueError(f"the vocabulary lacks {len(missing)} of the 256 byte symbols, e.g. {missing[:3]}")
        self.special = set(special or ())
        self.pattern = re.compile(pattern)
        self._bpe = lru_cache(maxsize=65536)(self._merge)

    @property
    def d_vocab(self) -> int:
        return len(self.tokens)

    def pieces(self, text: str) -> list[str]:
        """The pre-split pieces of ``text`` (before byte mapping and merges)."""
        return self.pattern.findall(text)

    def _merge(self, word: str) -> tuple[str, ...]:
        symbols = list(word)
        while len(symbols) > 1:
            pairs = [(self.ranks.get(p, None), i) for i, p in enumerate(zip(symbols, symbols[1:]))]
            ranked = [(r, i) for r, i in pairs if r is not None]
            if not ranked:
                break
            _, at = min(ranked)  # the pair listed first in the merges
            pair = (symbols[at], symbols[at + 1])
            merged, i = [], 0
            while i < len(symbols):  # merge every occurrence of that pair, left to right
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
                    merged.append(pair[0] + pair[1])
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            symbols = merged
        return tuple(symbols)

    def encode(self, text: str) -> list[int]:
        """text -> token ids (any string: every byte has a symbol)."""
        if not isinstance(text, str):
            raise ValueError(f"encode() needs a str, got {type(text).__name__}")
        ids = []
        for piece in self.pieces(text):
            word = "".join(self.byte_to_char[b] for b in piece.encode("utf-8"))
            ids.extend(self.ids.get(s, self.unknown) for s in self._bpe(word))
        return ids

    def decode(self, ids, skip_special: bool = False) -> str:
        """token ids -> text; bytes that do not form valid UTF-8 (a cut-off emoji) become U+FFFD."""
        out = bytearray()
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self.tokens):
                raise ValueError(f"token id {i} is outside the vocabulary [0, {len(self.tokens)})")
            if skip_special and i in self.special:
                continue
            symbol = self.tokens[i]
            if i in self.special or any(c not in self.char_to_byte for c in symbol):
                out += symbol.encode("utf-8")  # control tokens are stored as plain text
            else:
                out += bytes(self.char_to_byte[c] for c in symbol)
        return out.decode("utf-8", errors="replace")

    def __len__(self):
        return len(self.tokens)
