"""Runs share a seat safely: an adapter loaded at run time stays while any live run holds it.

Two and three gates, each in its own workspace, need the same runtime-loaded adapter on one stand-in
seat and run at once, as real processes. Before holds were counted, the first to finish unloaded the
adapter and the others exited 2 ("the seat stopped serving … voicegate did not load it"). Now each run
that uses it leases it, the ones ending first leave it loaded, and the last unloads it: every run
completes with its exact rows, and nothing is left loaded or leased. A lease with a dead pid naming a
live run's adapter is dropped by a third run's sweep, and the adapter stays.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

from helpers.workspace import gate_spec, registered_workspace, rows

from voicegate.generate import build_schedule
from voicegate.seat import StandinSeat, lease_path, read_leases
from voicegate.seat._leases import Lease, _boot_id
from voicegate.spec._spec import load_spec

SHARED = "lv-shared-ckpt925"            # every gate's runtime-loaded candidate: one adapter directory
FLEET = "lv-shared-ckpt475"             # served by the fleet (--lora-modules): never unloaded
PATH = "/adapters/shared/ckpt925"
FAST = ("--retries", "6", "--retry-budget", "5")


def _spec(gate: str, url: str, seeds: list[int]) -> dict:
    return gate_spec(gate, url=url, seeds=seeds, concurrency=4, candidates=[
        {"name": "ckpt475", "model": FLEET, "role": "candidate"},
        {"name": "ckpt925", "model": SHARED, "role": "candidate", "adapter_path": PATH}])


def _start(root: Path, gate: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "voicegate", "generate", gate, "--quiet", *FAST], cwd=root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_loaded(seat: StandinSeat, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while SHARED not in seat.runtime:
        assert proc.poll() is None and time.monotonic() < deadline, "the first run ended before its load"
        time.sleep(0.02)


def _exact(root: Path, gate: str) -> None:
    want = sorted(j.key for j in build_schedule(load_spec(root, gate)))
    got = rows(root, gate)
    assert sorted((r["kind"], r["arm"], r["seed"], r["prompt_id"]) for r in got) == want


def _gates(tmp_path: Path, url: str, sizes: list[int]) -> list[tuple[Path, str]]:
    out = []
    for i, n in enumerate(sizes):
        gate = f"lv-share-{'abc'[i]}"
        root = registered_workspace(tmp_path / f"ws{i}", _spec(gate, url, [101 * (k + 1) for k in range(n)]))
        out.append((root, gate))
    return out


def _run_together(seat: StandinSeat, gates: list[tuple[Path, str]], *, staggered: bool) -> None:
    procs = []
    for i, (root, gate) in enumerate(gates):
        procs.append(_start(root, gate))
        if staggered and i == 0:
            _wait_loaded(seat, procs[0])      # the others find it loaded by a live run, and use it
    for (root, gate), proc in zip(gates, procs, strict=True):
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, (gate, out[-600:], err[-1500:])
        assert "stopped serving" not in err
        _exact(root, gate)
    assert seat.runtime == {} and seat.lora_modules == {FLEET: "/adapters/shared/ckpt475"}
    assert read_leases(seat.url) == [] and not lease_path(seat.url).exists()
    unloads = [e for e in seat.requests() if e["path"] == "/v1/unload_lora_adapter"]
    assert len(unloads) == 1          # the last holder's, once


def test_two_gates_at_once_share_a_runtime_adapter_and_the_last_to_end_unloads_it(tmp_path: Path) -> None:
    # the first, smaller, ends first; long enough (~15 s) for the second process to start and find it loaded
    with StandinSeat(adapters={FLEET: "/adapters/shared/ckpt475"}, token_time=0.03, slots=8) as seat:
        gates = _gates(tmp_path, seat.url, [5, 8])
        _run_together(seat, gates, staggered=True)
        loads = [e for e in seat.requests() if e["path"] == "/v1/load_lora_adapter" and e["status"] == 200]
        assert len(loads) == 1


def test_three_gates_started_at_once_share_a_runtime_adapter(tmp_path: Path) -> None:
    """Started together, several find it not served and load it: the seat takes the first load, the others
    hear "already loaded" and hold it as one found loaded."""
    with StandinSeat(adapters={FLEET: "/adapters/shared/ckpt475"}, token_time=0.02, slots=12) as seat:
        gates = _gates(tmp_path, seat.url, [2, 4, 6])
        _run_together(seat, gates, staggered=False)


def test_a_dead_or_forged_lease_never_makes_a_live_runs_adapter_go(tmp_path: Path) -> None:
    """A live run loaded the adapter; a lease of it with a dead pid (stale, or forged) is in the lease file. A
    third run's sweep drops that lease and leaves the adapter: the live run completes."""
    with StandinSeat(adapters={FLEET: "/adapters/shared/ckpt475"}, token_time=0.02, slots=8) as seat:
        (live_root, live_gate), (third_root, third_gate) = _gates(tmp_path, seat.url, [8, 2])
        live = _start(live_root, live_gate)
        _wait_loaded(seat, live)
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        forged = Lease(SHARED, PATH, "lv-other", "/nowhere", "/nowhere/runs/lv-other",
                       "/nowhere/runs/lv-other/adapters.json", "x", socket.gethostname(), dead.pid, _boot_id(), None,
                       "2025-01-01T00:00:00Z")
        with_forged = [*read_leases(seat.url), forged]
        lease_path(seat.url).write_text(json.dumps({"seat": seat.url, "leases": [x.as_dict() for x in with_forged]}))
        third = _start(third_root, third_gate)
        _, err = third.communicate(timeout=240)
        assert third.returncode == 0, err[-1500:]
        assert "left loaded by a killed voicegate run" not in err
        assert all(x.pid != dead.pid for x in read_leases(seat.url))        # the dead lease is gone
        _, err = live.communicate(timeout=240)
        assert live.returncode == 0, err[-1500:]
        _exact(live_root, live_gate)
        _exact(third_root, third_gate)
        assert seat.runtime == {} and read_leases(seat.url) == []
        unloads = [e for e in seat.requests() if e["path"] == "/v1/unload_lora_adapter"]
        assert len(unloads) == 1
