"""Every verbatim run in the stored generations, found against the training text, for highlighting.

A result lists only an arm's longest copied spans (the scorer keeps a few). A sample
box that highlighted only those would show an unmarked 80-token copy whenever the arm
copied more often than that, under a caption that says copied text is highlighted. So
the report finds every run itself, with the scorer's own definition (docs/design.md §3): a
maximal stretch of a generation whose every word n-gram occurs in the training text,
of n tokens or more. It uses the scorer's n-gram index (from the gate's cache when the
score left one there; it is derived data, rebuilt from the training text otherwise) and
the report's tokenizer with character offsets, so a run is cut out of the text as
written.

When the training text is not at hand the runs are unknown (None), and the page says
that only the listed spans are marked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from voicegate.report._spans import shown, tokens_with_offsets
from voicegate.run import RowKey, row_key
from voicegate.scoring import NgramIndex, ngram_hashes, vocab_hashes

Runs = tuple[tuple[int, int], ...]
"""(character start, character end) of each verbatim run in one generation's text."""


def runs_in_text(text: str, index: NgramIndex) -> Runs:
    n = index.n
    toks = tokens_with_offsets(text)
    if n < 1 or len(toks) < n:
        return ()
    words = [t for t, _, _ in toks]
    vocab = list(dict.fromkeys(words))
    at = {w: i for i, w in enumerate(vocab)}
    hashes = vocab_hashes(vocab)[np.fromiter((at[w] for w in words), dtype=np.int64, count=len(words))]
    hit, _ = index.lookup(ngram_hashes(hashes, n))
    if not hit.any():
        return ()
    edges = np.diff(np.concatenate(([0], hit.astype(np.int8), [0])))
    begins, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    # n-grams b .. e-1 hit: the run covers tokens b .. e-1+n-1.
    return tuple((toks[int(b)][1], toks[int(e) + n - 2][2]) for b, e in zip(begins, ends, strict=True))


def verbatim_runs(rows: Sequence[Mapping[str, Any]], training: Sequence[Path], n: int,
                  cache_dir: Path | None) -> dict[RowKey, Runs] | None:
    """Runs per voice generation (`run.row_key`), or None when the training text cannot be read."""
    from voicegate.scoring import Cache

    if not training:
        return None
    try:
        index = Cache(cache_dir, write=False).index(list(training), n=n)
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    out: dict[RowKey, Runs] = {}
    for row in rows:
        if row.get("kind", "voice") != "voice":
            continue
        runs = runs_in_text(shown(str(row.get("text", ""))), index)  # only what a sample box can show
        if runs:
            out[row_key(row)] = runs
    return out
