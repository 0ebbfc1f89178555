"""Word tokens (docs/design.md §6b): the one definition every number in voicegate is counted in.

Text is NFKC-normalised, the typographic apostrophe ’ becomes ', then it is
case-folded; a token is a run of Unicode letters, with internal apostrophes kept
(``don't``, ``o'er``). Digits, underscores and punctuation are dropped, so a
leading or trailing apostrophe (a quotation mark in most novels) never sticks to
a word. The same tokens feed the word frequencies, the n-grams and the damage
checks.

The tokenizer is that regular expression, PATTERN, matched with the standard library's
``re`` (``findall``), and the signature names it so: ``re:nfkc-casefold-letters-apostrophe@2``.
Earlier versions named the same definition ``nltk.RegexpTokenizer[re]:...@2`` and was
held to an nltk ``RegexpTokenizer`` subclass that swapped nltk's engine for ``re``; the
tokens are the same, only the name is now what runs. Why not nltk's own tokenizer:
``RegexpTokenizer`` (nltk 3.9+) compiles through ``nltk.redos`` -- the ``regex`` engine
under a wall-clock timeout per match, so a loaded machine could refuse a text another
machine tokenizes -- it counts combining marks as letters where ``re`` does not (x, U+0301, y
is one token there, two here: a different definition, which would need a new version),
it is 4x slower on the novels, and ``import nltk`` takes ~1.1 s. For one fixed, linear
pattern the regex is the right tool; nltk is not a dependency (tests/scoring/test_scoring_units.py
cross-checks the tokens against nltk's tokenizer where nltk is installed).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

# [^\W\d_] is "a word character that is neither a digit nor '_'": a letter.
PATTERN = r"[^\W\d_]+(?:'[^\W\d_]+)*"

TOKENIZER_NAME = "re:nfkc-casefold-letters-apostrophe@2"
"""Goes into every signature: change the definition, change the name."""

# Text is matched in blocks cut at whitespace (a token never contains whitespace,
# so cutting there changes nothing), which bounds the memory of one findall.
BLOCK_CHARS = 1 << 18


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


# The flags nltk's RegexpTokenizer defaults to (the definition's history); they change nothing for PATTERN.
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
