"""The stylometric view: Cosine Delta against a reference fixed by the registered corpora.

docs/design.md §3 and §6b. The reference is built from the held-out text of the
author plus the background corpus of other authors, never from the arms'
generations: an arm must not move the ruler that measures the other arms.

- MFW: the `mfw` most frequent tokens of held-out + background (ties broken by
  the token itself, so the list is a function of the corpora alone).
- z-score mean and SAMPLE standard deviation (ddof=1) of each word's relative
  frequency over chunks of `chunk` tokens. Each file is cut on its own: full
  chunks only, the remainder dropped, except that a file shorter than one chunk
  is one chunk. Relative frequency is over all tokens of the chunk, not just MFW.
- A word whose sd is 0 over the chunks cannot be z-scored; its z is 0 (it
  carries no information about which text is which).
- d = 1 - cos(z(profile of G(a,s) pooled), z(profile of H)), H being all held-out
  files pooled.

The wide reference (the `stylometric-wide` view, `build_reference(..., wide=N)`): the `wide`
most frequent words once the personal pronouns (`PERSONAL_PRONOUNS`) are dropped, each
word's z multiplied by a weight (`Reference.weights`) so that the `mfw` most frequent of
them and the rest carry equal weight in the cosine: the first `mfw` words weigh
sqrt((n - mfw) / mfw) against 1 for the others (n the words kept; 2 for 1000 of 5000).
Pronouns mark a narrative's person and its protagonist's sex (a first-person novel against
a third-person one by the same hand), not its author; the rarer words add the author's
vocabulary, which tells an author's other writing from strangers' at short pools
(docs/validity.md), and the weight keeps the common words, where a voice's movement is, from
being drowned by them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from voicegate._errors import VoicegateError
from voicegate.scoring._docs import TokenDoc


@dataclass(frozen=True)
class Reference:
    words: tuple[str, ...]
    """The MFW list, most frequent first."""
    mean: np.ndarray
    sd: np.ndarray
    target: np.ndarray
    """z-scored profile of the held-out text H."""
    chunks: int
    weights: np.ndarray | None = None
    """Each word's weight on its z (None: every word 1, the plain reference); `target` is weighted already."""

    def index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.words)}


def _columns(doc: TokenDoc, index: dict[str, int]) -> np.ndarray:
    """MFW column of each vocabulary entry of `doc` (-1: not an MFW word)."""
    return np.fromiter((index.get(w, -1) for w in doc.vocab), dtype=np.int64, count=len(doc.vocab))


def chunk_counts(doc: TokenDoc, index: dict[str, int], chunk: int) -> tuple[np.ndarray, int]:
    """(chunks x MFW) MFW counts of one file cut into chunks, and the chunk size in tokens.

    Full chunks only, the remainder dropped; a file shorter than one chunk is one chunk.
    """
    n_words = len(index)
    total = len(doc)
    if total == 0:
        return np.zeros((0, n_words), dtype=np.int64), 0
    n_chunks, size = (total // chunk, chunk) if total >= chunk else (1, total)
    cols = _columns(doc, index)[doc.ids[: n_chunks * size]]
    chunk_no = np.arange(cols.shape[0]) // size
    keep = cols >= 0
    flat = np.bincount(chunk_no[keep] * n_words + cols[keep], minlength=n_chunks * n_words)
    return flat.reshape(n_chunks, n_words), size


def _chunk_frequencies(doc: TokenDoc, index: dict[str, int], chunk: int) -> np.ndarray:
    """(chunks x MFW) relative frequencies of one file cut into chunks."""
    counts, size = chunk_counts(doc, index, chunk)
    if size == 0:
        return np.zeros((0, len(index)))
    out: np.ndarray = counts / float(size)
    return out


def most_frequent(docs: Sequence[TokenDoc], n: int) -> tuple[str, ...]:
    totals: dict[str, int] = {}
    for doc in docs:
        for word, count in zip(doc.vocab, doc.counts().tolist(), strict=True):
            totals[word] = totals.get(word, 0) + count
    ranked = sorted(totals.items(), key=lambda wc: (-wc[1], wc[0]))
    return tuple(w for w, _ in ranked[:n])


# The personal pronouns the wide reference drops (`PRONOUNS_NAME` in its signature): every person, case and
# number, the archaic second person, and the contracted forms the tokenizer keeps whole.
PERSONAL_PRONOUNS = frozenset((
    "i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves", "you", "your", "yours", "yourself",
    "yourselves", "thou", "thee", "thy", "thine", "thyself", "ye", "he", "him", "his", "himself", "she", "her",
    "hers", "herself", "they", "them", "their", "theirs", "themselves", "i'm", "i've", "i'll", "i'd", "you're",
    "you've", "you'll", "you'd", "he's", "he'll", "he'd", "she's", "she'll", "she'd", "we're", "we've", "we'll",
    "we'd", "they're", "they've", "they'll", "they'd",
))
PRONOUNS_NAME = "personal-pronouns@1"


def wide_weights(n: int, mfw: int) -> np.ndarray:
    """The wide reference's weights: the first `mfw` of `n` words and the rest carry equal weight."""
    if n <= mfw:
        return np.ones(n)
    return np.where(np.arange(n) < mfw, float(np.sqrt((n - mfw) / mfw)), 1.0)


def build_reference(heldout: Sequence[TokenDoc], background: Sequence[TokenDoc], *,
                    mfw: int, chunk: int, wide: int = 0) -> Reference:
    """The plain reference (`wide` 0), or the wide one: `wide` words without the personal pronouns, the first
    `mfw` of them weighted to count as much as the rest (module docstring)."""
    if not background:
        # z-scored against the target alone, H sits at the origin and the cosine is noise.
        raise VoicegateError("the stylometric view needs a background corpus of other authors")
    docs = [*heldout, *background]
    if wide:
        words = tuple(w for w in most_frequent(docs, wide + len(PERSONAL_PRONOUNS))
                      if w not in PERSONAL_PRONOUNS)[:wide]
    else:
        words = most_frequent(docs, mfw)
    index = {w: i for i, w in enumerate(words)}
    freqs = np.vstack([_chunk_frequencies(d, index, chunk) for d in docs])
    if freqs.shape[0] < 2:
        raise VoicegateError(f"held-out + background give {freqs.shape[0]} chunk(s) of {chunk} tokens; "
                             "a standard deviation needs at least 2")
    mean = freqs.mean(axis=0)
    sd = freqs.std(axis=0, ddof=1)
    held = np.zeros(len(words))
    held_total = 0
    for d in heldout:
        held += word_counts(index, d)
        held_total += len(d)
    weights = wide_weights(len(words), mfw) if wide else None
    ref = Reference(words, mean, sd, np.zeros(len(words)), int(freqs.shape[0]), weights)
    return Reference(words, mean, sd, zscores(ref, held, held_total), ref.chunks, weights)


def word_counts(index: dict[str, int], doc: TokenDoc) -> np.ndarray:
    """Counts of each MFW word in `doc` (a vector over the reference's words)."""
    cols = _columns(doc, index)
    counts = doc.counts()
    keep = cols >= 0
    out = np.zeros(len(index))
    np.add.at(out, cols[keep], counts[keep])
    return out


def count_matrix(index: dict[str, int], vocab: Sequence[str], ids: Sequence[np.ndarray]) -> np.ndarray:
    """(texts x MFW) counts for texts given as id arrays over one shared `vocab`."""
    n_words = len(index)
    cols = np.fromiter((index.get(w, -1) for w in vocab), dtype=np.int64, count=len(vocab))
    if not ids:
        return np.zeros((0, n_words))
    flat = cols[np.concatenate(ids)] if len(vocab) else np.zeros(0, dtype=np.int64)
    row = np.repeat(np.arange(len(ids)), [len(i) for i in ids])
    keep = flat >= 0
    out = np.bincount(row[keep] * n_words + flat[keep], minlength=len(ids) * n_words)
    return out.reshape(len(ids), n_words).astype(float)


def zscores(ref: Reference, counts: np.ndarray, total: float | np.ndarray) -> np.ndarray:
    """z-scored relative frequencies; `counts` may be a matrix (one profile a row)."""
    total = np.asarray(total, dtype=float)
    freq = counts / np.where(total > 0, total, 1.0)[..., None] if counts.ndim > 1 else \
        counts / (float(total) if total > 0 else 1.0)
    safe = np.where(ref.sd > 0, ref.sd, 1.0)
    z: np.ndarray = np.where(ref.sd > 0, (freq - ref.mean) / safe, 0.0)
    return z if ref.weights is None else z * ref.weights


def cosine_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """1 - cos(a, b) along the last axis (a zero vector is at distance 1 from everything)."""
    num = (a * b).sum(axis=-1)
    den = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    out: np.ndarray = 1.0 - np.divide(num, den, out=np.zeros_like(num, dtype=float), where=den > 0)
    return out


def cosine_delta(ref: Reference, counts: np.ndarray, total: float | np.ndarray) -> np.ndarray | float:
    """Cosine Delta of pooled MFW counts (vector, or one profile a row) to H."""
    d = cosine_distance(zscores(ref, counts, total), ref.target)
    return float(d) if np.ndim(d) == 0 else d


def pooled_delta(ref: Reference, counts: np.ndarray, totals: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """d(w) for many weightings w of the same generations, without building each profile.

    counts: (P x MFW) per-generation MFW counts, totals: (P,) token counts. For
    weights W (B x P) the pooled profile is f = (W @ counts) / (W @ totals); its
    z-vector is z = (f - mean) / sd (0 where sd == 0), and
        z . zH  = (W @ (counts @ (zH/sd))) / T - sum(mean zH / sd)
        |z|^2   = rowsum((W @ G) * W) / T^2 - 2 (W @ (counts @ (mean/sd^2))) / T + sum(mean^2/sd^2)
    with G = counts diag(1/sd^2) counts^T, a P x P matrix: the bootstrap's
    thousand replicates cost a few small products instead of a thousand
    MFW-long profiles. Same value as `cosine_delta` up to rounding.
    """
    inv = np.divide(1.0, ref.sd, out=np.zeros_like(ref.sd), where=ref.sd > 0)
    if ref.weights is not None:
        inv = inv * ref.weights  # z = w (f - mean) / sd: the weight goes wherever 1/sd does
    a = counts @ (ref.target * inv)
    c1 = float(np.sum(ref.mean * ref.target * inv))
    g = (counts * inv ** 2) @ counts.T
    b = counts @ (ref.mean * inv ** 2)
    c2 = float(np.sum((ref.mean * inv) ** 2))
    target_norm = float(np.linalg.norm(ref.target))

    def d(w: np.ndarray) -> np.ndarray:
        t = w @ totals
        t = np.where(t > 0, t, 1.0)  # a pool of empty generations: profile 0, as in `zscores`
        dot = (w @ a) / t - c1
        sq = np.einsum("bp,bp->b", w @ g, w) / t ** 2 - 2 * (w @ b) / t + c2
        norm = np.sqrt(np.maximum(sq, 0.0)) * target_norm
        out: np.ndarray = 1.0 - np.divide(dot, norm, out=np.zeros_like(dot), where=norm > 0)
        return out

    return d
