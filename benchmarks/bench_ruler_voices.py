"""Benchmark: candidate rulers on the tiny voices' seed sweep, as effect sizes (a screen in seconds a ruler).

`bench_operating.py --voice ...` measures a ruler where a verdict is made (calibrate's ship rates, ~10 minutes a
ruler on the shared box) and only for rulers a spec can register. This screens any `bench_ruler.py` ruler
(`--ruler mfw:5000:nopron`, `wide:1000`, `mfw:1000+mfw:5000`, ...) first, on the same data: the seven author gates of
`bench_operating.py` (held out, background and impostors as ``tests/helpers/authors.author_spec``), every pool of
the sweep (48 per voice, the base's 96) measured toward the gate author and toward each impostor, and per gate

- VOICE: the right voice's effect, (mean d(base) - mean d(voice)) / pooled SD over the pools: what the t rules'
  power grows with;
- SPECIFIC: the same effect of the weakest specificity margin r_I = d(gate author) - d(impostor I) (the impostor
  named), which bounds what ships once specificity decides.

"weakest" is the smaller of the two, per gate; a ruler that lowers it for a gate costs that gate power.

    python benchmarks/bench_ruler_voices.py --ruler mfw:1000 wide:1000 ... [--chunk 2500] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import lzma
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
import bench_ruler as br
from bench_operating import FIVE, RIGHT, SISTERS, SWEEP
from helpers.authors import CORPUS, author_spec

from voicegate.scoring import Cache, TokenDoc
from voicegate.scoring._docs import doc_from_text
from voicegate.scoring._stylometric import word_counts

Distance = Callable[[Sequence[TokenDoc]], np.ndarray]


def distance(ruler: br.AnyRuler, cache: Cache, target: Sequence[str], background: Sequence[str]) -> Distance:
    """d(pool, target) under `ruler` built on (target, background), for whole pools (a word ruler, or several
    combined: the mean of their distances)."""
    if isinstance(ruler, br.Combined):
        parts = [distance(p, cache, target, background) for p in ruler.parts]
        return lambda pools: np.mean([f(pools) for f in parts], axis=0)
    if not isinstance(ruler, br.Ruler):
        raise SystemExit(f"{ruler.name}: only word rulers (mfw:..., wide:...) measure whole pools here")
    ref = ruler.reference([cache.doc(Path(p)) for p in target], [cache.doc(Path(p)) for p in background])
    index = ref.index()

    def d(pools: Sequence[TokenDoc]) -> np.ndarray:
        counts = np.array([word_counts(index, x) for x in pools])
        return ruler.distance(ref, counts, np.array([float(len(x)) for x in pools]))

    return d


def short(author: str) -> str:
    """How a table names an author: the surname, with an initial for the sisters."""
    return f"{author[0]}. {author.split()[-1]}" if author in SISTERS else author.split()[-1]


def effect(base: np.ndarray, voice: np.ndarray) -> float:
    pooled = ((len(base) - 1) * base.var(ddof=1) + (len(voice) - 1) * voice.var(ddof=1)) / (len(base) + len(voice) - 2)
    return float((base.mean() - voice.mean()) / np.sqrt(pooled))


def measure(ruler: br.AnyRuler, cache: Cache, pools: dict[str, list[TokenDoc]]) -> dict[str, tuple[float, float, str]]:
    """author -> (VOICE effect, weakest SPECIFIC effect, its impostor)."""
    out = {}
    for group in (FIVE, SISTERS):
        voices = tuple(RIGHT[a] for a in group)
        for author in group:
            corpora = author_spec(author, voices, impostors=tuple(a for a in group if a != author))["corpora"]
            held, background = corpora["heldout"], corpora["background"]
            toward = distance(ruler, cache, held, background)
            base, voice = toward(pools["base"]), toward(pools[RIGHT[author]])
            margins = []
            for impostor, files in corpora["impostors"].items():
                # the impostor's ruler: its text, z-scored over the background without it plus the gate's held-out
                rest = list(dict.fromkeys([*(p for p in background if p not in files), *held]))
                other = distance(ruler, cache, files, rest)
                margins.append((effect(base - other(pools["base"]), voice - other(pools[RIGHT[author]])), impostor))
            low = min(margins)
            out[author] = (effect(base, voice), low[0], low[1])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ruler", nargs="+", default=["mfw:1000"], help="bench_ruler.py rulers; the first is today's")
    parser.add_argument("--chunk", type=int, default=2500)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "vg-bench-ruler-cache")
    args = parser.parse_args()
    if not CORPUS.is_dir() or not SWEEP.is_file():
        raise SystemExit(f"skipped: needs {CORPUS} and {SWEEP}")
    start = time.perf_counter()
    cache = Cache(args.cache)
    with lzma.open(SWEEP, "rt", encoding="utf-8") as f:
        sweep = json.load(f)
    pools = {src: [doc_from_text("\n".join(sweep[src][str(s)])) for s in range(1, 97 if src == "base" else 49)]
             for src in ("base", *RIGHT.values())}
    print(f"sweep loaded in {time.perf_counter() - start:.0f} s; per gate VOICE effect / weakest SPECIFIC effect "
          "(its impostor), in pooled SDs of the sweep's pools\n")
    authors = (*FIVE, *SISTERS)
    print("| ruler | weakest, mean of 7 | lowest | " + " | ".join(map(short, authors)) + " |")
    print("|---|---|---|" + "---|" * len(authors))
    for text in args.ruler:
        t0 = time.perf_counter()
        got = measure(br.parse_ruler(text, args.chunk), cache, pools)
        weakest = [min(v, s) for v, s, _ in got.values()]
        cells = " | ".join(f"{got[a][0]:.2f} / {got[a][1]:.2f} ({short(got[a][2])})" for a in authors)
        print(f"| {text} | {np.mean(weakest):.2f} | {min(weakest):.2f} | {cells} | "
              f"<!-- {time.perf_counter() - t0:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
