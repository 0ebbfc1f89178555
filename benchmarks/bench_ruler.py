"""Benchmark: can the stylometric ruler tell an author's other novel from strangers? (leave one novel out)

On `../shared/corpora/british-fiction`, every novel of an author with two or three novels is held out in
turn (the gate's held-out text H); each other novel O of that author is the "author's other writing"
(what a voice that learned the author would read like). The ruler is today's view: Cosine Delta over the
`--mfw` most frequent words of H plus a background of every OTHER author, z-scored over `--chunk`-token
chunks. The background holds the FIRST half of each other author's novel; strangers' excerpts come from
the SECOND halves, so no excerpt is text the ruler was built on (a gate's generations are not background
text either).

A draw takes three 10,000-word pools (as a gate's (arm, seed) pool: 40 excerpts of 250 words at random
places): one from O, one from a mix of the other authors (each excerpt an author drawn at random, then one
of that author's novels), and one from a third author (drawn at random among the others). The draw is
right when the pool of O is nearer H than both strangers' pools are. Per-draw accuracy is the share of
right draws over every case (each case the same number of draws, so each counts equally). The same
`--seed` gives the same excerpts, whatever rulers are measured, so candidates are compared draw for draw.

Beside each case the ruler checks a gate can compute from its registered corpora alone (no generations)
are printed: today's chunk AUC (`author_auc`: training chunks vs background chunks toward H) and the
pool-level checks (`voicegate.scoring._ruler.pool_check`): the AUC that a 10,000-word pool of the training
text is nearer H than a pool of the background is, and the same against each other author's text as an
impostor (the lowest of those is printed). `--threshold` says what abstaining below a check's value does to
the accuracy (c@1, counting an abstention as PAN's c@1 does).

Harder shapes, to tell rulers apart where today's is at its ceiling: `--pool 1000 2000` (shorter pools; a table
each), the column "own nearer than a third author" (one stranger instead of a mix), and `--shape rest` (H every
other novel of the author together, O the one left out). Candidates (`--ruler`): MFW counts and culling through
the product's own reference (options: `cull=S`, `nopron`, `top=K:w=W`, `clip=C`, `root`), `wide:N` (the
stylometric-wide view, through the product's reference), character n-grams of the words (`charN:SIZE`, each word
padded with a space, the SIZE most frequent n-grams of H plus the background, z-scored over the same chunks) and
views combined (`+`: the mean of the parts' Cosine Delta). Every accuracy carries a 95% interval over cases (the
cases resampled: a case's draws share its novels) and, from the second ruler on, the paired difference from the
first on the same draws.
`--pairs` adds, per threshold, the false abstentions and missed blind pairs of the pool check (`--tellable`: the
share of draws below which a pair counts as one the ruler cannot tell apart).

    python benchmarks/bench_ruler.py [--draws 200] [--seed 0] [--pool 10000 ...] [--shape pair|rest]
                                     [--mfw 1000 ...] [--cull ...] [--ruler SPEC ...] [--chunk 2500] [--per-case]
                                     [--pairs [--tellable 0.9]] [--threshold ...] [--corpus DIR] [--cache DIR]
"""

from __future__ import annotations

import argparse
import itertools
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import sparse

from voicegate.scoring import Cache, TokenDoc
from voicegate.scoring._ruler import Chunks, pool_check, ruler_check
from voicegate.scoring._stylometric import (
    PERSONAL_PRONOUNS,
    Reference,
    build_reference,
    chunk_counts,
    cosine_distance,
    word_counts,
    zscores,
)
from voicegate.spec import WIDE_FACTOR

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent.parent / "shared" / "corpora" / "british-fiction"
EXCERPT = 250
PRONOUNS = PERSONAL_PRONOUNS


@dataclass(frozen=True)
class Novel:
    author: str
    title: str
    doc: TokenDoc
    gids: np.ndarray    # token ids over the corpus's one vocabulary
    offset: int         # where its tokens start in the concatenation of every novel

    @property
    def half(self) -> int:
        return len(self.doc) // 2

    def first_half(self) -> TokenDoc:
        return TokenDoc(self.doc.vocab, self.doc.ids[: self.half])

    def second_half(self) -> TokenDoc:
        return TokenDoc(self.doc.vocab, self.doc.ids[self.half:])


@dataclass(frozen=True)
class Case:
    author: str
    heldout: tuple[int, ...]   # the novels H is made of
    other: int                 # index of O


def load(corpus: Path, cache_dir: Path) -> tuple[list[Novel], tuple[str, ...], np.ndarray]:
    paths = sorted(p for p in corpus.glob("*_*.txt"))
    cache = Cache(cache_dir)
    cache.prefetch_docs(paths)
    vocab: dict[str, int] = {}
    novels: list[Novel] = []
    offset = 0
    for p in paths:
        doc = cache.doc(p)
        local = np.fromiter((vocab.setdefault(w, len(vocab)) for w in doc.vocab), dtype=np.int64,
                            count=len(doc.vocab))
        gids = local[doc.ids]
        author, title = p.stem.split("_", 1)
        novels.append(Novel(author, title, doc, gids, offset))
        offset += len(gids)
    words = tuple(vocab)
    return novels, words, np.concatenate([n.gids for n in novels])


def cases_of(novels: Sequence[Novel], shape: str = "pair") -> list[Case]:
    """`pair`: H one novel, O another of the same author (a gate's held-out novel and its training novel).
    `rest`: O each novel in turn, H every other novel of its author together (for a two-novel author the
    pair case again)."""
    by_author: dict[str, list[int]] = {}
    for i, n in enumerate(novels):
        by_author.setdefault(n.author, []).append(i)
    if shape == "rest":
        return [Case(a, tuple(h for h in ids if h != o), o) for a, ids in by_author.items() if len(ids) >= 2
                for o in ids]
    return [Case(a, (h,), o) for a, ids in by_author.items() if len(ids) >= 2 for h in ids for o in ids if o != h]


@dataclass(frozen=True)
class Draws:
    """Absolute start positions (in the concatenation) of every excerpt: draws x 40 per pool kind."""

    own: np.ndarray
    mix: np.ndarray
    third: np.ndarray
    third_author: np.ndarray   # index into the case's other authors, one per draw


def draw(case: Case, novels: Sequence[Novel], others: list[list[int]], draws: int, seed: int, no: int,
         per: int) -> Draws:
    rng = np.random.default_rng([seed, no])
    o = novels[case.other]
    own = o.offset + rng.integers(0, len(o.gids) - EXCERPT, size=(draws, per))

    def second_half(idx: np.ndarray) -> np.ndarray:
        lo = np.array([novels[i].half for i in range(len(novels))])[idx]
        hi = np.array([len(novels[i].gids) - EXCERPT for i in range(len(novels))])[idx]
        off = np.array([novels[i].offset for i in range(len(novels))])[idx]
        return off + lo + (rng.random(idx.shape) * (hi - lo)).astype(np.int64)

    def novel_of(author: np.ndarray) -> np.ndarray:
        pick = rng.random(author.shape)
        return np.array([others[a][int(p * len(others[a]))] for a, p in zip(author.ravel(), pick.ravel(),
                                                                               strict=True)]).reshape(author.shape)

    mix = second_half(novel_of(rng.integers(0, len(others), size=(draws, per))))
    third_author = rng.integers(0, len(others), size=draws)
    third = second_half(novel_of(np.repeat(third_author[:, None], per, axis=1)))
    return Draws(own, mix, third, third_author)


class Ruler:
    """One way of measuring d(pool, H): today's Cosine Delta at `mfw` (the product's own reference), or a
    candidate. `prepare` builds the ruler of one case; what it returns measures pools given as excerpt starts."""

    def __init__(self, mfw: int, chunk: int, *, cull: float = 0.0, clip: float = 0.0, root: bool = False,
                 nopron: bool = False, top: int = 0, weight: float = 1.0, wide: int = 0) -> None:
        self.mfw, self.chunk, self.cull, self.clip, self.root, self.nopron = mfw, chunk, cull, clip, root, nopron
        self.top, self.weight, self.wide = top, weight, wide
        self._refs: dict[tuple[tuple[int, bytes], ...], Reference] = {}

    @property
    def name(self) -> str:
        if self.wide:
            return f"stylometric-wide ({self.mfw} / {self.wide} words)"
        return (f"{self.mfw} MFW" + (", no personal pronouns" if self.nopron else "")
                + (f", the first {self.top} weighted {self.weight:g}" if self.top else "")
                + (f", culled at {self.cull:.0%}" if self.cull else "")
                + (", square-root frequencies" if self.root else "")
                + (f", z clipped at ±{self.clip:g}" if self.clip else ""))

    def z(self, ref: Reference, counts: np.ndarray, totals: np.ndarray) -> np.ndarray:
        """z-profiles of counts (one a row) under this ruler's transform and clipping."""
        freq = counts / np.where(totals > 0, totals, 1.0)[:, None]
        if self.root:
            freq = np.sqrt(freq)
        safe = np.where(ref.sd > 0, ref.sd, 1.0)
        out: np.ndarray = np.where(ref.sd > 0, (freq - ref.mean) / safe, 0.0)
        return np.clip(out, -self.clip, self.clip) if self.clip else out

    def distance(self, ref: Reference, counts: np.ndarray, totals: np.ndarray) -> np.ndarray:
        if not (self.clip or self.root):
            d: np.ndarray = cosine_distance(zscores(ref, counts, totals), ref.target)
            return d
        return cosine_distance(self.z(ref, counts, totals), ref.target)

    def reference(self, target: Sequence[TokenDoc], background: Sequence[TokenDoc]) -> Reference:
        key = tuple((len(d), d.ids[:16].tobytes()) for d in (*target, *background))
        if key not in self._refs:
            self._refs[key] = self._build(target, background)
        return self._refs[key]

    def _build(self, target: Sequence[TokenDoc], background: Sequence[TokenDoc]) -> Reference:
        ref = self._build_plain(target, background)
        if not self.top:
            return ref
        # The `top` most frequent words weighted `weight` times the rest: a weight on a word's z is its sd divided
        w = np.where(np.arange(len(ref.words)) < self.top, self.weight, 1.0)
        return Reference(ref.words, ref.mean, ref.sd / w, ref.target * w, ref.chunks)

    def _build_plain(self, target: Sequence[TokenDoc], background: Sequence[TokenDoc]) -> Reference:
        if self.wide:
            return build_reference(target, background, mfw=self.mfw, chunk=self.chunk, wide=self.wide)
        if self.nopron:
            ref = build_reference(target, background, mfw=self.mfw + len(PRONOUNS), chunk=self.chunk)
            keep = np.flatnonzero([w not in PRONOUNS for w in ref.words])[: self.mfw]
            ref = Reference(tuple(ref.words[i] for i in keep), ref.mean[keep], ref.sd[keep], ref.target[keep],
                            ref.chunks)
        else:
            ref = build_reference(target, background, mfw=self.mfw, chunk=self.chunk)
        if self.clip or self.root:
            return self._transformed(self._culled(ref, target, background), target, background)
        return self._culled(ref, target, background)

    def _culled(self, ref: Reference, target: Sequence[TokenDoc], background: Sequence[TokenDoc]) -> Reference:
        if not self.cull:
            return ref
        # Culling (Hoover 2004): keep only words present in at least `cull` of the texts (each document a text).
        index = ref.index()
        present = np.mean([word_counts(index, d) > 0 for d in (*target, *background)], axis=0)
        keep = present >= self.cull
        return Reference(tuple(w for w, k in zip(ref.words, keep, strict=True) if k), ref.mean[keep], ref.sd[keep],
                         ref.target[keep], ref.chunks)

    def _transformed(self, ref: Reference, target: Sequence[TokenDoc], background: Sequence[TokenDoc]) -> Reference:
        """The reference's mean and sd over the chunks' square-root frequencies, and H's profile under `z`."""
        index = ref.index()
        n = len(index)
        freqs = []
        for d in (*target, *background):
            counts, size = chunk_counts(d, index, self.chunk)
            if size:
                freqs.append(counts / float(size))
        f = np.vstack(freqs)
        if self.root:
            f = np.sqrt(f)
        mean, sd = f.mean(axis=0), f.std(axis=0, ddof=1)
        held = sum((word_counts(index, d) for d in target), np.zeros(n))
        base = Reference(ref.words, mean, sd, np.zeros(n), ref.chunks)
        total = np.array([float(sum(len(d) for d in target))])
        return Reference(ref.words, mean, sd, self.z(base, held[None, :], total)[0], ref.chunks)

    def prepare(self, corpus: Corpus, target: Sequence[Novel], background: Sequence[Novel]) -> Measure:
        ref = self.reference([t.doc for t in target], [b.first_half() for b in background])
        return lambda starts, words: self.distance(ref, pool_counts(ref, corpus.words, corpus.tokens, starts),
                                                   np.full(starts.shape[0], float(words)))


Measure = Callable[[np.ndarray, int], np.ndarray]   # excerpt starts (pools x excerpts), words a pool -> d(pool, H)


@dataclass
class Corpus:
    """Every novel's tokens over one vocabulary, and what the feature rulers derive from it (built once)."""

    words: tuple[str, ...]
    tokens: np.ndarray
    _grams: dict[int, tuple[sparse.csr_matrix, np.ndarray, np.ndarray]] = field(default_factory=dict)

    def grams(self, n: int) -> tuple[sparse.csr_matrix, np.ndarray, np.ndarray]:
        """(vocabulary x n-grams) counts of each word's character n-grams, the word padded with a space each side
        (so prefixes and suffixes are their own n-grams; tokens hold no punctuation to span), each word's number
        of n-grams, and each n-gram's rank in sorted order (ties in frequency are broken by the n-gram itself)."""
        if n not in self._grams:
            index: dict[str, int] = {}
            rows: list[int] = []
            cols: list[int] = []
            for r, w in enumerate(self.words):
                padded = f" {w} "
                for k in range(len(padded) - n + 1):
                    rows.append(r)
                    cols.append(index.setdefault(padded[k:k + n], len(index)))
            m = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(self.words), len(index)))
            per_word = np.asarray(m.sum(axis=1)).ravel()
            order = np.argsort(np.array(list(index), dtype=object), kind="stable")
            rank = np.empty(len(index), dtype=np.int64)
            rank[order] = np.arange(len(index))
            self._grams[n] = (m, per_word, rank)
        return self._grams[n]


def _rows_matrix(rows: Sequence[np.ndarray], vocab: int) -> sparse.csr_matrix:
    """(rows x vocabulary) token counts, one row per id array."""
    lengths = np.array([len(r) for r in rows])
    row = np.repeat(np.arange(len(rows)), lengths)
    ids = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    return sparse.csr_matrix((np.ones(len(ids)), (row, ids)), shape=(len(rows), vocab))


class Features:
    """A candidate ruler measured like today's: Cosine Delta over the `size` most frequent features of H plus the
    background, relative frequencies z-scored over `chunk`-token chunks, but the features are the words'
    character n-grams (`kind` "char", n = `n`) or the words themselves (`kind` "words", today's features through
    this code path: the check that the path is today's ruler)."""

    def __init__(self, kind: str, n: int, size: int, chunk: int) -> None:
        self.kind, self.n, self.size, self.chunk = kind, n, size, chunk

    @property
    def name(self) -> str:
        return f"char {self.n}-grams, {self.size}" if self.kind == "char" else f"{self.size} MFW (features path)"

    def _map(self, corpus: Corpus) -> tuple[sparse.csr_matrix, np.ndarray, np.ndarray]:
        if self.kind == "char":
            return corpus.grams(self.n)
        v = len(corpus.words)
        order = np.argsort(np.array(corpus.words, dtype=object), kind="stable")
        rank = np.empty(v, dtype=np.int64)
        rank[order] = np.arange(v)
        return sparse.identity(v, format="csr"), np.ones(v), rank

    def prepare(self, corpus: Corpus, target: Sequence[Novel], background: Sequence[Novel]) -> Measure:
        m, per_word, rank = self._map(corpus)
        v = len(corpus.words)
        docs = [t.gids for t in target] + [b.gids[: b.half] for b in background]
        whole = np.asarray(_rows_matrix(docs, v).sum(axis=0)).ravel() @ m
        keep = np.lexsort((rank, -whole))[: self.size]
        ms = m[:, keep].tocsr()
        chunks = []
        for d in docs:
            k, size = (len(d) // self.chunk, self.chunk) if len(d) >= self.chunk else (1, len(d))
            chunks.extend(d[: k * size].reshape(k, size))
        c = _rows_matrix(chunks, v)
        freq = (c @ ms).toarray() / (c @ per_word)[:, None]
        mean, sd = freq.mean(axis=0), freq.std(axis=0, ddof=1)
        safe = np.where(sd > 0, sd, 1.0)

        def z(counts: np.ndarray, totals: np.ndarray) -> np.ndarray:
            out: np.ndarray = np.where(sd > 0, (counts / totals[:, None] - mean) / safe, 0.0)
            return out

        h = _rows_matrix([np.concatenate([t.gids for t in target])], v)
        target_z = z((h @ ms).toarray(), h @ per_word)[0]

        def measure(starts: np.ndarray, words: int) -> np.ndarray:
            spans = (starts[:, :, None] + np.arange(EXCERPT)).reshape(starts.shape[0], -1)
            p = _rows_matrix(list(corpus.tokens[spans]), v)
            d: np.ndarray = cosine_distance(z((p @ ms).toarray(), p @ per_word), target_z)
            return d

        return measure


class Combined:
    """Views combined: the mean of the parts' Cosine Delta (each part's z-profile normalised: one cosine each)."""

    def __init__(self, parts: Sequence[Ruler | Features]) -> None:
        self.parts = list(parts)

    @property
    def name(self) -> str:
        return " + ".join(p.name for p in self.parts)

    def prepare(self, corpus: Corpus, target: Sequence[Novel], background: Sequence[Novel]) -> Measure:
        got = [p.prepare(corpus, target, background) for p in self.parts]
        return lambda starts, words: np.mean([g(starts, words) for g in got], axis=0)


AnyRuler = Ruler | Features | Combined


def parse_ruler(text: str, chunk: int) -> AnyRuler:
    """`mfw:1000`, `mfw:1000:cull=0.5` (options `cull=S`, `nopron`, `top=K`, `w=W`, `clip=C`, `root`, joined by
    `:`), `wide:1000` (the stylometric-wide view), `char3:2000` (character 3-grams, the 2000 most frequent),
    `words:1000` (today's features through the candidates' code path); `+` combines views (`mfw:1000+char3:2000`)."""
    parts: list[Ruler | Features] = []
    for one in text.split("+"):
        bits = one.split(":")
        if bits[0] == "mfw":
            opts = dict(b.split("=") if "=" in b else (b, "1") for b in bits[2:])
            parts.append(Ruler(int(bits[1]), chunk, cull=float(opts.get("cull", 0)), clip=float(opts.get("clip", 0)),
                               root=opts.get("root") == "1", nopron=opts.get("nopron") == "1",
                               top=int(opts.get("top", 0)), weight=float(opts.get("w", 1))))
        elif bits[0] == "wide":
            # the stylometric-wide view, through the product's own reference
            parts.append(Ruler(int(bits[1]), chunk, wide=WIDE_FACTOR * int(bits[1])))
        elif bits[0].startswith("char"):
            parts.append(Features("char", int(bits[0][4:]), int(bits[1]), chunk))
        elif bits[0] == "words":
            parts.append(Features("words", 1, int(bits[1]), chunk))
        else:
            raise SystemExit(f"unknown ruler {text!r} (mfw:N[:cull=S], charN:SIZE, words:N, joined by +)")
    return parts[0] if len(parts) == 1 else Combined(parts)


def pool_counts(ref: Reference, words: Sequence[str], tokens: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """(pools x MFW) counts of pools given as excerpt starts (pools x 40) into the concatenated tokens."""
    index = ref.index()
    cols = np.fromiter((index.get(w, -1) for w in words), dtype=np.int64, count=len(words))
    n_pools = starts.shape[0]
    spans = (starts[:, :, None] + np.arange(EXCERPT)).reshape(n_pools, -1)
    c = cols[tokens[spans]]
    row = np.broadcast_to(np.arange(n_pools)[:, None], c.shape)
    keep = c >= 0
    n = len(index)
    return np.bincount(row[keep] * n + c[keep], minlength=n_pools * n).reshape(n_pools, n).astype(float)


def distances(ref: Reference, counts: np.ndarray, words: int) -> np.ndarray:
    d: np.ndarray = cosine_distance(zscores(ref, counts, np.full(counts.shape[0], float(words))), ref.target)
    return d


@dataclass
class Outcome:
    right: np.ndarray        # per draw: own nearer than both strangers
    vs_mix: np.ndarray
    vs_third: np.ndarray
    margin: float            # mean d(mix) - d(own)
    worst_third: tuple[str, float]
    author_auc: float | None
    pool_auc: float | None
    impostor_auc: float | None
    weakest: str
    # other author -> (P(own pool nearer H than that author's pool), the gate's pool check against that author)
    pairs: dict[str, tuple[float, float | None]]


def measure(ruler: AnyRuler, novels: Sequence[Novel], corpus: Corpus, cases: Sequence[Case], draws: int,
            seed: int, checks: bool, per: int, pairs: bool = False) -> list[Outcome]:
    out: list[Outcome] = []
    prepared: dict[tuple[int, ...], Measure] = {}
    for no, case in enumerate(cases):
        authors = sorted({n.author for n in novels} - {case.author})
        others = [[i for i, n in enumerate(novels) if n.author == a] for a in authors]
        bg_ids = [i for grp in others for i in grp]
        target = [novels[i] for i in case.heldout]
        if case.heldout not in prepared:
            prepared[case.heldout] = ruler.prepare(corpus, target, [novels[i] for i in bg_ids])
        dist = prepared[case.heldout]
        dr = draw(case, novels, others, draws, seed, no, per)
        d_own, d_mix, d_third = (dist(s, per * EXCERPT) for s in (dr.own, dr.mix, dr.third))
        vs_mix, vs_third = d_own < d_mix, d_own < d_third
        per_third = {authors[a]: float(np.mean(vs_third[dr.third_author == a])) for a in np.unique(dr.third_author)}
        worst = min(per_third.items(), key=lambda kv: kv[1])
        author_auc = pool_auc = None
        imp_auc: dict[str, float | None] = {}
        if checks and isinstance(ruler, Ruler):
            ref = ruler.reference([t.doc for t in target], [novels[i].first_half() for i in bg_ids])
            author_auc, pool_auc, imp_auc = _checks(ref, ruler, target, novels[case.other],
                                                    [novels[i] for i in bg_ids], authors, others, novels,
                                                    per * EXCERPT)
        weakest = min(imp_auc, key=lambda a: (imp_auc[a] or 0.0, a)) if imp_auc else ""
        near: dict[str, tuple[float, float | None]] = {}
        if pairs:
            rng = np.random.default_rng([seed, no, 1])
            for k, a in enumerate(authors):
                grp = np.array(others[k])
                idx = grp[rng.integers(0, len(grp), size=(draws, per))]
                lo = np.array([novels[i].half for i in range(len(novels))])[idx]
                hi = np.array([len(novels[i].gids) - EXCERPT for i in range(len(novels))])[idx]
                st = np.array([novels[i].offset for i in range(len(novels))])[idx] + lo + \
                    (rng.random(idx.shape) * (hi - lo)).astype(np.int64)
                d_t = dist(st, per * EXCERPT)
                near[a] = (float(np.mean(d_own[:, None] < d_t[None, :])), imp_auc.get(a))
        out.append(Outcome(vs_mix & vs_third, vs_mix, vs_third, float(np.mean(d_mix - d_own)), worst, author_auc,
                           pool_auc, imp_auc.get(weakest), weakest, near))
    return out


def _checks(ref: Reference, ruler: Ruler, target: Sequence[Novel], o: Novel, background: Sequence[Novel],
            authors: Sequence[str], others: Sequence[Sequence[int]], novels: Sequence[Novel], words: int,
            ) -> tuple[float | None, float | None, dict[str, float | None]]:
    """What a gate of this case can compute from its corpora alone: today's chunk AUC, and the pool checks
    (training = O, background = the other authors' first halves, each other author an impostor: its second
    halves, text the reference was not built on, as a gate's impostor files are not its background))."""
    index = ref.index()
    n = len(index)

    def chunks(docs: Sequence[TokenDoc]) -> Chunks:
        return Chunks.stack([chunk_counts(d, index, ruler.chunk) for d in docs], n)

    held = [t.doc for t in target]
    bg_docs = [b.first_half() for b in background]
    today = ruler_check(ref, chunks(held), sum((word_counts(index, d) for d in held), np.zeros(n)),
                        float(sum(len(d) for d in held)), chunks(bg_docs), chunks([o.doc]))
    imps = {a: [novels[i].second_half() for i in grp] for a, grp in zip(authors, others, strict=True)}
    pc = pool_check(ref, held, [o.doc], bg_docs, imps, chunk=ruler.chunk, words=words, minimum=1)
    return today.author_auc, pc.author_auc, pc.impostor_auc


BOOTSTRAP = 2000


def interval(per_case: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """95% percentile interval of the mean over cases, the cases resampled (a case's draws share its novels, so
    the cases, not the draws, are the independent units)."""
    rng = np.random.default_rng(seed)
    means = per_case[rng.integers(0, len(per_case), size=(BOOTSTRAP, len(per_case)))].mean(axis=1)
    lo, hi = np.quantile(means, [0.025, 0.975])
    return float(lo), float(hi)


def summary(name: str, outcomes: Sequence[Outcome], cases: Sequence[Case], first: Sequence[Outcome] | None) -> str:
    """One table row: per-draw accuracy (own pool nearer than both strangers') and own nearer than a third author
    alone, each with its interval over cases, and the paired difference from the first ruler (same draws)."""
    right = np.array([o.right.mean() for o in outcomes])
    mix = np.array([o.vs_mix.mean() for o in outcomes])
    third = np.array([o.vs_third.mean() for o in outcomes])

    def cell(x: np.ndarray) -> str:
        lo, hi = interval(x)
        return f"{x.mean():.3f} [{lo:.3f}, {hi:.3f}]"

    def delta(x: np.ndarray) -> str:
        lo, hi = interval(x)
        return f"{x.mean():+.3f} [{lo:+.3f}, {hi:+.3f}]"

    if first is None:
        d_right = d_third = "—"
    else:
        d_right = delta(right - np.array([o.right.mean() for o in first]))
        d_third = delta(third - np.array([o.vs_third.mean() for o in first]))
    return (f"| {name} | **{cell(right)}** | {d_right} | {mix.mean():.3f} | {cell(third)} | {d_third} | "
            f"{int(np.sum(right >= 0.5))} of {len(cases)} | {right.min():.3f} |")


def _short(title: str) -> str:
    return re.sub(r"([a-z])([A-Z])", r"\1 \2", title)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "vg-bench-ruler-cache",
                        help="the scoring cache of the corpus's tokens (kept between runs)")
    parser.add_argument("--draws", type=int, default=200, help="draws per case")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mfw", type=int, nargs="*", default=[1000],
                        help="rulers to measure (the first: today's); none: the first --ruler comes first (its "
                             "pool checks with --pairs)")
    parser.add_argument("--cull", type=float, nargs="*", default=[], help="culling shares to measure at the first mfw")
    parser.add_argument("--ruler", nargs="*", default=[],
                        help="candidate rulers after the --mfw ones: mfw:N[:cull=S], charN:SIZE (character n-grams), "
                             "words:N (today's through the candidates' path), several joined by + (combined)")
    parser.add_argument("--chunk", type=int, default=2500)
    parser.add_argument("--pool", type=int, nargs="+", default=[10_000],
                        help="words per pool (excerpts of 250); several: a table each")
    parser.add_argument("--shape", choices=("pair", "rest"), default="pair",
                        help="pair: H one novel, O another; rest: H the author's other novels together, O the one "
                             "left out")
    parser.add_argument("--per-case", action="store_true", help="a row per case, with the ruler checks")
    parser.add_argument("--pairs", action="store_true",
                        help="against every other author in turn: how often the own pool is nearer, by pool check")
    parser.add_argument("--tellable", type=float, default=0.9,
                        help="with --pairs: a pair is told apart when the own pool is nearer in at least this share")
    parser.add_argument("--threshold", type=float, nargs="*", default=[],
                        help="abstain where a pool check (the lower of author and impostor AUC) is under this")
    args = parser.parse_args()
    if not args.corpus.is_dir() or not any(args.corpus.glob("*_*.txt")):
        print(f"skipped: no corpus at {args.corpus}")
        return 0
    start = time.perf_counter()
    novels, words, tokens = load(args.corpus, args.cache)
    corpus = Corpus(words, tokens)
    cases = cases_of(novels, args.shape)
    if not args.mfw and (args.cull or not args.ruler):
        raise SystemExit("--mfw without counts needs --ruler, and --cull needs an --mfw count")
    rulers: list[AnyRuler] = [Ruler(m, args.chunk) for m in args.mfw] + \
        [Ruler(args.mfw[0], args.chunk, cull=c) for c in args.cull] + [parse_ruler(r, args.chunk) for r in args.ruler]
    shape = ("H one novel, O another of its author" if args.shape == "pair" else
             "H the author's other novels together, O the novel left out")
    print(f"{len(novels)} novels, {len({n.author for n in novels})} authors, {len(cases)} cases ({shape}), "
          f"{args.draws} draws each, seed {args.seed}; loaded in {time.perf_counter() - start:.1f} s")
    for pool in args.pool:
        per = max(1, pool // EXCERPT)
        print(f"\nPools of {per * EXCERPT:,} words ({per} excerpts of {EXCERPT}); per-draw accuracy with a 95% "
              "interval over cases (bootstrap), and the paired difference from the first ruler")
        print("\n| ruler | per-draw accuracy | Δ vs first | own nearer than the mix | own nearer than a third author | "
              "Δ vs first (third) | cases right (≥ 0.5 of draws) | worst case |\n|---|---|---|---|---|---|---|---|")
        measured: list[list[Outcome]] = []
        for i, ruler in enumerate(rulers):
            t0 = time.perf_counter()
            outcomes = measure(ruler, novels, corpus, cases, args.draws, args.seed,
                               checks=i == 0 and (args.per_case or args.pairs or bool(args.threshold)), per=per,
                               pairs=i == 0 and args.pairs)
            print(summary(ruler.name, outcomes, cases, measured[0] if measured else None)
                  + f" <!-- {time.perf_counter() - t0:.0f} s -->", flush=True)
            measured.append(outcomes)
        _details(args, rulers[0].name, novels, cases, measured[0], per)
    print(f"\ntotal {time.perf_counter() - start:.0f} s")
    return 0


def _details(args: argparse.Namespace, name: str, novels: Sequence[Novel], cases: Sequence[Case],
             first: Sequence[Outcome], per: int) -> None:
    if args.per_case:
        print(f"\nPer case under {name}: right share of draws (vs mix; vs a third author, and the third "
              "author most often nearer), mean d(mix) − d(own), and the gate's own ruler checks: today's chunk "
              f"author AUC, the {per * EXCERPT:,}-word pool author AUC, the lowest pool impostor AUC (whom)")
        print("\n| author | held out | other novel | right | vs mix | vs third (worst) | d(mix) − d(own) | "
              "chunk AUC | pool AUC | impostor AUC |\n|---|---|---|---|---|---|---|---|---|---|")
        for c, o in zip(cases, first, strict=True):
            held = " + ".join(_short(novels[h].title) for h in c.heldout)
            print(f"| {c.author} | {held} | {_short(novels[c.other].title)} | "
                  f"{o.right.mean():.3f} | {o.vs_mix.mean():.3f} | {o.vs_third.mean():.3f} "
                  f"({o.worst_third[0]} {o.worst_third[1]:.2f}) | {o.margin:+.3f} | {_f(o.author_auc)} | "
                  f"{_f(o.pool_auc)} | {_f(o.impostor_auc)} ({o.weakest}) |")
    if args.pairs:
        print(f"\n(case, other author) pairs under {name}, by the gate's pool check against that author "
              f"({per * EXCERPT:,}-word pools): how often an own pool is nearer H than that author's pool\n")
        print("| pool check AUC | pairs | P(own nearer): mean | min |\n|---|---|---|---|")
        got = [v for o in first for v in o.pairs.values() if v[1] is not None]
        for lo, hi in itertools.pairwise((0.0, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0001)):
            near = [p for p, auc in got if auc is not None and lo <= auc < hi]
            if near:
                print(f"| {lo:.2f}–{min(hi, 1.0):.2f} | {len(near)} | {np.mean(near):.3f} | {min(near):.3f} |")
        blind = np.array([p < args.tellable for p, _ in got])
        aucs = np.array([auc for _, auc in got], dtype=float)
        print(f"\nA pair the ruler cannot tell apart: own pool nearer H than that author's in under {args.tellable} of "
              f"draws ({int(blind.sum())} of {len(got)} pairs). Abstaining under a threshold: false abstentions "
              "(pairs it can tell, abstained on) and missed blind pairs (pairs it cannot tell, decided)\n")
        print("| threshold | pairs abstained | false abstentions | missed blind pairs |\n|---|---|---|---|")
        for t in (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95):
            weak = aucs < t
            fa = f"{int(np.sum(weak & ~blind))} of {int(np.sum(~blind))} ({np.mean(weak[~blind]):.3f})"
            mb = (f"{int(np.sum(~weak & blind))} of {int(blind.sum())} ({np.mean(~weak[blind]):.3f})"
                  if blind.any() else "— (none blind)")
            print(f"| {t:.2f} | {int(weak.sum())} | {fa} | {mb} |")
        print("\nand the pool check against the background (author AUC) beside how often an own pool is nearer "
              "H than the mix's: lowest author AUC "
              f"{min(o.pool_auc or 0.0 for o in first):.3f}, lowest share {min(o.vs_mix.mean() for o in first):.3f}")
    for t in args.threshold:
        weak = np.array([min(o.pool_auc or 0.0, o.impostor_auc or 0.0) < t for o in first])
        acc = np.array([o.right.mean() for o in first])
        answered = acc[~weak]
        n = len(first)
        # PAN's c@1: an abstention earns the accuracy of the answers over every case, (nc + nu * nc / n) / n
        c_at_1 = (answered.sum() + weak.sum() * answered.sum() / n) / n
        print(f"threshold {t:.2f}: {int(weak.sum())} of {n} cases RULER-WEAK (per-draw accuracy there "
              f"{acc[weak].mean() if weak.any() else float('nan'):.3f}); accuracy where it answers "
              f"{answered.mean() if answered.size else float('nan'):.3f}; c@1 {c_at_1:.3f}")


def _f(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


if __name__ == "__main__":
    raise SystemExit(main())
