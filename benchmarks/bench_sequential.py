"""Benchmark (a design study): a group-sequential design for welch-t-min-effect, by simulation.

The design study behind `floor.looks` (registered from `voicegate/spec/_sequential.py`, the same simulation with
futility 0.5 · n_1/n_k: 0.1875 at the third look where this study has 0.2). Per-seed distances
are simulated in units of the base's per-seed SD (base N(0, 1), candidate N(−δ, 1): equal spreads, as the
sweep's arms roughly have), and at each look (3, 5, 8, 12 seeds per arm) the statistic is welch-t-min-effect's:
T = (delta_cb − ε·SD(base)) / SE with Welch's SE, ε = 0.2, turned into its one-sided p-value on 2n − 2 degrees
of freedom. The design stops with PASS at the first look where p < a_k, with FAIL (futility) where p > g_k, and
decides at the last look by p < a_K.

- Efficacy: a_k = Φ(−C·(12/n_k)^0.25) (Wang–Tsiatis, Δ = 0.25: between Pocock's flat and O'Brien–Fleming's
  steep boundaries), C found by bisection so that the false-pass rate at δ = ε (the null's boundary) is at most
  α = 0.01 on `--runs` simulated runs; futility g = 0.5, 0.3, 0.2 at the first three looks (binding).
- Checked on fresh runs (another seed): the false pass at δ = ε and at δ = 0 (A-vs-A), with a 95% Wilson
  interval; the smallest detectable effect δ* (power 0.8 of this design); expected seeds per arm at δ = 0, δ*
  and 2δ*, against the fixed design with the same maximum (12 seeds) and against the smallest fixed design with
  the same power at δ*.

    python benchmarks/bench_sequential.py [--runs 100000] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
from typing import Any

LOOKS = (3, 5, 8, 12)
EPS = 0.2
ALPHA = 0.01
FUTILITY = (0.5, 0.3, 0.2)
SHAPE = 0.25


def statistics(delta: float, runs: int, seed: int, looks: tuple[int, ...] = LOOKS) -> Any:
    """runs x looks one-sided p-values of welch-t-min-effect's test at each look: the simulation `register`
    fixes its boundaries with (voicegate/spec/_sequential.py), so the study and the product cannot drift."""
    from voicegate.spec._sequential import simulated_p

    return simulated_p(looks, runs, seed, delta, EPS)


def decide(p: Any, efficacy: list[float], futility: tuple[float, ...] = FUTILITY,
           looks: tuple[int, ...] = LOOKS) -> tuple[Any, Any]:
    """(passed, seeds used) per run."""
    import numpy as np

    runs = p.shape[0]
    decided = np.zeros(runs, bool)
    passed = np.zeros(runs, bool)
    used = np.full(runs, looks[-1])
    for k, n in enumerate(looks):
        yes = ~decided & (p[:, k] < efficacy[k])
        no = ~decided & ~yes & (p[:, k] > futility[k] if k < len(looks) - 1 else True)
        passed |= yes
        used[yes | no] = n
        decided |= yes | no
    return passed, used


def boundaries(null: Any, looks: tuple[int, ...] = LOOKS) -> list[float]:
    """The efficacy levels a_k whose false-pass rate on `null` is at most α (bisection on C)."""
    from scipy.stats import norm

    lo, hi = 0.5, 8.0
    for _ in range(50):
        mid = (lo + hi) / 2
        passed, _ = decide(null, [float(norm.sf(mid * (looks[-1] / n) ** SHAPE)) for n in looks])
        lo, hi = (mid, hi) if passed.mean() > ALPHA else (lo, mid)
    return [float(norm.sf(hi * (looks[-1] / n) ** SHAPE)) for n in looks]


def fixed_power(delta: float, n: int, runs: int, seed: int) -> float:
    """The fixed design's power at `n` seeds per arm: welch-t-min-effect at α."""
    p = statistics(delta, runs, seed, looks=(n,))[:, 0]
    return float((p < ALPHA).mean())


def wilson(k: int, n: int) -> tuple[float, float]:
    z = 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    runs, seed = args.runs, args.seed
    efficacy = boundaries(statistics(EPS, runs, seed))
    lo, hi = 0.2, 5.0
    for _ in range(22):  # δ* of the sequential design: power 0.8
        mid = (lo + hi) / 2
        passed, _ = decide(statistics(mid, runs // 5, seed + 1), efficacy)
        lo, hi = (mid, hi) if passed.mean() < 0.8 else (lo, mid)
    dstar = hi
    n_same_power = next(n for n in range(3, 100) if fixed_power(dstar, n, runs // 5, seed + 2) >= 0.8)
    print(f"looks {LOOKS} seeds per arm; efficacy p < " + ", ".join(f"{a:.5f}" for a in efficacy)
          + f"; futility p > {', '.join(map(str, FUTILITY))}; {runs:,} runs a row (seed {seed}, checked on seed "
          f"{seed + 3})")
    print(f"smallest detectable effect δ* (power 0.8): {dstar:.2f} base-seed SDs; the fixed design with that power "
          f"needs {n_same_power} seeds")
    print("| true δ (base-seed SDs) | PASS | expected seeds | vs fixed 12 | vs fixed same power |")
    print("|---|---|---|---|---|")
    for label, delta in (("0 (A-vs-A)", 0.0), (f"ε = {EPS} (null's boundary)", EPS), (f"δ* = {dstar:.2f}", dstar),
                         (f"2δ* = {2 * dstar:.2f}", 2 * dstar)):
        passed, used = decide(statistics(delta, runs, seed + 3), efficacy)
        k = int(passed.sum())
        low, high = wilson(k, runs)
        print(f"| {label} | {k / runs:.4f} [{low:.4f}, {high:.4f}] | {used.mean():.2f} | {used.mean() / 12:.2f}x | "
              f"{used.mean() / n_same_power:.2f}x |")


if __name__ == "__main__":
    main()
