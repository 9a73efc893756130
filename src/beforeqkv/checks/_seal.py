"""Prediction answers, hashed: the self-check tells a right answer without printing one.

Every predict-then-run question is stored as two strings (``_sealed.py``, written by
``tools/editions/seal.py`` from the instructor's answer key, which the package does not ship):

* ``check``: a salted, slow hash (PBKDF2-SHA256) of the answer's canonical form;
* ``box``: the explanation shown after a right answer, encrypted with a key derived from
  the same canonical answer (a SHA-256 keystream; only a right answer opens it).

So ``checks??``, the wheel and the site show no answer in plain sight: a prediction is
confirmed by recomputing the hash of what the reader wrote. That keeps the answer out of the
reader's way before they predict; it is not a secret. Most questions have two to four
choices and the numeric answers are small whole numbers or short decimals, so a program that
tries them all against the installed package recovers every answer in seconds, and the
experiment below each question shows its answer once run. Graded homework therefore never
relies on these hashes (``beforeqkv.sandbox``: predictions count for participation, or are
compared with the instructor's version of the notebook). The canonical form is what makes
natural answers equal (``1``, ``"1"``, ``1.0``; case and spacing): see :func:`canonical`.
"""
from __future__ import annotations

import base64
import hashlib

SALT = "before-qkv/answers/1"
ROUNDS = 20_000


def _key(question: str, canon: str, purpose: str) -> bytes:
    return hashlib.pbkdf2_hmac("sha256", f"{purpose}|{question}|{canon}".encode(),
                               f"{SALT}|{question}".encode(), ROUNDS)


def digest(question: str, canon: str) -> str:
    """The stored check of a canonical answer."""
    return _key(question, canon, "check").hex()


def _stream(key: bytes, n: int) -> bytes:
    out = b""
    counter = 0
    while len(out) < n:
        out += hashlib.sha256(key + counter.to_bytes(8, "big")).digest()
        counter += 1
    return out[:n]


def seal(question: str, canon: str, text: str, box: str = "box") -> str:
    """``text`` encrypted under the canonical answer (base64). Each ``box`` ("box" for the
    English explanation, "box_zh_CN" for the Chinese one) has its own key stream."""
    data = text.encode("utf-8")
    key = _key(question, canon, box)
    return base64.b64encode(bytes(a ^ b for a, b in zip(data, _stream(key, len(data))))).decode()


def unseal(question: str, canon: str, sealed: str, box: str = "box") -> str:
    """The text sealed by :func:`seal` in ``box``; garbage (or an error) under a wrong answer."""
    data = base64.b64decode(sealed)
    key = _key(question, canon, box)
    return bytes(a ^ b for a, b in zip(data, _stream(key, len(data)))).decode("utf-8")
