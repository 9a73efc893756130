"""The words the editions write themselves, in every language: one gettext catalog per
language, ``locales/<lang>/editions.po``.

The reader notebooks' own words (figure numbers, the Answers section, the folded answers'
titles, the language cell's comment) and the words the site's theme and myst-nb write
without a catalog of their own (fold prompts, a download button's tooltip, the sidebar
toggles' titles: ``_ext/bqkv_site.py`` reads this catalog for the site) are all here, so a
word is translated once. The pages' prose has the site's catalogs (``locales/<lang>/LC_MESSAGES``)
and the package's run-time words its own (``beforeqkv/locale``), shipped with it.
"""
from __future__ import annotations

import functools

from . import i18n
from .paths import ROOT

__all__ = ["catalog", "languages", "Words", "ENGLISH"]

CATALOG = "editions.po"


def languages() -> list[str]:
    """The languages other than English that have a catalog of the editions' words."""
    return sorted(p.parent.name for p in (ROOT / "locales").glob(f"*/{CATALOG}"))


@functools.cache
def catalog(lang: str) -> dict[str, str]:
    """{English: translation} of the editions' words in ``lang`` (empty for English); a
    ValueError names the languages there are when ``lang`` has no catalog."""
    if lang == "en":
        return {}
    po = ROOT / "locales" / lang / CATALOG
    if not po.is_file():
        raise ValueError(f"no editions in {lang!r}: the editions' words exist in {', '.join(['en', *languages()])}")
    return {msgid: msgstr for msgid, (msgstr, fuzzy) in i18n.translations(po).items() if msgstr and not fuzzy}


class Words:
    """``Words("zh_CN")("Answer")`` -> the word in that language (the English where the
    catalog has no translation)."""

    def __init__(self, lang: str = "en"):
        self.lang, self._catalog = lang, catalog(lang)

    def __call__(self, text: str) -> str:
        return self._catalog.get(text, text)


ENGLISH = Words("en")
