"""Seat integrity on the stand-in seat: canaries, reproduction, the verdict, the refusal,
--isolate-arms, quarantine, replicas, the detection floor and the evidence bound to the verdict.

The stand-in's text depends on the model, so a request answered with another
model's weights is visible in its text; `wrong_weights_every=k` is the mixed-arms
fault (every k-th request that shares the seat with another model in flight), and
the fault modes are `sampled_only`, `foreign_every`, `impostors`,
`sticky_after_switch` and `late_after`. The 20-run sweeps of every mode are in
benchmarks/bench_integrity.py; here, one fast run each.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import shutil
import subprocess
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml
from helpers.workspace import (
    cli,
    gate_spec,
    manifest,
    register_prospective,
    registered_workspace,
    rows,
    run_cli,
    voicegate,
)

from voicegate.generate._canaries import checks_per_arm, choose_canaries, own_asks, plan_checks, positions
from voicegate.generate._generate import generate
from voicegate.generate._schedule import build_schedule, isolate_waves, turns
from voicegate.run._store import generations_hash, row_key
from voicegate.scoring import Calibration, CanaryParams, Tally, attribute, calibrate, detection_floor, similarity
from voicegate.seat import StandinSeat
from voicegate.seat._standin import default_text, late_divergence
from voicegate.spec._spec import load_spec

GATE = "lv-int"
SERVED = f"{GATE}-ckpt475"
RUNTIME = f"{GATE}-ckpt925"


def _seat(**kw) -> StandinSeat:
    return StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, **kw)


def _sent_at(row: dict) -> float:
    """When a stored request was sent: its answer's time less its latency."""
    import datetime as dt

    done = dt.datetime.strptime(row["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC).timestamp()
    return done - float(row.get("latency_s") or 0.0)


def _canaries(root: Path) -> list[dict]:
    return [json.loads(x) for x in (root / "runs" / GATE / "canaries.jsonl").read_text().splitlines()]


# -- the comparison ---------------------------------------------------------------------


def test_similarity_is_one_for_the_same_text_and_low_for_another_models() -> None:
    p = "Continue the story: The letter came on a grey morning, and"
    a, _ = default_text("voices-base", 1729, p, 32)
    b, _ = default_text("lv-x", 1729, p, 32)
    assert similarity(a, a) == 1.0 and similarity(a, "  " + a.upper() + " ") == 1.0
    assert similarity(a, b) < 0.4
    assert similarity("", "") == 1.0 and similarity(a, "") == 0.0


REFS = {"base": ["The moor was grey and the wind rose over the hills all night long."] * 2,
        "x": ["Her sister laughed at the letter, and the house by the river was still."] * 2}


def test_an_answer_like_no_reference_is_foreign_weights_and_counts_against() -> None:
    """Reproduction, not nearness: weights of no arm used to be "right" or "unclear", never wrong."""
    params = CanaryParams()
    cal = calibrate({"k0": REFS}, ["base", "x"], params)
    assert cal.problem is None and cal.self_similarity == 1.0 and cal.threshold is not None
    assert attribute(REFS["base"][0], "base", REFS, cal, params).status == "right"
    wrong = attribute(REFS["x"][0], "base", REFS, cal, params)
    assert (wrong.status, wrong.answered_as) == ("wrong", "x")
    # Stale weights: unlike either reference. The old rule called this "right" (nearer its own than any other).
    stale = "Then a carriage drew up at the gate and nobody in the parish spoke of it again."
    found = attribute(stale, "base", REFS, cal, params)
    assert found.status == "foreign" and found.answered_as is None
    # A late divergence (batch nondeterminism) still reproduces its reference.
    drift = REFS["base"][0][:52] + " all the week."
    assert attribute(drift, "base", REFS, cal, params).status == "right"
    # Nothing but "right" can make a session hold: foreign and unclear count against.
    t = Tally()
    t.add("base", found)
    assert t.failed and t.status == "failed"
    t = Tally()
    t.add("base", attribute(REFS["base"][0], "base", REFS, Calibration(1.0, 0.95, 0.97, "gap"), params))
    assert t.unclear == 1 and t.failed
    # Two arms with the same reference cannot be told apart: never "wrong".
    same = {"base": REFS["base"], "y": REFS["base"]}
    cal2 = calibrate({"k0": same}, ["base", "y"], params)
    assert attribute(REFS["base"][0], "y", same, cal2, params).status == "right"


def test_score_also_holds_each_replica_to_the_first_replicas_references() -> None:
    """Judged again from canaries.jsonl: a replica whose references differ from the first one's fails."""
    m = {"arms": [{"name": "base"}, {"name": "x"}], "sessions": [{"replicas": ["A", "B"], "isolate_arms": False}],
         "integrity": {"method": "canary-reproduction@2", "params": {}}}

    def ref(replica: str, arm: str, text: str, ask: int) -> dict:
        return {"session": 0, "replica": replica, "phase": "reference", "canary": "k0", "arm": arm, "ask": ask,
                "text": text}

    other = "Then a carriage drew up at the gate and nobody in the parish spoke of it again."
    rows_ = [ref(r, a, REFS[a][0], k) for r in ("A", "B") for a in ("base", "x") for k in (0, 1)]
    rows_ = [c if not (c["replica"] == "B" and c["arm"] == "x") else {**c, "text": other} for c in rows_]
    checks = [{"session": 0, "replica": r, "phase": "check", "canary": "k0", "arm": a,
               "text": (other if (r, a) == ("B", "x") else REFS[a][0])} for r in ("A", "B") for a in ("base", "x")]
    from voicegate.run import RunManifest
    from voicegate.scoring._integrity import tallies

    out = tallies(rows_ + checks, RunManifest.from_json(m))
    assert not out[(0, "A")].failed and out[(0, "A")].right == 2
    assert out[(0, "B")].right == 2     # B agrees with itself ...
    assert out[(0, "B")].failed and "do not reproduce A's" in out[(0, "B")].problems[0]   # ... not with A


def test_calibration_needs_both_asks_and_a_gap_between_self_and_other() -> None:
    params = CanaryParams()
    one_ask = {"k0": {"base": REFS["base"][:1], "x": REFS["x"]}}
    assert "1 of its 2 reference asks" in (calibrate(one_ask, ["base", "x"], params).problem or "")
    # A seat whose two asks of the same canary disagree as much as two arms do cannot tell its arms apart.
    noisy = {"k0": {"base": [REFS["base"][0], REFS["x"][0][::-1]], "x": REFS["x"]}}
    assert "does not reproduce its own references" in (calibrate(noisy, ["base", "x"], params).problem or "")


def test_canaries_are_the_gates_own_prompts_with_fixed_seeds() -> None:
    prompts = [(str(i), f"Write scene {i}.") for i in range(10)]
    a = choose_canaries(prompts, 2, "nonce-a")
    assert a == choose_canaries(prompts, 2, "nonce-a")      # fixed per canary: the reference can be reproduced
    assert all((c.prompt_id, c.prompt) in prompts for c in a)
    assert all(0 <= c.seed < 2 ** 31 for c in a) and a[0].seed != a[1].seed
    # With the gate's seeds, a canary is one of its cells: the request seed its real requests carry.
    from voicegate.generate._schedule import request_seed

    cells = choose_canaries(prompts, 2, "nonce-a", [101, 202])
    assert all(c.registered_seed in (101, 202) and c.seed == request_seed(c.registered_seed, "voice", c.prompt_id)
               for c in cells)
    others = [choose_canaries(prompts, 2, f"n{i}") for i in range(20)]
    assert len({tuple(c.prompt_id for c in o) for o in others}) > 5   # drawn anew each session


def test_checks_scale_with_the_run_and_state_their_floor() -> None:
    params = CanaryParams()
    # lv-bronte's size: 360 requests, 3 arms -> each arm's one reference ask of its own (the first canary's repeat;
    # the canary cells' real rows are its other answers) + checks within 5%: 3 + 15 = 18 = 5% of 360.
    assert own_asks(params) == 1
    assert checks_per_arm(params, 3, 360) == 5 and 3 * 1 + 3 * 5 <= 0.05 * 360 < 3 * 1 + 3 * 6
    assert checks_per_arm(params, 3, 12) == params.min_checks_per_arm
    assert checks_per_arm(params, 3, 1200) == 19 and checks_per_arm(params, 3, 6000) == 99
    # Whatever else the session sends comes out of the same budget: a borrowing session's identity re-asks (3).
    assert checks_per_arm(params, 3, 360, extra=3) == 5 and checks_per_arm(params, 3, 360, extra=6) == 4
    assert checks_per_arm(CanaryParams(checks_per_arm=7), 3, 12) == 7
    # The floor: n checks catch a fault on a share f of requests with 95% when f >= 1 - 0.05^(1/n).
    assert (detection_floor(29) or 1) < 0.1 < (detection_floor(28) or 0)
    assert round(detection_floor(54) or 0, 3) == 0.054 and detection_floor(0) is None


def test_positions_are_random_stratified_and_one_per_arm_closes_the_run() -> None:
    params = CanaryParams()
    arms = [("base", "b"), ("x", "x"), ("y", "y")]
    canaries = choose_canaries([("0", "p0"), ("1", "p1")], 2, "n")
    seen = set()
    for k in range(10):
        rng = random.Random(k)
        checks = plan_checks(params, arms, 6, canaries, rng)
        placed = positions(checks, 600, params, rng)
        at = [a for a, _ in placed]
        assert at == sorted(at) and 1 <= at[0] and at[-1] <= 600
        closing = [c for a, c in placed if c.role == "closing"]
        assert sorted(c.arm for c in closing) == ["base", "x", "y"]
        assert all(a >= 600 * (1 - params.closing) - 1 for a, c in placed if c.role == "closing")
        seen.add(tuple(at))
    assert len(seen) == 10    # not the same places twice: a seat cannot learn them


def test_isolate_waves_one_arm_each_interleaved_across_rounds(tmp_path: Path) -> None:
    root = registered_workspace(tmp_path / "ws", gate_spec(GATE, seeds=[1, 2, 3, 4]))
    jobs = build_schedule(load_spec(root, GATE))
    waves = isolate_waves(jobs, 4, order_seed=7)
    assert all(len({j.arm for j in w}) == 1 and 1 <= len(w) <= 4 for w in waves)
    assert sorted(j.key for w in waves for j in w) == sorted(j.key for j in jobs)
    # Round after round every arm gets a wave; the arm order differs between rounds.
    rounds = [[w[0].arm for w in waves[i:i + 3]] for i in range(0, len(waves), 3)]
    assert all(sorted(r) == ["base", "ckpt475", "ckpt925"] for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1
    # Each arm's jobs keep schedule order.
    for arm in ("base", "ckpt475"):
        orders = [j.order for w in waves for j in w if j.arm == arm]
        assert orders == sorted(orders)


def test_a_round_opens_with_the_arm_that_closed_the_last_so_one_turn_spans_two_waves(tmp_path: Path) -> None:
    root = registered_workspace(tmp_path / "ws", gate_spec(GATE, seeds=[1, 2, 3, 4]))
    jobs = build_schedule(load_spec(root, GATE))
    waves = isolate_waves(jobs, 3, order_seed=7)    # 12 cells: 4 rounds
    rounds = [[w[0].arm for w in waves[i:i + 3]] for i in range(0, len(waves), 3)]
    assert len(rounds) == 4 and all(sorted(r) == ["base", "ckpt475", "ckpt925"] for r in rounds)
    assert all(rounds[k][0] == rounds[k - 1][-1] for k in range(1, len(rounds)))
    # 4 rounds of 3 arms: 12 waves, but 4 x 2 + 1 = 9 turns (8 arm switches, not 11).
    grouped = turns(waves)
    assert len(grouped) == 9 and [w for t in grouped for w in t] == waves
    assert all(len({w[0].arm for w in t}) == 1 for t in grouped)
    assert all(a[0][0].arm != b[0][0].arm for a, b in itertools.pairwise(grouped))
    # A batch at a time (the runner's way) gives the same waves as the whole schedule at once.
    per_cell: dict[tuple, list] = {}
    for j in jobs:
        per_cell.setdefault((j.kind, j.seed, j.prompt_id), []).append(j)
    cells = list(per_cell.values())
    batched, after = [], None
    for k in range(0, len(cells), 3):
        got = isolate_waves([j for c in cells[k:k + 3] for j in c], 3, 7, first_round=k // 3, after=after)
        batched += got
        after = got[-1][0].arm
    assert [[j.key for j in w] for w in batched] == [[j.key for j in w] for w in waves]


def test_an_isolated_turn_is_refilled_across_its_waves_and_never_mixes_arms(tmp_path: Path) -> None:
    """One arm on the seat is the invariant, not an empty seat: the next wave of the same arm starts while the
    previous one is still in flight; only an arm switch empties the seat, and it never holds two arms."""
    with _seat(token_time=0.004, slots=4) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=4,
                                                               seeds=list(range(1, 11))))
        done = cli(root, "generate", GATE, "--quiet", "--isolate-arms")
        assert done.returncode == 0, done.stdout + done.stderr
        log = sorted((e for e in seat.chat_log() if e["status"] == 200), key=lambda e: e["time"])
    assert seat.shared_requests == 0 and not any(e.get("shared_with") for e in log)
    spec = load_spec(root, GATE)
    waves = isolate_waves(build_schedule(spec), manifest(root, GATE)["sessions"][0]["wave_size"] - 1, spec.order_seed)
    grouped = turns(waves)
    assert len(waves) == 6 and len(grouped) == 5
    # The arms' order on the seat after the 12 requests of the reference waves: one stretch per turn, not one
    # per wave (then, at most, an arm's checks its turns did not use, each arm alone).
    switches = [m for m, _ in itertools.groupby(e["model"] for e in log[12:])]
    assert switches[:len(grouped)] == [t[0][0].model for t in grouped] and len(switches) <= len(grouped) + 3
    arrived: dict[tuple[str, int], dict] = {}
    for e in log[12:]:
        arrived.setdefault((e["model"], e["seed"]), e)
    # The first request of a wave that continues its arm's turn found the previous wave's requests in flight.
    continuing = [arrived[(w[0].model, w[0].request_seed)] for t in grouped for w in t[1:]]
    assert continuing and all(e["in_flight"] > 1 for e in continuing)
    # Each turn's first request met an empty seat: the switch waited for the last arm's requests to finish.
    assert all(next(group)["in_flight"] == 1 for _, group in itertools.groupby(log[12:], key=lambda e: e["model"]))
    checks = [c for c in _canaries(root) if c["phase"] == "check"]
    assert sum(c["role"] == "opening" for c in checks) == len(grouped)


def test_an_arm_short_of_checks_gets_them_in_its_last_wave_not_alone_after_the_run(tmp_path: Path) -> None:
    """The plan counts on turns, each opened by a check; a run's own order can give an arm one turn fewer. The
    checks it then lacks go in its last wave with the closing one: sent after the last turn, alone, each cost
    an arm switch and a lone request on an emptied seat (bench_vllm_serve: 1.3 s of 8 idle slots a run)."""
    with _seat(token_time=0.002, slots=8) as seat:
        for k in range(3):
            root = registered_workspace(tmp_path / f"ws{k}", gate_spec(GATE, url=seat.url, concurrency=8,
                                                                       seeds=list(range(1, 21))))
            done = cli(root, "generate", GATE, "--quiet", "--isolate-arms")
            assert done.returncode == 0, done.stdout + done.stderr
            # Every request by the time it was sent (a canary is its cell's very request: only the files tell
            # them apart); every stretch of one arm on the seat carries real rows, no turn is checks alone.
            sent = [(_sent_at(r), r["arm"], "row") for r in rows(root, GATE)]
            sent += [(_sent_at(c), c["arm"], c["phase"]) for c in _canaries(root)
                     if c["phase"] in ("check", "reference") and not c.get("real_row")]
            for arm, group in itertools.groupby(sorted(sent), key=lambda x: x[1]):
                assert any(kind == "row" for _, _, kind in group), (k, arm)
            checks = Counter(c["arm"] for c in _canaries(root) if c["phase"] == "check")
            planned = manifest(root, GATE)["sessions"][0]["canaries"]["planned_per_replica"]
            # Every arm still gets the same number of checks: the budget, met inside its turns.
            assert len(set(checks.values())) == 1 and len(checks) == 3 and planned, (k, checks)


# -- acceptance 1: no false alarm ------------------------------------------------------------


# Seeded sampling, nearly repeatable: 1 answer in 5 diverges at a word in its last third. Divergence
# from the first third on, 40% of answers, is what the canary-nearest-reference@1 check was tuned for:
# a seat that noisy cannot be told from one that swaps weights, and canary-reproduction@2 says so.
_jitter = late_divergence(0.2)


def _register_more(root: Path, base: dict, gates: list[tuple[str, dict]]) -> None:
    for gate, changes in gates:
        spec = {**base, "gate": gate, **changes,
                "artifacts": {"record": f"gates/{gate}.md"}}
        spec["arms"] = [{**a, "model": a["model"].replace(base["gate"], gate)} for a in base["arms"]]
        (root / "preregistrations" / f"{gate}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False),
                                                                encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, capture_output=True)
    subprocess.run(["git", "commit", "-q", "-m", "more gates"], cwd=root, check=True, capture_output=True)
    for gate, _ in gates:
        done = run_cli("register", gate, cwd=root)
        assert done.code == 0, done.stderr


def test_acceptance_1_no_false_alarm_on_a_clean_nondeterministic_seat(tmp_path: Path) -> None:
    """A faultless (nondeterministic) stand-in: integrity holds and score decides, mixed and isolated.

    Four runs here; the 20-run sweep (no false alarm in 20 clean runs) is benchmarks/bench_integrity.py.
    """
    n = 4
    gates = [f"lv-fa{i}" for i in range(n)]
    with StandinSeat(adapters={f"{g}-ckpt475": f"/adapters/{g}/ckpt475" for g in gates},
                     default_generator=_jitter, token_time=0.0005, slots=8) as seat:
        base = gate_spec(gates[0], url=seat.url, concurrency=8, seeds=[11, 12])
        root = registered_workspace(tmp_path / "ws", base)
        _register_more(root, base, [(g, {"seeds": [100 + 7 * i, 200 + 7 * i], "order_seed": i})
                                    for i, g in enumerate(gates) if i])
        tally: Counter[str] = Counter()
        for i, gate in enumerate(gates):
            result = generate(load_spec(root, gate), quiet=True, isolate_arms=bool(i % 2))
            assert not result.canaries.failed, result.integrity_line()
            tally.update(right=result.canaries.right, wrong=result.canaries.wrong, foreign=result.canaries.foreign,
                         unclear=result.canaries.unclear, sent=result.canaries.sent, exact=result.canaries.exact)
            scored = run_cli("score", gate, "--json", "--dry-run", cwd=root)
            assert scored.code == 0, scored.stderr
            integrity = json.loads(scored.stdout)["integrity"]
            assert integrity["status"] == "holds" and integrity["wrong"] == 0
            assert integrity["right"] == result.canaries.right   # score judged the same texts the same way
        assert seat.wrong_served == 0 and seat.shared_requests > 0
    print(f"\nno-fault stand-in, {n} runs: {dict(tally)}")
    assert tally["right"] == tally["sent"] >= n * 9, tally


# -- acceptance 2: the fault is caught and fixed -------------------------------------------------


def test_acceptance_2_fault_one_in_three_flagged_refused_then_isolated_run_decides(tmp_path: Path) -> None:
    with _seat(token_time=0.001, slots=8, wrong_weights_every=3) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=8,
                                                               seeds=[101, 202, 303, 404]))
        mixed = cli(root, "generate", GATE, "--quiet", "--canaries", "6")
        # generate's own check failed -> exit 4, the summary still printed, one line on stderr.
        assert mixed.returncode == 4, mixed.stderr
        assert f"{GATE}: seat integrity FAILED (arms mixed in flight)" in mixed.stdout
        assert "exit 4" in mixed.stderr and "--isolate-arms" in mixed.stderr
        assert seat.wrong_served > 0
        first = rows(root, GATE)
        m = manifest(root, GATE)
        verdict = m["sessions"][0]["integrity"]
        # Under @3 a check that re-asks a row the seat first served with another arm's weights finds the re-ask
        # near no reference (foreign or unclear), not "wrong": which kind of miss depends on the order the
        # faulty seat took the requests in (a loaded machine changes it); any miss fails the session.
        misses = verdict["wrong"] + verdict["foreign"] + verdict["unclear"]
        assert verdict["status"] == "failed" and misses > 0 and verdict["sent"] == 18, verdict
        assert m["integrity"]["current"]["status"] == "failed"
        assert m["integrity"]["method"] == "canary-reproduction@3"
        params = m["integrity"]["params"]
        assert params["count"] == 2 and params["asks"] == 2 and params["checks_per_arm"] == 6
        assert {"threshold_rule", "position_rule", "floor_rule", "min_gap", "closing"} <= set(params)
        session = m["sessions"][0]
        cal = session["integrity"]["calibration"]
        assert cal["cross_similarity"] < cal["threshold"] < cal["self_similarity"] and cal["problem"] is None
        assert len(session["canaries"]["canaries"]) == 2 and session["canaries"]["nonce"]

        # score refuses: exit 2, one line naming integrity and the arms, pointing at the fix; nothing written.
        refused = cli(root, "score", GATE)
        assert refused.returncode == 2
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and "seat integrity FAILED for arms" in lines[0], refused.stderr
        assert "--isolate-arms" in lines[0]
        affected = {c["arm"] for c in verdict["confusions"]}
        assert all(a in lines[0] for a in affected)
        assert not (root / "runs" / GATE / "scores.json").exists()
        assert not (root / "gates" / f"{GATE}.md").exists()
        # --dry-run shows the numbers, then the same refusal.
        dry = cli(root, "score", GATE, "--dry-run")
        assert dry.returncode == 2 and "delta_cb" in dry.stdout and "seat integrity: FAILED" in dry.stdout
        assert "seat integrity FAILED for arms" in dry.stderr
        # --json: the error document alone, never a result beside it
        dry_json = cli(root, "score", GATE, "--dry-run", "--json")
        assert dry_json.returncode == 2
        assert json.loads(dry_json.stdout) == {"error": lines[0].removeprefix("voicegate: "), "exit": 2}
        # Continuing with arms mixed is refused too.
        again = cli(root, "generate", GATE, "--quiet")
        assert again.returncode == 2 and "--isolate-arms" in again.stderr

        shared_before, wrong_before = seat.shared_requests, seat.wrong_served
        isolated = cli(root, "generate", GATE, "--quiet", "--isolate-arms", "--canaries", "6")
        assert isolated.returncode == 0, isolated.stderr
        assert f"{GATE}: seat integrity holds (arms isolated)" in isolated.stdout
        # Arms never shared the seat, so the fault never fired.
        assert (seat.shared_requests, seat.wrong_served) == (shared_before, wrong_before)

        decided = cli(root, "score", GATE, "--json")
        assert decided.returncode == 0, decided.stderr

    # Recovery without loss: the suspect rows are in quarantine, not deleted; the hash covers the scored rows.
    run = root / "runs" / GATE
    quarantined = [json.loads(x) for x in (run / "quarantine.jsonl").read_text().splitlines()]
    assert sorted(map(row_key, quarantined)) == sorted(map(row_key, first))
    assert all(q["quarantined"]["reason"].startswith("seat integrity failed") for q in quarantined)
    now = rows(root, GATE)
    assert len(now) == len(first) and all(r["session"] == 1 and r["isolated"] for r in now)
    result = json.loads(decided.stdout)
    assert result["signature"]["generations_sha256"] == generations_hash(now)
    assert result["integrity"]["status"] == "holds" and result["integrity"]["isolated"] is True
    assert result["integrity"]["quarantined"] == len(first)
    assert result["integrity"]["quarantine"] == "quarantine.jsonl"
    m = manifest(root, GATE)
    assert m["quarantine"]["file"] == "quarantine.jsonl" and m["quarantine"]["sessions"] == [0]
    assert m["sessions"][1]["isolate_arms"] is True and m["sessions"][1]["integrity"]["wrong"] == 0
    record = (root / "gates" / f"{GATE}.md").read_text()
    # the verdict on one line where a reviewer reads; the method one heading away, below the verdicts
    verdict = re.search(r"^\*\*Seat integrity:\*\* HOLDS: .*$", record, re.MULTILINE)
    assert verdict is not None and len(verdict.group()) < 400 and "canary-reproduction" not in verdict.group()
    details = record.index("### Seat integrity — details")
    assert record.index("**Verdicts.**") < details < record.index("canary-reproduction@3")
    sent = result["integrity"]["sent"]
    assert sent >= 18 and result["integrity"]["right"] == sent and result["integrity"]["detects_95"] < 0.2
    report = voicegate(root, "report", GATE)
    assert report.returncode == 0, report.stderr
    page = (run / "report.html").read_text()
    assert "seat integrity" in page and f"HOLDS: {sent} canaries sent, {sent} reproduced their reference" in page
    # An amendment re-scores the same generations: the same seat verdict goes with it. It cites another
    # gate's registration of the rule, made before any of that gate's numbers exist.
    register_prospective(root, f"{GATE}-next", "global-max-spread")
    amended = voicegate(root, "amend", GATE, "--rule", "global-max-spread", "--post-hoc", "--reason", "test")
    assert amended.returncode == 0, amended.stderr
    state = json.loads((run / "recorded.json").read_text())
    assert state["current"]["integrity"]["status"] == "holds"
    # Every canary is kept, with its session and what it was attributed to.
    canaries = [json.loads(x) for x in (run / "canaries.jsonl").read_text().splitlines()]
    counts = Counter((c["session"], c["phase"]) for c in canaries)
    # Per arm: the first canary answered twice, the second once; the canary cells' real rows are two of those three
    # answers (no request of their own), so each arm asks one reference on its own: 3 asks, 6 real rows.
    assert counts[(0, "reference")] == counts[(1, "reference")] == 9 and counts[(0, "check")] == 18
    for session in (0, 1):
        refs = [c for c in canaries if c["session"] == session and c["phase"] == "reference"]
        assert sum(1 for c in refs if c.get("real_row")) == 6
        assert Counter(c["arm"] for c in refs if not c.get("real_row")) == {"base": 1, "ckpt475": 1, "ckpt925": 1}
    assert counts[(1, "check")] == sent


def test_isolated_waves_never_mix_arms_on_the_seat_and_keep_it_busy(tmp_path: Path) -> None:
    spec = {**gate_spec(GATE, concurrency=4, seeds=[1, 2, 3, 4]), "generation": {"isolate_arms": True}}
    with _seat(token_time=0.001, slots=4, wrong_weights_every=1) as seat:
        spec["seat"]["url"] = seat.url
        root = registered_workspace(tmp_path / "ws", spec)
        done = cli(root, "generate", GATE, "--quiet")
        assert done.returncode == 0, done.stderr
        log = seat.chat_log()
    # The spec key alone turned isolation on: no request ever shared the seat, though every shared one would fault.
    assert seat.shared_requests == 0 and seat.wrong_served == 0
    assert all(e["in_flight"] <= 4 for e in log) and seat.peak_in_flight == 4
    assert "seat integrity holds (arms isolated)" in done.stdout
    m = manifest(root, GATE)
    assert m["sessions"][0]["isolate_arms"] is True and m["sessions"][0]["wave_size"] == 16


def test_imported_generations_say_not_checked(tmp_path: Path) -> None:
    root = registered_workspace(tmp_path / "ws", gate_spec(GATE, seeds=[1, 2]))
    spec = load_spec(root, GATE)
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"arm": a.name, "seed": s, "prompt_id": p.id,
                                       "text": default_text(a.model, s, p.text, 40)[0]}) + "\n"
                           for a in spec.arms for s in spec.seeds for p in spec.prompts))
    assert run_cli("import", GATE, src, cwd=root).code == 0
    out = run_cli("score", GATE, "--dry-run", cwd=root)
    assert out.code == 0, out.stderr
    assert "seat integrity: not checked (imported)" in out.stdout
    scored = run_cli("score", GATE, "--json", "--dry-run", cwd=root)
    result = json.loads(scored.stdout)
    assert "integrity" not in result
    # Imported runs carry no canaries: their signature (and so lv-bronte's golden bytes) gains no integrity keys.
    assert "integrity_sha256" not in result["signature"] and "canaries_sha256" not in result["signature"]


@pytest.mark.parametrize("isolate", [False, True])
def test_canary_overhead_and_makespan_on_the_benchmark(tmp_path: Path, isolate: bool) -> None:
    """Acceptance 4 (small): the benchmark reports the canary overhead; the full one is benchmarks/."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from bench_generate import bench

    out = bench(slots=4, token_time=0.002, prompts=20, seeds=3, workdir=tmp_path, isolate=isolate)
    assert out["requests"] == 180 and out["integrity"] == "holds"
    # 3 arms x 1 reference ask of their own (the canary cells' real rows are the other answers); mixed, 3 checks
    # per arm; isolated, 12 waves in 4 rounds make 9 turns (a round opens with the arm that closed the one before),
    # each opened by a check, + 3 closing.
    assert out["canary_requests"] == 3 + (12 if isolate else 9) and out["isolate_arms"] is isolate
    if isolate:
        assert out["shared_requests"] == 0


# -- what a faulty seat can no longer slip past ----------------------------------------


def _fault_run(tmp_path: Path, *, isolate: bool = False, seeds: list[int] | None = None, args: tuple[str, ...] = (),
               **faults: object) -> tuple[Path, subprocess.CompletedProcess, StandinSeat]:
    with _seat(token_time=0.001, slots=8, **faults) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=8,
                                                               seeds=seeds or [101, 202, 303, 404]))
        done = cli(root, "generate", GATE, "--quiet", *(["--isolate-arms"] if isolate else []), *args)
    return root, done, seat


def _refused_by_score(root: Path) -> str:
    out = run_cli("score", GATE, cwd=root)
    assert out.code == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "refusing to decide: seat integrity" in lines[0], out.stderr
    assert not (root / "runs" / GATE / "scores.json").exists()
    return lines[0]


def test_a_fault_on_sampled_requests_only_is_caught(tmp_path: Path) -> None:
    """Canaries use the gate's own sampling: a seat that faults only when temperature > 0 meets them too."""
    # 8 checks per arm (24) meet a fault on every 3rd request unless (2/3)^24 = 6e-5; the default 3 per arm
    # (9 checks) miss it 2.6% of runs, which is the stated floor working, not a test that can be relied on.
    root, done, seat = _fault_run(tmp_path, wrong_weights_every=3, sampled_only=True, args=("--canaries", "8"))
    assert seat.wrong_served > 0
    assert done.returncode == 4 and "seat integrity FAILED" in done.stdout, done.stdout + done.stderr
    checks = [c for c in _canaries(root) if c["phase"] == "check"]
    assert {c["sampling"]["temperature"] for c in _canaries(root)} == {0.8}
    assert any(c["status"] in ("wrong", "foreign") for c in checks)
    # A check is one of the gate's own cells (prompt, request seed, temperature, top_p). A re-ask is the very
    # request of a stored row; a canary check differs in max_tokens alone (shorter, drawn per check,
    # so that no cache has seen it).
    real = {(r["prompt_sha256"], r["request_seed"], json.dumps(r["sampling"], sort_keys=True))
            for r in rows(root, GATE)}
    m = rows(root, GATE)[0]["sampling"]["max_tokens"]
    for c in checks:
        asked = (c["prompt_sha256"], c["seed"], json.dumps({**c["sampling"], "max_tokens": m}, sort_keys=True))
        assert asked in real
        asked = c["sampling"]["max_tokens"]
        assert (asked == m) if c["check"] == "reask" else (m // 2 <= asked < m)
    assert "refusing to decide" in _refused_by_score(root)


def test_weights_of_no_arm_are_caught(tmp_path: Path) -> None:
    # Every 2nd request after the reference waves (3 waves of 4 references, each filled to the concurrency of 8
    # with its arm's own real requests: 24): weights of no arm (the references themselves are spared).
    root, done, _ = _fault_run(tmp_path, foreign_every=2, faults_from=24, args=("--canaries", "8"))
    assert done.returncode == 4, done.stdout + done.stderr
    m = manifest(root, GATE)["sessions"][0]["integrity"]
    assert m["foreign"] > 0 and m["right"] < m["sent"]
    assert "foreign weights" in _refused_by_score(root)


def test_a_replica_serving_another_adapter_under_the_same_name_is_refused(tmp_path: Path) -> None:
    with ExitStack() as stack:
        good = stack.enter_context(_seat(token_time=0.001))
        bad = stack.enter_context(_seat(token_time=0.001, impostors={SERVED: RUNTIME}))
        spec = gate_spec(GATE, url=good.url, concurrency=4, seeds=[1, 2])
        spec["seat"]["replicas"] = [good.url, bad.url]
        root = registered_workspace(tmp_path / "ws", spec)
        out = cli(root, "generate", GATE, "--quiet")
    assert out.returncode == 2, out.stdout + out.stderr
    lines = [ln for ln in out.stderr.strip().splitlines() if "do not persist" not in ln]
    assert len(lines) == 1 and f"refusing replica {bad.url}" in lines[0] and "ckpt475" in lines[0], out.stderr
    # Before any check: the only rows are those the reference waves carried (the canary cells' own, each arm's
    # wave filled to the concurrency with its own requests), said so in the one line; none has a check, so the
    # next generate quarantines and redoes them (test_generated_rows_without_a_check_...).
    stored = rows(root, GATE)
    assert f"the {len(stored)} rows sent with the references carry none" in lines[0]
    assert all(c["phase"] == "reference" for c in _canaries(root))
    from voicegate.scoring import unchecked_parts

    assert {(r["session"], r["replica"]) for r in stored} == unchecked_parts(stored, _canaries(root))
    assert good.runtime == {} and bad.runtime == {}   # the adapters it loaded are unloaded


def test_a_late_fault_meets_the_closing_checks(tmp_path: Path) -> None:
    """Faults only in the last ~10% of a run: one check per arm closes the run, so they are met."""
    real = 3 * 3 * 8
    # after the 3 reference asks of their own (one per arm), the 9 checks and 88% of the real requests
    root, done, _ = _fault_run(tmp_path, seeds=list(range(1, 9)), late_after=3 + 9 + int(0.88 * real))
    assert done.returncode == 4, done.stdout + done.stderr
    checks = [c for c in _canaries(root) if c["phase"] == "check"]
    assert sorted(c["arm"] for c in checks if c["role"] == "closing") == ["base", "ckpt475", "ckpt925"]
    assert any(c["status"] == "foreign" for c in checks if c["role"] == "closing")


def test_every_isolated_wave_opens_with_a_check_so_a_sticky_switch_is_caught(tmp_path: Path) -> None:
    root, done, seat = _fault_run(tmp_path, isolate=True, sticky_after_switch=2)
    assert seat.wrong_served > 0
    assert done.returncode == 4, done.stdout + done.stderr
    # One opening check per turn (the first request sent after the arm switch) and one closing per arm.
    checks = [c for c in _canaries(root) if c["phase"] == "check"]
    spec = load_spec(root, GATE)
    waves = isolate_waves(build_schedule(spec), manifest(root, GATE)["sessions"][0]["wave_size"] - 1, spec.order_seed)
    assert sum(c["role"] == "opening" for c in checks) == len(turns(waves))
    assert sum(c["role"] == "closing" for c in checks) == 3


def test_the_record_states_the_detection_floor(tmp_path: Path) -> None:
    with _seat(token_time=0.0005, slots=8) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=8,
                                                               seeds=[101, 202, 303, 404]))
        done = cli(root, "generate", GATE, "--quiet")
        assert done.returncode == 0, done.stderr
        assert "catches a fault on" in done.stdout
        scored = run_cli("score", GATE, cwd=root)
    assert scored.code == 0, scored.stderr
    record = (root / "gates" / f"{GATE}.md").read_text()
    integrity = json.loads((root / "runs" / GATE / "scores.json").read_text())["integrity"]
    floor = integrity["detects_95"]
    assert floor == round(1 - 0.05 ** (1 / integrity["sent"]), 4)
    assert f"catches a fault on {100 * floor:.1f}% of requests with 95%" in record


def _failed_run(tmp_path: Path) -> Path:
    with _seat(token_time=0.001, slots=8, wrong_weights_every=3) as seat:
        root = registered_workspace(tmp_path / "failed", gate_spec(GATE, url=seat.url, concurrency=8,
                                                                   seeds=[101, 202, 303, 404]))
        done = cli(root, "generate", GATE, "--quiet", "--canaries", "8")   # misses every-3rd with (2/3)^24
        assert done.returncode == 4, done.stdout + done.stderr
    return root


def _edit_jsonl(path: Path, edit) -> None:
    out = []
    for line in path.read_text().splitlines():
        row = edit(json.loads(line))
        if row is not None:
            out.append(json.dumps(row) + "\n")
    path.write_text("".join(out))


def _edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def _flip(c: dict) -> dict:
    if c.get("status") not in (None, "right"):
        c.update(status="right", answered_as=c["arm"])
    return c


EDITS = {
    "delete canaries.jsonl": lambda run: (run / "canaries.jsonl").unlink(),
    "flip every check to right": lambda run: _edit_jsonl(run / "canaries.jsonl", _flip),
    "drop every check": lambda run: _edit_jsonl(run / "canaries.jsonl",
                                                lambda c: c if c["phase"] == "reference" else None),
    "drop the failing checks": lambda run: _edit_jsonl(run / "canaries.jsonl",
                                                       lambda c: None if c.get("status") == "wrong" else c),
    "delete run.json": lambda run: (run / "run.json").unlink(),
    "drop run.json's integrity": lambda run: _edit_json(run / "run.json", lambda m: m.pop("integrity")),
    "set source imported": lambda run: _edit_json(run / "run.json", lambda m: m.update(source="imported")),
    "null rows' session": lambda run: _edit_jsonl(run / "generations.jsonl", lambda r: {**r, "session": None}),
    "renumber rows' session": lambda run: _edit_jsonl(run / "generations.jsonl", lambda r: {**r, "session": 1}),
    "rename replica": lambda run: _edit_jsonl(run / "generations.jsonl",
                                              lambda r: {**r, "replica": "http://elsewhere:1/v1"}),
}


def test_no_edit_of_the_evidence_makes_score_decide_a_failed_run(tmp_path: Path) -> None:
    failed = _failed_run(tmp_path)
    _refused_by_score(failed)
    for name, edit in EDITS.items():
        root = tmp_path / name.replace(" ", "-").replace("'", "")
        shutil.copytree(failed, root, symlinks=True)
        edit(root / "runs" / GATE)
        out = run_cli("score", GATE, cwd=root)
        assert out.code == 2, f"{name}: score decided ({out.stdout[-300:]})"
        assert "refusing to decide: seat integrity" in out.stderr, f"{name}: {out.stderr}"
        assert not (root / "runs" / GATE / "scores.json").exists(), name


def test_the_signature_binds_the_integrity_evidence(tmp_path: Path) -> None:
    with _seat(token_time=0.0005, slots=8) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=8, seeds=[1, 2]))
        assert cli(root, "generate", GATE, "--quiet").returncode == 0
    run = root / "runs" / GATE
    first = json.loads(run_cli("score", GATE, "--json", "--dry-run", cwd=root).stdout)["signature"]
    from voicegate._hashing import sha256_file, sha256_json

    assert first["canaries_sha256"] == sha256_file(run / "canaries.jsonl")
    assert first["integrity_sha256"] == sha256_json(manifest(root, GATE)["integrity"])
    # An edit that leaves the verdict as it was still changes what the verdict names: a new line at the end.
    with open(run / "canaries.jsonl", "a") as fh:
        fh.write("\n")
    second = json.loads(run_cli("score", GATE, "--json", "--dry-run", cwd=root).stdout)["signature"]
    assert second["canaries_sha256"] != first["canaries_sha256"]


def test_generated_rows_without_a_check_are_refused_then_regenerated(tmp_path: Path) -> None:
    """A session that stopped before its first check: score refuses its rows; generate quarantines and redoes them."""
    with _seat(token_time=0.0005, slots=8) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=8, seeds=[1, 2]))
        assert cli(root, "generate", GATE, "--quiet").returncode == 0
        run = root / "runs" / GATE
        # What a kill before the first check leaves: its rows, its references, no check, no end of session.
        _edit_jsonl(run / "canaries.jsonl", lambda c: c if c["phase"] == "reference" else None)
        _edit_json(run / "run.json", lambda m: m["sessions"][0].pop("generated"))
        line = _refused_by_score(root)
        assert "NOT CHECKED" in line and "generate" in line
        again = cli(root, "generate", GATE, "--quiet")
        assert again.returncode == 0, again.stderr
        assert "carry no seat-integrity check" in again.stderr
    assert len(rows(root, GATE)) == 18 and all(r["session"] == 1 for r in rows(root, GATE))
    assert (run / "quarantine.jsonl").read_text().count("\n") == 18
    assert run_cli("score", GATE, cwd=root).code == 0


# -- the canary cells' real rows as references: the overhead at lv-bronte's size ----


def test_calibration_wants_the_first_canary_twice_and_the_others_once() -> None:
    params = CanaryParams()
    assert (params.count, params.asks, params.repeated) == (2, 2, 1) and params.references_per_arm(2) == 3
    refs = {"k0": {"base": REFS["base"], "x": REFS["x"]}, "k1": {"base": REFS["base"][:1], "x": REFS["x"][:1]}}
    cal = calibrate(refs, ["base", "x"], params)
    assert cal.problem is None and cal.threshold is not None
    # The repeat is what calibrates: the first canary (in the order drawn, k10 after k9) needs both answers.
    short = {"k0": {"base": REFS["base"][:1], "x": REFS["x"]}, "k1": {"base": REFS["base"], "x": REFS["x"]}}
    problem = calibrate(short, ["base", "x"], params).problem or ""
    assert "canary k0: arm base has 1 of its 2 reference asks" in problem
    assert "canary k1: arm x has 0 of its 1" in (calibrate({**refs, "k1": {"base": REFS["base"][:1]}}, ["base", "x"],
                                                            params).problem or "")
    # A record from before `repeated` asked every canary twice: judged as it was asked.
    assert CanaryParams.from_dict({"count": 2, "asks": 2}).repeated == 2
    assert CanaryParams.from_dict(params.as_dict()).repeated == 1


def test_checks_planned_over_the_run_are_squeezed_past_the_rows_the_reference_waves_sent() -> None:
    from voicegate.generate._canaries import after_references

    params = CanaryParams()
    arms = [("base", "b"), ("x", "x"), ("y", "y")]
    canaries = choose_canaries([("0", "p0"), ("1", "p1")], 2, "n")
    rng = random.Random(3)
    placed = positions(plan_checks(params, arms, 5, canaries, rng), 120, params, rng)
    moved = after_references(placed, 14, 120)
    assert [c for _, c in moved] == [c for _, c in placed]
    at = [a for a, _ in moved]
    assert at == sorted(at) and at[0] >= 15 and at[-1] <= 120     # none at once after the references
    closing = [a for a, c in moved if c.role == "closing"]
    assert closing and min(closing) >= 120 * (1 - params.closing) - 2


def test_the_canary_cells_real_rows_are_reference_answers_and_score_holds_them_to_the_rows(
        tmp_path: Path) -> None:
    """A canary is its cell's very request: the cell's real row of an arm, sent in the arm's reference wave, is one
    of its answers. Each arm asks one reference on its own; at 360 requests every extra request is 5.0%."""
    with _seat(token_time=0.0002, slots=8, default_generator=_jitter) as seat:
        spec = gate_spec(GATE, url=seat.url, concurrency=8, seeds=[101, 202, 303])
        root = registered_workspace(tmp_path / "ws", spec, prompts=[f"Write scene {i}." for i in range(40)])
        result = generate(load_spec(root, GATE), quiet=True)
        chats = sum(1 for e in seat.chat_log() if e["status"] == 200)
    assert result.generated == 360 and not result.canaries.failed, result.integrity_line()
    canaries = _canaries(root)
    stored = {(r["kind"], r["seed"], r["prompt_id"], r["arm"]): r for r in rows(root, GATE)}
    refs = [c for c in canaries if c["phase"] == "reference"]
    real = [c for c in refs if c.get("real_row")]
    asked = [c for c in canaries if not c.get("real_row")]
    # Every request the seat answered is a row or a canary request; the real-row references are rows.
    assert chats == 360 + len(asked)
    assert len(refs) == 9 and len(real) == 6 and Counter(c["arm"] for c in refs if not c.get("real_row")) == {
        "base": 1, "ckpt475": 1, "ckpt925": 1}
    for c in real:
        row = stored[(*c["cell"], c["arm"])]
        assert (row["text"], row["request_seed"], row["prompt_sha256"], row["sampling"]) == (
            c["text"], c["seed"], c["prompt_sha256"], c["sampling"])
    # Every extra request: 3 reference asks + 15 checks = 18 = 5.0% of 360 (the stated floor is over those 15).
    checks = [c for c in canaries if c["phase"] == "check"]
    assert len(checks) == 15 and len(asked) == 18 == 0.05 * 360
    assert result.canaries.floors()[0] == detection_floor(15)
    assert run_cli("score", GATE, "--dry-run", cwd=root).code == 0
    # A real-row reference that is not the stored row's text is refused by score.
    first = real[0]
    _edit_jsonl(root / "runs" / GATE / "canaries.jsonl",
                lambda c: {**c, "text": c["text"] + " And so on."} if c == first else c)
    out = run_cli("score", GATE, "--dry-run", cwd=root)
    assert out.code == 2 and "reference copies of real rows differ" in out.stdout + out.stderr, out.stderr
