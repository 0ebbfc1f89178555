"""The copying check: word n-gram overlap with the training text through a hashed index.

Every token gets a 64-bit hash (blake2b of its UTF-8 bytes, so the same token
hashes the same in every process and every corpus); an n-gram's hash is the
polynomial ``h = (...(t0*P + t1)*P + ...) + t(n-1)`` in wrapping uint64
arithmetic. The index is the sorted array of the training text's n-gram hashes
(n-grams never cross a file boundary) with, beside each, the global token
offset of that occurrence, so a hit can name its source. Lookups are one
``np.searchsorted`` over the sorted array. A false hit needs a 64-bit collision
(~ index size x queries / 2^64: nil at corpus scale).

Definitions (docs/design.md §3):
- overlap = hits / n-grams over all of an arm's generations (n-grams within one
  generation, counted with multiplicity);
- a verbatim run is a maximal stretch of consecutive positions of one
  generation whose every n-gram occurs in the training text; its length in
  tokens is (n-grams in the stretch) + n - 1. The spans reported are the
  longest runs, each with the file and token offset of its first n-gram's
  earliest occurrence in the training text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from voicegate.scoring._docs import TokenDoc

_P = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit multiplier (golden ratio); any odd constant works


def vocab_hashes(vocab: Sequence[str]) -> np.ndarray:
    raw = b"".join(hashlib.blake2b(w.encode("utf-8"), digest_size=8).digest() for w in vocab)
    return np.frombuffer(raw, dtype="<u8").astype(np.uint64)


def token_hashes(doc: TokenDoc) -> np.ndarray:
    return vocab_hashes(doc.vocab)[doc.ids] if len(doc) else np.zeros(0, dtype=np.uint64)


def ngram_hashes(tok: np.ndarray, n: int) -> np.ndarray:
    """Hash of every n-gram of a token-hash array (length len(tok) - n + 1, or 0)."""
    count = tok.shape[0] - n + 1
    if count <= 0:
        return np.zeros(0, dtype=np.uint64)
    h = tok[:count].copy()
    for k in range(1, n):
        h *= _P  # wraps mod 2^64 by design
        h += tok[k:k + count]
    return h


@dataclass(frozen=True)
class NgramIndex:
    n: int
    hashes: np.ndarray
    """Sorted n-gram hashes of the training text (duplicates kept)."""
    positions: np.ndarray
    """Global token offset of each occurrence, aligned with `hashes`."""
    starts: np.ndarray
    """Global token offset where each training file begins (plus the total at the end)."""

    def lookup(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(hit mask, global offset of the earliest occurrence or -1) for each query hash."""
        if self.hashes.shape[0] == 0 or queries.shape[0] == 0:
            return np.zeros(queries.shape[0], dtype=bool), np.full(queries.shape[0], -1, dtype=np.int64)
        # Sorted queries walk the index in order (cache-friendly); results go back to query order.
        order = np.argsort(queries, kind="stable")
        at = np.empty_like(order)
        at[order] = np.searchsorted(self.hashes, queries[order], side="left")
        clipped = np.minimum(at, self.hashes.shape[0] - 1)
        hit = self.hashes[clipped] == queries
        return hit, np.where(hit, self.positions[clipped], -1)

    def source(self, offset: int) -> tuple[int, int]:
        """(training file number, token offset inside that file) of a global offset."""
        f = int(np.searchsorted(self.starts, offset, side="right")) - 1
        return f, int(offset - self.starts[f])


def build_index(docs: Sequence[TokenDoc], n: int) -> NgramIndex:
    parts, offsets, starts = [], [], [0]
    for doc in docs:
        h = ngram_hashes(token_hashes(doc), n)
        parts.append(h)
        offsets.append(np.arange(h.shape[0], dtype=np.int64) + starts[-1])
        starts.append(starts[-1] + len(doc))
    hashes = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
    positions = np.concatenate(offsets) if offsets else np.zeros(0, dtype=np.int64)
    # Stable sort keeps, among equal hashes, the earliest occurrence first: lookups report it.
    order = np.argsort(hashes, kind="stable")
    return NgramIndex(n, hashes[order], positions[order], np.asarray(starts, dtype=np.int64))


@dataclass(frozen=True)
class Run:
    generation: int
    start: int
    length: int
    """In tokens."""
    source_offset: int
    """Global training offset of the first n-gram's earliest occurrence."""


def _runs(hit: np.ndarray, first: np.ndarray, n: int, generation: int) -> list[Run]:
    if not hit.any():
        return []
    padded = np.concatenate(([False], hit, [False])).astype(np.int8)
    edges = np.diff(padded)
    begins = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    return [Run(generation, int(b), int(e - b) + n - 1, int(first[b])) for b, e in zip(begins, ends, strict=True)]


@dataclass(frozen=True)
class CopyStats:
    ngrams: int
    hits: int
    longest_run: int
    runs: tuple[Run, ...]
    """The longest runs, longest first (ties: earliest generation, then position)."""

    @property
    def overlap(self) -> float:
        return self.hits / self.ngrams if self.ngrams else 0.0


def copy_stats(index: NgramIndex, generations: Sequence[np.ndarray], *, top: int = 5) -> CopyStats:
    """Overlap, hits and longest runs of generations given as token-hash arrays (`token_hashes`)."""
    n = index.n
    grams = [ngram_hashes(t, n) for t in generations]
    bounds = np.cumsum([0] + [g.shape[0] for g in grams])
    hit, first = index.lookup(np.concatenate(grams) if grams else np.zeros(0, dtype=np.uint64))
    runs: list[Run] = []
    for g in range(len(grams)):
        lo, hi = bounds[g], bounds[g + 1]
        runs += _runs(hit[lo:hi], first[lo:hi], n, g)
    runs.sort(key=lambda r: (-r.length, r.generation, r.start))
    return CopyStats(int(bounds[-1]), int(hit.sum()), runs[0].length if runs else 0, tuple(runs[:top]))


def copying_verdict(overlap: float, control: float, longest_run: int, *, tolerance: float, max_run: int) -> str:
    """NOT-COPIED iff overlap <= control + tolerance AND no verbatim run reaches max_run tokens."""
    ok = round(overlap, 12) <= round(control + tolerance, 12) and longest_run < max_run
    return "NOT-COPIED" if ok else "COPIED"
