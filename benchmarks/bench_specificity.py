"""Benchmark: the first `voicegate score` with six impostors against the same gate without them (issue 23).

Two gates in one throwaway workspace, identical but for `corpora.impostors`: Charlotte Brontë's gate on
the trained tiny voices (base, lv-bronte-ckpt475, lv-bronte-ckpt925, lv-anne, lv-austen; the fixture's
check texts imported: 600 generations), one without impostors and one with six (Anne Brontë, Austen,
Dickens, Eliot, Thackeray, Trollope: each their own ruler). In the same run, interleaved, it times

- `voicegate register` of each (which warms the corpus side of the cache: every ruler, each impostor's too);
- the first `python -m voicegate score GATE --json` after it, as a subprocess (the whole command);
- the warm score (median of `--warm-runs`).

and prints the ratio with / without for each. The issue's goal: first score with six impostors ≤ 2×.

    python benchmarks/bench_specificity.py [--warm-runs 3] [--rounds 2] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
from helpers.authors import VOICES, author_spec, check_rows, skip_reason

CANDIDATES = ("lv-bronte-ckpt475", "lv-bronte-ckpt925", "lv-anne", "lv-austen")


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)


def _voicegate(root: Path, *args: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "voicegate", *args, "-C", str(root)], capture_output=True,
                          text=True, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"voicegate {' '.join(args)} failed: {done.stderr.strip()}")
    return took


def _workspace(root: Path, tag: str) -> tuple[str, str]:
    """Both gates of one round (fresh names, so each register and first score starts from nothing)."""
    gates = {}
    for kind, impostors in (("plain", ()), ("impostors", None)):
        spec = author_spec("Charlotte Bronte", CANDIDATES, impostors=impostors)
        spec["gate"] = gate = f"lv-charlotte-{kind}-{tag}"
        spec["artifacts"]["record"] = f"gates/{gate}.md"
        spec["data_dir"] = f"runs/{kind}"  # a cache of its own: neither gate warms the other's
        (root / "preregistrations" / f"{gate}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
        gates[kind] = gate
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", f"round {tag}")
    return gates["plain"], gates["impostors"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warm-runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2, help="fresh pairs of gates, each timed plain then impostors")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    reason = skip_reason()
    if reason:
        raise SystemExit(f"skipped: {reason}")
    root = Path(tempfile.mkdtemp(prefix="vg-bench-spec-"))
    try:
        _git(root, "init", "-q")
        for d in ("prompts", "preregistrations", "gates"):
            (root / d).mkdir()
        (root / "prompts" / "tiny-voices.txt").write_text((VOICES / "prompts.txt").read_text(encoding="utf-8"),
                                                          encoding="utf-8")
        (root / ".gitignore").write_text("runs/\n", encoding="utf-8")
        source = root / "rows.jsonl"
        source.write_text("".join(json.dumps(r) + "\n" for r in check_rows(CANDIDATES)), encoding="utf-8")
        times: dict[str, dict[str, list[float]]] = {k: {"register": [], "first": [], "warm": []}
                                                    for k in ("plain", "impostors")}
        for n in range(args.rounds):
            # Fresh data dirs per round: each gate's cache is cold before its register.
            shutil.rmtree(root / "runs", ignore_errors=True)
            gates = dict(zip(("plain", "impostors"), _workspace(root, str(n)), strict=True))
            order = ("plain", "impostors") if n % 2 == 0 else ("impostors", "plain")
            for kind in order:
                times[kind]["register"].append(_voicegate(root, "register", gates[kind]))
                _voicegate(root, "import", gates[kind], str(source))
                times[kind]["first"].append(_voicegate(root, "score", gates[kind], "--json"))
            for _ in range(args.warm_runs):
                for kind in order:
                    times[kind]["warm"].append(_voicegate(root, "score", gates[kind], "--json", "--dry-run"))
        print(f"Charlotte Brontë gate, {len(CANDIDATES)} candidates + base, 600 imported generations; "
              f"{args.rounds} rounds, interleaved; wall seconds (median)")
        print(f"{'':28s}{'no impostors':>14s}{'6 impostors':>14s}{'ratio':>8s}")
        for what, label in (("register", "register (warms the cache)"), ("first", "first score after register"),
                            ("warm", "warm score")):
            a, b = statistics.median(times["plain"][what]), statistics.median(times["impostors"][what])
            print(f"{label:28s}{a:14.2f}{b:14.2f}{b / a:7.2f}x")
        print("(each gate has its own cache, cold before its register: register tokenizes every corpus file)")
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
