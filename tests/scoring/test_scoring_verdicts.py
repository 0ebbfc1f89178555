"""The verdict layer: the lv-bronte reference case, driven exactly, and the pairwise property."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicegate._errors import VoicegateError
from voicegate._figures import ratio_text
from voicegate.report._table import make_console, print_score
from voicegate.scoring import GateResult, decide
from voicegate.scoring import result_text as result_json
from voicegate.scoring._result import ArmResult, CandidateResult, Control
from voicegate.scoring._verdicts import ArmVoice, Decision
from voicegate.spec._rules import RULES

# Constructed per-seed distances for lv-bronte (DESIGN.md §3): base and ckpt475
# spread <= 0.091 (ckpt475 exactly 0.091), ckpt925 spreads 0.251 (one outlier
# seed), delta_cb +0.193 and +0.210.
BASE = {101: 0.800, 202: 0.830, 303: 0.860}            # spread 0.060, mean 0.830
CKPT475 = {101: 0.600, 202: 0.637, 303: 0.691}         # spread 0.091, mean 0.642667
CKPT925 = {101: 0.536, 202: 0.537, 303: 0.787}         # spread 0.251, mean 0.620
# make the means give exactly +0.193 and +0.210
CKPT475 = {s: d + (0.830 - 0.193 - sum(CKPT475.values()) / 3) for s, d in CKPT475.items()}
DIST = {"base": BASE, "ckpt475": CKPT475, "ckpt925": CKPT925}
OK = {"ckpt475": "NOT-COPIED", "ckpt925": "NOT-COPIED"}
CLEAN = {"ckpt475": "NO-DAMAGE", "ckpt925": "NO-DAMAGE"}


def decision_result(decision: Decision, gate: str) -> GateResult:
    """A decision alone as a GateResult (no copying or damage statistics): the verdict seam, printable."""
    def stats(a: ArmVoice) -> dict[str, Any]:
        return {"name": a.name, "role": a.role, "model": a.name, "distances": a.distances,
                "mean_distance": a.mean_distance, "spread": a.spread}

    arms: list[ArmResult] = [ArmResult(**stats(decision.base))]
    arms += [CandidateResult(**stats(c), delta_cb=c.delta_cb, floors=c.floors, voice=c.voice, ratios=c.ratios,
                             ratio=c.ratio, disagree=c.disagree, copying=c.copying, damage=c.damage,
                             detectable=c.detectable)
             for c in decision.candidates]
    return GateResult(gate=gate, rule=decision.rule, ships=decision.ships,
                      control=Control(arm=decision.base.name, overlap=None), arms=tuple(arms))


# The rules in force when lv-bronte was gated and amended: its history is told under these two.
HISTORY = ("global-max-spread", "pairwise-max-spread")


def _result(rule: str, rules: tuple[str, ...] | None = HISTORY) -> GateResult:
    out = decide(DIST, "base", ["ckpt475", "ckpt925"], rule=rule, rules=rules, copying=OK, damage=CLEAN)
    return decision_result(out, "lv-bronte")


def _arm(result: GateResult, name: str) -> Any:
    return result.arm(name)


def test_reference_case_under_global_max_spread_both_fail():
    r = _result("global-max-spread")
    a475, a925 = _arm(r, "ckpt475"), _arm(r, "ckpt925")
    assert a475.delta_cb == 0.193 and a925.delta_cb == 0.21
    assert a475.spread == 0.091 and a925.spread == 0.251 and _arm(r, "base").spread == 0.06
    assert a475.floors["global-max-spread"] == 0.251 == a925.floors["global-max-spread"]
    assert a475.voice["global-max-spread"] == "FAIL" and a925.voice["global-max-spread"] == "FAIL"
    assert r.ships is None  # lv-bronte shipped ckpt475 by a person's decision, not by the rule
    assert a475.ratio == pytest.approx(0.193 / 0.251, abs=1e-6)


def test_reference_case_under_pairwise_max_spread_ckpt475_passes_2_1x():
    r = _result("pairwise-max-spread")
    a475, a925 = _arm(r, "ckpt475"), _arm(r, "ckpt925")
    assert a475.floors == {"global-max-spread": 0.251, "pairwise-max-spread": 0.091}
    assert a925.floors == {"global-max-spread": 0.251, "pairwise-max-spread": 0.251}
    assert a475.voice == {"global-max-spread": "FAIL", "pairwise-max-spread": "PASS"}
    assert a925.voice == {"global-max-spread": "FAIL", "pairwise-max-spread": "FAIL"}
    assert a475.ratio == 2.120879 and ratio_text(a475.ratio) == "2.1x"
    assert a475.disagree is True and a925.disagree is False
    assert r.ships == "ckpt475"


def test_disagree_is_rule_independent_and_every_rule_always_present():
    for rule in HISTORY:
        assert [a.disagree for a in _result(rule).arms[1:]] == [True, False]  # lv-bronte's two rules
    every = [r for r, f in RULES.items() if not f.by_choice]  # a rule a gate must choose: only where chosen
    for rule in every:
        r = _result(rule, rules=None)  # None: every registered rule, the new one included
        # whichever rule decides: DISAGREE says the computed rules' verdicts differ, and ckpt475's do
        assert [a.disagree for a in r.arms[1:]] == [True, len(set(r.arms[2].voice.values())) > 1]
        for arm in r.arms[1:]:
            assert set(arm.floors) == set(every) == set(arm.voice) == set(arm.ratios)
        assert r.rules == every


def test_the_rules_computed_are_the_ones_asked_for_and_the_deciding_one():
    r = _result("welch-t", rules=("global-max-spread",))
    assert r.rules == ["global-max-spread", "welch-t"] and set(r.arms[1].floors) == set(r.rules)
    with pytest.raises(VoicegateError, match="unknown floor rule 'median'"):
        _result("pairwise-max-spread", rules=("median",))


def test_welch_t_floor_is_the_one_sided_critical_difference_and_its_detectable_delta():
    # Computed here from the definitions, independently of the rule: Welch's SE and df, scipy's t.
    import statistics

    from scipy.stats import t as student

    r = _result("welch-t", rules=None)
    for name, dist in (("ckpt475", CKPT475), ("ckpt925", CKPT925)):
        a, b = list(dist.values()), list(BASE.values())
        va, vb = statistics.variance(a) / 3, statistics.variance(b) / 3
        df = (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 2)
        se = math.sqrt(va + vb)
        arm = _arm(r, name)
        assert arm.floors["welch-t"] == pytest.approx(student.ppf(0.99, df) * se, abs=1e-6)
        assert arm.detectable["welch-t"] == pytest.approx((student.ppf(0.99, df) + student.ppf(0.8, df)) * se,
                                                          abs=1e-6)
        t_stat = arm.delta_cb / se
        assert (arm.voice["welch-t"] == "PASS") == (t_stat > student.ppf(0.99, df))
    # The reference case under the new rule: ckpt475 passes (0.129 floor), ckpt925's outlier seed fails it.
    a475, a925 = _arm(r, "ckpt475"), _arm(r, "ckpt925")
    assert (a475.floors["welch-t"], a475.voice["welch-t"], ratio_text(a475.ratios["welch-t"])) == \
        (0.129492, "PASS", "1.5x")
    assert a925.voice["welch-t"] == "FAIL" and a475.disagree
    assert a925.disagree is (len(set(a925.voice.values())) > 1)
    # The max-spread rules state no power: only the rules with a sampling model carry a detectable delta.
    stated = {rid for rid in r.rules if RULES[rid].detectable(DIST, "base", "ckpt475") is not None}
    assert set(a475.detectable) == stated and {"welch-t", "welch-t-min-effect"} <= stated
    assert not {"global-max-spread", "pairwise-max-spread"} & stated
    assert "detectable" not in json.loads(result_json(_result("pairwise-max-spread")))["arms"][1]


def test_welch_t_gains_power_with_seeds_where_a_range_loses_it():
    # The same two populations, 3 then 12 seeds: the range floor grows, the t floor shrinks.
    base = [0.80, 0.83, 0.86, 0.81, 0.85, 0.82, 0.84, 0.80, 0.86, 0.83, 0.81, 0.85]
    cand = [x - 0.05 for x in (0.86, 0.80, 0.83, 0.85, 0.81, 0.84, 0.82, 0.86, 0.80, 0.83, 0.85, 0.81)]
    floors = {}
    for k in (3, 12):
        dist = {"base": dict(enumerate(base[:k])), "a": dict(enumerate(cand[:k]))}
        floors[k] = decide(dist, "base", ["a"], rule="welch-t").arms[1].floors
    assert floors[12]["welch-t"] < floors[3]["welch-t"] / 3
    assert floors[12]["pairwise-max-spread"] >= floors[3]["pairwise-max-spread"]


def test_welch_t_with_one_seed_or_no_variance():
    one = decide({"base": {1: 0.9}, "a": {1: 0.1}}, "base", ["a"], rule="welch-t").arms[1]
    assert one.voice["welch-t"] == "FAIL" and one.floors["welch-t"] is None  # one seed: no variance, nothing passes
    flat = {"base": {1: 0.9, 2: 0.9}, "a": {1: 0.5, 2: 0.5}}
    # a gate registered before the replicates provision (its rules all older) keeps the verdict it had ...
    before = decide(flat, "base", ["a"], rule="welch-t", rules=("welch-t",)).arms[1]
    assert before.voice["welch-t"] == "PASS" and before.floors["welch-t"] == 0.0 and before.ratio is None
    # ... one registered since never passes on a floor of 0: seeds that gave one value measured no noise
    since = decide(flat, "base", ["a"], rule="welch-t").arms[1]
    assert since.voice == {rid: "FAIL" for rid, r in RULES.items() if not r.by_choice}
    assert since.floors["welch-t"] == 0.0 and since.ratio is None
    assert since.floors["welch-t-min-effect"] is None  # infinite: nothing to test a smallest effect against


def test_table_and_json_show_both_floors(capsys):
    r = _result("pairwise-max-spread")
    print_score(r, make_console())
    out = capsys.readouterr().out
    row475 = next(line for line in out.splitlines() if line.startswith("│ ckpt475"))
    row925 = next(line for line in out.splitlines() if line.startswith("│ ckpt925"))
    assert "0.251 (0.8x)" in row475 and "0.091 (2.1x)" in row475 and "DISAGREE" in row475
    assert "0.251 (0.8x)" in row925 and "DISAGREE" not in row925
    assert row475.count("PASS") == 1 and row475.count("FAIL") == 1
    assert "ships: ckpt475 (VOICE PASS 2.1x under pairwise-max-spread" in out
    data = json.loads(result_json(r))
    floors = next(a for a in data["arms"] if a["name"] == "ckpt475")["floors"]
    assert floors == {"global-max-spread": 0.251, "pairwise-max-spread": 0.091}


def test_ship_needs_all_three_axes_and_follows_preference():
    dist = {"base": {1: 0.9, 2: 0.9}, "a": {1: 0.5, 2: 0.5}, "b": {1: 0.6, 2: 0.6}}
    both_ok = {"a": "NOT-COPIED", "b": "NOT-COPIED"}
    clean = {"a": "NO-DAMAGE", "b": "NO-DAMAGE"}
    # zero floors: ratio is undefined (None); before the replicates provision PASS was still delta > 0 ...
    r = decide(dist, "base", ["a", "b"], rule="pairwise-max-spread", rules=HISTORY, copying=both_ok, damage=clean)
    assert r.arms[1].ratio is None and r.ships == "a"
    # ... since, a floor of 0 never passes, so nothing ships
    r = decide(dist, "base", ["a", "b"], rule="pairwise-max-spread", copying=both_ok, damage=clean)
    assert r.arms[1].ratio is None and r.arms[1].voice_decides == "FAIL" and r.ships is None
    dist = {"base": {1: 0.9, 2: 0.95}, "a": {1: 0.5, 2: 0.52}, "b": {1: 0.6, 2: 0.61}}
    r = decide(dist, "base", ["a", "b"], rule="pairwise-max-spread", copying=both_ok, damage=clean)
    assert r.arms[1].ratio == 8.3 and r.arms[2].ratio == 6.4
    assert r.ships == "a"  # the largest ratio
    r = decide(dist, "base", ["a", "b"], rule="pairwise-max-spread", copying=both_ok, damage=clean, prefer=["b"])
    assert r.ships == "b"
    r = decide(dist, "base", ["a", "b"], rule="pairwise-max-spread",
               copying={"a": "COPIED", "b": "NOT-COPIED"}, damage={"a": "NO-DAMAGE", "b": "DAMAGE"})
    assert r.ships is None
    # an axis with no verdict cannot ship
    assert decide(dist, "base", ["a"], rule="pairwise-max-spread").ships is None


def test_equality_is_fail():
    dist = {"base": {1: 0.5, 2: 0.6}, "a": {1: 0.4, 2: 0.5}}  # delta 0.1 == spread 0.1 (float noise aside)
    r = decide(dist, "base", ["a"], rule="pairwise-max-spread", copying={"a": "NOT-COPIED"}, damage={"a": "NO-DAMAGE"})
    assert r.arms[1].voice["pairwise-max-spread"] == "FAIL"


seeds = st.lists(st.integers(0, 10**6), min_size=2, max_size=5, unique=True)
dvals = st.floats(0.0, 2.0, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), seed_list=seeds)
def test_pairwise_floor_ignores_other_candidates(data, seed_list):
    arm = st.fixed_dictionaries({s: dvals for s in seed_list})
    base, a, b, c = (data.draw(arm) for _ in range(4))
    copying = {"a": "NOT-COPIED", "b": "NOT-COPIED", "c": "NOT-COPIED"}
    damage = {"a": "NO-DAMAGE", "b": "NO-DAMAGE", "c": "NO-DAMAGE"}
    two = decide({"base": base, "a": a, "b": b}, "base", ["a", "b"], rule="pairwise-max-spread",
                 copying=copying, damage=damage)
    three = decide({"base": base, "a": a, "b": b, "c": c}, "base", ["a", "b", "c"], rule="pairwise-max-spread",
                   copying=copying, damage=damage)
    one = decide({"base": base, "a": a}, "base", ["a"], rule="pairwise-max-spread", copying=copying, damage=damage)
    for key in ("floors", "voice", "ratios", "delta_cb"):
        pw = lambda r, key=key: (getattr(r.arms[1], key) if key == "delta_cb"
                                 else getattr(r.arms[1], key)["pairwise-max-spread"])
        assert pw(one) == pw(two) == pw(three)
    # the global floor, by contrast, is the max over every arm present
    assert three.arms[1].floors["global-max-spread"] >= two.arms[1].floors["global-max-spread"]
