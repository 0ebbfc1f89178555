"""Find a result's copied spans inside a generation's text, for highlighting.

The scorer reports each copied span as token text (NFKC, case-folded word
tokens, docs/design.md §6b) plus where it occurs in the training text. To mark it in
the generation as written, we tokenise the generation the same way but keep
each token's character offsets, find the span's token sequence, and cut the
original text at those offsets. The pieces stay plain strings: the template
escapes them, so a generation can never become markup.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from voicegate.scoring import Span

# The most of one generation a sample box shows (and the report tokenizes): a 50 MB generation once made
# `report` take 21 s and 2.3 GB and wrote it all into the page.
SHOWN_CHARS = 20_000

# A run of letters with internal apostrophes kept ("don't", "o'er"); digits and punctuation dropped.
_TOKEN = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)*")


def _norm(token: str) -> str:
    return unicodedata.normalize("NFKC", token).casefold().replace("\u2019", "'")


def tokens_with_offsets(text: str) -> list[tuple[str, int, int]]:
    return [(_norm(m.group()), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def shown(text: str) -> str:
    """The part of a generation the report shows and searches: its first `SHOWN_CHARS` characters."""
    return text[:SHOWN_CHARS]


def word_count(text: str) -> int:
    """Whitespace-separated words, counted without building the list (a generation may be huge)."""
    return sum(1 for _ in re.finditer(r"\S+", text))


def span_tokens(span: Span) -> tuple[list[str], int]:
    """(the tokens to search for, how many tokens the span covers).

    The scorer shortens a long span's text with a trailing "…"; its last word may
    then be cut, so it is not searched for, and the highlight is extended to the
    span's full token count instead.
    """
    text = span.text.rstrip()
    words = [t for t, _, _ in tokens_with_offsets(text)]
    truncated = text.endswith(("…", "..."))
    if truncated and len(words) > 1:
        words = words[:-1]
    try:
        length = int(span.tokens or 0)
    except (TypeError, ValueError):
        length = 0
    return words, max(len(words), length if truncated else len(words))


@dataclass(frozen=True)
class Segment:
    """A piece of a generation; `span` is the index of the listed copied span it belongs to, or None.

    `run` is a copied piece that no listed span covers: part of a verbatim run the report
    found against the training text itself (`_copied`).
    """

    text: str
    span: int | None = None
    run: bool = False

    @property
    def copied(self) -> bool:
        return self.span is not None or self.run


def _find(seq: Sequence[str], sub: Sequence[str]) -> list[int]:
    if not sub or len(sub) > len(seq):
        return []
    first, n = sub[0], len(sub)
    return [i for i in range(len(seq) - n + 1) if seq[i] == first and list(seq[i:i + n]) == list(sub)]


def segments(text: str, spans: Sequence[Span], runs: Sequence[tuple[int, int]] = ()) -> list[Segment]:
    """Cut `text` into plain and highlighted pieces; overlapping matches merge into the first span.

    `runs` are character ranges of verbatim runs: what no listed span covers is a `run` piece.
    """
    toks = tokens_with_offsets(text)
    words = [t for t, _, _ in toks]
    marks: list[tuple[int, int, int]] = []  # (char start, char end, span index)
    for idx, span in enumerate(spans):
        sub, length = span_tokens(span)
        for i in _find(words, sub):
            last = min(i + length, len(toks)) - 1
            marks.append((toks[i][1], toks[last][2], idx))
    marks.sort()
    merged: list[tuple[int, int, int]] = []
    for start, end, idx in marks:
        if merged and start <= merged[-1][1]:
            s0, e0, i0 = merged[-1]
            merged[-1] = (s0, max(e0, end), i0)
        else:
            merged.append((start, end, idx))
    # The parts of each run outside every listed span's mark: (start, end, -1).
    pieces: list[tuple[int, int, int]] = list(merged)
    for r0, r1 in sorted(runs):
        pos = r0
        for start, end, _ in merged:
            if end <= pos or start >= r1:
                continue
            if start > pos:
                pieces.append((pos, start, -1))
            pos = max(pos, end)
        if pos < r1:
            pieces.append((pos, r1, -1))
    pieces.sort()
    out: list[Segment] = []
    pos = 0
    for start, end, idx in pieces:
        start = max(start, pos)
        if end <= start:
            continue
        if start > pos:
            out.append(Segment(text[pos:start]))
        out.append(Segment(text[start:end], idx) if idx >= 0 else Segment(text[start:end], run=True))
        pos = end
    if pos < len(text) or not out:
        out.append(Segment(text[pos:]))
    return out


def contains_span(text: str, spans: Sequence[Span]) -> bool:
    """Whether a listed span shows in the part of `text` the report shows."""
    return any(s.span is not None for s in segments(shown(text), spans))
