"""The ruler check: can the registered stylometric reference tell this author at all?

Computed from the registered corpora alone, before (and independent of) any generation,
so a reviewer can tell "no voice" from "a ruler that cannot see this author". Arrays in,
numbers out: per-chunk MFW counts of the held-out, background and training texts (cut
into the registered chunk size, as the reference itself is), and the reference.

Two AUCs, each the probability that a chunk of the "near" set is closer to the held-out
profile H than a chunk of the background (Cosine Delta under the registered reference;
ties count half; 0.5 is a ruler that sees nothing, 1.0 a perfect one):

- ``heldout_auc`` — held-out chunks (each against H with that chunk left out) versus
  background chunks: does the ruler tell the held-out TEXT from the background?
- ``author_auc`` — chunks of the training text (the author's other writing: what a
  voice that learned the author would look like) versus background chunks: does the
  ruler credit the AUTHOR, not just the one held-out novel? A chunk-level test on the
  held-out novel alone cannot answer that: its own names and topics separate it from
  anything (measured: held-out-vs-background AUC 0.997 for *Villette* against
  Charlotte Brontë's own *Jane Eyre* + *The Professor*). When the background is the
  author's own other text, or the training text is another author's, ``author_auc``
  falls to ≈ 0.5.

``ok`` is both AUCs at or above ``RULER_MIN_AUC`` (0.8). Why 0.8: measured on the
british-fiction corpora (1000 MFW, 2,500-token chunks), a background of ten other
authors gives 0.99–1.00 on both; a broken ruler (background = the author's own training
novels, or an Austen training text against held-out Brontë) gives 0.50–0.54. 0.8 sits
far from both, and a ruler that ranks one chunk pair in five the wrong way round cannot
support delta_cb verdicts whose floors are a few hundredths of a distance.

The pool check (`pool_check`, method ``POOL_METHOD``; decides for gates registered since the
``ruler-weak`` check) measures what a verdict needs, at the length a verdict measures: the
author's other writing (the training text) and strangers' text are cut into pools of
``POOL_WORDS`` tokens, and the AUC is taken that a training pool is nearer H than a background
pool is (``author_auc``: would a voice that learned the author move toward H at all?) and than
a pool of each impostor's text is (``impostor_auc``: can the author be told from that impostor?).
Under ``POOL_MIN_AUC`` the gate's VOICE (or its specificity, naming the impostor) is RULER-WEAK.
Why 0.8, measured by benchmarks/bench_ruler.py (british-fiction, leave one novel out, 420
(case, other author) pairs): where the pool check against an author is at least 0.8, an own
pool is nearer H than that author's pool in at least 0.87 of draws at 1,000-word pools and 0.95
at 10,000 (mean 0.93-1.00); under 0.8, in 0.36-0.86 (Adam Bede against Wuthering Heights: pool
check 0.41, own pool nearer in 0.46 of draws). Counting a pair as blind when its own pool is nearer in
under 0.9 of draws, 0.8 abstains falsely on 1 of 419 pairs at 10,000-word pools and 0 of 414 at 2,000, and
decides none of the blind ones (1 and 6); 0.75 misses blind pairs, 0.85 abstains falsely at every length
(docs/validity.md). With fewer than ``POOL_MIN`` pools on a side the AUC is not taken: two or three
comparisons say nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from voicegate.scoring._docs import TokenDoc
from voicegate.scoring._stylometric import Reference, chunk_counts, cosine_distance, word_counts, zscores

RULER_METHOD = "chunk-auc-to-heldout@1"
RULER_MIN_AUC = 0.8


@dataclass(frozen=True)
class Chunks:
    """MFW counts of a corpus cut into chunks: one row a chunk, and each chunk's size in tokens."""

    counts: np.ndarray
    sizes: np.ndarray

    @staticmethod
    def stack(parts: Sequence[tuple[np.ndarray, int]], n_words: int) -> Chunks:
        rows = [c for c, _ in parts if c.shape[0]]
        sizes = [np.full(c.shape[0], float(s)) for c, s in parts if c.shape[0]]
        if not rows:
            return Chunks(np.zeros((0, n_words)), np.zeros(0))
        return Chunks(np.vstack(rows).astype(float), np.concatenate(sizes))

    def __len__(self) -> int:
        return int(self.counts.shape[0])


@dataclass(frozen=True)
class RulerNumbers:
    heldout_auc: float | None
    author_auc: float | None
    heldout_chunks: int
    background_chunks: int
    training_chunks: int

    @property
    def ok(self) -> bool:
        return all(a is None or a >= RULER_MIN_AUC for a in (self.heldout_auc, self.author_auc))


def auc_closer(near: np.ndarray, far: np.ndarray) -> float | None:
    """P(a near distance < a far distance), ties counted half (Mann-Whitney); None if a side is empty."""
    if near.size == 0 or far.size == 0:
        return None
    srt = np.sort(far)
    above = far.size - np.searchsorted(srt, near, side="right")   # far strictly larger
    ties = np.searchsorted(srt, near, side="right") - np.searchsorted(srt, near, side="left")
    return float((above.sum() + 0.5 * ties.sum()) / (near.size * far.size))


def _distances(ref: Reference, chunks: Chunks) -> np.ndarray:
    if not len(chunks):
        return np.zeros(0)
    d: np.ndarray = cosine_distance(zscores(ref, chunks.counts, chunks.sizes), ref.target)
    return d


def ruler_check(ref: Reference, heldout: Chunks, heldout_counts: np.ndarray, heldout_total: float,
                background: Chunks, training: Chunks) -> RulerNumbers:
    """Both AUCs of the ruler (see the module docstring).

    `heldout_counts` / `heldout_total`: MFW counts and token count of all held-out text pooled
    (the profile H is made of); each held-out chunk is compared with H minus itself.
    """
    d_bg = _distances(ref, background)
    d_tr = _distances(ref, training)
    d_held = np.zeros(0)
    if len(heldout):
        rest = heldout_counts[None, :] - heldout.counts
        rest_total = heldout_total - heldout.sizes
        if np.all(rest_total > 0):
            z_rest = zscores(ref, rest, rest_total)
            d_held = cosine_distance(zscores(ref, heldout.counts, heldout.sizes), z_rest)
    return RulerNumbers(heldout_auc=auc_closer(d_held, d_bg), author_auc=auc_closer(d_tr, d_bg),
                        heldout_chunks=len(heldout), background_chunks=len(background),
                        training_chunks=len(training))


POOL_METHOD = "pool-auc-to-heldout@1"
POOL_WORDS = 10_000  # a gate's reliable (arm, seed) pool: what a verdict's distance is measured on
POOL_MIN_AUC = 0.8
POOL_MIN = 3         # pools a side needs for its AUC to be taken


@dataclass(frozen=True)
class PoolNumbers:
    """The ruler measured at a verdict's scale: pools of `POOL_WORDS` tokens, not chunks."""

    author_auc: float | None                  # training pools nearer H than background pools
    impostor_auc: dict[str, float | None]     # impostor -> training pools nearer H than that impostor's pools
    training_pools: int
    background_pools: int
    impostor_pools: dict[str, int]

    @property
    def weak_author(self) -> bool:
        """The author's other writing is not told from strangers' at a pool's length: VOICE cannot decide."""
        return self.author_auc is not None and self.author_auc < POOL_MIN_AUC

    @property
    def weak_impostors(self) -> tuple[str, ...]:
        """The impostors the ruler cannot tell from the author at a pool's length, in the given order."""
        return tuple(n for n, auc in self.impostor_auc.items() if auc is not None and auc < POOL_MIN_AUC)


def pool_check(ref: Reference, heldout: Sequence[TokenDoc], training: Sequence[TokenDoc],
               background: Sequence[TokenDoc], impostors: Mapping[str, Sequence[TokenDoc]], *, chunk: int,
               words: int = POOL_WORDS, minimum: int = POOL_MIN) -> PoolNumbers:
    """Does the ruler put the author's other writing nearer H than strangers' writing, at a pool's length?

    Each text is cut into consecutive pools of `words` tokens (a text shorter than one pool is one pool) and
    each pool's Cosine Delta to H is taken: `author_auc` is the AUC that a training pool is nearer than a
    background pool, `impostor_auc` that it is nearer than a pool of that impostor's text (None where a side has
    fewer than `minimum` pools).

    The reference is fitted to its background, so a background pool sits in the means and deviations it is
    measured with, and reads farther from H than unseen text would. Each background pool is measured with its
    own chunks replaced, in those means and deviations, by the mean of the other background chunks (`heldout`
    and `chunk` are what the reference was built from), which takes the pool's own noise out of them. What is
    left is H's profile itself, which leans away from the background's sampling error: unseen text still reads
    a little nearer H than background text. Large for a tiny background (a training text written exactly like
    a 40,000-word one-file background scores 0.7-1.0 across seeds: the check then errs toward deciding), small
    for a background of novels (on british-fiction the correction moved the author AUC by at most 0.004).
    """
    index = ref.index()
    n = len(index)

    def freqs(doc: TokenDoc) -> np.ndarray:
        counts, size = chunk_counts(doc, index, chunk)
        out: np.ndarray = counts / float(size) if size else np.zeros((0, n))
        return out

    def pools(docs: Sequence[TokenDoc]) -> Chunks:
        return Chunks.stack([chunk_counts(d, index, words) for d in docs], n)

    held = sum((word_counts(index, d) for d in heldout), np.zeros(n))
    held_total = float(sum(len(d) for d in heldout))
    own = [freqs(d) for d in background]
    every = np.vstack([*(freqs(d) for d in heldout), *own]) if heldout or own else np.zeros((0, n))
    s1, s2, total = every.sum(axis=0), (every ** 2).sum(axis=0), every.shape[0]
    bg = np.vstack(own) if own else np.zeros((0, n))
    b1, b2, n_bg = bg.sum(axis=0), (bg ** 2).sum(axis=0), bg.shape[0]

    def unseen(doc: TokenDoc, f: np.ndarray) -> np.ndarray:
        """The distances of `doc`'s pools, each under the reference with the chunks inside it replaced by the
        mean of the other background chunks (the held-out text keeps its weight in the means)."""
        counts, size = chunk_counts(doc, index, words)
        out = np.zeros(counts.shape[0])
        for k in range(counts.shape[0]):
            inside = f if len(doc) < words else f[-(-k * words // chunk):((k + 1) * words) // chunk]
            rest = n_bg - inside.shape[0]
            if rest < 1 or total < 2:
                out[k] = float(_distances(ref, Chunks(counts[k:k + 1].astype(float), np.array([float(size)])))[0])
                continue
            m1 = (b1 - inside.sum(axis=0)) / rest
            m2 = (b2 - (inside ** 2).sum(axis=0)) / rest
            t1 = s1 - inside.sum(axis=0) + inside.shape[0] * m1
            t2 = s2 - (inside ** 2).sum(axis=0) + inside.shape[0] * m2
            mean = t1 / total
            sd = np.sqrt(np.maximum((t2 - total * mean ** 2) / (total - 1), 0.0))
            loo = Reference(ref.words, mean, sd, np.zeros(n), total, ref.weights)
            out[k] = float(cosine_distance(zscores(loo, counts[k].astype(float), float(size)),
                                           zscores(loo, held, held_total)))
        return out

    def auc(near: np.ndarray, far: np.ndarray) -> float | None:
        return auc_closer(near, far) if min(near.size, far.size) >= minimum else None

    d_tr = _distances(ref, pools(training))
    d_bg = np.concatenate([unseen(d, f) for d, f in zip(background, own, strict=True)]) if background else np.zeros(0)
    d_imp = {name: _distances(ref, pools(docs)) for name, docs in impostors.items()}
    return PoolNumbers(author_auc=auc(d_tr, d_bg),
                       impostor_auc={name: auc(d_tr, d) for name, d in d_imp.items()},
                       training_pools=int(d_tr.size), background_pools=int(d_bg.size),
                       impostor_pools={name: int(d.size) for name, d in d_imp.items()})
