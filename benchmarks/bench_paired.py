"""Benchmark: the prompt-paired rule's error rates on the tiny voices' seed sweep, beside welch-t's, via `calibrate`.

The seven 48-seed pilot gates of ``bench_operating.py`` (same workspace, same A-vs-A arm), each prompt's own
distance for every (arm, seed) measured once (``scoring.measure_gate(..., parts=True)``), then draws of K seeds
per arm decided by ``gate.decide_draws`` (``scoring.decide`` and ``scoring.specificity``: the code path of every
verdict) under welch-t, welch-t-min-effect and prompt-paired, on both splits of the base's 96 pools (base 1-48 /
A-vs-A 49-96 and the other way round), averaged. Per rule and K:

- right voice ships: would-ship share of the gate author's own voice (mean of 7 gates; weakest gate);
- right voice's axes: the same voice's VOICE PASS share and its SPECIFIC share apart (mean of 7 gates): where
  what does not ship is lost (a ship needs both);
- another author's voice ships: mean over the 22 wrong (gate, voice) pairs; worst pair;
- A-vs-A VOICE PASS: the A-vs-A arm's VOICE PASS share (mean of 7 gates x 2 splits; worst);
- A-vs-A ships: the A-vs-A arm decided as a candidate, VOICE PASS and SPECIFIC under the rule (the base's own
  weights copy nothing and damage nothing): what a gate would ship with no voice at all;
- paired rule fell back: the share of the A-vs-A draws where the seed x prompt-group check failed and
  welch-t-min-effect's floor decided.

    python benchmarks/bench_paired.py [--draws 500] [--seed 0] [--ks 3,5,8] [--keep DIR] [--voice KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_operating import A_VS_A, CORPUS, RIGHT, SWEEP, build, gate_specs, per_gate_lines, swapped

RULES = ("welch-t", "welch-t-min-effect", "prompt-paired")


def a_vs_a_draws(spec: Any, dist: Any, toward: Any, parts: Any, k: int, draws: int, seed: int) -> dict[str, Any]:
    """The A-vs-A arm as a candidate, per rule: VOICE PASS, ships (VOICE PASS and SPECIFIC), and how often the
    paired rule fell back to welch-t-min-effect's floor, over `draws` draws of K seeds per arm."""
    import numpy as np

    from voicegate.scoring import decide, specificity
    from voicegate.spec import Effect, fallback_note, flip_seed

    rng = np.random.default_rng(seed)
    flips = flip_seed(spec.gate)
    passed = dict.fromkeys(RULES, 0)
    ships = dict.fromkeys(RULES, 0)
    fell_back = 0
    arms = ("base", A_VS_A)
    for _ in range(draws):
        pick = {arm: [int(s) for s in rng.permutation(sorted(dist[arm]))[:k]] for arm in arms}
        sub = {arm: {s: dist[arm][s] for s in pick[arm]} for arm in arms}
        imps = {n: {arm: {s: d[arm][s] for s in pick[arm]} for arm in arms} for n, d in toward.items()}
        gate_parts = parts[spec.author]
        decision = decide(sub, "base", [A_VS_A], rule=RULES[0], rules=RULES, digits=None,
                          smallest_effect=spec.smallest_effect, prompts=gate_parts, flip_seed=flips)
        axis = specificity(sub, imps, "base", A_VS_A, author=spec.author, decides=True, rule=RULES[0], rules=RULES,
                           digits=None, smallest_effect=spec.smallest_effect, prompts=parts, flip_seed=flips)
        c = decision.candidates[0]
        for rid in RULES:
            passed[rid] += c.voice[rid] == "PASS"
            ships[rid] += c.voice[rid] == "PASS" and axis.under(rid) == "SPECIFIC"
        fell_back += fallback_note("prompt-paired", sub, "base", A_VS_A, Effect(prompts=gate_parts)) is not None
    return {"pass": {r: n / draws for r, n in passed.items()}, "ships": {r: n / draws for r, n in ships.items()},
            "fell_back": fell_back / draws}


def run(root: Path, gates: dict[str, str], ks: tuple[int, ...], draws: int, seed: int, log: Any = print) -> str:
    from voicegate.gate import load_generations
    from voicegate.gate._calibrate import decide_draws
    from voicegate.scoring import measure_gate
    from voicegate.spec import load_spec

    ship: dict[tuple[str, int, str, str], list[float]] = {}
    axes: dict[tuple[str, int, str], list[tuple[float, float]]] = {}
    aa: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for author, gate in gates.items():
        spec = load_spec(root, gate)
        start = time.perf_counter()
        m = measure_gate(spec, load_generations(spec), cache_dir=spec.run.cache, write_cache=True, parts=True)
        log(f"  {gate}: measured in {time.perf_counter() - start:.0f} s")
        both = ((m.distances, m.toward, m.parts),
                (swapped(m.distances), {n: swapped(t) for n, t in m.toward.items()},
                 {n: swapped(p) for n, p in m.parts.items()}))
        for dist, toward, parts in both:
            for k in ks:
                start = time.perf_counter()
                cal = decide_draws(spec, dist, toward, copying=m.copying, damage=m.damage, seeds=k, draws=draws,
                                   rng_seed=seed, rules=RULES, parts=parts)
                for c in cal.candidates:
                    for rid in cal.rules:
                        ship.setdefault((author, k, c.name, rid), []).append(c.would_ship[rid].share)
                        if c.name == RIGHT[author] and c.specific is not None:
                            axes.setdefault((author, k, rid), []).append((c.voice_pass[rid].share,
                                                                          c.specific[rid].share))
                aa.setdefault((author, k), []).append(a_vs_a_draws(spec, dist, toward, parts, k, draws, seed))
                log(f"  {gate} K={k}: {time.perf_counter() - start:.0f} s")
    lines = [("| rule, seeds per arm | right voice ships (mean of 7; weakest gate) | another author's voice ships "
              "(mean; worst pair) | A-vs-A VOICE PASS (mean; worst gate and split) | A-vs-A ships (mean; worst) |"),
             "|---|---|---|---|---|"]
    for rid in RULES:
        for k in ks:
            right = [statistics.mean(ship[(a, k, RIGHT[a], rid)]) for a in gates]
            wrong = [statistics.mean(v) for (a, kk, c, r), v in ship.items() if kk == k and r == rid and c != RIGHT[a]]
            fp = [x["pass"][rid] for (a, kk), v in aa.items() if kk == k for x in v]
            fs = [x["ships"][rid] for (a, kk), v in aa.items() if kk == k for x in v]
            lines.append(f"| {rid}, {k} | {statistics.mean(right):.3f}; {min(right):.3f} | "
                         f"{statistics.mean(wrong):.4f}; {max(wrong):.3f} | {statistics.mean(fp):.4f}; {max(fp):.3f} "
                         f"| {statistics.mean(fs):.4f}; {max(fs):.3f} |")
    lines += per_gate_lines(gates, ks, RULES, lambda a, k, rid: statistics.mean(ship[(a, k, RIGHT[a], rid)]))
    lines += ["", "right voice's axes apart, K = " + " / ".join(map(str, ks)) + " (mean of 7 gates, both splits): "
              "VOICE PASS; SPECIFIC"]
    for rid in RULES:
        lines.append(f"  {rid:20s} " + "; ".join(
            " / ".join(f"{statistics.mean(x[i] for a in gates for x in axes[(a, k, rid)]):.3f}" for k in ks)
            for i in (0, 1)))
    fell = {k: statistics.mean(x["fell_back"] for (a, kk), v in aa.items() if kk == k for x in v) for k in ks}
    lines += ["", "prompt-paired fell back to welch-t-min-effect (A-vs-A draws; mean of 7 gates x 2 splits): "
              + "; ".join(f"K={k} {f:.3f}" for k, f in fell.items())]
    return "\n".join(lines)


def sweep_main(doc: str, run_one: Callable[..., str], *, draws: int, ks: str, prefix: str,
               after: Callable[[], str] | None = None) -> None:
    """The command line of a bench over the seven 48-seed pilot gates: builds (or reuses, --keep) their
    workspace, prints `run_one`'s table for each K, then `after()` when given."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=draws)
    parser.add_argument("--seed", type=int, default=0, help="calibrate's --seed")
    parser.add_argument("--ks", default=ks, help="seeds per arm, comma-separated")
    parser.add_argument("--keep", type=Path, default=None, help="build (or reuse) the workspace here and keep it")
    parser.add_argument("--voice", nargs="*", default=[], metavar="KEY=VALUE",
                        help="voice keys of every gate (a candidate ruler: view=stylometric-wide); values read as YAML")
    args = parser.parse_args()
    voice = {k: yaml.safe_load(v) for k, v in (kv.split("=", 1) for kv in args.voice)}
    if not CORPUS.is_dir() or not SWEEP.is_file():
        raise SystemExit(f"skipped: needs {CORPUS} and {SWEEP}")
    root = args.keep or Path(tempfile.mkdtemp(prefix=prefix))
    try:
        reuse = (root / "preregistrations").is_dir()
        gates = {a: s["gate"] for a, s in gate_specs(voice).items()} if reuse else build(root, voice=voice)
        ruler = "".join(f"; voice {k}={v}" for k, v in voice.items())
        print(f"seven pilot gates, 48 seeds per arm; {args.draws} draws per gate, K and split "
              f"(--seed {args.seed}){ruler}")
        print(run_one(root, gates, tuple(int(k) for k in args.ks.split(",")), args.draws, args.seed))
        if after is not None:
            print(after())
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    sweep_main(__doc__ or "", run, draws=500, ks="3,5,8", prefix="vg-bench-paired-")


if __name__ == "__main__":
    main()
