"""How close does `generate` keep a seat to busy, and what do seat-integrity checks cost?

A stand-in seat with N decode slots and a fixed time per token does
``sum(overhead + tokens * t)`` seconds of work over a run; spread perfectly over
N slots that is the ideal makespan, ``work / N``. ``generate`` with N requests
in flight should come close: the goal is wall / ideal <= 1.10. The integrity
references (each arm's canaries alone on the seat, issue 16) cannot share the
seat by design, so the ideal counts them as they must run: one arm's wave at a
time, each as long as its longest canary.

Two wall times are reported: the whole ``generate()`` call (seat checks,
adapter load/unload, manifest, fsync'd rows included) and the seat's busy span
(first request in to last answer out).

With ``--compare-isolate`` (the default of ``main``) the same gate is generated
twice on fresh workspaces, arms mixed (the default) and ``--isolate-arms``
(waves of one arm, each drained before the next), and the makespan ratio
isolated / default is printed (goal <= 1.3x), with the canary overhead in
requests (canary requests / generation requests, goal <= 5%).

    python benchmarks/bench_generate.py [--slots 8] [--token-time 0.007] [--prompts 40] [--seeds 3]
    python benchmarks/bench_generate.py --fault-every 3 --runs 20   # detection rate, default budget

With ``--replicas 1,2,4`` the same gate runs over that many stand-in replicas (each
with ``--slots`` decode slots and the same time per token, kept at its own
concurrency): the makespan ratio against one replica (goal >= 1.8x at 2, >= 3.5x
at 4) and each replica's peak in-flight (= its concurrency) are printed; ``--arms 2`` runs the gate
with the base and one candidate (the default, 3, adds a candidate loaded at run time).

With ``--fault-every K`` the stand-in answers every K-th request that shares the
seat with another model with that model's weights; each of ``--runs`` default
runs (different seeds) reports whether the integrity check caught it.

The default time per token, 7 ms, is the seat's own measured base decode rate
(143 tok/s, DESIGN.md §5); 40 prompts x 3 seeds x 3 arms is the lv-bronte gate's size.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from helpers.workspace import gate_spec, registered_workspace

from voicegate.generate._generate import generate
from voicegate.seat import StandinSeat
from voicegate.spec._spec import load_spec

GATE = "lv-bench"


def bench(*, slots: int = 8, concurrency: int | None = None, token_time: float = 0.007,
          overhead: float = 0.0, prompts: int = 30, seeds: int = 3, workdir: Path | None = None,
          isolate: bool = False, wave_size: int | None = None, fault_every: int | None = None,
          seed_base: int = 101) -> dict[str, Any]:
    concurrency = concurrency or slots
    tmp = tempfile.TemporaryDirectory() if workdir is None else None
    root = Path(tmp.name if tmp else workdir) / ("ws-isolated" if isolate else "ws")
    try:
        with StandinSeat(adapters={f"{GATE}-ckpt475": "/adapters/b/ckpt475"}, slots=slots,
                         token_time=token_time, request_overhead=overhead, wrong_weights_every=fault_every) as seat:
            spec_dict = gate_spec(GATE, url=seat.url, seeds=[seed_base * (i + 1) for i in range(seeds)],
                                  concurrency=concurrency, max_tokens=64)
            registered_workspace(root, spec_dict,
                                 prompts=[f"Write scene {i} of the story, in the author's voice."
                                          for i in range(prompts)])
            spec = load_spec(root, GATE)
            t0 = time.monotonic()
            result = generate(spec, quiet=True, isolate_arms=isolate, wave_size=wave_size)
            wall = time.monotonic() - t0
            log = [e for e in seat.chat_log() if e["status"] == 200]
            canaries = [json.loads(line) for line in spec.run.canaries.read_text().splitlines()]
        service = [overhead + e["tokens"] * token_time for e in log]
        work = sum(service)
        refs = [c for c in canaries if c["phase"] == "reference"]
        # References run one arm at a time: each arm's wave lasts as long as its longest canary.
        ref_floor = sum(max(overhead + c["usage"]["completion_tokens"] * token_time for c in refs if c["arm"] == arm)
                        for arm in {c["arm"] for c in refs})
        ref_work = sum(overhead + c["usage"]["completion_tokens"] * token_time for c in refs)
        ideal = (work - ref_work) / slots + ref_floor
        first_in = min(e["time"] for e in log)
        # The log records arrival; the last answer leaves one request's service time after its arrival.
        busy = max(e["time"] + s for e, s in zip(log, service, strict=True)) - first_in
        # A reference that is a canary cell's real row (`real_row`) is a generation, no request of its own.
        asked = [c for c in canaries if not c.get("real_row")]
        canary_requests = len(asked)
        own_refs = sum(1 for c in asked if c["phase"] == "reference")
        return {
            "isolate_arms": isolate, "requests": result.generated, "canary_requests": canary_requests,
            "canary_references": own_refs, "canary_checks": canary_requests - own_refs,
            "canary_overhead": round(canary_requests / max(result.generated, 1), 4),
            # every canary request is in the 5% budget now (each arm's one reference ask of its own included)
            "canary_overhead_budgeted": round(canary_requests / max(result.generated, 1), 4),
            "integrity": "failed" if result.canaries.failed else "holds",
            "canaries_wrong": result.canaries.wrong,
            "slots": slots, "concurrency": concurrency, "token_time_s": token_time,
            "tokens": sum(e["tokens"] for e in log),
            "work_s": round(work, 3), "ideal_makespan_s": round(ideal, 3),
            "wall_s": round(wall, 3), "ratio": round(wall / ideal, 3),
            "seat_busy_s": round(busy, 3), "ratio_seat_busy": round(busy / ideal, 3),
            "peak_in_flight": seat.peak_in_flight, "peak_decoding": seat.peak_decoding,
            "shared_requests": seat.shared_requests,
        }
    finally:
        if tmp is not None:
            tmp.cleanup()


def scale(counts: list[int], *, slots: int = 8, token_time: float = 0.007, overhead: float = 0.0,
          prompts: int = 40, seeds: int = 3, max_tokens: int = 256, arms: int = 3, **_: Any) -> dict[str, Any]:
    """The same gate over 1, 2, 4... stand-in replicas (each `slots` wide, the same time per token).

    Every replica is kept at its own concurrency (= its slots); the makespan ratio is
    wall(1 replica) / wall(N replicas), measured in this run. Each answer is `max_tokens`
    long (a gate's generations: 40 prompts x 250 words), so the integrity references
    (32-token canaries, each arm alone on each replica) are the fixed cost they are in a gate.
    """
    out: dict[str, Any] = {"slots": slots, "token_time_s": token_time, "prompts": prompts, "seeds": seeds,
                           "arms": arms, "max_tokens": max_tokens, "runs": []}
    # 2 arms: the base and the served candidate; 3 (the default): and a candidate loaded at run time
    candidates = None if arms == 3 else [{"name": "ckpt475", "model": f"{GATE}-ckpt475", "role": "candidate"}]
    config = json.dumps({"adapters": {f"{GATE}-ckpt475": "/adapters/b/ckpt475"}, "slots": slots,
                         "token_time": token_time, "request_overhead": overhead, "full_length": True})
    for n in counts:
        with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
            # Each replica in its own process, as real replicas are: their work must not share our GIL.
            seats = [stack.enter_context(subprocess.Popen(
                [sys.executable, str(REPO / "benchmarks" / "_standin_process.py"), config],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)) for _ in range(n)]
            urls = [p.stdout.readline().strip() for p in seats if p.stdout is not None]
            spec_dict = gate_spec(GATE, url=urls[0], seeds=[101 * (i + 1) for i in range(seeds)],
                                  concurrency=slots, max_tokens=max_tokens, candidates=candidates)
            spec_dict["seat"]["replicas"] = urls
            root = Path(tmp) / "ws"
            registered_workspace(root, spec_dict,
                                 prompts=[f"Write scene {i} of the story, in the author's voice."
                                          for i in range(prompts)])
            spec = load_spec(root, GATE)
            t0 = time.monotonic()
            result = generate(spec, quiet=True)
            wall = time.monotonic() - t0
            counters = [json.loads(p.communicate()[0]) for p in seats]
            rows = [json.loads(line) for line in spec.generations_path.read_text().splitlines()]
            cells: dict[str, set[tuple[str, int, str]]] = {}
            for r in rows:
                cells.setdefault(r["replica"], set()).add((r["kind"], r["seed"], r["prompt_id"]))
            out["runs"].append({
                "replicas": n, "wall_s": round(wall, 3), "requests": result.generated,
                "peak_in_flight": [c["peak_in_flight"] for c in counters],
                "cells": [len(cells.get(u, ())) for u in urls],
                "tokens_per_s": [p["tokens_per_s"] for p in result.replicas],
            })
    base = out["runs"][0]["wall_s"]
    for r in out["runs"]:
        r["speedup"] = round(base / r["wall_s"], 3)
    return out


def compare(**kw: Any) -> dict[str, Any]:
    """The same gate, arms mixed and arms isolated: the makespan ratio and the canary overhead."""
    mixed = bench(**kw)
    isolated = bench(**kw, isolate=True)
    return {"default": mixed, "isolated": isolated,
            "makespan_ratio_wall": round(isolated["wall_s"] / mixed["wall_s"], 3),
            "makespan_ratio_seat_busy": round(isolated["seat_busy_s"] / mixed["seat_busy_s"], 3),
            "canary_overhead": mixed["canary_overhead"]}


def detection(runs: int, fault_every: int, **kw: Any) -> dict[str, Any]:
    """How often the default budget's canaries catch the fault, over `runs` runs with different seeds."""
    caught = []
    for i in range(runs):
        out = bench(**{**kw, "seeds": kw.get("seeds", 3)}, fault_every=fault_every, seed_base=1000 * (i + 1))
        caught.append(out["integrity"] == "failed")
    return {"runs": runs, "fault_every": fault_every, "caught": sum(caught), "detection_rate": sum(caught) / runs,
            "checks_per_run": out["canary_checks"], "requests_per_run": out["requests"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slots", type=int, default=8)
    ap.add_argument("--concurrency", type=int, default=None)
    ap.add_argument("--token-time", type=float, default=0.007)
    ap.add_argument("--overhead", type=float, default=0.0)
    ap.add_argument("--prompts", type=int, default=40)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--wave-size", type=int, default=None, help="an isolated wave's size (default 4 x concurrency)")
    ap.add_argument("--no-isolate", action="store_true", help="only the default run")
    ap.add_argument("--fault-every", type=int, default=None, help="measure detection of the wrong-weights fault")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--max-tokens", type=int, default=256, help="with --replicas: every answer's length")
    ap.add_argument("--arms", type=int, choices=(2, 3), default=3,
                    help="with --replicas: the base and one candidate (2), or two candidates (3, the default)")
    ap.add_argument("--replicas", default=None,
                    help="e.g. 1,2,4: the same gate over that many stand-in replicas; prints the makespan ratio "
                         "against the first count and each replica's peak in-flight")
    args = ap.parse_args()
    kw = {"slots": args.slots, "concurrency": args.concurrency, "token_time": args.token_time,
              "overhead": args.overhead, "prompts": args.prompts, "seeds": args.seeds}
    if args.replicas:
        counts = [int(x) for x in args.replicas.split(",")]
        found = scale(counts, **kw, max_tokens=args.max_tokens, arms=args.arms)
        print(json.dumps(found, indent=2))
        goals = {2: 1.8, 4: 3.5}
        for r in found["runs"]:
            goal = f" (goal >= {goals[r['replicas']]}x)" if r["replicas"] in goals else ""
            print(f"{r['replicas']} replica(s), {found['max_tokens']}-token answers at {1000 * args.token_time:g} ms "
                  f"per token: makespan {r['wall_s']:.2f}s, {r['speedup']:.2f}x against "
                  f"{counts[0]}{goal}; peak in flight per replica {r['peak_in_flight']} (concurrency "
                  f"{args.slots}); cells per replica {r['cells']}")
        return
    if args.fault_every:
        found = detection(args.runs, args.fault_every, **kw)
        print(json.dumps(found, indent=2))
        print(f"fault 1 in {args.fault_every}: caught in {found['caught']}/{found['runs']} default runs "
              f"({found['checks_per_run']} checks, {found['requests_per_run']} requests each)")
        return
    if args.no_isolate:
        out = bench(**kw)
        print(json.dumps(out, indent=2))
        print(f"wall / ideal makespan = {out['ratio']:.3f}x (goal <= 1.10x)", file=sys.stderr)
        return
    both = compare(**kw, wave_size=args.wave_size)
    print(json.dumps(both, indent=2))
    d, i = both["default"], both["isolated"]
    print(f"default: wall / ideal makespan = {d['ratio']:.3f}x (goal <= 1.10x)")
    print(f"--isolate-arms makespan / default = {both['makespan_ratio_wall']:.3f}x wall, "
          f"{both['makespan_ratio_seat_busy']:.3f}x seat busy (goal <= 1.3x)")
    print(f"canary overhead: {d['canary_requests']} canary requests ({d['canary_references']} references + "
          f"{d['canary_checks']} checks) for {d['requests']} generations = {100 * d['canary_overhead']:.1f}% "
          f"(goal <= 5%); isolated run: {i['canary_requests']} = {100 * i['canary_overhead']:.1f}%")


if __name__ == "__main__":
    main()
