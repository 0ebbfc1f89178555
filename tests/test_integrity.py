"""Seat integrity (issue 16) on the stand-in seat: canaries, the verdict, the refusal, --isolate-arms, quarantine.

The stand-in's text depends on the model, so a request answered with another
model's weights is visible in its text; `wrong_weights_every=k` is the fault
(every k-th request that shares the seat with another model in flight).
"""

from __future__ import annotations

import json
import random
import subprocess
from collections import Counter
from pathlib import Path

import pytest
import yaml
from _workspace import gate_spec, manifest, register_prospective, registered_workspace, rows, run_cli, voicegate

from voicegate.generate._generate import generate
from voicegate.generate._integrity import (
    CanaryCheck,
    CanaryParams,
    attribute,
    checks_per_arm,
    into_waves,
    similarity,
    spread,
)
from voicegate.generate._schedule import build_schedule, isolate_waves
from voicegate.run._store import generations_hash, row_key
from voicegate.seat import StandinSeat
from voicegate.seat._standin import default_text
from voicegate.spec._spec import load_spec

GATE = "lv-int"
SERVED = f"{GATE}-ckpt475"


def _seat(**kw) -> StandinSeat:
    return StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, **kw)


# -- the comparison ---------------------------------------------------------------------


def test_similarity_is_one_for_the_same_text_and_low_for_another_models() -> None:
    p = "Continue the story: The letter came on a grey morning, and"
    a, _ = default_text("voices-base", 1729, p, 32)
    b, _ = default_text("lv-x", 1729, p, 32)
    assert similarity(a, a) == 1.0 and similarity(a, "  " + a.upper() + " ") == 1.0
    assert similarity(a, b) < 0.4
    assert similarity("", "") == 1.0 and similarity(a, "") == 0.0


def test_attribution_right_wrong_unclear_and_indistinct() -> None:
    params = CanaryParams()
    refs = {"base": "The moor was grey and the wind rose over the hills all night long.",
            "x": "Her sister laughed at the letter, and the house by the river was still."}
    assert attribute(refs["base"], "base", refs, params).status == "right"
    # Another arm's exact answer: the seat served that arm's weights.
    wrong = attribute(refs["x"], "base", refs, params)
    assert (wrong.status, wrong.answered_as) == ("wrong", "x")
    # Batch nondeterminism: the greedy continuation flips late and diverges; still its own.
    drift = refs["base"][:40] + " and then she said nothing more to anyone."
    assert attribute(drift, "base", refs, params).status == "right"
    # Halfway between the two: reported, never decisive.
    mixed = refs["base"][:34] + refs["x"][34:]
    assert attribute(mixed, "base", refs, params).status in ("unclear", "right")
    # Two arms with the same reference cannot be told apart: never "wrong".
    same = {"base": refs["base"], "y": refs["base"]}
    assert attribute(refs["base"], "y", same, params).status == "right"


def test_canary_budget_is_five_percent_with_a_floor_per_arm() -> None:
    params = CanaryParams()
    # lv-bronte's size: 3 arms x 40 prompts x 3 seeds = 360 requests -> 18 canary requests, 5%.
    assert checks_per_arm(params, 3, 360) == 4
    assert 3 * 2 + 3 * checks_per_arm(params, 3, 360) <= 0.05 * 360
    assert checks_per_arm(params, 3, 12) == params.min_checks_per_arm
    assert checks_per_arm(CanaryParams(checks_per_arm=7), 3, 12) == 7


def test_spread_places_checks_evenly_and_never_first() -> None:
    items = list(range(20))
    checks = ["a", "b", "c"]
    out = spread(items, checks)
    assert [x for x in out if isinstance(x, int)] == items and out[0] == 0
    at = [out.index(c) for c in checks]
    assert at == sorted(at) and at[0] > 2 and at[-1] < len(out) - 2


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
    # Checks land in their own arm's waves.
    checks = [CanaryCheck(i, arm, arm, "c-letter", "p") for i, arm in enumerate(["base", "ckpt925"] * 3)]
    placed = into_waves(waves, checks)
    for w in placed:
        assert len({x.arm for x in w}) == 1
    assert sum(isinstance(x, CanaryCheck) for w in placed for x in w) == 6


# -- acceptance 1: no false alarm ------------------------------------------------------------


def _jitter(model: str, seed: int, prompt: str, max_tokens: int) -> tuple[str, str]:
    """Batch nondeterminism, exaggerated: 40% of answers flip at a random word and diverge from there."""
    text, finish = default_text(model, seed, prompt, max_tokens)
    words = text.split()
    if len(words) > 3 and random.random() < 0.4:
        cut = random.randint(len(words) // 3, len(words) - 1)
        tail = default_text(f"{model}~{random.random()}", seed, prompt, max_tokens)[0].split()
        words = words[:cut] + tail[cut:len(words)]
    return " ".join(words), finish


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


def test_acceptance_1_no_false_alarm_over_20_runs_with_different_seeds(tmp_path: Path) -> None:
    """Default generate on a faultless (but nondeterministic) stand-in: integrity holds and score decides, 20/20."""
    n = 20
    gates = [f"lv-fa{i}" for i in range(n)]
    with StandinSeat(adapters={f"{g}-ckpt475": f"/adapters/{g}/ckpt475" for g in gates},
                     default_generator=_jitter, token_time=0.0005, slots=8) as seat:
        base = gate_spec(gates[0], url=seat.url, concurrency=8, seeds=[11, 12])
        root = registered_workspace(tmp_path / "ws", base)
        _register_more(root, base, [(g, {"seeds": [100 + 7 * i, 200 + 7 * i], "order_seed": i})
                                    for i, g in enumerate(gates) if i])
        tally: Counter[str] = Counter()
        for gate in gates:
            result = generate(load_spec(root, gate), quiet=True)
            assert not result.canaries.failed, result.integrity_line()
            tally.update(right=result.canaries.right, wrong=result.canaries.wrong,
                         unclear=result.canaries.unclear, sent=result.canaries.sent)
            scored = run_cli("score", gate, "--json", "--dry-run", cwd=root)
            assert scored.code == 0, scored.stderr
            integrity = json.loads(scored.stdout)["integrity"]
            assert integrity["status"] == "holds" and integrity["wrong"] == 0
        assert seat.wrong_served == 0 and seat.shared_requests > 0
    # The false-alarm rate: wrong attributions over every check of 20 runs.
    print(f"\nno-fault stand-in, 20 runs: {dict(tally)}")
    assert tally["wrong"] == 0 and tally["sent"] >= 20 * 9, tally
    # Texts really were perturbed (the check had nondeterminism to survive).
    assert tally["right"] + tally["unclear"] == tally["sent"]


# -- acceptance 2: the fault is caught and fixed -------------------------------------------------


def test_acceptance_2_fault_one_in_three_flagged_refused_then_isolated_run_decides(tmp_path: Path) -> None:
    with _seat(token_time=0.001, slots=8, wrong_weights_every=3) as seat:
        root = registered_workspace(tmp_path / "ws", gate_spec(GATE, url=seat.url, concurrency=8,
                                                               seeds=[101, 202, 303, 404]))
        mixed = voicegate(root, "generate", GATE, "--quiet", "--canaries", "6")
        assert mixed.returncode == 0, mixed.stderr
        assert f"{GATE}: seat integrity FAILED (arms mixed in flight)" in mixed.stdout
        assert seat.wrong_served > 0
        first = rows(root, GATE)
        m = manifest(root, GATE)
        verdict = m["sessions"][0]["integrity"]
        assert verdict["status"] == "failed" and verdict["wrong"] > 0 and verdict["sent"] == 18
        assert m["integrity"]["current"]["status"] == "failed"
        assert m["integrity"]["method"] == "canary-nearest-reference@1"
        assert m["integrity"]["params"]["temperature"] == 0.0 and m["integrity"]["params"]["max_tokens"] == 32

        # score refuses: exit 2, one line naming integrity and the arms, pointing at the fix; nothing written.
        refused = voicegate(root, "score", GATE)
        assert refused.returncode == 2
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and "seat integrity FAILED for arms" in lines[0], refused.stderr
        assert "--isolate-arms" in lines[0]
        affected = {c["arm"] for c in verdict["confusions"]}
        assert all(a in lines[0] for a in affected)
        assert not (root / "runs" / GATE / "scores.json").exists()
        assert not (root / "gates" / f"{GATE}.md").exists()
        # --dry-run shows the numbers, then the same refusal.
        dry = voicegate(root, "score", GATE, "--dry-run")
        assert dry.returncode == 2 and "delta_cb" in dry.stdout and "seat integrity: FAILED" in dry.stdout
        assert "seat integrity FAILED for arms" in dry.stderr
        dry_json = voicegate(root, "score", GATE, "--dry-run", "--json")
        assert dry_json.returncode == 2 and json.loads(dry_json.stdout)["integrity"]["status"] == "failed"
        # Continuing with arms mixed is refused too.
        again = voicegate(root, "generate", GATE, "--quiet")
        assert again.returncode == 2 and "--isolate-arms" in again.stderr

        shared_before, wrong_before = seat.shared_requests, seat.wrong_served
        isolated = voicegate(root, "generate", GATE, "--quiet", "--isolate-arms", "--canaries", "6")
        assert isolated.returncode == 0, isolated.stderr
        assert f"{GATE}: seat integrity holds (arms isolated)" in isolated.stdout
        # Arms never shared the seat, so the fault never fired.
        assert (seat.shared_requests, seat.wrong_served) == (shared_before, wrong_before)

        decided = voicegate(root, "score", GATE, "--json")
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
    assert "**Seat integrity.** HOLDS" in record and "canary-nearest-reference@1" in record
    report = voicegate(root, "report", GATE)
    assert report.returncode == 0, report.stderr
    page = (run / "report.html").read_text()
    assert "seat integrity" in page and "HOLDS: 18 canaries sent, 18 attributed right" in page
    # An amendment re-scores the same generations: the same seat verdict goes with it. It cites another
    # gate's registration of the rule, made before any of that gate's numbers exist.
    register_prospective(root, f"{GATE}-next", "global-max-spread")
    amended = voicegate(root, "amend", GATE, "--rule", "global-max-spread", "--reason", "test")
    assert amended.returncode == 0, amended.stderr
    state = json.loads((run / "recorded.json").read_text())
    assert state["current"]["integrity"]["status"] == "holds"
    # Every canary is kept, with its session and what it was attributed to.
    canaries = [json.loads(x) for x in (run / "canaries.jsonl").read_text().splitlines()]
    assert Counter((c["session"], c["phase"]) for c in canaries) == {
        (0, "reference"): 6, (0, "check"): 18, (1, "reference"): 6, (1, "check"): 18}


def test_isolated_waves_never_mix_arms_on_the_seat_and_keep_it_busy(tmp_path: Path) -> None:
    spec = {**gate_spec(GATE, concurrency=4, seeds=[1, 2, 3, 4]), "generation": {"isolate_arms": True}}
    with _seat(token_time=0.001, slots=4, wrong_weights_every=1) as seat:
        spec["seat"]["url"] = seat.url
        root = registered_workspace(tmp_path / "ws", spec)
        done = voicegate(root, "generate", GATE, "--quiet")
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
    assert "integrity" not in json.loads(scored.stdout)


@pytest.mark.parametrize("isolate", [False, True])
def test_canary_overhead_and_makespan_on_the_benchmark(tmp_path: Path, isolate: bool) -> None:
    """Acceptance 4 (small): the benchmark reports the canary overhead; the full one is benchmarks/."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_generate import bench

    out = bench(slots=4, token_time=0.002, prompts=20, seeds=3, workdir=tmp_path, isolate=isolate)
    assert out["requests"] == 180 and out["integrity"] == "holds"
    assert out["canary_requests"] == 6 + 9 and out["isolate_arms"] is isolate
    if isolate:
        assert out["shared_requests"] == 0
