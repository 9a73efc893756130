"""The language of what the package prints and draws: ``BEFOREQKV_LANG``.

The book has an English and a Chinese edition built from one source. Inside code
output, the words a reader acts on (checker feedback and hints, the set-up banner,
figure titles and axis words) follow one setting:

* ``BEFOREQKV_LANG=zh_CN`` in the environment (the Chinese reader notebooks set it
  in their first cell), or :func:`set_language` in a running kernel;
* anything else, or nothing, is English.

The strings are a gettext catalog, like the site's: ``locale/zh_CN/LC_MESSAGES/
beforeqkv.po`` (edited) and its compiled ``beforeqkv.mo`` (read here by the standard
library). ``make i18n-package`` extracts every ``_("...")`` of the package, merges it
into the catalog and compiles it; a message without a translation is shown in English.

Write a message as one literal with named fields, and fill them after translating::

    from beforeqkv.i18n import _
    raise CheckFailure(_("expected shape {want}, got {got}").format(want=w, got=g))

never ``_(f"...")`` (the catalog could not know the message); ``tests/test_i18n_package.py``
checks this, and that every translation keeps its English's ``{fields}``.
"""
from __future__ import annotations

import functools
import gettext
import os
from pathlib import Path

__all__ = ["_", "N_", "tr", "language", "set_language", "LANGUAGES", "DOMAIN", "LOCALE_DIR"]

DOMAIN = "beforeqkv"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
LANGUAGES = ("en", "zh_CN")
_ALIASES = {"": "en", "en": "en", "en_us": "en", "en_gb": "en", "c": "en", "posix": "en",
            "zh": "zh_CN", "zh_cn": "zh_CN", "zh_hans": "zh_CN", "zh_hans_cn": "zh_CN"}
_CHOSEN: str | None = None  # set_language() wins over the environment


def _normalise(lang: str) -> str:
    key = lang.strip().split(".")[0].replace("-", "_").lower()
    if key not in _ALIASES:
        raise ValueError(f"unknown language {lang!r}: beforeqkv speaks {', '.join(LANGUAGES)} "
                         f"(set BEFOREQKV_LANG to one of them, or leave it unset for English)")
    return _ALIASES[key]


def language() -> str:
    """The language in force: ``"en"`` or ``"zh_CN"``."""
    if _CHOSEN is not None:
        return _CHOSEN
    return _normalise(os.environ.get("BEFOREQKV_LANG", ""))


def set_language(lang: str | None) -> str:
    """Use ``lang`` from now on in this process (``None``: back to ``BEFOREQKV_LANG``)."""
    global _CHOSEN
    _CHOSEN = None if lang is None else _normalise(lang)
    return language()


@functools.lru_cache(maxsize=None)
def _catalog(lang: str) -> gettext.NullTranslations:
    return gettext.translation(DOMAIN, str(LOCALE_DIR), languages=[lang], fallback=True)


def _(message: str) -> str:
    """``message`` (one literal) in the language in force (English when the catalog lacks it)."""
    return tr(message)


def N_(message: str) -> str:
    """Mark ``message`` for the catalog without translating it now (module-level
    tables); translate it where it is shown, with :func:`tr`."""
    return message


def tr(message: str) -> str:
    """A message marked with :func:`N_` (held in a variable), in the language in force.

    The same lookup as :func:`_`, under another name: ``_`` takes one literal only (the
    catalog is extracted from those, and a test holds every ``_`` to it), ``tr`` the
    variables that hold an ``N_`` message. A message the catalog lacks comes back as it is."""
    lang = language()
    return message if lang == "en" else _catalog(lang).gettext(message)
