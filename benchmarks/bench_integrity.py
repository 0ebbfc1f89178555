"""Does seat integrity catch a faulty seat, and never a clean one? (issue 25)

Each fault mode of the stand-in seat (`voicegate.seat._standin`) runs `runs` times
(20 by default), each run a fresh seat and a fresh generate session (new nonce: new
canaries, new positions), and the script prints how often integrity did NOT hold
(generate's own verdict, or the replica refusal). Faults are at a rate of about
1 in 10 requests:

- ``sampled-only``: every 10th shared request *with temperature > 0* is answered with
  another arm's weights (arms mixed in flight) — the canaries are sampled like the real
  requests, so they meet it;
- ``foreign weights``: every 10th request is answered with weights of no arm (also a
  reference: the calibration then fails); ``..., references spared``: the same from the
  25th request on, after the reference waves, so only the checks can catch it;
- ``replica with another adapter``: two replicas, the second serves ckpt925's weights
  under ckpt475's name and root (refused by the cross-check before any check);
- ``sticky after switch``: ``--isolate-arms``, the first 3 requests after every arm
  switch answered with the previous arm's weights (waves of 32, turns of up to two waves);
  ``..., references spared``: the same once the reference waves are done (the checks that
  open each arm's turn must catch it);
- ``late``: every request after the first 90% of the run answered with weights of no arm;
- issue 35's seats: ``repeats right`` (and ``..., isolated``): after the reference waves, every
  first ask (the whole request, max_tokens included, as a cache keys it) answered with another
  arm's weights, every repeat right; ``one stale adapter for every arm``: a stale lv-trollope
  answers every arm from the first request; ``even seeds``: every request with an even seed
  that shares the seat answered with another arm's weights (~40% of rows), references spared;
- issue 46's seats: ``first-time-only mixing`` (and ``..., isolated``): on a gate of 84 rows (7 prompts x 4
  seeds), after the reference waves, the first arm asked each cell (prompt, seed, sampling; a prefix cache
  keyed without the adapter) answered with the next arm's weights, every later arm of the cell right (about
  25 of 84 rows wrong); ``stale with another version``: an honest session first in the data directory, then a
  seat serving stale weights for every arm and reporting another ``/version`` (the adapters' files out of
  reach); ``fresh data dir + stale adapters``: no earlier session, both adapters served stale from the first
  request, their files (and the carrier's) readable here; ``concurrent runs, mixing``: three gates of 84 rows
  at once on one seat that answers every 10th request sharing the seat with another model in flight (any
  run's) with that model's weights, as separate processes, each run counted;
- ``second replica: ...``: sampled-only, foreign weights (references spared), repeats right and late on
  the second of two replicas, whose checks are judged against the first (the lead) replica's references;
- ``clean``, ``clean, large``, ``clean, two replicas``: no fault (half of the runs mixed, half
  isolated), answers still nondeterministic (1 in 10 diverges somewhere in its last third):
  false alarms.

Every run's answers carry that same nondeterminism. The rate modes use a gate large
enough (1,200 requests) that the default budget (5%) gives ~57 checks, whose 95%
detection floor (~5.1% of requests) is below the 10% fault; the structural modes use
240 requests; ``clean, lv-bronte's size`` is issue 35's overhead goal (360 requests: 3 arms x 3
seeds x 40 prompts, half of the runs isolated); issue 46's clean modes are each fault mode's honest
counterpart (``clean, 84 rows``, ``clean, another version``, ``clean, files readable``, ``clean, concurrent
runs``: every run exit 0, its exact rows, no adapter left loaded or leased after the last). Also printed:
the canary overhead, every request
the session sent besides its real rows, as a share of them: the reference asks of its own that
are first asks of an (arm, canary) + the checks + identity re-asks, and on top the reference asks
that repeat one (the calibration repeats). A reference that is a canary cell's own real row
(``real_row``: the very same request, one of the arm's reference answers) is no request of its
own: each arm asks only the first canary's repeat itself, on the replica that holds the canary
cells (max over runs; the mean per run of each kind in brackets).

    python benchmarks/bench_integrity.py            # every mode, 20 runs each (~5 min of CPU)
    python benchmarks/bench_integrity.py --runs 5 --modes late clean
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from helpers.workspace import gate_spec, registered_workspace

from voicegate._errors import VoicegateError
from voicegate.generate._generate import generate
from voicegate.seat import StandinSeat
from voicegate.seat._standin import default_text, late_divergence
from voicegate.spec._spec import load_spec

GATE = "lv-bench"
SERVED = f"{GATE}-ckpt475"
RUNTIME = f"{GATE}-ckpt925"


jitter = late_divergence(0.1)  # seeded sampling, nearly repeatable: 1 answer in 10 diverges late


def _seat(**faults: Any) -> StandinSeat:
    return StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, default_generator=jitter, slots=8,
                       token_time=0.0005, **faults)


# The reference phase, spared by the "references spared" faults: each arm's wave is its one reference ask of its own
# (the first canary's repeat) and the two canary cells' real rows (the other reference answers), filled to the
# concurrency (8) with that arm's own real requests (issue 35), arms mixed or isolated: 24.
SPARED = 24

STALE = {m: f"{m}~stale" for m in ("voices-base", SERVED, RUNTIME)}      # every arm's weights, an older version

MODES: dict[str, dict[str, Any]] = {
    "sampled-only": {"size": "large", "faults": {"wrong_weights_every": 10, "sampled_only": True}},
    "foreign weights": {"size": "large", "faults": {"foreign_every": 10}},
    "replica with another adapter": {"size": "small", "replica": {"impostors": {SERVED: RUNTIME}}},
    "foreign weights, references spared": {"size": "large", "faults": {"foreign_every": 10, "faults_from": SPARED}},
    "sticky after switch": {"size": "small", "isolate": True, "faults": {"sticky_after_switch": 3}},
    "sticky after switch, references spared": {"size": "small", "isolate": True,
                                               "faults": {"sticky_after_switch": 3, "faults_from": SPARED}},
    "late": {"size": "small", "late": 0.9},
    "repeats right": {"size": "small", "faults": {"repeats_right": True, "faults_from": SPARED}},
    "repeats right, isolated": {"size": "small", "isolate": True,
                                "faults": {"repeats_right": True, "faults_from": SPARED}},
    "one stale adapter for every arm": {"size": "small", "faults": {"impostors": {
        "voices-base": "lv-trollope", SERVED: "lv-trollope", RUNTIME: "lv-trollope"}}},
    "even seeds": {"size": "small", "faults": {"wrong_weights_every": 1, "even_seeds_only": True,
                                               "faults_from": SPARED}},
    "first-time-only mixing": {"size": "84", "faults": {"repeats_right": True, "repeats_by_cell": True,
                                                        "faults_from": SPARED}},
    "first-time-only mixing, isolated": {"size": "84", "isolate": True, "faults": {
        "repeats_right": True, "repeats_by_cell": True, "faults_from": SPARED}},
    "stale with another version": {"size": "84", "kind": "version", "faults": {"impostors": STALE}},
    "fresh data dir + stale adapters": {"size": "84", "kind": "files", "faults": {"impostors": {
        SERVED: f"{SERVED}~stale", RUNTIME: f"{RUNTIME}~stale"}}},
    "concurrent runs, mixing": {"size": "84", "kind": "concurrent", "faults": {"wrong_weights_every": 10}},
    "clean, 84 rows": {"size": "84", "faults": {}},
    "clean, another version": {"size": "84", "kind": "version", "faults": {}},
    "clean, files readable": {"size": "84", "kind": "files", "faults": {}},
    "clean, concurrent runs": {"size": "84", "kind": "concurrent", "faults": {}},
    "clean": {"size": "small", "faults": {}},
    "clean, large": {"size": "large", "faults": {}},
    "clean, two replicas": {"size": "small", "faults": {}, "replica": {}},
    # The faults above on the replica after the lead (its checks judged against the lead's references).
    "second replica: sampled-only": {"size": "large", "faults": {},
                                     "replica": {"wrong_weights_every": 10, "sampled_only": True}},
    "second replica: foreign weights, references spared": {"size": "large", "faults": {},
                                                           "replica": {"foreign_every": 10, "faults_from": SPARED}},
    "second replica: repeats right": {"size": "small", "faults": {},
                                      "replica": {"repeats_right": True, "faults_from": SPARED}},
    "second replica: late": {"size": "small", "faults": {}, "replica": {}, "replica_late": 0.9},
    "clean, lv-bronte's size": {"size": "bronte", "faults": {}},
}
SIZES = {"large": (50, 8), "small": (20, 4), "bronte": (40, 3), "84": (7, 4)}   # (prompts, seeds) x 3 arms


class Workspaces:
    """One registered workspace per size (and flavour), reused: each run starts from an empty data directory."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.roots: dict[str, Path] = {}

    def root(self, size: str, url: str, *, gate: str = GATE, candidates: list[dict[str, Any]] | None = None,
             flavour: str = "") -> Path:
        key = f"{size}{flavour}:{gate}"
        if key not in self.roots:
            prompts, seeds = SIZES[size]
            spec = gate_spec(gate, url=url, concurrency=8, seeds=[101 + 7 * i for i in range(seeds)],
                             candidates=candidates)
            self.roots[key] = registered_workspace(
                self.tmp / key.replace(":", "-"), spec,
                prompts=[f"Write scene {i} of the story, in the author's voice." for i in range(prompts)])
        root = self.roots[key]
        shutil.rmtree(root / "runs", ignore_errors=True)
        return root


def _outcome(result: Any) -> dict[str, Any]:
    """Not holding: failed, or an arm's identity left not decided (its rows are made again)."""
    t = result.canaries
    return {"detected": t.failed or bool(t.undecided),
            "how": (f"wrong {t.wrong}, foreign {t.foreign}, unclear {t.unclear}; "
                    f"{(t.problems or t.undecided or ['-'])[0][:110]}")}


def version_run(ws: Workspaces, mode: dict[str, Any], isolate: bool) -> dict[str, Any]:
    """An honest session fills the data directory's identity store; the gate again on a seat reporting another
    version, stale (the mode's faults) or honest."""
    with _seat() as honest:
        root = ws.root(mode["size"], honest.url)
        generate(load_spec(root, GATE), seat_url=[honest.url], quiet=True, isolate_arms=isolate)
    shutil.rmtree(root / "runs" / GATE)
    with _seat(version="0.33.0+standin", **mode["faults"]) as seat:
        result = generate(load_spec(root, GATE), seat_url=[seat.url], quiet=True, isolate_arms=isolate)
    return _outcome(result)


@contextmanager
def _own_files(where: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A readable carrier and adapter directories whose local greedy answers are what the stand-in answers for
    each model served honestly (the merge itself is measured on the real seat: test_adapter_files)."""
    from voicegate.generate._carrier import MAX_TOKENS, PROBE_SEED

    from voicegate.generate import _adapter_files, _carrier

    def as_served(model: str) -> Callable[..., list[str]]:
        return lambda files, prompts: [default_text(model, PROBE_SEED, p, MAX_TOKENS)[0] for p in prompts]

    dirs = {SERVED: where / "adapters" / "ckpt475", RUNTIME: where / "adapters" / "ckpt925"}
    for model, d in dirs.items():
        d.mkdir(parents=True, exist_ok=True)
        (d / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 8, "lora_alpha": 16}))
        (d / "adapter_model.safetensors").write_bytes(f"lora {model}".encode())
    carrier = where / "carrier"
    carrier.mkdir(parents=True, exist_ok=True)
    for name, body in {"config.json": b"{}", "model.safetensors": b"weights", "tokenizer.json": b"{}"}.items():
        (carrier / name).write_bytes(body)
    owner = {str(d): m for m, d in dirs.items()}
    saved = (_carrier.why_no_local, _carrier.local_answers, _adapter_files.merged_answers)
    _carrier.why_no_local = lambda: None                               # type: ignore[assignment]
    _carrier.local_answers = as_served("voices-base")                  # type: ignore[assignment]
    _adapter_files.merged_answers = lambda files, adapter, prompts: as_served(owner[str(adapter)])(files, prompts)
    try:
        yield carrier, {m: str(d) for m, d in dirs.items()}
    finally:
        _carrier.why_no_local, _carrier.local_answers, _adapter_files.merged_answers = saved


def files_run(ws: Workspaces, mode: dict[str, Any], isolate: bool) -> dict[str, Any]:
    """A fresh data directory, each adapter's files and the carrier's readable here; the seat stale or honest."""
    with _own_files(ws.tmp / "files") as (carrier, dirs):
        candidates = [{"name": "ckpt475", "model": SERVED, "role": "candidate"},
                      {"name": "ckpt925", "model": RUNTIME, "role": "candidate", "adapter_path": dirs[RUNTIME]}]
        with StandinSeat(adapters={SERVED: dirs[SERVED]}, base_root=str(carrier), default_generator=jitter,
                         slots=8, token_time=0.0005, **mode["faults"]) as seat:
            root = ws.root(mode["size"], seat.url, candidates=candidates, flavour="-files")
            result = generate(load_spec(root, GATE), seat_url=[seat.url], quiet=True, isolate_arms=isolate)
    return _outcome(result)


def concurrent_run(ws: Workspaces, mode: dict[str, Any], isolate: bool) -> dict[str, Any]:
    """Three gates (each its own workspace, sharing the base, the fleet's adapter and the runtime-loaded one) run at
    once as separate processes on one seat. Each run counts: exit 4 is integrity not holding; a clean sweep wants
    every exit 0 with its exact rows, and nothing loaded at run time or leased once the last one ended."""
    from voicegate.generate import build_schedule
    from voicegate.seat import lease_path, read_leases

    candidates = [{"name": "ckpt475", "model": SERVED, "role": "candidate"},
                  {"name": "ckpt925", "model": RUNTIME, "role": "candidate", "adapter_path": f"/adapters/{GATE}/925"}]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    with _seat(**mode["faults"]) as seat:
        gates = [(ws.root(mode["size"], seat.url, gate=f"{GATE}-{x}", candidates=candidates), f"{GATE}-{x}")
                 for x in "abc"]
        procs = [subprocess.Popen([sys.executable, "-m", "voicegate", "generate", gate, "--quiet", "--seat", seat.url,
                                   *(["--isolate-arms"] if isolate else [])], cwd=root, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for root, gate in gates]
        codes, errors = [], []
        for (root, gate), proc in zip(gates, procs, strict=True):
            _, err = proc.communicate(timeout=600)
            codes.append(proc.returncode)
            spec = load_spec(root, gate)
            if not spec.generations_path.exists():
                errors.append(f"{gate}: exit {proc.returncode}, no rows: {err.strip().splitlines()[-1:]}")
                continue
            got = sorted((r["kind"], r["arm"], r["seed"], r["prompt_id"])
                         for r in map(json.loads, spec.generations_path.read_text().splitlines()))
            if proc.returncode == 0 and got != sorted(j.key for j in build_schedule(spec)):
                errors.append(f"{gate}: rows not exact")
            if proc.returncode not in (0, 4):
                errors.append(f"{gate}: exit {proc.returncode}: {err.strip().splitlines()[-1:]}")
        left = sorted(seat.runtime)
        if left or read_leases(seat.url) or lease_path(seat.url).exists():
            errors.append(f"left loaded or leased: {left}")
    # A fault's runs count when integrity did not hold (exit 4); a clean sweep's, when a run did not complete
    # clean (any exit but 0) or the sweep left rows inexact or the seat not as it was.
    detected = (sum(c == 4 for c in codes) if mode["faults"] else
                max(sum(c != 0 for c in codes), 1 if errors else 0))
    return {"detected": detected, "units": 3, "how": f"exits {codes}" + (f"; {'; '.join(errors)}" if errors else "")}


KINDS = {"version": version_run, "files": files_run, "concurrent": concurrent_run}


def one_run(ws: Workspaces, mode: dict[str, Any], isolate: bool) -> dict[str, Any]:
    if "kind" in mode:
        return KINDS[mode["kind"]](ws, mode, isolate)
    size = mode["size"]
    prompts, seeds = SIZES[size]
    real = prompts * seeds * 3
    faults = dict(mode.get("faults") or {})
    if "late" in mode:
        faults["late_after"] = int(mode["late"] * real)
    with ExitStack() as stack:
        seat = stack.enter_context(_seat(**faults))
        urls = [seat.url]
        if "replica" in mode:
            theirs = dict(mode["replica"])
            if "replica_late" in mode:   # about half the rows go to each replica
                theirs["late_after"] = int(mode["replica_late"] * real / 2)
            other = stack.enter_context(_seat(**theirs))
            urls.append(other.url)
        root = ws.root(size, seat.url)
        spec = load_spec(root, GATE)
        try:
            result = generate(spec, seat_url=urls, quiet=True, isolate_arms=isolate)
        except VoicegateError as exc:
            return {"detected": True, "how": f"refused: {str(exc)[:90]}", "requests": 0, "canaries": 0}
        canaries = [json.loads(x) for x in spec.run.canaries.read_text().splitlines()]
        refs = [c for c in canaries if c["phase"] == "reference"]
        # A reference that is a canary cell's real row (`real_row`) was no request of its own.
        sent = [c for c in refs if not c.get("real_row")]
        seen: set[tuple[Any, ...]] = set()
        first_asks = 0
        for c in sent:   # an (arm, canary)'s first request on a replica, then its repeats
            key = (c.get("replica"), c["arm"], c["canary"])
            first_asks += key not in seen
            seen.add(key)
        checks = sum(1 for c in canaries if c["phase"] == "check")
        identity = sum(1 for c in canaries if c["phase"] == "identity")
        t = result.canaries
        return {"detected": t.failed, "how": _outcome(result)["how"],
                "requests": result.generated, "checks": checks, "references": len(refs),
                "first_asks": first_asks, "repeat_asks": len(sent) - first_asks, "identity_asks": identity,
                "real_row_references": len(refs) - len(sent),
                "overhead": (first_asks + checks + identity) / max(1, result.generated),
                "repeats": (len(sent) - first_asks) / max(1, result.generated),
                "floor": t.floors()[0], "cell_floor": t.cell_floor(), "cells": len(t.cells),
                "wrong_served": seat.wrong_served}


def sweep(names: list[str], runs: int, say: Callable[[str], None] = print) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspaces(Path(tmp))
        for name in names:
            mode = MODES[name]
            results = [one_run(ws, mode, bool(mode.get("isolate")) or (name.startswith("clean") and i % 2 == 1))
                       for i in range(runs)]
            detected = sum(int(r["detected"]) for r in results)
            units = sum(r.get("units", 1) for r in results)
            done = [r for r in results if r.get("requests")]
            line = {"mode": name, "runs": units, "not holding": detected,
                    "checks_per_run": round(sum(r["checks"] for r in done) / len(done), 1) if done else None,
                    "requests_per_run": done[0]["requests"] if done else None,
                    "overhead": round(max(r["overhead"] for r in done), 4) if done else None,
                    "extra_per_run": {k: round(sum(r[k] for r in done) / len(done), 1) for k in
                                      ("first_asks", "repeat_asks", "checks", "identity_asks",
                                       "real_row_references")} if done else None,
                    "calibration_repeats": round(max(r["repeats"] for r in done), 4) if done else None,
                    "floor_95": round(min(r["floor"] for r in done if r["floor"]), 4) if done else None,
                    "cells_per_run": round(sum(r["cells"] for r in done) / len(done), 1) if done else None,
                    "cell_floor_95": round(max(r["cell_floor"] for r in done if r["cell_floor"]), 4) if done else None,
                    "example": next((r["how"] for r in results if r["detected"]), results[0]["how"])}
            out[name] = line
            verdict = (f"{detected}/{units} false alarms" if name.startswith("clean")
                       else f"detected {detected}/{units}")
            extra = line["extra_per_run"] or {}
            say(f"{name:30s} {verdict:22s} checks/run {line['checks_per_run']}, requests/run "
                f"{line['requests_per_run']}, overhead {_pct(line['overhead'])} + repeats "
                f"{_pct(line['calibration_repeats'])} [per run: first asks {extra.get('first_asks')}, repeats "
                f"{extra.get('repeat_asks')}, checks {extra.get('checks')}, identity {extra.get('identity_asks')}; "
                f"real rows as references {extra.get('real_row_references')}], 95% floor {_pct(line['floor_95'])}, "
                f"cells/run {line['cells_per_run']} (cell floor {_pct(line['cell_floor_95'])})  ({line['example']})")
    return out


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--modes", nargs="*", default=list(MODES), choices=list(MODES))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as state:
        # Leases and the local answer caches of this sweep stay in it (never the user's, never another sweep's).
        os.environ["VOICEGATE_STATE_DIR"] = str(Path(state) / "state")
        os.environ["VOICEGATE_CACHE_DIR"] = str(Path(state) / "cache")
        out = sweep(args.modes, args.runs)
    if args.json:
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
