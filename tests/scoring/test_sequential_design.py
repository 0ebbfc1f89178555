"""A registered sequential design (`floor.looks`): boundaries fixed at `register`, a verdict only at a look.

The boundaries come from a seeded simulation, so the same looks always give the same numbers; the decision
`score` applies (Welch's df, at most the simulation's) keeps the false pass within α at the null's boundary;
a number of seeds that is not a look is refused with nothing written.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from helpers.sequential import look_rows, sequential_workspace
from helpers.workspace import GATE, run_cli, write_rows

from voicegate.gate._looks import p_value
from voicegate.spec._sequential import _boundaries, boundaries, decide_look

LOOKS = [3, 5, 8, 12]
ALPHA = 0.01


def test_the_boundaries_are_a_fixed_function_of_the_looks():
    first = boundaries(LOOKS, ALPHA)
    _boundaries.cache_clear()
    again = boundaries(LOOKS, ALPHA)
    assert first == again
    assert [(b.seeds, b.efficacy, b.futility) for b in first] == [
        (3, 0.000186498, 0.5), (5, 0.000868491, 0.3), (8, 0.00267913, 0.1875), (12, 0.00593086, None)]


def test_scores_decision_keeps_the_false_pass_within_alpha_at_the_nulls_boundary():
    # 10,000 runs of the decision `score` makes (Welch's p at each look, the recorded boundaries, stopping at the
    # first decided look), per-seed distances with a true effect of exactly ε (0.2 base-seed SDs): the worst null.
    design = boundaries(LOOKS, ALPHA)
    rng = random.Random(7)
    runs, passed, used = 10_000, 0, 0
    for _ in range(runs):
        base = [rng.gauss(0.0, 1.0) for _ in range(12)]
        cand = [rng.gauss(-0.2, 1.0) for _ in range(12)]
        for n in LOOKS:
            dist = {"base": dict(enumerate(base[:n])), "cand": dict(enumerate(cand[:n]))}
            d = decide_look(p_value(dist, "base", "cand", 0.2, True), design, n)
            if d.verdict != "CONTINUE":
                passed += d.verdict == "PASS"
                used += n
                break
    error = 3 * math.sqrt(ALPHA * (1 - ALPHA) / runs)
    assert passed / runs <= ALPHA + error
    assert used / runs < 0.6 * 12  # it stops early under the null: futility


def test_a_number_of_seeds_that_is_not_a_look_has_no_verdict():
    design = boundaries(LOOKS, ALPHA)
    with pytest.raises(ValueError):
        decide_look(0.0, design, 4)
    assert decide_look(0.0001, design, 3).line == "look 1 of 4, 3 seeds: PASS (p 0.00010 under 0.000186498)"
    assert decide_look(0.6, design, 3).line == "look 1 of 4, 3 seeds: FAIL (p 0.60000 over 0.5: futility)"
    assert decide_look(0.01, design, 12).verdict == "FAIL"


def _registered(tmp_path: Path) -> Path:
    return sequential_workspace(tmp_path / "ws")


def test_register_fixes_the_boundaries_and_a_refused_design_exits_2(tmp_path: Path) -> None:
    root = _registered(tmp_path)
    record = json.loads((root / "preregistrations" / f"{GATE}.registration.json").read_text(encoding="utf-8"))
    assert record["sequential"]["looks"] == [{"seeds": 3, "efficacy": 0.0021763, "futility": 0.5},
                                             {"seeds": 5, "efficacy": 0.00604411, "futility": None}]
    spec = root / "preregistrations" / f"{GATE}.yaml"
    for floor, why in (({"rule": "pairwise-max-spread", "looks": [3, 5]}, "needs a t rule"),
                       ({"rule": "welch-t", "looks": [3, 4]}, "the last look must be every seed of `seeds` (5)"),
                       ({"rule": "welch-t", "looks": [5, 3]}, "must be strictly ascending")):
        data = json.loads(json.dumps(record["spec"]))
        data["floor"] = floor
        spec.write_text(json.dumps(data), encoding="utf-8")
        done = run_cli("register", GATE, "-C", root, "--supersede")
        assert done.code == 2 and why in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_score_decides_at_the_registered_looks_and_refuses_any_other(tmp_path: Path) -> None:
    root = _registered(tmp_path)
    record = root / "gates" / f"{GATE}.md"
    write_rows(root, look_rows([1, 2]))
    refused = run_cli("score", GATE, "-C", root)
    assert refused.code == 2
    assert refused.stderr.strip() == ("voicegate: refusing to score lv-test: 2 seeds per arm is not a registered "
                                      "look (3, 5 seeds per arm); generate to the next look")
    assert not record.exists() and not (root / "runs" / GATE / "scores.json").exists()

    write_rows(root, look_rows([3]))
    at3 = run_cli("score", GATE, "-C", root)
    assert at3.code == 0, at3.stderr
    cont = ("cand: look 1 of 2, 3 seeds: CONTINUE (p 0.01012, between 0.0021763 and 0.5): not decided at this "
            "look: generate to the next look")
    assert cont in at3.stdout
    assert "other: look 1 of 2, 3 seeds: FAIL (p 0.92568 over 0.5: futility)" in at3.stdout
    text = record.read_text(encoding="utf-8")
    assert text.count("**Sequential design") == 1 and f"- {cont}" in text

    write_rows(root, look_rows([4]))
    assert run_cli("score", GATE, "-C", root).code == 2

    write_rows(root, look_rows([5]))
    at5 = run_cli("score", GATE, "-C", root)
    assert at5.code == 0, at5.stderr
    assert "cand: look 2 of 2, 5 seeds: PASS (p 0.00135 under 0.00604411)" in at5.stdout
    text = record.read_text(encoding="utf-8")
    assert text.count("**Sequential design") == 2 and f"- {cont}" in text  # the look-1 entry stays, chained
    assert "- cand: look 2 of 2, 5 seeds: PASS" in text
    assert run_cli("verify", GATE, "-C", root).code == 0
    # ship records a person's decision beside the verdicts: it warns where the look did not PASS
    other = run_cli("ship", GATE, "other", "--reason", "the reviewer prefers its voice", "-C", root)
    assert other.code == 0, other.stderr
    assert ("warning: other is not what the registered sequential design ships (stopped at look 1 of 2, 3 seeds: "
            "FAIL (p 0.92568 over 0.5: futility); final: not decided again at look 2;" in other.stderr)
    cand = run_cli("ship", GATE, "cand", "--reason", "it passed the registered design", "-C", root)
    assert cand.code == 0 and "sequential" not in cand.stderr, cand.stderr
