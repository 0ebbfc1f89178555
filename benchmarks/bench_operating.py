"""Benchmark: the gate's operating characteristics on the tiny voices' seed sweep (issue 31), via `calibrate`.

The sweep (``shared/fixtures/tiny-voices/sweep/sweep48.json.xz``: 48 independent pools per voice, 96 for
the base) imported as the seven author gates of the fixture README, each a pilot of 48 seeds:

- Austen, Dickens, Eliot, Thackeray, Trollope: candidates the five voices, impostors the other four
  authors' held-out novels;
- Charlotte Brontë (held out *Villette*) and Anne Brontë (*Agnes Grey*): candidates lv-bronte-ckpt475 and
  lv-anne, impostor the other sister;

background and training as ``tests/helpers/authors.author_spec`` (the README's check), and one A-vs-A arm ``aa``
(``role: a-vs-a``): the base's pools 49-96 as its seeds 1-48, the base keeping pools 1-48. Then
``calibrate`` at K = 3, 5, 8 (``--draws``, default 1000) and the table, per rule and K:

- right voice ships: the would-ship share of the gate author's own voice, mean over the seven gates;
- another author's voice ships: the mean over the 22 wrong (gate, voice) pairs, and the largest pair;
- A-vs-A VOICE PASS: the A-vs-A arm's false-pass share, mean over the seven gates (and the largest).

"ships" is calibrate's would-ship: VOICE PASS under the rule, SPECIFIC under the rule (the gates'
``voice.specificity`` is ``decides``), copying and damage as decided on all 48 seeds.

``--splits`` (docs/validity.md's tables): the same draws (``gate.decide_draws``, what ``calibrate`` runs) on
both splits of the base's 96 pools — base 1-48 / A-vs-A 49-96, and the other way round — averaged, per gate
too; and how often the A-vs-A arm, as a candidate of specificity, is NOT-SPECIFIC ("nearer X") under the t
rules.

``--voice KEY=VALUE``: every gate's ``voice`` keys set so (a candidate ruler, e.g. ``mfw=2000``), the sweep measured
under it.

``--looks 3,5,8,12``: every gate decided by welch-t-min-effect, and ``calibrate --seeds 3 --looks ...`` simulates that
sequential design on each gate's draws (each look decided as ``score`` decides it): per gate the right voice's
would-ship share, seeds per arm on average and share stopping at each look; the wrong pairs' ship (mean; worst); the
A-vs-A arm's false pass (design PASS) and seeds.

    python benchmarks/bench_operating.py [--draws 1000] [--seed 0] [--per-gate] [--splits] [--keep DIR]
                                         [--voice KEY=VALUE ...] [--looks 3,5,8,12]
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
from helpers.authors import AUTHORS, CORPUS, VOICES, author_spec

SWEEP = VOICES / "sweep" / "sweep48.json.xz"
FIVE = ("Jane Austen", "Charles Dickens", "George Eliot", "William Makepeace Thackeray", "Anthony Trollope")
SISTERS = ("Charlotte Bronte", "Anne Bronte")
RIGHT = {**{a: AUTHORS[a][3][0] for a in FIVE}, "Charlotte Bronte": "lv-bronte-ckpt475", "Anne Bronte": "lv-anne"}
SEEDS = tuple(range(1, 49))
KS = (3, 5, 8)
A_VS_A = "aa"


def gate_specs(voice: dict[str, Any] | None = None, rule: str | None = None) -> dict[str, dict[str, Any]]:
    """author -> the pilot gate's spec: 48 seeds, the set's voices as candidates, the A-vs-A arm; `voice`: keys
    set under `voice` (a candidate ruler, e.g. {"mfw": 2000}); `rule`: the deciding rule (None: author_spec's)."""
    out = {}
    for group in (FIVE, SISTERS):
        voices = tuple(RIGHT[a] for a in group)
        for author in group:
            spec = author_spec(author, voices, impostors=tuple(a for a in group if a != author), seeds=SEEDS,
                               **({} if rule is None else {"rule": rule}))
            spec["arms"].append({"name": A_VS_A, "model": "base", "role": "a-vs-a"})
            spec["voice"].update(voice or {})
            out[author] = spec
    return out


def sweep_rows(sweep: dict[str, Any], voices: tuple[str, ...]) -> list[dict[str, Any]]:
    """Import rows: the base's pools 1-48, each voice's 48 pools, the base's pools 49-96 as the A-vs-A arm."""
    rows = []
    for arm, source, offset in (("base", "base", 0), *((v, v, 0) for v in voices), (A_VS_A, "base", 48)):
        for seed in SEEDS:
            for i, text in enumerate(sweep[source][str(seed + offset)]):
                rows.append({"arm": arm, "seed": seed, "prompt_id": str(i), "text": text})
    return rows


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)


def build(root: Path, log: Any = print, voice: dict[str, Any] | None = None, rule: str | None = None
          ) -> dict[str, str]:
    """The workspace with the seven pilot gates registered and imported; author -> gate name."""
    from voicegate.gate import register
    from voicegate.generate import import_file
    from voicegate.spec import load_spec

    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q")
    for d in ("prompts", "preregistrations", "gates"):
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "prompts" / "tiny-voices.txt").write_text((VOICES / "prompts.txt").read_text(encoding="utf-8"),
                                                      encoding="utf-8")
    (root / ".gitignore").write_text("runs/\nrows-*.jsonl\n", encoding="utf-8")
    specs = gate_specs(voice, rule)
    for spec in specs.values():
        (root / "preregistrations" / f"{spec['gate']}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False),
                                                                         encoding="utf-8")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "the seven pilot gates")
    with lzma.open(SWEEP, "rt", encoding="utf-8") as f:
        sweep = json.load(f)
    gates = {}
    for author, spec in specs.items():
        gate = spec["gate"]
        start = time.perf_counter()
        register(root, gate)
        voices = tuple(a["name"] for a in spec["arms"] if a["role"] == "candidate")
        source = root / f"rows-{gate}.jsonl"
        source.write_text("".join(json.dumps(r) + "\n" for r in sweep_rows(sweep, voices)), encoding="utf-8")
        import_file(load_spec(root, gate), source)
        source.unlink()
        log(f"  {gate}: registered and imported in {time.perf_counter() - start:.0f} s")
        gates[author] = gate
    return gates


def measure(root: Path, gates: dict[str, str], draws: int, seed: int, log: Any = print,
            ) -> tuple[dict[tuple[str, int], Any], dict[tuple[str, int], float]]:
    """calibrate every gate at every K: (author, K) -> its Calibration, and the wall seconds of each call."""
    from voicegate.gate import calibrate

    results, seconds = {}, {}
    for author, gate in gates.items():
        for k in KS:
            start = time.perf_counter()
            results[(author, k)] = calibrate(root, gate, seeds=k, draws=draws, rng_seed=seed)
            seconds[(author, k)] = time.perf_counter() - start
            log(f"  calibrate {gate} --seeds {k} --draws {draws}: {seconds[(author, k)]:.1f} s")
    return results, seconds


def table(results: dict[tuple[str, int], Any], per_gate: bool = False) -> str:
    authors = sorted({a for a, _ in results}, key=lambda a: (*FIVE, *SISTERS).index(a))
    rules = results[(authors[0], KS[0])].rules
    lines = [("| rule, seeds per arm | right voice ships (mean of 7) | another author's voice ships (mean; max pair) "
              "| A-vs-A VOICE PASS (mean; max gate) |"), "|---|---|---|---|"]
    for rid in rules:
        for k in KS:
            right, wrong, aa = [], [], []
            for author in authors:
                cal = results[(author, k)]
                for c in cal.candidates:
                    share = c.would_ship[rid].share
                    (right if c.name == RIGHT[author] else wrong).append((share, f"{cal.gate}/{c.name}"))
                aa += [(rates[rid].share, cal.gate) for rates in cal.a_vs_a.values()]
            worst = max(wrong)
            pair = f" ({worst[1]})" if worst[0] > 0 else ""
            lines.append(f"| {rid}, {k} | {statistics.mean(s for s, _ in right):.3f} | "
                         f"{statistics.mean(s for s, _ in wrong):.3f}; {worst[0]:.3f}{pair} | "
                         f"{statistics.mean(s for s, _ in aa):.3f}; {max(aa)[0]:.3f} |")
    if per_gate:
        lines += ["", "right voice ships, per gate (rule: K=3 / 5 / 8):"]
        for author in authors:
            gate = results[(author, KS[0])].gate
            cells = []
            for rid in rules:
                shares = [next(c for c in results[(author, k)].candidates if c.name == RIGHT[author]).would_ship[rid]
                          for k in KS]
                cells.append(f"{rid} " + " / ".join(f"{s.share:.3f}" for s in shares))
            lines.append(f"  {gate:14s} " + "; ".join(cells))
    return "\n".join(lines)


def per_gate_lines(gates: dict[str, str], ks: tuple[int, ...], names: Any,
                   share: Callable[[str, int, str], float]) -> list[str]:
    """The per-gate block under a table: each gate's right-voice ship share at every K, for each of `names` (rules
    or variants); `share(author, k, name)`."""
    lines = ["", "right voice ships, per gate, K = " + " / ".join(map(str, ks)) + " (mean of both splits):"]
    for author, gate in gates.items():
        lines.append(f"  {gate:14s} " + "; ".join(
            f"{name} " + " / ".join(f"{share(author, k, name):.3f}" for k in ks) for name in names))
    return lines


def swapped(distances: dict[str, Any]) -> dict[str, Any]:
    """The other split of the base's pools: the A-vs-A arm's as the base's, the base's as the A-vs-A arm's."""
    return {**distances, "base": distances[A_VS_A], A_VS_A: distances["base"]}


def splits(root: Path, gates: dict[str, str], draws: int, seed: int, log: Any = print) -> str:
    """Both splits' draws decided, averaged: the table of docs/validity.md, per gate, and the A-vs-A NOT-SPECIFIC
    share under the t rules."""
    import numpy as np

    from voicegate.gate import load_generations
    from voicegate.gate._calibrate import decide_draws
    from voicegate.scoring import measure_gate, specificity
    from voicegate.spec import load_spec

    ship: dict[tuple[str, int, str, str], list[float]] = {}
    width: dict[tuple[str, int, str], list[tuple[float, float]]] = {}  # the right voice's 95% interval, per split
    aa: dict[tuple[str, int, str], list[float]] = {}
    nearer: dict[tuple[int, str], list[float]] = {}
    t_rules = ("welch-t", "welch-t-min-effect")
    for author, gate in gates.items():
        spec = load_spec(root, gate)
        m = measure_gate(spec, load_generations(spec), cache_dir=spec.run.cache, write_cache=False)
        rng = np.random.default_rng(seed)
        both = ((m.distances, m.toward), (swapped(m.distances), {n: swapped(t) for n, t in m.toward.items()}))
        for dist, toward in both:
            for k in KS:
                start = time.perf_counter()
                cal = decide_draws(spec, dist, toward, copying=m.copying, damage=m.damage, seeds=k, draws=draws,
                                   rng_seed=seed)
                for c in cal.candidates:
                    for rid in cal.rules:
                        ship.setdefault((author, k, c.name, rid), []).append(c.would_ship[rid].share)
                        if c.name == RIGHT[author]:
                            s = c.would_ship[rid]
                            width.setdefault((author, k, rid), []).append((s.low, s.high))
                for rates in cal.a_vs_a.values():
                    for rid in cal.rules:
                        aa.setdefault((author, k, rid), []).append(rates[rid].share)
                said = dict.fromkeys(t_rules, 0)
                for _ in range(draws):
                    pick = {arm: [int(s) for s in rng.permutation(sorted(dist[arm]))[:k]] for arm in ("base", A_VS_A)}
                    sub = {t: {arm: {s: d[arm][s] for s in pick[arm]} for arm in pick} for t, d in
                           (("gate", dist), *toward.items())}
                    axis = specificity(sub["gate"], {n: sub[n] for n in toward}, "base", A_VS_A, author=author,
                                       decides=True, rule=t_rules[0], rules=t_rules, digits=None,
                                       smallest_effect=spec.smallest_effect)
                    for rid in t_rules:
                        said[rid] += axis.under(rid) == "NOT-SPECIFIC"
                for rid in t_rules:
                    nearer.setdefault((k, rid), []).append(said[rid] / draws)
                log(f"  {gate} K={k}: {time.perf_counter() - start:.1f} s")
    from voicegate.spec import RULES

    rules = [r for r in RULES if any(key[3] == r for key in ship)]
    lines = [("| rule, seeds per arm | right voice ships (mean of 7; weakest gate) | another author's voice ships "
              "(mean; worst pair) | A-vs-A VOICE PASS (mean; worst gate and split) |"), "|---|---|---|---|"]
    for rid in rules:
        for k in KS:
            right = [statistics.mean(ship[(a, k, RIGHT[a], rid)]) for a in gates]
            wrong = [s for (a, kk, c, r), v in ship.items() if kk == k and r == rid and c != RIGHT[a] for s in v]
            fp = [s for (a, kk, r), v in aa.items() if kk == k and r == rid for s in v]
            lines.append(f"| {rid}, {k} | {statistics.mean(right):.3f}; {min(right):.3f} | "
                         f"{statistics.mean(wrong):.3f}; {max(wrong):.3f} | {statistics.mean(fp):.3f}; {max(fp):.3f} |")
    lines += per_gate_lines(gates, KS, rules, lambda a, k, rid: statistics.mean(ship[(a, k, RIGHT[a], rid)]))
    lines += ["", ("right voice ships, calibrate's 95% interval (the pilot's sampling included), mean low - high "
                   "over the 7 gates and both splits, and how many of the 14 hold the other split's share:")]
    for rid in rules:
        cells = []
        for k in KS:
            pairs = [(width[(a, k, rid)], ship[(a, k, RIGHT[a], rid)]) for a in gates]
            lows = [lo for w, _ in pairs for lo, _ in w]
            highs = [hi for w, _ in pairs for _, hi in w]
            held = sum(w[i][0] <= s[1 - i] <= w[i][1] for w, s in pairs for i in (0, 1))
            cells.append(f"K={k} {statistics.mean(lows):.3f} - {statistics.mean(highs):.3f} ({held}/14)")
        lines.append(f"  {rid}: " + "; ".join(cells))
    lines += ["", "A-vs-A NOT-SPECIFIC (mean of 7 gates x 2 splits; worst): " + "; ".join(
        f"{rid} K={k} {statistics.mean(nearer[(k, rid)]):.4f} ({max(nearer[(k, rid)]):.3f})"
        for rid in t_rules for k in KS)]
    return "\n".join(lines)


def measure_looks(root: Path, gates: dict[str, str], looks: tuple[int, ...], draws: int, seed: int,
                  log: Any = print) -> str:
    """calibrate --seeds 3 --looks `looks` on every gate: the sequential design's table."""
    from voicegate.gate import calibrate

    lines, right, wrong, fresh = [], [], [], []
    for author, gate in gates.items():
        start = time.perf_counter()
        sq = calibrate(root, gate, seeds=3, draws=draws, rng_seed=seed, looks=looks, write=False).sequential
        log(f"  calibrate {gate} --seeds 3 --looks {','.join(map(str, looks))} --draws {draws}: "
            f"{time.perf_counter() - start:.1f} s")
        for c in sq.candidates:
            (right if c.name == RIGHT[author] else wrong).append(c)
            if c.name == RIGHT[author]:
                stops = ", ".join(f"{s.share:.2f}" for s in c.stops)
                lines.append(f"  {gate:22s} {c.name:20s} ships {c.passes.text()}  {c.expected_seeds:5.2f} seeds  "
                             f"stops {stops}")
        fresh += list(sq.a_vs_a)
    mean = statistics.fmean
    worst = max(wrong, key=lambda c: c.passes.share)
    return "\n".join([
        (f"sequential design, looks {', '.join(map(str, looks))} (welch-t-min-effect, alpha 0.01), {draws} draws per "
        f"gate (calibrate --seed {seed}); per gate, the right voice: would ship [95%], seeds per arm on average, "
        "share stopping at each look"),
        *lines,
        (f"right voice ships (mean of {len(right)}): {mean(c.passes.share for c in right):.3f}; seeds per arm "
        f"{mean(c.expected_seeds for c in right):.2f}"),
        (f"another author's voice ships (mean of {len(wrong)}; worst): {mean(c.passes.share for c in wrong):.3f}; "
        f"{worst.passes.share:.3f} ({worst.name}); seeds per arm {mean(c.expected_seeds for c in wrong):.2f}"),
        (f"A-vs-A false pass (mean of {len(fresh)}; worst): {mean(a.passes.share for a in fresh):.4f}; "
        f"{max(a.passes.share for a in fresh):.4f}; seeds per arm {mean(a.expected_seeds for a in fresh):.2f}"),
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0, help="calibrate's --seed")
    parser.add_argument("--per-gate", action="store_true", help="also print each gate's right-voice rates")
    parser.add_argument("--keep", type=Path, default=None, help="build (or reuse) the workspace here and keep it")
    parser.add_argument("--splits", action="store_true", help="both splits of the base's pools, averaged (validity.md)")
    parser.add_argument("--voice", nargs="*", default=[], metavar="KEY=VALUE",
                        help="voice keys of every gate (a candidate ruler: mfw=2000); values read as YAML")
    parser.add_argument("--looks", default=None, metavar="N,N,...",
                        help="simulate this sequential design (welch-t-min-effect deciding) via calibrate --looks")
    args = parser.parse_args()
    voice = {k: yaml.safe_load(v) for k, v in (kv.split("=", 1) for kv in args.voice)}
    looks = None if args.looks is None else tuple(int(n) for n in args.looks.split(","))
    rule = None if looks is None else "welch-t-min-effect"
    if not CORPUS.is_dir() or not SWEEP.is_file():
        raise SystemExit(f"skipped: needs {CORPUS} and {SWEEP}")
    root = args.keep or Path(tempfile.mkdtemp(prefix="vg-bench-operating-"))
    try:
        reuse = (root / "preregistrations").is_dir()
        start = time.perf_counter()
        gates = ({a: s["gate"] for a, s in gate_specs(voice).items()} if reuse else
                 build(root, voice=voice, rule=rule))
        print(f"workspace {'reused' if reuse else 'built'} in {time.perf_counter() - start:.0f} s: {root}")
        if looks is not None:
            print(measure_looks(root, gates, looks, args.draws, args.seed))
            return
        if args.splits:
            print(splits(root, gates, args.draws, args.seed))
            return
        results, seconds = measure(root, gates, args.draws, args.seed)
        print()
        print(f"seven pilot gates, 48 seeds per arm; {args.draws} draws per gate and K (calibrate --seed "
              f"{args.seed}); 'ships' = calibrate's would-ship (VOICE PASS + SPECIFIC under the rule, "
              "copying/damage on all seeds)")
        print(table(results, per_gate=args.per_gate))
        print()
        per_k = {k: [s for (a, kk), s in seconds.items() if kk == k] for k in KS}
        print("calibrate wall time per gate (measure once + draws; median, max): " + "; ".join(
            f"K={k} {statistics.median(v):.1f} s, {max(v):.1f} s" for k, v in per_k.items()))
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
