"""Benchmark: how often `calibrate`'s 95% interval holds a K-seed gate's true rate, over simulated pilots.

Each pilot is drawn from a known generating model (normal per-seed distances: base and A-vs-A arm at 1.0, the
candidate `--delta` base-seed SDs nearer the author, SD 0.1 for every arm); the true rates are those of an
`--truth-seeds`-seed pilot decided `--truth-draws` times (a bootstrap of so many seeds is the model itself, to
its Monte Carlo error). Every simulated pilot is calibrated through `gate.decide_draws` (the product's path:
`scoring.decide` and `scoring.specificity`); the script prints, per rule, the true power and A-vs-A false-pass
rate and the share of pilots whose interval holds them, beside the share the draws' own Wilson interval (what
`calibrate` printed before its intervals included the pilot's sampling) holds.

    PYTHONPATH=. python benchmarks/bench_calibrate_coverage.py [--pilots 200] [--pilot-seeds 24 48] [--k 3 5 8]
        [--draws 1000] [--delta 1.2]

`tests/scoring/test_calibrate_intervals.py` is the fast version (30 pilots of 24 seeds, K = 5, 200 draws).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main() -> None:
    import numpy as np
    from helpers.workspace import constructed_spec, make_workspace

    from voicegate.gate._calibrate import Share, decide_draws
    from voicegate.spec import load_spec

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pilots", type=int, default=200)
    ap.add_argument("--pilot-seeds", type=int, nargs="+", default=[24, 48])
    ap.add_argument("--k", type=int, nargs="+", default=[3, 5, 8])
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--delta", type=float, default=1.2, help="the candidate's voice, in base-seed SDs")
    ap.add_argument("--truth-seeds", type=int, default=1000)
    ap.add_argument("--truth-draws", type=int, default=5000)
    args = ap.parse_args()
    model = {"base": (1.0, 0.1), "cand": (1.0 - 0.1 * args.delta, 0.1), "aa": (1.0, 0.1)}
    ok = {"copying": {"cand": "NOT-COPIED"}, "damage": {"cand": "NO-DAMAGE"}}

    def pilot(seed: int, n: int) -> dict[str, dict[int, float]]:
        rng = np.random.default_rng(seed)
        return {arm: {s: float(rng.normal(m, sd)) for s in range(1, n + 1)} for arm, (m, sd) in model.items()}

    with tempfile.TemporaryDirectory(prefix="vg-bench-coverage-") as tmp:
        raw = constructed_spec(arms=("cand",))
        raw["arms"].append({"name": "aa", "model": "base", "role": "a-vs-a"})
        make_workspace(Path(tmp) / "ws", raw, corpora={"corpora/held/h.txt": "a b c " * 50,
                                                       "corpora/train/t.txt": "a b " * 50,
                                                       "corpora/bg/b.txt": "c d " * 50})
        spec = load_spec(Path(tmp) / "ws", raw["gate"])
        print("| pilot seeds | K | rule | true power | held (draws' Wilson) | true false pass | held (draws' Wilson) |")
        print("|---|---|---|---|---|---|---|")
        for k in args.k:
            truth = decide_draws(spec, pilot(10 ** 6, args.truth_seeds), {}, **ok, seeds=k, draws=args.truth_draws)
            for n in args.pilot_seeds:
                held: dict[tuple[str, str], list[int]] = {}
                for p in range(args.pilots):
                    cal = decide_draws(spec, pilot(p, n), {}, **ok, seeds=k, draws=args.draws, rng_seed=p)
                    for rid in cal.rules:
                        for what, share, true in (
                                ("power", cal.candidates[0].would_ship[rid], truth.candidates[0].would_ship[rid]),
                                ("false", cal.a_vs_a["aa"][rid], truth.a_vs_a["aa"][rid])):
                            w = Share.of(share.count, share.draws)
                            h = held.setdefault((rid, what), [0, 0])
                            h[0] += share.low <= true.share <= share.high
                            h[1] += w.low <= true.share <= w.high
                for rid in truth.rules:
                    cells = []
                    for what, true in (("power", truth.candidates[0].would_ship[rid]),
                                       ("false", truth.a_vs_a["aa"][rid])):
                        a, b = held[(rid, what)]
                        cells += [f"{true.share:.3f}", f"{a / args.pilots:.2f} ({b / args.pilots:.2f})"]
                    print(f"| {n} | {k} | {rid} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
