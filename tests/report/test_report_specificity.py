"""The report shows what decided: every rule's floor, for the voice axis and for
specificity per impostor, the detectable delta, a specificity plot, and a headline naming the first
failing axis. Also: results stored before a rule existed, or by a newer voicegate, still render.

The Dickens case is the issue's: the voice moved toward Dickens (+0.021) and away from Eliot
(-0.005); its margin over Eliot (+0.026) is under the pairwise floor (0.113), so the gate cannot
tell (INCONCLUSIVE) and must not say "nearer George Eliot". Its result is built here the way
`score` builds one, from per-seed distances through `voicegate.scoring._specificity.specificity`
and the registered rules' own floor functions, then read back as a typed `GateResult`.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from helpers.dom import Node, Tree, table_row
from helpers.report_data import make_result, reference_data

from voicegate.gate._state import candidate_standing as standing
from voicegate.report import render_report
from voicegate.report._data import ReportData
from voicegate.report._page import specificity_note
from voicegate.scoring._result import CandidateResult, GateResult
from voicegate.scoring._specificity import specificity
from voicegate.spec._rules import RULES

PAIRWISE, GLOBAL, WELCH = "pairwise-max-spread", "global-max-spread", "welch-t"
ALL = (GLOBAL, PAIRWISE, WELCH)
AUTHOR, ELIOT, THACKERAY = "Charles Dickens", "George Eliot", "William Makepeace Thackeray"

# arm -> seed -> d, toward each author's held-out text.
TOWARD = {
    AUTHOR: {"base": {1: 0.79, 2: 0.80, 3: 0.81}, "dickens": {1: 0.775, 2: 0.779, 3: 0.783},
             "mimic": {1: 0.80, 2: 0.81, 3: 0.82}},
    # dickens: delta -0.005 toward Eliot; (d_author - d_eliot) by seed spreads 0.113, the base's not at all
    ELIOT: {"base": {1: 0.89, 2: 0.90, 3: 0.91}, "dickens": {1: 0.8445, 2: 0.905, 3: 0.9655},
            "mimic": {1: 0.70, 2: 0.70, 3: 0.70}},
    THACKERAY: {"base": {1: 0.85, 2: 0.85, 3: 0.85}, "dickens": {1: 0.86, 2: 0.864, 3: 0.868},
                "mimic": {1: 0.85, 2: 0.85, 3: 0.85}},
}


def _mean(d: dict[int, float]) -> float:
    return sum(d.values()) / len(d)


def _candidate(name: str, arms: tuple[str, ...], impostors: tuple[str, ...], rules: tuple[str, ...],
               rule: str) -> dict[str, Any]:
    gate = {a: TOWARD[AUTHOR][a] for a in arms}
    delta = _mean(gate["base"]) - _mean(gate[name])
    floors = {rid: RULES[rid].floor(gate, "base", name) for rid in rules}
    voice = {rid: "PASS" if round(delta, 12) > round(f, 12) else "FAIL" for rid, f in floors.items()}
    axis = specificity(gate, {i: {a: TOWARD[i][a] for a in arms} for i in impostors}, "base", name,
                       author=AUTHOR, decides=True, rule=rule, rules=rules)
    detectable = {rid: d for rid in rules if (d := RULES[rid].detectable(gate, "base", name)) is not None}
    return {"name": name, "role": "candidate", "distances": {str(s): v for s, v in gate[name].items()},
            "delta_cb": delta, "floors": floors, "voice": voice,
            "ratios": {rid: delta / f for rid, f in floors.items()}, "ratio": delta / floors[rule],
            "disagree": len(set(voice.values())) > 1, "copying": "NOT-COPIED", "damage": "NO-DAMAGE",
            "overlap": 0.0, "specificity": axis.to_json(), "detectable": detectable}


def dickens_result(candidates: tuple[str, ...] = ("dickens",), impostors: tuple[str, ...] = (ELIOT, THACKERAY),
                   rules: tuple[str, ...] = ALL, rule: str = PAIRWISE) -> dict[str, Any]:
    arms = ("base", *candidates)
    base = {"name": "base", "role": "base", "distances": {str(s): v for s, v in TOWARD[AUTHOR]["base"].items()},
            "overlap": 0.0}
    return {"gate": "lv-dickens", "rule": rule, "ships": None, "control": {"arm": "base", "overlap": 0.0},
            "arms": [base, *(_candidate(c, arms, impostors, rules, rule) for c in candidates)],
            "impostors": {"author": AUTHOR, "mode": "decides", "authors": list(impostors)}}


def page_of(result: dict[str, Any]) -> str:
    return render_report(ReportData.from_plain({"score": result, "author": AUTHOR, "seeds": ["1", "2", "3"]}))


@pytest.fixture(scope="module")
def dickens_page() -> str:
    return page_of(dickens_result())


@pytest.fixture(scope="module")
def dickens(dickens_page: str) -> Node:
    return Tree(dickens_page).root


@pytest.fixture(scope="module")
def both(dickens_page: str) -> Node:
    return Tree(page_of(dickens_result(("dickens", "mimic")))).root


def _words(node: Node) -> str:
    return " ".join(node.text().split())


def _card(root: Node, name: str) -> Node:
    return next(c for c in root.find_all("article", cls="card") if c.find("h3").find("span").text() == name)


# -- (b) the Dickens case: INCONCLUSIVE, the floor that decided, "nearer" nowhere -------------------


def test_the_dickens_case_numbers_are_the_issues():
    res = GateResult.from_json(dickens_result())
    c = res.candidates[0]
    axis = c.specificity
    assert axis is not None
    assert round(c.delta_cb or 0, 3) == 0.021 and axis.deltas[ELIOT] == -0.005
    assert axis.margins[ELIOT] == 0.026 and axis.floor_against(ELIOT, PAIRWISE) == 0.113
    assert axis.under(PAIRWISE) == "INCONCLUSIVE" and axis.binding[PAIRWISE] == ELIOT and axis.nearer(PAIRWISE) == []
    assert res.rules == list(ALL)


def test_dickens_page_is_inconclusive_names_the_floor_and_never_says_nearer(dickens_page: str, dickens: Node):
    assert "nearer" not in dickens_page.lower()
    card = _card(dickens, "dickens")
    assert "INCONCLUSIVE" in _words(card)
    note = _words(card.find("span", cls="spec-note"))
    assert note == (f"margin +0.026 over {ELIOT} vs floor 0.113: within noise (more seeds or longer pools are a new "
                    "registration, recorded as a follow-up design); deciding")
    # the table of what decided: the Eliot row carries 0.113 under pairwise and says INCONCLUSIVE
    table = dickens.find("table", cls="specificity")
    row = next(r for r in table.find_all("tr") if r.attrs.get("data-impostor") == ELIOT)
    floor = next(td for td in row.find_all("td", cls="floor") if td.attrs["data-rule"] == PAIRWISE)
    assert floor.text().split()[0] == "0.113" and "binding" in floor.attrs["class"]
    outcome = next(td for td in row.find_all("td", cls="outcome") if td.attrs["data-rule"] == PAIRWISE)
    assert _words(outcome) == "INCONCLUSIVE" and outcome.find("span", cls="v-mid")
    # neither good nor bad: the INCONCLUSIVE badge is amber, never the good or the bad look
    badges = [b for b in dickens.find_all("span", cls="v") if b.text() == "INCONCLUSIVE"]
    assert badges and all("v-mid" in b.attrs["class"].split() for b in badges)
    assert not any({"v-good", "v-bad"} & set(b.attrs["class"].split()) for b in badges)
    # Thackeray: a margin above its floor, SPECIFIC against him
    trow = next(r for r in table.find_all("tr") if r.attrs.get("data-impostor") == THACKERAY)
    out = next(td for td in trow.find_all("td", cls="outcome") if td.attrs["data-rule"] == PAIRWISE)
    assert _words(out) == "SPECIFIC"
    total = next(r for r in table.find_all("tr", cls="spec-total"))
    assert {td.attrs["data-rule"]: _words(td) for td in total.find_all("td", cls="total")} == {
        GLOBAL: "INCONCLUSIVE", PAIRWISE: "INCONCLUSIVE", WELCH: "INCONCLUSIVE"}


def test_every_rules_floor_per_impostor_is_in_the_table(dickens: Node):
    table = dickens.find("table", cls="specificity")
    heads = [_words(th) for th in table.find("thead").find_all("th")]
    assert heads[:4] == ["candidate", "impostor", "delta toward", "margin"]
    assert [h for h in heads if h.startswith("floor")] == [f"floor{r}" for r in ALL]
    axis = GateResult.from_json(dickens_result()).candidates[0].specificity
    assert axis is not None
    for imp in (ELIOT, THACKERAY):
        row = next(r for r in table.find_all("tr") if r.attrs.get("data-impostor") == imp)
        shown = {td.attrs["data-rule"]: td.text().split()[0] for td in row.find_all("td", cls="floor")}
        assert shown == {r: f"{axis.floor_against(imp, r):.3f}" for r in ALL}


def test_detectable_delta_is_shown_per_candidate(dickens: Node):
    table = dickens.find("table", cls="verdicts")
    cells = table_row(table, "dickens").find_all("td", cls="detectable")
    c = GateResult.from_json(dickens_result()).candidates[0]
    assert [(td.attrs["data-rule"], td.text()) for td in cells] == [(WELCH, f"{c.detectable[WELCH]:.3f}")]
    card = _words(_card(dickens, "dickens").find("dd", cls="detectable"))
    assert card.startswith(f"{c.detectable[WELCH]:.3f} at 80% power under welch-t")
    # the voice FAILs under welch-t with a positive delta_cb below what the design can see: the card says so
    assert c.voice[WELCH] == "FAIL" and 0 < (c.delta_cb or 0) < c.detectable[WELCH]
    assert "under what this design can see (more seeds are a new registration, recorded as a follow-up design)" in card


# -- "nearer X" only where the voice is shown nearer X ---------------------------------------------


def test_nearer_only_for_a_margin_below_minus_its_floor(both: Node):
    mimic = _words(_card(both, "mimic").find("span", cls="spec-note"))
    assert mimic.startswith(f"nearer {ELIOT} (margin -0.210 vs floor ") and THACKERAY not in mimic
    assert "nearer" not in _words(_card(both, "dickens"))
    # the mimic is within noise against Thackeray, not nearer him
    row = next(r for r in both.find("table", cls="specificity").find_all("tr")
               if r.attrs.get("data-arm") == "mimic" and r.attrs.get("data-impostor") == THACKERAY)
    assert _words(next(td for td in row.find_all("td", cls="outcome") if td.attrs["data-rule"] == PAIRWISE)) == \
        "INCONCLUSIVE"


def test_impostor_outcome_has_three_answers_and_none():
    # the page reads each mark's outcome from the result's axis, never by comparing numbers itself
    from voicegate.scoring import Specificity

    def impostor_outcome(margin, floor):
        axis = Specificity(margins={"X": margin}, impostor_floors={"X": {"r": floor}})
        found = axis.outcome_against("X", "r")
        return None if found is None else str(found)

    assert impostor_outcome(0.2, 0.1) == "SPECIFIC"
    assert impostor_outcome(-0.2, 0.1) == "NOT-SPECIFIC"
    assert impostor_outcome(0.026, 0.113) == impostor_outcome(-0.05, 0.113) == "INCONCLUSIVE"
    assert impostor_outcome(0.1, 0.1) == "INCONCLUSIVE"   # at the floor is not past it
    assert impostor_outcome(None, 0.1) is None and impostor_outcome(0.1, None) is None


# -- (c) the specificity plot ------------------------------------------------------------------------


def test_specificity_plot_has_a_mark_per_candidate_and_impostor_and_a_floor_per_rule(both: Node):
    plot = both.find("svg", cls="plot-specificity")
    marks = plot.find_all(cls="margin-mark")
    pairs = [(m.attrs["data-arm"], m.attrs["data-impostor"]) for m in marks]
    assert sorted(pairs) == sorted((c, i) for c in ("dickens", "mimic") for i in (ELIOT, THACKERAY))
    verdicts = {(m.attrs["data-arm"], m.attrs["data-impostor"]): m.attrs["data-verdict"] for m in marks}
    assert verdicts == {("dickens", ELIOT): "INCONCLUSIVE", ("dickens", THACKERAY): "SPECIFIC",
                        ("mimic", ELIOT): "NOT-SPECIFIC", ("mimic", THACKERAY): "INCONCLUSIVE"}
    floors = plot.find_all(cls="spec-floor")
    # every rule's floor, at +floor and at minus the floor (the NOT-SPECIFIC threshold), on every row
    assert sorted((f.attrs["data-arm"], f.attrs["data-impostor"], f.attrs["data-rule"], f.attrs["data-side"])
                  for f in floors) == sorted((c, i, r, s) for c, i in pairs for r in ALL for s in ("plus", "minus"))
    # the marks read in greyscale: three looks, each its own fill
    fills = {m.attrs["data-verdict"]: m.attrs["fill"] for m in marks}
    assert len(set(fills.values())) == 3 and fills["NOT-SPECIFIC"] == "url(#vg-bad)"
    # the margin sits inside the band of the deciding floor for INCONCLUSIVE, past +floor for SPECIFIC
    x = {(f.attrs["data-arm"], f.attrs["data-impostor"], f.attrs["data-rule"], f.attrs["data-side"]):
         float(f.attrs["x1"]) for f in floors}

    def centre(m: Node) -> float:
        xs = [float(p.split(",")[0]) for p in m.attrs["points"].split()]
        return (max(xs) + min(xs)) / 2

    at = {(m.attrs["data-arm"], m.attrs["data-impostor"]): centre(m) for m in marks}
    assert x[("dickens", ELIOT, PAIRWISE, "minus")] < at[("dickens", ELIOT)] < x[("dickens", ELIOT, PAIRWISE, "plus")]
    assert at[("dickens", THACKERAY)] > x[("dickens", THACKERAY, PAIRWISE, "plus")]
    assert at[("mimic", ELIOT)] < x[("mimic", ELIOT, PAIRWISE, "minus")]
    title = next(f for f in floors if f.attrs["data-arm"] == "dickens" and f.attrs["data-impostor"] == ELIOT
                 and f.attrs["data-rule"] == PAIRWISE and f.attrs["data-side"] == "plus").find("title").text()
    assert title == f"dickens vs {ELIOT}: pairwise-max-spread floor 0.113 (SPECIFIC past it)"


def test_specificity_caption_keys_floors_from_the_plots_own_styles(dickens: Node):
    from voicegate.report._svg import floor_legend

    caption = _words(dickens.find("svg", cls="plot-specificity").parent.find("figcaption"))
    assert floor_legend(list(ALL)) in caption
    assert "W = welch-t (dash-dot)" in caption
    # the plot draws each rule in that dash
    plot = dickens.find("svg", cls="plot-specificity")
    dash = {f.attrs["data-rule"]: f.attrs.get("stroke-dasharray") for f in plot.find_all(cls="spec-floor")}
    assert dash == {GLOBAL: "6 3", PAIRWISE: None, WELCH: "8 3 2 3"}


def test_lv_bronte_has_no_specificity_plot_or_table():
    root = Tree(render_report(reference_data())).root
    assert not root.find_all("svg", cls="plot-specificity") and not root.find_all("table", cls="specificity")


# -- (d) the headline names the first failing axis --------------------------------------------------


def test_headline_names_the_first_failing_axis_in_pipeline_order(both: Node):
    kinds = {c.find("h3").find("span").text(): (c.attrs["data-standing"], _words(c.find("strong", cls="standing")))
             for c in both.find_all("article", cls="card")}
    # dickens: VOICE PASS under pairwise, specificity decides and cannot tell: it does not ship
    assert kinds["dickens"] == ("inconclusive", "?blocked by SPECIFICITY INCONCLUSIVE")
    # mimic: VOICE fails first, then specificity
    assert kinds["mimic"] == ("blocked", "✗VOICE FAIL · blocked by SPECIFICITY NOT-SPECIFIC")


def test_the_timeline_says_specificity_beside_voice_where_it_decides(both: Node):
    scored = next(li for li in both.find_all("li") if li.attrs.get("data-kind") == "scored")
    assert ("dickens VOICE PASS · SPECIFICITY INCONCLUSIVE, mimic VOICE FAIL · SPECIFICITY NOT-SPECIFIC"
            in _words(scored))


def _cand(**kw: Any) -> CandidateResult:
    spec = {"decides": True, "verdict": {PAIRWISE: kw.pop("spec", "SPECIFIC")}, "binding": {PAIRWISE: ELIOT},
            "margins": {ELIOT: 0.026}, "floors": {PAIRWISE: 0.113}, "nearest": ELIOT, "margin": 0.026}
    base = {"name": "c", "voice": {PAIRWISE: "PASS"}, "copying": "NOT-COPIED", "damage": "NO-DAMAGE",
            "ratios": {PAIRWISE: 2.0}, "specificity": spec}
    return CandidateResult.from_json({**base, **kw})


def test_standing_orders_the_axes_voice_specificity_copying_damage():
    assert standing(_cand(), PAIRWISE, "c").label == "ships"
    assert standing(_cand(spec="INCONCLUSIVE"), PAIRWISE, "c").label == "blocked by SPECIFICITY INCONCLUSIVE"
    assert standing(_cand(spec="INCONCLUSIVE"), PAIRWISE, None).kind == "inconclusive"
    s = standing(_cand(spec="INCONCLUSIVE", copying="COPIED"), PAIRWISE, None)
    assert s.label == "blocked by SPECIFICITY INCONCLUSIVE + COPYING" and s.kind == "blocked"
    s = standing(_cand(spec="NOT-SPECIFIC", voice={PAIRWISE: "FAIL"}, damage="DAMAGE"), PAIRWISE, None)
    assert s.label == "VOICE FAIL · blocked by SPECIFICITY NOT-SPECIFIC + DAMAGE"
    assert s.blockers == ("VOICE", "SPECIFICITY", "DAMAGE") and not s.ok
    s = standing(_cand(spec="INCONCLUSIVE", voice={PAIRWISE: "FAIL"}), PAIRWISE, None)
    assert s.label == "VOICE FAIL · blocked by SPECIFICITY INCONCLUSIVE" and s.kind == "blocked"
    # reported, not deciding: specificity blocks nothing
    reported = _cand(spec="INCONCLUSIVE")
    reported = CandidateResult.from_json({**reported.to_json(),
                                          "specificity": {**reported.specificity.to_json(), "decides": False}})  # type: ignore[union-attr]
    assert standing(reported, PAIRWISE, "c").label == "ships"


def test_an_older_specificity_names_the_binding_impostors_floor():
    """A result stored before the error-rate rules holds only the binding impostor's floor: the note still gives it."""
    c = _cand(spec="INCONCLUSIVE")
    assert specificity_note(c, PAIRWISE) == (f"margin +0.026 over {ELIOT} vs floor 0.113: within noise (more "
                                             "seeds or longer pools are a new registration, recorded as a follow-up "
                                             "design); deciding")
    # an older NOT-SPECIFIC with no evidence of nearer (a margin within its floor) is not written "nearer"
    assert "nearer" not in specificity_note(_cand(spec="NOT-SPECIFIC"), PAIRWISE)


# -- (a) a result before welch-t, and one from a newer voicegate -------------------------------------


def test_a_result_stored_before_welch_t_renders_two_rule_columns():
    root = Tree(render_report(reference_data())).root
    table = root.find("table", cls="verdicts")
    heads = [_words(th) for th in table.find("thead").find_all("th")]
    assert [h for h in heads if h.startswith("floor")] == [f"floor{GLOBAL}", f"floor{PAIRWISE}"]
    assert [h for h in heads if h.startswith("VOICE")] == [f"VOICE{GLOBAL}", f"VOICE{PAIRWISE}"]
    assert not [h for h in heads if "detectable" in h] and "welch" not in root.find("main").text()
    card = _card(root, "ckpt475")
    assert [_words(dt) for dt in card.find_all("dt") if "spread" in dt.text()] == [GLOBAL, PAIRWISE]
    plot = root.find("svg", cls="plot-delta")
    assert {m.attrs["data-rule"] for m in plot.find_all(cls="floor-mark")} == {GLOBAL, PAIRWISE}


def test_a_two_rule_specificity_from_before_issue_31_renders():
    """Before the error-rate rules: two rules, a NOT-SPECIFIC verdict, and floors only against the binding impostor."""
    res = dickens_result(rules=(GLOBAL, PAIRWISE))
    spec = res["arms"][1]["specificity"]
    del spec["impostor_floors"]
    spec["verdict"] = {r: "NOT-SPECIFIC" for r in spec["verdict"]}
    for arm in res["arms"][1:]:
        arm.pop("detectable", None)
    root = Tree(page_of(res)).root
    table = root.find("table", cls="specificity")
    assert [_words(th) for th in table.find("thead").find_all("th") if _words(th).startswith("floor")] == [
        f"floor{GLOBAL}", f"floor{PAIRWISE}"]
    thack = next(r for r in table.find_all("tr") if r.attrs.get("data-impostor") == THACKERAY)
    assert {td.text().split()[0] for td in thack.find_all("td", cls="floor")} == {"—"}
    eliot = next(r for r in table.find_all("tr") if r.attrs.get("data-impostor") == ELIOT)
    assert eliot.find_all("td", cls="floor")[1].text().split()[0] == "0.113"
    # its margin is within the floor: no evidence of "nearer", whatever the stored word
    assert "nearer" not in _words(_card(root, "dickens"))


def test_a_result_with_a_rule_this_voicegate_does_not_know_renders():
    res = dickens_result()
    for arm in res["arms"][1:]:
        arm["floors"]["bayes-factor"] = 0.05
        arm["voice"]["bayes-factor"] = "FAIL"
        arm["ratios"]["bayes-factor"] = 0.42
        arm["specificity"]["verdict"]["bayes-factor"] = "SPECIFIC"
        arm["specificity"]["impostor_floors"][ELIOT]["bayes-factor"] = 0.01
    page = page_of(res)
    root = Tree(page).root
    heads = [_words(th) for th in root.find("table", cls="verdicts").find("thead").find_all("th")]
    assert [h for h in heads if h.startswith("floor")] == [f"floor{r}" for r in (*ALL, "bayes-factor")]
    delta = root.find("svg", cls="plot-delta")
    assert {m.attrs["data-rule"] for m in delta.find_all(cls="floor-mark")} == {*ALL, "bayes-factor"}
    spec = root.find("svg", cls="plot-specificity")
    assert {f.attrs["data-rule"] for f in spec.find_all(cls="spec-floor")} == {*ALL, "bayes-factor"}
    assert "B = bayes-factor (dotted)" in _words(spec.parent.find("figcaption"))


def test_an_amendment_to_welch_t_adds_its_column_and_the_legend_wraps_inside_the_plot():
    data = reference_data()
    amended = make_result(PAIRWISE, rules=ALL)
    amended["rule"] = WELCH
    second = copy.deepcopy(data["amendments"][0])
    second.update(time="2026-12-07T08:00:00Z", rule_from=PAIRWISE, rule_to=WELCH, reason="power grows with seeds",
                  result=amended)
    data["amendments"].append(second)
    root = Tree(render_report(data)).root
    heads = [_words(th) for th in root.find("table", cls="verdicts").find("thead").find_all("th")]
    assert [h for h in heads if h.startswith("floor")] == [f"floor{r}" for r in ALL]
    delta = root.find("svg", cls="plot-delta")
    width = float(delta.attrs["viewbox"].split()[2])
    for t in delta.find_all("text"):
        # a legend entry starts where it fits: ~6 px a character at 11 px
        assert float(t.attrs["x"]) + (6 * len(t.text()) if t.attrs.get("text-anchor", "start") == "start" else 0) \
            <= width + 1, t.text()
    assert re.search(r"W = welch-t floor", delta.text())
