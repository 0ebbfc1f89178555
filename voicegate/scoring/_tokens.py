"""Word tokens (DESIGN.md §6b): the one definition every number in voicegate is counted in.

Text is NFKC-normalised, the typographic apostrophe ’ becomes ', then it is
case-folded; a token is a run of Unicode letters, with internal apostrophes kept
(``don't``, ``o'er``). Digits, underscores and punctuation are dropped, so a
leading or trailing apostrophe (a quotation mark in most novels) never sticks to
a word. The same tokens feed the word frequencies, the n-grams and the damage
checks.

The definition is nltk's ``RegexpTokenizer`` over PATTERN (no data download, and a
regular expression is ~60x faster than ``word_tokenize`` on novels), matching with the
standard library's ``re`` (tokenizer ``@2``). For PATTERN that tokenizer is exactly
``re.compile(PATTERN, its flags).findall``, so `tokenize` calls that directly: importing
``nltk.tokenize.regexp`` costs ~0.09 s (it pulls in ``http.client``), a fifth of the first
`score` after `register`. `nltk_tokenizer()` is the nltk object itself, which the tests hold
`tokenize` to, token for token.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import types
import unicodedata
from collections.abc import Iterator
from typing import Any

# [^\W\d_] is "a word character that is neither a digit nor '_'": a letter.
PATTERN = r"[^\W\d_]+(?:'[^\W\d_]+)*"

TOKENIZER_NAME = "nltk.RegexpTokenizer[re]:nfkc-casefold-letters-apostrophe@2"
"""Goes into every signature: change the definition, change the name."""

# Text is matched in blocks cut at whitespace (a token never contains whitespace,
# so cutting there changes nothing), which bounds the memory of one findall.
BLOCK_CHARS = 1 << 18

_tokenizer = None


def _regexp_tokenizer_class() -> Any:
    """nltk's RegexpTokenizer, without paying for `import nltk` (~1 s: it pulls in sklearn and scipy).

    `nltk/__init__.py` imports most of the toolkit; `nltk.tokenize.regexp` needs
    only `redos`, `internals` and the tokenizer api. When nltk is not already
    imported, its two parent packages are stood in by bare package modules
    while those few submodules load, then every nltk entry is taken back out of
    sys.modules, so a later `import nltk` anywhere gets the real package.
    """
    if "nltk" in sys.modules:
        from nltk.tokenize import RegexpTokenizer

        return RegexpTokenizer
    found = importlib.util.find_spec("nltk")
    if found is None or not found.submodule_search_locations:
        from nltk.tokenize import RegexpTokenizer  # raises the ordinary ImportError

        return RegexpTokenizer
    root = list(found.submodule_search_locations)
    before = set(sys.modules)
    try:
        for name, path in (("nltk", root), ("nltk.tokenize", [os.path.join(p, "tokenize") for p in root])):
            stub = types.ModuleType(name)
            stub.__path__ = path
            sys.modules[name] = stub
        return importlib.import_module("nltk.tokenize.regexp").RegexpTokenizer
    except Exception:  # noqa: BLE001 - a partial nltk fails in many ways; the plain import below reports it
        for name in set(sys.modules) - before:
            del sys.modules[name]
        from nltk.tokenize import RegexpTokenizer

        return RegexpTokenizer
    finally:
        for name in [n for n in set(sys.modules) - before if n == "nltk" or n.startswith("nltk.")]:
            del sys.modules[name]


def nltk_tokenizer() -> Any:
    """nltk's RegexpTokenizer over PATTERN, matching with `re`: the definition `tokenize` implements."""
    global _tokenizer
    if _tokenizer is None:
        base = _regexp_tokenizer_class()

        class StdlibRegexpTokenizer(base):  # type: ignore[misc,valid-type]
            """nltk's RegexpTokenizer, matching with the standard library's `re`.

            nltk compiles caller patterns with the `regex` engine under a
            wall-clock timeout, because a crafted pattern can backtrack
            exponentially. PATTERN is fixed here and linear (each repetition of
            the group must consume an apostrophe, so there is one way to match),
            and `re` runs it 1.6x faster without the timer's cost. The engines
            differ only on combining marks, which `re` does not count as word
            characters; after NFKC that touches scripts voicegate does not score.
            """

            def _check_regexp(self) -> None:
                if self._regexp is None:  # type: ignore[has-type]  # set by nltk's untyped base
                    self._regexp = re.compile(self._pattern, self._flags)

        _tokenizer = StdlibRegexpTokenizer(PATTERN)
    return _tokenizer


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).replace("\u2019", "'").casefold()


def _blocks(text: str) -> Iterator[str]:
    start = 0
    while start < len(text):
        end = start + BLOCK_CHARS
        if end < len(text):
            cut = max(text.rfind(" ", start, end), text.rfind("\n", start, end))
            end = cut + 1 if cut > start else end
        yield text[start:end]
        start = end


# RegexpTokenizer's default flags; with gaps=False its tokenize(text) is this findall(text).
FLAGS = re.UNICODE | re.MULTILINE | re.DOTALL
_findall = re.compile(PATTERN, FLAGS).findall


def tokenize(text: str) -> list[str]:
    """The word tokens of `text`, in order."""
    text = normalize(text)
    if len(text) <= BLOCK_CHARS:
        words: list[str] = _findall(text)
        return words
    out: list[str] = []
    for block in _blocks(text):
        out += _findall(block)
    return out
