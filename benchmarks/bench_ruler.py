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

    python benchmarks/bench_ruler.py [--draws 200] [--seed 0] [--mfw 1000 ...] [--chunk 2500] [--per-case]
                                     [--corpus DIR] [--cache DIR]
"""

from __future__ import annotations

import argparse
import itertools
import re
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voicegate.scoring import Cache, TokenDoc
from voicegate.scoring._ruler import Chunks, pool_check, ruler_check
from voicegate.scoring._stylometric import (
    Reference,
    build_reference,
    chunk_counts,
    cosine_distance,
    word_counts,
    zscores,
)

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent.parent / "shared" / "corpora" / "british-fiction"
EXCERPT = 250


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
    heldout: int        # index of H in the novels
    other: int          # index of O


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


def cases_of(novels: Sequence[Novel]) -> list[Case]:
    by_author: dict[str, list[int]] = {}
    for i, n in enumerate(novels):
        by_author.setdefault(n.author, []).append(i)
    return [Case(a, h, o) for a, ids in by_author.items() if len(ids) >= 2 for h in ids for o in ids if o != h]


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
    """One way of measuring d(pool, H): today's Cosine Delta at `mfw`, or a candidate."""

    def __init__(self, mfw: int, chunk: int, *, cull: float = 0.0) -> None:
        self.mfw, self.chunk, self.cull = mfw, chunk, cull

    @property
    def name(self) -> str:
        return f"mfw {self.mfw}" + (f", culled at {self.cull:.0%}" if self.cull else "")

    def reference(self, target: Sequence[TokenDoc], background: Sequence[TokenDoc]) -> Reference:
        ref = build_reference(target, background, mfw=self.mfw, chunk=self.chunk)
        if not self.cull:
            return ref
        # Culling (Hoover 2004): keep only words present in at least `cull` of the texts (each document a text).
        index = ref.index()
        present = np.mean([word_counts(index, d) > 0 for d in (*target, *background)], axis=0)
        keep = present >= self.cull
        return Reference(tuple(w for w, k in zip(ref.words, keep, strict=True) if k), ref.mean[keep], ref.sd[keep],
                         ref.target[keep], ref.chunks)


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


def measure(ruler: Ruler, novels: Sequence[Novel], words: Sequence[str], tokens: np.ndarray, cases: Sequence[Case],
            draws: int, seed: int, checks: bool, per: int, pairs: bool = False) -> list[Outcome]:
    out: list[Outcome] = []
    refs: dict[int, Reference] = {}
    for no, case in enumerate(cases):
        authors = sorted({n.author for n in novels} - {case.author})
        others = [[i for i, n in enumerate(novels) if n.author == a] for a in authors]
        bg_ids = [i for grp in others for i in grp]
        h = novels[case.heldout]
        if case.heldout not in refs:
            refs[case.heldout] = ruler.reference([h.doc], [novels[i].first_half() for i in bg_ids])
        ref = refs[case.heldout]
        dr = draw(case, novels, others, draws, seed, no, per)
        d_own, d_mix, d_third = (distances(ref, pool_counts(ref, words, tokens, s), per * EXCERPT)
                                 for s in (dr.own, dr.mix, dr.third))
        vs_mix, vs_third = d_own < d_mix, d_own < d_third
        per_third = {authors[a]: float(np.mean(vs_third[dr.third_author == a])) for a in np.unique(dr.third_author)}
        worst = min(per_third.items(), key=lambda kv: kv[1])
        author_auc = pool_auc = None
        imp_auc: dict[str, float | None] = {}
        if checks:
            author_auc, pool_auc, imp_auc = _checks(ref, ruler, h, novels[case.other], [novels[i] for i in bg_ids],
                                                    authors, others, novels, per * EXCERPT)
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
                d_t = distances(ref, pool_counts(ref, words, tokens, st), per * EXCERPT)
                near[a] = (float(np.mean(d_own[:, None] < d_t[None, :])), imp_auc.get(a))
        out.append(Outcome(vs_mix & vs_third, vs_mix, vs_third, float(np.mean(d_mix - d_own)), worst, author_auc,
                           pool_auc, imp_auc.get(weakest), weakest, near))
    return out


def _checks(ref: Reference, ruler: Ruler, h: Novel, o: Novel, background: Sequence[Novel], authors: Sequence[str],
            others: Sequence[Sequence[int]], novels: Sequence[Novel], words: int,
            ) -> tuple[float | None, float | None, dict[str, float | None]]:
    """What a gate of this case can compute from its corpora alone: today's chunk AUC, and the pool checks
    (training = O, background = the other authors' first halves, each other author an impostor: its second
    halves, text the reference was not built on, as a gate's impostor files are not its background))."""
    index = ref.index()
    n = len(index)

    def chunks(docs: Sequence[TokenDoc]) -> Chunks:
        return Chunks.stack([chunk_counts(d, index, ruler.chunk) for d in docs], n)

    bg_docs = [b.first_half() for b in background]
    today = ruler_check(ref, chunks([h.doc]), word_counts(index, h.doc), float(len(h.doc)), chunks(bg_docs),
                        chunks([o.doc]))
    imps = {a: [novels[i].second_half() for i in grp] for a, grp in zip(authors, others, strict=True)}
    pc = pool_check(ref, [h.doc], [o.doc], bg_docs, imps, chunk=ruler.chunk, words=words, minimum=1)
    return today.author_auc, pc.author_auc, pc.impostor_auc


def summary(name: str, outcomes: Sequence[Outcome], cases: Sequence[Case]) -> str:
    right = np.concatenate([o.right for o in outcomes])
    mix = np.concatenate([o.vs_mix for o in outcomes])
    third = np.concatenate([o.vs_third for o in outcomes])
    per_case = np.array([o.right.mean() for o in outcomes])
    full = int(np.sum(per_case >= 0.5))
    by_author: dict[str, list[float]] = {}
    for c, o in zip(cases, outcomes, strict=True):
        by_author.setdefault(c.author, []).append(float(o.right.mean()))
    return (f"| {name} | **{right.mean():.3f}** | {mix.mean():.3f} | {third.mean():.3f} | {full} of {len(cases)} | "
            f"{int(np.sum(per_case < 0.5))} | {min(per_case):.3f} |")


def _short(title: str) -> str:
    return re.sub(r"([a-z])([A-Z])", r"\1 \2", title)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "vg-bench-ruler-cache",
                        help="the scoring cache of the corpus's tokens (kept between runs)")
    parser.add_argument("--draws", type=int, default=200, help="draws per case")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mfw", type=int, nargs="+", default=[1000], help="rulers to measure (the first: today's)")
    parser.add_argument("--cull", type=float, nargs="*", default=[], help="culling shares to measure at the first mfw")
    parser.add_argument("--chunk", type=int, default=2500)
    parser.add_argument("--pool", type=int, default=10_000, help="words per pool (excerpts of 250)")
    parser.add_argument("--per-case", action="store_true", help="a row per case, with the ruler checks")
    parser.add_argument("--pairs", action="store_true",
                        help="against every other author in turn: how often the own pool is nearer, by pool check")
    parser.add_argument("--threshold", type=float, nargs="*", default=[],
                        help="abstain where a pool check (the lower of author and impostor AUC) is under this")
    args = parser.parse_args()
    if not args.corpus.is_dir() or not any(args.corpus.glob("*_*.txt")):
        print(f"skipped: no corpus at {args.corpus}")
        return 0
    per = max(1, args.pool // EXCERPT)
    start = time.perf_counter()
    novels, words, tokens = load(args.corpus, args.cache)
    cases = cases_of(novels)
    print(f"{len(novels)} novels, {len({n.author for n in novels})} authors, {len(cases)} cases (held-out novel, "
          f"the author's other novel), {args.draws} draws each, seed {args.seed}; pools of {per * EXCERPT:,} words "
          f"({per} excerpts of {EXCERPT}); loaded in {time.perf_counter() - start:.1f} s")
    rulers = [Ruler(m, args.chunk) for m in args.mfw] + [Ruler(args.mfw[0], args.chunk, cull=c) for c in args.cull]
    print("\n| ruler | per-draw accuracy | own nearer than the mix | own nearer than a third author | "
          "cases right (≥ 0.5 of draws) | cases wrong | worst case |\n|---|---|---|---|---|---|---|")
    measured = []
    for i, ruler in enumerate(rulers):
        t0 = time.perf_counter()
        outcomes = measure(ruler, novels, words, tokens, cases, args.draws, args.seed,
                           checks=i == 0 and (args.per_case or args.pairs or bool(args.threshold)), per=per,
                           pairs=i == 0 and args.pairs)
        measured.append(outcomes)
        print(summary(ruler.name, outcomes, cases) + f" <!-- {time.perf_counter() - t0:.0f} s -->", flush=True)
    first = measured[0]
    if args.per_case:
        print(f"\nPer case under {rulers[0].name}: right share of draws (vs mix; vs a third author, and the third "
              "author most often nearer), mean d(mix) − d(own), and the gate's own ruler checks: today's chunk "
              f"author AUC, the {per * EXCERPT:,}-word pool author AUC, the lowest pool impostor AUC (whom)")
        print("\n| author | held out | other novel | right | vs mix | vs third (worst) | d(mix) − d(own) | "
              "chunk AUC | pool AUC | impostor AUC |\n|---|---|---|---|---|---|---|---|---|---|")
        for c, o in zip(cases, first, strict=True):
            print(f"| {c.author} | {_short(novels[c.heldout].title)} | {_short(novels[c.other].title)} | "
                  f"{o.right.mean():.3f} | {o.vs_mix.mean():.3f} | {o.vs_third.mean():.3f} "
                  f"({o.worst_third[0]} {o.worst_third[1]:.2f}) | {o.margin:+.3f} | {_f(o.author_auc)} | "
                  f"{_f(o.pool_auc)} | {_f(o.impostor_auc)} ({o.weakest}) |")
    if args.pairs:
        print(f"\n(case, other author) pairs under {rulers[0].name}, by the gate's pool check against that author "
              f"({per * EXCERPT:,}-word pools): how often an own pool is nearer H than that author's pool\n")
        print("| pool check AUC | pairs | P(own nearer): mean | min |\n|---|---|---|---|")
        got = [v for o in first for v in o.pairs.values() if v[1] is not None]
        for lo, hi in itertools.pairwise((0.0, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0001)):
            near = [p for p, auc in got if auc is not None and lo <= auc < hi]
            if near:
                print(f"| {lo:.2f}–{min(hi, 1.0):.2f} | {len(near)} | {np.mean(near):.3f} | {min(near):.3f} |")
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
    print(f"\ntotal {time.perf_counter() - start:.0f} s")
    return 0


def _f(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


if __name__ == "__main__":
    raise SystemExit(main())
