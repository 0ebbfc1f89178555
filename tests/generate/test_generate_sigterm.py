"""SIGTERM during `generate` always ends it, exit 143 within seconds, adapters unloaded.

The hang it fixes: on Python 3.11 `asyncio.wait_for` returns an answer that lands in the
same loop turn as a cancel, so one worker of a SIGTERM'd run kept sending requests and
then waited forever for cells the cancelled workers had left unfinished (369/375 rows,
adapters left loaded). The race is pinned deterministically on the seat client first,
then the whole command is signalled at several points of a run, more than once each.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from helpers.workspace import gate_spec, registered_workspace

from voicegate.seat import StandinSeat
from voicegate.seat._client import SeatClient

GATE = "lv-gen"
SERVED = f"{GATE}-ckpt475"
RUNTIME = f"{GATE}-ckpt925"
PROMPTS = [f"Write about the {i}th thing that happened on the moor." for i in range(25)]
SEEDS = [101, 202, 303, 404, 505]   # 3 arms x 5 seeds x 25 prompts = 375 rows, as in the finding
TOTAL = 375
TERMINATED = 143


async def _cancel_as_the_answer_lands(turns: int) -> str:
    """Cancel a request `turns` loop turns after its answer became ready: "ok", "done-before" or "SWALLOWED"."""
    answer = asyncio.Event()

    async def handler(request: httpx.Request) -> httpx.Response:
        await answer.wait()
        return httpx.Response(200, json={"object": "list", "data": []})

    client = SeatClient("http://seat.invalid/v1", transport=httpx.MockTransport(handler), timeout=30)
    try:
        task = asyncio.create_task(client.models())
        for _ in range(10):
            await asyncio.sleep(0)
        answer.set()
        for _ in range(turns):
            await asyncio.sleep(0)
        if task.done():
            return "done-before"
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return "ok"
        return "SWALLOWED"
    finally:
        await client.aclose()


def test_a_cancel_is_never_swallowed_by_an_answer_landing_in_the_same_turn() -> None:
    outcomes = [asyncio.run(_cancel_as_the_answer_lands(k)) for k in range(8)]
    assert "SWALLOWED" not in outcomes, outcomes
    assert "ok" in outcomes  # the race window was really hit


def test_sigterm_outside_the_event_loop_raises_terminated() -> None:
    from voicegate.generate._sigterm import Stop, Terminated

    stop = Stop(grace_s=30)
    with pytest.raises(Terminated) as caught, stop.guarding():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)
    assert caught.value.exit_code == TERMINATED and stop.signalled
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL or callable(signal.getsignal(signal.SIGTERM))


def test_the_last_resort_exits_143_when_a_run_does_not_stop() -> None:
    code = ("import time\nfrom voicegate.generate._sigterm import Stop\n"
            "s = Stop(grace_s=0.5)\nwith s.guarding():\n    s._mark()\n    time.sleep(30)\n")
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=20)
    assert done.returncode == TERMINATED, done.stderr
    assert time.monotonic() - t0 < 10
    assert "did not stop within 0.5s" in done.stderr and "adapters.json" in done.stderr


def _signalled(root: Path, seat: StandinSeat, at: int) -> tuple[int | None, float, str, int]:
    """generate, SIGTERM once `at` rows are stored: (exit code or None if still alive after 15 s, seconds, stderr,
    rows)."""
    path = root / "runs" / GATE / "generations.jsonl"
    path.unlink(missing_ok=True)
    (root / "runs" / GATE / "run.json").unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "voicegate", "generate", GATE, "--quiet"], cwd=root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while (time.monotonic() < deadline and proc.poll() is None
           and not (path.exists() and path.read_bytes().count(b"\n") >= at)):
        time.sleep(0.002)
    assert proc.poll() is None, f"the run ended before {at} rows: {proc.communicate()[1]}"
    t0 = time.monotonic()
    os.kill(proc.pid, signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=15)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        code = None
    took = time.monotonic() - t0
    rows = [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []
    assert len({(r["kind"], r["arm"], r["seed"], r["prompt_id"]) for r in rows}) == len(rows)
    return code, took, err, len(rows)


def test_sigterm_at_several_points_of_a_run_always_exits_143_within_seconds_with_adapters_unloaded(
        tmp_path: Path) -> None:
    with StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, token_time=0.004, slots=16) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, seeds=SEEDS, concurrency=12),
                                    prompts=PROMPTS)
        seen = []
        for at in (1, 60, 369, 372) * 2:
            code, took, err, rows = _signalled(root, seat, at)
            served = seat.served()
            seen.append((at, rows, code, round(took, 2)))
            assert code == TERMINATED, (seen, err[-2000:])
            assert took < 10, seen
            assert RUNTIME not in served and SERVED in served, (seen, served)
            last = err.strip().splitlines()[-1]
            assert last.startswith("voicegate: terminated (SIGTERM);") and f"unloaded {RUNTIME}" in last, last
            assert "Traceback" not in err
            assert rows < TOTAL or at >= 372
            assert not (root / "runs" / GATE / "adapters.json").exists()
    print("sigterm (at, rows, exit, seconds):", seen)


def test_sigterm_during_the_final_unload_does_not_cancel_it(tmp_path: Path) -> None:
    """The signal lands while the run unloads its runtime voice: still exit 143, and the voice is unloaded."""
    proc_box: dict[str, subprocess.Popen[str]] = {}

    def signal_then_answer(seat: StandinSeat) -> None:
        os.kill(proc_box["proc"].pid, signal.SIGTERM)
        time.sleep(1.0)  # the unload's answer comes after the signal has been handled

    with StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, token_time=0.001, slots=8,
                     fault_paths=("/v1/unload_lora_adapter",), hooks={1: signal_then_answer}) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=4))
        proc = subprocess.Popen([sys.executable, "-m", "voicegate", "generate", GATE, "--quiet"], cwd=root,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        proc_box["proc"] = proc
        _, err = proc.communicate(timeout=60)
        served = seat.served()
    assert proc.returncode == TERMINATED, err
    assert RUNTIME not in served and SERVED in served, (served, err)
    assert f"unloaded {RUNTIME}" in err.strip().splitlines()[-1], err
    assert not (root / "runs" / GATE / "adapters.json").exists()
