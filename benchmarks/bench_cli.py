"""Benchmark: what `voicegate --help` costs over a bare python start.

In the same run, interleaved (so a load spike from other jobs hits every command alike),
`--runs` repeats each of, hyperfine-style:

- `python3 -c pass` (the bare interpreter: the baseline);
- `python3 -m voicegate --help`;
- the `voicegate` entry point's script run by that same python (`python3 <bin>/voicegate --help`:
  the console script without a pyenv/venv shim in front of it);
- `python3 -m voicegate --version`, `python3 -m voicegate score --help`.

Prints median and min wall time, median CPU (user + sys), and each command's difference from
bare python (the goal: `--help` at most 0.3 s over it).

    python benchmarks/bench_cli.py [--runs 20] [--no-bytecode]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_S = 0.3


def _entry_point() -> Path | None:
    """The `voicegate` console script (a python file), when installed; a shell shim is looked through."""
    for candidate in (Path(sys.executable).parent / "voicegate", shutil.which("voicegate")):
        if candidate is None:
            continue
        path = Path(candidate)
        try:
            head = path.read_bytes()[:200]
        except OSError:
            continue
        if head.startswith(b"#!") and b"python" in head.splitlines()[0]:
            return path
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--no-bytecode", action="store_true",
                    help="compile every module from source every run (PYTHONDONTWRITEBYTECODE=1, the fleet's "
                         "sandboxes); default: .pyc kept in a temporary directory")
    args = ap.parse_args()
    py = sys.executable
    commands: dict[str, list[str]] = {
        "python3 -c pass": [py, "-c", "pass"],
        "python3 -m voicegate --help": [py, "-m", "voicegate", "--help"],
    }
    entry = _entry_point()
    if entry is not None:
        commands["voicegate --help (entry point)"] = [py, str(entry), "--help"]
    commands["python3 -m voicegate --version"] = [py, "-m", "voicegate", "--version"]
    commands["python3 -m voicegate score --help"] = [py, "-m", "voicegate", "score", "--help"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOICEGATE_")}
    cache = tempfile.mkdtemp(prefix="vg-bench-cli-")
    if args.no_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:  # .pyc kept, outside the source tree, as an ordinary install keeps them
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache
    wall: dict[str, list[float]] = {k: [] for k in commands}
    cpu: dict[str, list[float]] = {k: [] for k in commands}
    for cmd in commands.values():  # one warm-up each: .pyc files, the page cache
        subprocess.run(cmd, capture_output=True, env=env, check=True)
    for _ in range(args.runs):
        for name, cmd in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(cmd, capture_output=True, env=env, check=True)
            wall[name].append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    bare = statistics.median(wall["python3 -c pass"])
    bare_min = min(wall["python3 -c pass"])
    shutil.rmtree(cache, ignore_errors=True)
    print(f"{args.runs} runs each, interleaved; load average {os.getloadavg()[0]:.2f} (2 shared cores); "
          + ("no bytecode cache" if args.no_bytecode else ".pyc kept"))
    print(f"{'command':36s} {'median':>8s} {'min':>8s} {'cpu':>8s} {'over bare (median / min)':>26s}")
    for name in commands:
        med, low, c = statistics.median(wall[name]), min(wall[name]), statistics.median(cpu[name])
        over = "" if name == "python3 -c pass" else f"+{med - bare:.3f} s / +{low - bare_min:.3f} s"
        print(f"{name:36s} {med:7.3f}s {low:7.3f}s {c:7.3f}s {over:>26s}")
    help_over = statistics.median(wall["python3 -m voicegate --help"]) - bare
    met = "met" if help_over <= GOAL_S else "NOT met"
    print(f"--help over bare python: {help_over:.3f} s (goal <= {GOAL_S} s): {met}")
    if entry is None:
        print("(no `voicegate` console script found beside this python: entry point not measured)")


if __name__ == "__main__":
    main()
