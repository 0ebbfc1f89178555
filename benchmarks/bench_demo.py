"""How long does `voicegate demo` take, whole command, against its 60 s budget on 2 cores?

    python benchmarks/bench_demo.py [--runs 3]

Each run is `python -m voicegate demo DIR` in a fresh temp directory (process start,
workspace, embedded stand-in seat, register -> generate -> score -> ship -> amend ->
verify -> report). A baseline measured in the same run, `python -m voicegate --help`,
shows how much of it is interpreter start and imports.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUDGET_S = 60.0


def _timed(args: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "voicegate", *args], check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    baseline = statistics.median(_timed(["--help"]) for _ in range(args.runs))
    walls = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            walls.append(_timed(["demo", str(Path(tmp) / "demo")]))
    demo = statistics.median(walls)
    print(f"voicegate --help (baseline):  {baseline:6.2f} s")
    print(f"voicegate demo (median of {args.runs}): {demo:6.2f} s  = {demo / baseline:.0f}x the baseline, "
          f"{demo / BUDGET_S:.2f}x the {BUDGET_S:.0f} s budget")


if __name__ == "__main__":
    main()
