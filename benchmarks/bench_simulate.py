"""Benchmark: `voicegate seat simulate` is linear in the prompts, and quick at 10,000 (issue 25, finding 10).

Builds throwaway workspaces of N prompts (base + 2 candidates, 2 seeds; default N = 1,000 and
10,000) and times `python -m voicegate seat simulate` on each, `--runs` times, interleaved.
Prints each size's median wall time and the ratio of the largest to the smallest: linear
in prompts means ratio <= size ratio (10x); a fixed-size dry run plus a linear schedule
reads well under it.

    PYTHONPATH=. python benchmarks/bench_simulate.py [--prompts 1000 10000] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def _workspace(root: Path, n: int) -> Path:
    from helpers.workspace import make_workspace

    make_workspace(root, prompts=[f"Write about the {i}th morning on the moor." for i in range(n)])
    return root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOICEGATE_")}
    with tempfile.TemporaryDirectory(prefix="vg-bench-simulate-") as tmp:
        roots = {n: _workspace(Path(tmp) / f"ws{n}", n) for n in args.prompts}
        wall: dict[int, list[float]] = {n: [] for n in args.prompts}
        for _ in range(args.runs):
            for n, root in roots.items():
                t0 = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "voicegate", "seat", "simulate", "lv-test"], cwd=root,
                                      env=env, capture_output=True, text=True, check=False)
                wall[n].append(time.perf_counter() - t0)
                if done.returncode != 0:
                    raise SystemExit(f"simulate failed at {n} prompts: {done.stderr}")
    print(f"{args.runs} runs each, interleaved; load average {os.getloadavg()[0]:.2f} (2 shared cores)")
    for n in args.prompts:
        print(f"{n:>8,} prompts ({n * 6:>7,} requests scheduled): median {statistics.median(wall[n]):6.2f} s, "
              f"min {min(wall[n]):6.2f} s")
    lo, hi = min(args.prompts), max(args.prompts)
    ratio = statistics.median(wall[hi]) / statistics.median(wall[lo])
    print(f"time ratio {hi:,} / {lo:,} prompts: {ratio:.2f}x (size ratio {hi / lo:g}x; linear means <= it)")


if __name__ == "__main__":
    main()
