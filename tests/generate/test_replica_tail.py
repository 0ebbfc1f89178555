"""A replica that runs out of cells sends the checks it still owes at once, beside the requests still in flight.

Its plan placed checks over an even share of the run; a slower replica answers fewer cells than
that, and the checks left over used to wait until every replica had finished, a last round of
checks after all the generations. They now go as soon as the replica has nothing to send or claim.
"""

from __future__ import annotations

import datetime as dt
import json
from contextlib import ExitStack

from helpers.workspace import cli, gate_spec, registered_workspace, rows

from voicegate.seat import StandinSeat

GATE = "lv-tail"
PROMPTS = [f"Write scene {i} of the story, in the author's voice." for i in range(6)]


def _span(row: dict) -> tuple[float, float]:
    end = dt.datetime.strptime(row["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC).timestamp()
    return end - row["latency_s"], end


def test_a_slow_replicas_leftover_checks_go_while_its_last_generations_are_in_flight(tmp_path):
    with ExitStack() as stack:
        adapters = {f"{GATE}-ckpt475": f"/adapters/{GATE}/ckpt475"}
        fast = stack.enter_context(StandinSeat(adapters=adapters, token_time=0.001))
        # the slow replica's three arms answer at three speeds, so its last two generations in flight (whichever
        # arms the schedule leaves there) never end together: the one that ends first frees the slot a leftover
        # check must take while the other still runs
        slow = stack.enter_context(StandinSeat(adapters=adapters, token_time=0.02,
                                               token_time_by_model={f"{GATE}-ckpt475": 0.03,
                                                                    f"{GATE}-ckpt925": 0.026}))
        spec = gate_spec(GATE, url=fast.url, concurrency=2)
        spec["seat"]["replicas"] = [fast.url, slow.url]
        root = registered_workspace(tmp_path / "ws", spec, prompts=PROMPTS)
        out = cli(root, "generate", GATE, "--quiet")
        assert out.returncode == 0, out.stderr
    gens = [_span(r) for r in rows(root, GATE) if r["replica"] == slow.url]
    canaries = [json.loads(x) for x in (root / "runs" / GATE / "canaries.jsonl").read_text().splitlines()]
    checks = [_span(c) for c in canaries if c["replica"] == slow.url and c["phase"] == "check"]
    assert gens and checks
    last_start = max(s for s, _ in gens)
    leftover = [s for s, _ in checks if s > last_start]     # sent once the slow replica had no job left
    assert leftover, "the slow replica owed no check past its last generation: the test proves nothing"
    # ... and the first went out while that last generation was still being answered, not after the run's end
    assert min(leftover) < max(e for _, e in gens), (leftover, max(e for _, e in gens))
