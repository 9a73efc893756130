"""Seal the prediction answers into the package: ``src/beforeqkv/checks/_sealed.py``.

    python -m editions.seal            # write _sealed.py from instructor/answers.json
    python -m editions.seal --check    # exit 1 when _sealed.py is out of date

The instructor's key (``instructor/answers.json``: question -> answer, explanation, and
explanation_zh_CN for the Chinese edition) is
not shipped with the package. For each question the package gets only a slow salted
hash of the answer's canonical form and the explanation encrypted under it (see
``beforeqkv.checks._seal``), so a right answer is recognised and explained and no answer
is in plain sight in the wheel, a student's notebook or the site. It is not a secret (a
few choices are tried in seconds): graded homework does not rely on it.
"""
from __future__ import annotations

import json
import sys

from .generated import write_or_check
from .paths import ROOT
KEY = ROOT / "instructor" / "answers.json"
OUT = ROOT / "src" / "beforeqkv" / "checks" / "_sealed.py"
TRANSLATED = ("zh_CN",)  # every entry of the key has explanation_<lang> for these


def answers() -> dict:
    return json.loads(KEY.read_text(encoding="utf-8"))


def render() -> str:
    from beforeqkv.checks import QUESTIONS, _core, _seal
    key = answers()
    missing = sorted(set(QUESTIONS) - set(key)) + sorted(set(key) - set(QUESTIONS))
    if missing:
        raise SystemExit(f"questions and answer key differ: {missing}")
    lines = ['"""Sealed prediction answers, written by tools/editions/seal.py: do not edit."""',
             "# question: (salted PBKDF2-SHA256 of the canonical answer, explanation encrypted under it)",
             "SEALED = {"]
    for name in sorted(key):
        q, entry = QUESTIONS[name], key[name]
        canon = _core.canonical(entry["answer"], q["choices"], q["digits"])
        if canon is None:
            raise SystemExit(f"{name}: the key's answer {entry['answer']!r} is not one of its choices")
        lines.append(f'    "{name}": {{"check": "{_seal.digest(name, canon)}",')
        lines.append(f'        "box": "{_seal.seal(name, canon, entry["explanation"])}",')
        for lang in TRANSLATED:  # the explanation a Chinese reader gets (BEFOREQKV_LANG=zh_CN)
            if f"explanation_{lang}" not in entry:
                raise SystemExit(f"{name}: no explanation_{lang} in the key")
            box = f"box_{lang}"
            lines.append(f'        "{box}": "{_seal.seal(name, canon, entry[f"explanation_{lang}"], box)}",')
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    check = argv[:1] == ["--check"]
    if write_or_check(OUT, render(), check, "python -m editions.seal"):
        return 1
    if not check:
        print(f"wrote {OUT.relative_to(ROOT)} ({len(answers())} questions)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
