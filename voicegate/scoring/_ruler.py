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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from voicegate.scoring._docs import TokenDoc
from voicegate.scoring._stylometric import Reference, chunk_counts, cosine_distance, zscores

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


POOL_WORDS = 10_000  # a gate's (arm, seed) pool: what a verdict's distance is measured on


@dataclass(frozen=True)
class PoolNumbers:
    """The ruler measured at a verdict's scale: pools of `POOL_WORDS` tokens, not chunks."""

    author_auc: float | None                  # training pools nearer H than background pools
    impostor_auc: dict[str, float | None]     # impostor -> training pools nearer H than that impostor's pools
    training_pools: int
    background_pools: int
    impostor_pools: dict[str, int]


def pool_check(ref: Reference, training: Sequence[TokenDoc], background: Sequence[TokenDoc],
               impostors: Mapping[str, Sequence[TokenDoc]], *, words: int = POOL_WORDS) -> PoolNumbers:
    """Does the ruler put the author's other writing nearer H than strangers' writing, at a pool's length?

    Each text is cut into consecutive pools of `words` tokens (a text shorter than one pool is one pool) and
    each pool's Cosine Delta to H is taken under the gate's reference: `author_auc` is the AUC that a training
    pool is nearer than a background pool, `impostor_auc` that it is nearer than a pool of that impostor's text.
    """
    index = ref.index()
    n = len(index)

    def dist(docs: Sequence[TokenDoc]) -> np.ndarray:
        return _distances(ref, Chunks.stack([chunk_counts(d, index, words) for d in docs], n))

    d_tr, d_bg = dist(training), dist(background)
    d_imp = {name: dist(docs) for name, docs in impostors.items()}
    return PoolNumbers(author_auc=auc_closer(d_tr, d_bg),
                       impostor_auc={name: auc_closer(d_tr, d) for name, d in d_imp.items()},
                       training_pools=int(d_tr.size), background_pools=int(d_bg.size),
                       impostor_pools={name: int(d.size) for name, d in d_imp.items()})
