"""The reference-case builders (`_report_data.py`) pin the numbers of DESIGN.md §3."""

from __future__ import annotations

import pytest
from helpers.report_data import BRONTE_RULES, SPAN_PROMPT, SPAN_SEED, make_generations, make_result

# -- the builders reproduce the reference case -----------------------------------------


def test_reference_numbers_under_global_rule():
    res = make_result("global-max-spread")
    c = {a["name"]: a for a in res["arms"]}
    assert round(c["ckpt475"]["delta_cb"], 3) == 0.193
    assert round(c["ckpt925"]["delta_cb"], 3) == 0.210
    assert round(c["ckpt475"]["floors"]["global-max-spread"], 3) == 0.251
    assert round(c["ckpt925"]["floors"]["global-max-spread"], 3) == 0.251
    assert c["ckpt475"]["voice"]["global-max-spread"] == "FAIL"
    assert c["ckpt925"]["voice"]["global-max-spread"] == "FAIL"
    assert res["ships"] is None


def test_reference_numbers_under_pairwise_rule():
    res = make_result("pairwise-max-spread")
    c = {a["name"]: a for a in res["arms"]}
    assert round(c["ckpt475"]["floors"]["pairwise-max-spread"], 3) == 0.091
    assert round(c["ckpt925"]["floors"]["pairwise-max-spread"], 3) == 0.251
    assert c["ckpt475"]["voice"]["pairwise-max-spread"] == "PASS"
    assert f"{c['ckpt475']['ratio']:.1f}x" == "2.1x"
    assert c["ckpt925"]["voice"]["pairwise-max-spread"] == "FAIL"
    assert c["ckpt475"]["disagree"] is True and c["ckpt925"]["disagree"] is False
    assert res["ships"] == "ckpt475"


def test_reference_generations_shape():
    rows = make_generations()
    assert len(rows) == 360
    assert len({(r["arm"], r["seed"], r["prompt_id"]) for r in rows}) == 360
    hits = [r for r in rows if "Reader, I married him" in r["text"]]
    assert [(r["arm"], r["seed"], r["prompt_id"]) for r in hits] == [("ckpt925", SPAN_SEED, SPAN_PROMPT)]


@pytest.mark.parametrize("rule", BRONTE_RULES)
def test_reference_result_has_both_floors(rule):
    # lv-bronte's results carry the two rules in force when it was scored, never the code's whole list.
    for arm in make_result(rule)["arms"]:
        if arm["role"] == "candidate":
            assert set(arm["floors"]) == set(BRONTE_RULES) and set(arm["voice"]) == set(BRONTE_RULES)


def test_an_arms_role_is_a_role_however_the_result_was_built():
    from voicegate.scoring import GateResult
    from voicegate.spec import Role

    stored = make_result("global-max-spread")
    read = GateResult.from_json(stored)
    assert [type(a.role) for a in read.arms] == [Role] * len(read.arms)
    assert [a.role for a in read.arms][:2] == [Role.BASE, Role.CANDIDATE]
    # A hand-made result's unknown role reads as a candidate (as a non-base arm always has), typed so.
    odd = {**stored, "arms": [stored["arms"][0], {**stored["arms"][1], "role": "challenger"}]}
    assert GateResult.from_json(odd).arms[1].role is Role.CANDIDATE
