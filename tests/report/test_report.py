"""The reviewer's report: what the page says, what it draws, and what it must never do.

Pages are rendered from the lv-bronte reference data (tests/helpers/report_data.py)
and parsed with the standard library's HTML parser, so each assertion looks at
the element it is about (a table cell, an SVG mark, an attribute), not at a
substring that could appear anywhere.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import re
from typing import Any

import pytest
from helpers.dom import Node, Tree, external_references, table_row
from helpers.report_data import (
    AMEND_REASON,
    ARMS,
    DISTANCES,
    SEEDS,
    SHIP_REASON,
    SPAN,
    SPAN_PROMPT,
    SPAN_SEED,
    make_generations,
    make_result,
    reference_data,
)

from voicegate.report import render_report
from voicegate.report._spans import segments
from voicegate.scoring._result import Span


@pytest.fixture(scope="module")
def page() -> str:
    return render_report(reference_data())


@pytest.fixture(scope="module")
def tree(page: str) -> Node:
    return Tree(page).root


# -- acceptance 1: both floors, DISAGREE, the amendment, one mark per (arm, seed) -------------


def test_verdict_table_shows_both_floors_for_every_candidate(tree):
    table = tree.find("table", cls="verdicts")
    floors = {}
    for name in ("ckpt475", "ckpt925"):
        row = table_row(table, name)
        floors[name] = {td.attrs["data-rule"]: td.text() for td in row.find_all("td", cls="floor")}
    assert floors == {
        "ckpt475": {"global-max-spread": "0.251", "pairwise-max-spread": "0.091"},
        "ckpt925": {"global-max-spread": "0.251", "pairwise-max-spread": "0.251"},
    }


def test_disagree_is_flagged_on_ckpt475_only(tree):
    table = tree.find("table", cls="verdicts")
    assert table_row(table, "ckpt475").find_all("span", cls="disagree")
    assert not table_row(table, "ckpt925").find_all("span", cls="disagree")
    cards = {c.find("h3").find("span").text(): c for c in tree.find_all("article", cls="card")}
    assert cards["ckpt475"].find_all("span", cls="disagree") and not cards["ckpt925"].find_all("span", cls="disagree")
    # The delta plot's sentence under ckpt475's bar says DISAGREE too.
    delta = tree.find("svg", cls="plot-delta")
    assert "DISAGREE" in delta.text()
    assert delta.text().count("DISAGREE") == 1


def test_current_verdicts_are_the_amended_ones_with_ratio(tree):
    table = tree.find("table", cls="verdicts")
    cells = [td.text().split() for td in table_row(table, "ckpt475").find_all("td") if td.find_all("span", cls="v")]
    # VOICE under global, then under pairwise; each with its ratio.
    assert cells[:2] == [["FAIL", "0.8x"], ["PASS", "2.1x"]]
    cells = [td.text().split() for td in table_row(table, "ckpt925").find_all("td") if td.find_all("span", cls="v")]
    assert cells[:2] == [["FAIL", "0.8x"], ["FAIL", "0.8x"]]
    assert "deciding rule pairwise-max-spread" in " ".join(tree.find("header").text().split())


def test_amendment_shows_what_changed(tree):
    amend = tree.find("article", cls="amend")
    heading = " ".join(amend.find("h3").text().split())
    assert heading == "Amendment 1 · 2026-09-18T10:12:00Z · global-max-spread → pairwise-max-spread"
    assert AMEND_REASON in amend.text()
    table = amend.find("table", cls="amendment")
    r475 = [td.text().split() for td in table_row(table, "ckpt475").find_all("td")]
    # delta_cb before/after unchanged; floor 0.251 FAIL -> floor 0.091 PASS 2.1x, marked changed.
    assert r475[:6] == [["+0.193"], ["+0.193"], ["0.251"], ["FAIL", "0.8x"], ["0.091"],
                        ["PASS", "2.1x", "changed"]]
    r925 = [td.text().split() for td in table_row(table, "ckpt925").find_all("td")]
    assert r925[:6] == [["+0.210"], ["+0.210"], ["0.251"], ["FAIL", "0.8x"], ["0.251"], ["FAIL", "0.8x"]]
    assert "none → ckpt475" in " ".join(amend.text().split())
    items = [li.text() for li in amend.find_all("li")]
    assert any("withdrawn" in i for i in items) and any("unchanged" in i for i in items)


def test_amendments_in_order():
    data = reference_data()
    second = copy.deepcopy(data["amendments"][0])
    second.update(time="2026-10-01T08:00:00Z", rule_from="pairwise-max-spread", rule_to="global-max-spread",
                  reason="second thoughts", result=make_result("global-max-spread"))
    data["amendments"].append(second)
    root = Tree(render_report(data)).root
    heads = [" ".join(a.find("h3").text().split()) for a in root.find_all("article", cls="amend")]
    assert heads == ["Amendment 1 · 2026-09-18T10:12:00Z · global-max-spread → pairwise-max-spread",
                     "Amendment 2 · 2026-10-01T08:00:00Z · pairwise-max-spread → global-max-spread"]
    # The second amendment's "before" is the first amendment's result, not the original score.
    assert "ckpt475 → none" in " ".join(root.find_all("article", cls="amend")[1].text().split())


def test_distance_plot_has_one_mark_per_arm_and_seed(tree):
    plot = tree.find("svg", cls="plot-distances")
    dots = plot.find_all(cls="dot")
    assert len(dots) == len(ARMS) * len(SEEDS) == 9
    assert sorted((d.attrs["data-arm"], d.attrs["data-seed"]) for d in dots) == sorted(
        (a, str(s)) for a in ARMS for s in SEEDS)
    assert sorted(m.attrs["data-arm"] for m in plot.find_all(cls="mean")) == sorted(ARMS)
    # Each mark carries its exact number, and marks sit in distance order along the axis,
    # so ckpt925's outlier seed (0.767) is drawn far to the right of its other two.
    def x_of(d: Node) -> float:
        a = d.attrs
        if "cx" in a:
            return float(a["cx"])
        if "x" in a:
            return float(a["x"]) + float(a["width"]) / 2
        xs = [float(p.split(",")[0]) for p in a["points"].split()]
        return (max(xs) + min(xs)) / 2
    placed = sorted(dots, key=x_of)
    values = [DISTANCES[d.attrs["data-arm"]][int(d.attrs["data-seed"])] for d in placed]
    assert values == sorted(values)
    outlier = next(d for d in dots if d.attrs["data-arm"] == "ckpt925" and d.attrs["data-seed"] == "202")
    assert outlier.find("title").text() == "ckpt925, seed 202: d = 0.767"


def test_distance_plot_counts_follow_the_data():
    data = reference_data()
    res = make_result("global-max-spread")
    for a in res["arms"]:
        a["distances"]["404"] = 0.7
    data.update(score=res, amendments=[], seeds=["101", "202", "303", "404"])
    plot = Tree(render_report(data)).root.find("svg", cls="plot-distances")
    assert len(plot.find_all(cls="dot")) == 12


def test_delta_plot_marks_both_floors_on_every_bar(tree):
    plot = tree.find("svg", cls="plot-delta")
    bars = {b.attrs["data-arm"]: b for b in plot.find_all(cls="delta-bar")}
    assert set(bars) == {"ckpt475", "ckpt925"}
    assert bars["ckpt475"].attrs["data-verdict"] == "PASS" and bars["ckpt925"].attrs["data-verdict"] == "FAIL"
    assert bars["ckpt475"].attrs["fill"] != bars["ckpt925"].attrs["fill"]  # solid vs hatched
    marks = {(m.attrs["data-arm"], m.attrs["data-rule"]): m for m in plot.find_all(cls="floor-mark")}
    assert set(marks) == {(a, r) for a in ("ckpt475", "ckpt925") for r in ("global-max-spread", "pairwise-max-spread")}
    x = {k: float(m.attrs["x1"]) for k, m in marks.items()}
    assert x[("ckpt475", "pairwise-max-spread")] < x[("ckpt475", "global-max-spread")]
    assert x[("ckpt925", "pairwise-max-spread")] == x[("ckpt925", "global-max-spread")]
    # The two floors differ by dash pattern, not colour alone.
    dashes = {m.attrs.get("stroke-dasharray") for (a, r), m in marks.items() if a == "ckpt475"}
    assert len(dashes) == 2
    assert marks[("ckpt475", "pairwise-max-spread")].find("title").text() == "ckpt475: pairwise-max-spread floor 0.091"
    # Bar end beyond the pairwise floor, short of the global one: PASS and FAIL visible at once.
    bar = bars["ckpt475"]
    end = float(bar.attrs["x"]) + float(bar.attrs["width"])
    assert x[("ckpt475", "pairwise-max-spread")] < end < x[("ckpt475", "global-max-spread")]


def test_delta_caption_keys_each_floor_as_the_plot_draws_it(tree):
    """The caption's key is built from the plot's own styles: a rule a result names is keyed too."""
    from voicegate.report._svg import floor_legend

    caption = tree.find("svg", cls="plot-delta").parent.find("figcaption").text()
    assert ("with both floors marked: G = global-max-spread (dashed), P = pairwise-max-spread (solid); "
            "G=P where they are the same.") in " ".join(caption.split())
    three = floor_legend(["global-max-spread", "pairwise-max-spread", "median-spread"])
    assert three == ("all 3 floors marked: G = global-max-spread (dashed), P = pairwise-max-spread (solid), "
                     "M = median-spread (dotted)")


def test_overlap_plot_against_control_and_tolerance(tree):
    plot = tree.find("svg", cls="plot-overlap")
    assert sorted(b.attrs["data-arm"] for b in plot.find_all(cls="overlap-bar")) == sorted(ARMS)
    assert len(plot.find_all(cls="overlap-ref")) == 2
    text = " ".join(plot.text().split())
    assert "C = control (base) 0.0000" in text and "T = control + tolerance 0.0050 = 0.0050" in text


def test_damage_plot_has_both_rates_per_arm(tree):
    plot = tree.find("svg", cls="plot-damage")
    bars = plot.find_all(cls="damage-bar")
    assert sorted((b.attrs["data-arm"], b.attrs["data-metric"]) for b in bars) == sorted(
        (a, m) for a in ARMS for m in ("probe_pass_rate", "degeneration_rate"))
    assert len(plot.find_all(cls="damage-limit")) == 2


def test_damage_plot_without_probes_says_so():
    data = reference_data()
    for res in [data["score"], *(a["result"] for a in data["amendments"])]:
        for a in res["arms"]:
            a["probe_pass_rate"] = None
    plot = Tree(render_report(data)).root.find("svg", cls="plot-damage")
    assert plot.text().count("no probe set registered") == 3
    assert len(plot.find_all(cls="damage-bar", data_metric="probe_pass_rate")) == 0


# -- numbers: right-aligned, fixed decimals ---------------------------------------------


NUMBER = re.compile(r"[+-]?\d+\.\d{3}|\d+\.\d{4}|\d+|\d+\.\dx|—")


def test_numeric_cells_are_right_aligned_fixed_decimals(page, tree):
    cells = [td for td in tree.find_all("td", cls="num")]
    assert len(cells) > 40
    bad = [td.text() for td in cells if not NUMBER.fullmatch(td.text().strip())]
    assert bad == []
    css = tree.find("style").text()
    assert "th.num,td.num{text-align:right;font-variant-numeric:tabular-nums" in css
    arms = tree.find("table", cls="arms")
    assert [td.text() for td in table_row(arms, "ckpt925").find_all("td", cls="num")] == [
        "0.516", "0.767", "0.522", "0.602", "0.251"]


# -- samples, spans, decisions, registration ------------------------------------------


def test_samples_are_side_by_side_same_prompt_same_seed(tree):
    samples = tree.find_all("article", cls="sample")
    assert len(samples) == 4
    rows = {(r["arm"], str(r["seed"]), r["prompt_id"]): r["text"] for r in make_generations()}
    for s in samples:
        m = re.fullmatch(r"Sample \d+ · prompt (\S+) · seed (\d+)", " ".join(s.find("h3").text().split()))
        assert m, s.find("h3").text()
        pid, seed = m.groups()
        gens = s.find_all("div", cls="gen")
        assert [g.attrs["data-arm"] for g in gens] == list(ARMS)
        for g in gens:
            # The text as generated, whole (the [n] span markers aside).
            assert g.find("div", cls="text").text(skip=frozenset({"sup"})) == rows[(g.attrs["data-arm"], seed, pid)]
    # The sample with the copied span comes first; four different prompts are shown.
    first = " ".join(samples[0].find("h3").text().split())
    assert first == f"Sample 1 · prompt {SPAN_PROMPT} · seed {SPAN_SEED}"
    prompts = [" ".join(s.find("h3").text().split()).split(" · ")[1] for s in samples]
    assert len(set(prompts)) == 4


def test_copied_span_is_highlighted_and_linked_to_its_training_source(tree):
    gen = tree.find("article", cls="sample").find("div", cls="gen", data_arm="ckpt925")
    links = gen.find_all("a", cls="copied")
    assert len(links) == 1
    assert links[0].find("mark").text() == "Reader, I married him. A quiet wedding we had"
    target = links[0].attrs["href"]
    assert target == "#span-2-0"
    row = tree.find("tr", id="span-2-0")
    cells = [c.text() for c in row.children if isinstance(c, Node)]
    assert SPAN["source"] in cells and str(SPAN["offset"]) in cells and "9" in cells
    assert SPAN["excerpt"] in row.text()
    assert row.find("a").attrs["href"] == "#sample-0"
    # Other arms' texts carry no highlight.
    for arm in ("base", "ckpt475"):
        assert not tree.find("article", cls="sample").find("div", cls="gen", data_arm=arm).find_all("mark")


def test_span_matching_is_by_word_tokens():
    spans = [Span.from_json({"text": "reader i married him"}), Span.from_json({"text": "don't go"})]
    segs = segments("“READER, I married — him!” Then: Don’t go. reader i marry him", spans)
    marked = [(s.text, s.span) for s in segs if s.span is not None]
    assert marked == [("READER, I married — him", 0), ("Don’t go", 1)]
    assert "".join(s.text for s in segs) == "“READER, I married — him!” Then: Don’t go. reader i marry him"
    assert [s.span for s in segments("no copying here", spans)] == [None]


def test_ship_decision_is_shown_beside_the_verdicts(tree):
    table = tree.find("table", cls="decisions")
    row = table_row(table, "ckpt475")
    text = " ".join(row.text().split())
    assert SHIP_REASON in text
    # Decided on 2026-09-16, under the as-run global rule, where ckpt475 FAILED.
    assert "FAIL under global-max-spread shipped against the verdict" in text
    card = next(c for c in tree.find_all("article", cls="card") if c.find("h3").find("span").text() == "ckpt475")
    assert card.find_all("span", cls="tag-ship")


def test_registration_and_signature_are_shown(tree):
    dl = tree.find("dl", cls="registration")
    reg = dict(zip((n.text() for n in dl.find_all("dt")), (n.text() for n in dl.find_all("dd")), strict=True))
    assert reg["spec sha256"] == "5e" * 32
    assert reg["commit"] == "0123456789abcdef0123456789abcdef01234567"
    assert reg["registered"] == "2026-09-10T09:00:00Z"
    assert reg["spec"] == "preregistrations/lv-bronte.yaml"
    sig = tree.find("p", cls="sig").text()
    assert sig == make_result("pairwise-max-spread")["signature_text"]
    assert "rule:pairwise-max-spread@1" in sig


def test_page_without_amendments_stands_as_scored():
    root = Tree(render_report(reference_data(amendments=[], decisions=[]))).root
    assert "None. The verdicts stand as scored." in root.find("section", id="amendments").text()
    assert "deciding rule global-max-spread" in " ".join(root.find("header").text().split())
    table = root.find("table", cls="verdicts")
    assert table_row(table, "ckpt475").find_all("span", cls="disagree")  # DISAGREE is rule-independent
    assert "0.091" in [td.text() for td in table_row(table, "ckpt475").find_all("td", cls="floor")]


def test_notices_are_shown_first():
    root = Tree(render_report(reference_data(notices=["DEVIATION: spec changed"]))).root
    assert root.find("p", cls="notice").text() == "DEVIATION: spec changed"


# -- acceptance 2: generated text is data --------------------------------------------------


XSS = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>"]
EVIL_ARM = '"><svg onload=alert(1)><script>alert(1)</script>'


def _hostile_data() -> dict[str, Any]:
    """Every string the page shows, made hostile: generations, prompt, arm name, span, reasons."""
    distances = {"base": DISTANCES["base"], "ckpt475": DISTANCES["ckpt475"], EVIL_ARM: DISTANCES["ckpt925"]}
    arms = ("base", "ckpt475", EVIL_ARM)
    score = make_result("global-max-spread", distances=distances, arm_names=arms)
    amended = make_result("pairwise-max-spread", distances=distances, arm_names=arms)
    for res in (score, amended):
        for a in res["arms"]:
            a["spans"] = [{"text": "alert one", "tokens": 2, "source": XSS[1], "offset": 7,
                           "excerpt": XSS[0]}] if a["name"] == EVIL_ARM else []
        res["signature_text"] = XSS[0]
    rows = make_generations()
    for r in rows:
        if r["arm"] == "ckpt925":
            r["arm"] = EVIL_ARM
        r["text"] = f"She wrote {XSS[0]} and then {XSS[1]} and alert one more time."
    data = reference_data(score=score, generations=rows, seeds=[str(s) for s in SEEDS])
    data["amendments"][0].update(result=amended, reason=XSS[0], changes=XSS)
    data["decisions"][0].update(reason=XSS[1])
    data["prompts"] = {k: XSS[1] for k in data["prompts"]}
    data["notices"] = [XSS[0]]
    data["run"] = {"source": XSS[0], "seat_url": XSS[1]}
    return data


def test_generated_text_renders_escaped():
    page = render_report(_hostile_data())
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    tags = {t for t, _ in Tree(page).starttags}
    assert not tags & {"script", "img", "iframe", "object", "embed"}
    for tag, attrs in Tree(page).starttags:
        assert not [k for k in attrs if k.startswith("on")], (tag, attrs)
    assert "<script" not in page.lower() and "<img" not in page.lower()


def test_hostile_arm_name_is_escaped_inside_svg_titles_and_labels():
    page = render_report(_hostile_data())
    root = Tree(page).root
    plot = root.find("svg", cls="plot-distances")
    # The name survives as text (escaped in the source, intact in the parsed title) ...
    titles = [t.text() for t in plot.find_all("title")]
    assert f"{EVIL_ARM}, seed 202: d = 0.767" in titles
    dots = plot.find_all(cls="dot", data_arm=EVIL_ARM)
    assert len(dots) == 3
    # ... and never as markup: no element the name would have created exists anywhere.
    assert sum(1 for t, _ in Tree(page).starttags if t == "svg") == 5  # defs + the four plots
    assert "&#34;&gt;&lt;svg onload=alert(1)&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page
    labels = [t.text() for t in plot.find_all("text")]
    assert EVIL_ARM in labels


# -- acceptance 4: no external reference --------------------------------------------------

def test_page_references_no_external_url(page):
    assert external_references(page) == []
    # Stricter still for this page: no scheme or protocol-relative address anywhere in it.
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"""(?:href|src)\s*=\s*["']?\s*//""", page)
    csp = next(a["content"] for t, a in Tree(page).starttags if t == "meta" and a.get("http-equiv") ==
               "Content-Security-Policy")
    assert csp.startswith("default-src 'none';")


def test_reference_checker_catches_each_kind_of_external_reference(page):
    for bad in ['<img src="https://x/a.png">', '<a href="//evil/">x</a>', '<link rel="stylesheet" href="a.css">',
                '<style>@import "https://x/a.css";</style>', '<style>p{background:url(https://x/a.png)}</style>',
                '<rect fill="url(https://x/#p)"></rect>', '<script>1</script>', '<p style="color:red">x</p>']:
        assert external_references(page.replace("</main>", bad + "</main>")), bad


def test_urls_in_data_stay_text():
    data = reference_data(run={"source": "generated", "seat_url": "http://10.0.0.5:8027/v1"})
    page = render_report(data)
    assert external_references(page) == []
    assert "http://10.0.0.5:8027/v1" in page  # shown as text in the run section, never as a link


def test_style_is_allowed_by_its_csp_hash(page, tree):
    css = tree.find("style").text()
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode()
    csp = next(a["content"] for t, a in Tree(page).starttags if t == "meta" and a.get("http-equiv") ==
               "Content-Security-Policy")
    assert f"style-src 'sha256-{digest}'" in csp


def test_render_is_deterministic():
    assert render_report(reference_data()) == render_report(reference_data())


# -- the shapes the producers write ---------------------------------------------------------


def test_truncated_span_is_highlighted_to_its_full_token_count():
    # The scorer shortens long span texts with "…"; the cut word is not searched for, and the
    # highlight covers the span's `tokens`.
    span = Span.from_json({"text": "upon the hill there stood a thorn bent all one way by the wea…", "tokens": 14})
    segs = segments("And upon the hill there stood a thorn, bent all one way by the weather; and I", [span])
    assert [(s.text, s.span) for s in segs] == [
        ("And ", None), ("upon the hill there stood a thorn, bent all one way by the weather", 0), ("; and I", None)]


def test_decision_uses_the_verdicts_it_recorded():
    data = reference_data()
    # What `voicegate ship` stores: the verdicts and recommendation as they stood.
    data["decisions"] = [{"time": "2026-09-16T15:40:00Z", "arm": "ckpt475", "reason": SHIP_REASON,
                          "rule": "global-max-spread", "recommendation": None,
                          "verdicts": {"voice": {"global-max-spread": "FAIL", "pairwise-max-spread": "PASS"},
                                       "copying": "NOT-COPIED", "damage": "NO-DAMAGE"}}]
    row = table_row(Tree(render_report(data)).root.find("table", cls="decisions"), "ckpt475")
    cells = [" ".join(td.text().split()) for td in row.find_all("td")]
    assert cells[2:] == ["FAIL under global-max-spread shipped against the verdict", "NOT-COPIED", "NO-DAMAGE",
                         "none"]


def test_structured_amendment_changes_become_a_summary_not_a_dump():
    data = reference_data()
    data["amendments"][0]["changes"] = [  # what `voicegate amend` stores
        {"arm": "ckpt475", "before": "FAIL", "after": "PASS", "delta_cb": 0.193,
         "floors": {"global-max-spread": 0.251, "pairwise-max-spread": 0.091}}]
    amend = Tree(render_report(data)).root.find("article", cls="amend")
    lines = [" ".join(li.text().split()) for li in amend.find("ul", cls="summary").find_all("li")]
    assert lines == [
        "ckpt475: VOICE FAIL → PASS (floor 0.251 → 0.091, ratio 0.8x → 2.1x); delta_cb +0.193 unchanged",
        "ckpt925: still FAIL (floor 0.251 → 0.251); delta_cb +0.210 unchanged",
        "COPYING and DAMAGE unchanged for every candidate",
        "rule's recommendation: none → ckpt475",
    ]
    assert "{" not in amend.text()  # no raw dict on the page


def test_run_manifest_from_generate_is_summarised():
    run = {"source": "generated", "seat": {"url": "http://10.0.0.5:8027/v1", "version": "0.32.0",
                                           "models": [{"id": "voices-base"}, {"id": "lv-bronte-ckpt475"}]},
           "order_seed": 7, "sessions": [{}, {}]}
    dl = Tree(render_report(reference_data(run=run))).root.find("dl", cls="run")
    shown = dict(zip((n.text() for n in dl.find_all("dt")), (n.text() for n in dl.find_all("dd")), strict=True))
    assert shown["source"] == "generated" and shown["seat"] == "http://10.0.0.5:8027/v1"
    assert shown["seat version"] == "0.32.0" and shown["seat models"] == "voices-base, lv-bronte-ckpt475"
    assert shown["order seed"] == "7" and shown["sessions"] == "2"
    assert shown["generations"] == "360 voice rows (360 imported)"


def test_minimal_result_renders():
    # Only the keys DESIGN.md §6 promises for `score --json`; everything else is optional.
    res = {"gate": "lv-x", "rule": "pairwise-max-spread", "ships": None, "arms": [
        {"name": "base", "role": "base", "distances": {"1": 0.8, "2": 0.7}, "spread": 0.1},
        {"name": "c1", "role": "candidate", "distances": {"1": 0.6, "2": 0.65}, "spread": 0.05,
         "delta_cb": 0.125, "floors": {"global-max-spread": 0.1, "pairwise-max-spread": 0.1},
         "voice": {"global-max-spread": "PASS", "pairwise-max-spread": "PASS"}, "disagree": False,
         "ratio": 1.25, "overlap": None, "copying": "NOT-COPIED", "damage": "NO-DAMAGE"}]}
    page = render_report({"score": res})
    root = Tree(page).root
    assert len(root.find("svg", cls="plot-distances").find_all(cls="dot")) == 4
    assert [td.text() for td in table_row(root.find("table", cls="verdicts"), "c1").find_all("td", cls="floor")] == [
        "0.100", "0.100"]
    assert "No (prompt, seed) for which every arm has a stored generation." in page
    assert external_references(page) == []


def test_score_warnings_reach_the_page_as_notices() -> None:
    from voicegate.report._page import build_view

    data = {"score": {"gate": "lv-x", "rule": "pairwise-max-spread", "ships": None, "arms": [],
                       "warnings": ["ckpt475: 3 voice generation(s) are byte-identical to the base's"]},
            "amendments": [], "decisions": []}
    context = build_view(data)
    assert "Warning (not deciding): ckpt475: 3 voice generation(s) are byte-identical to the base's" in \
        context["notices"]


def test_page_is_drawn_from_typed_data() -> None:
    # Plain data is read once, into typed results; the page is the same either way.
    from voicegate.report import ReportData
    from voicegate.scoring._result import CandidateResult, GateResult, Verdicts, Voice

    data = reference_data()
    typed = ReportData.from_plain(data)
    assert isinstance(typed.score, GateResult) and isinstance(typed.current, GateResult)
    assert typed.current.rule == "pairwise-max-spread" and typed.current is typed.amendments[-1].result
    assert render_report(typed) == render_report(data)
    from voicegate.report._page import build_view

    context = build_view(typed)
    assert all(isinstance(c, CandidateResult) for c in context["candidates"])
    # Ratios under every rule on the page, the result's own where it gave one.
    assert {c.name: round(c.ratios["pairwise-max-spread"] or 0, 1) for c in context["candidates"]} == {
        "ckpt475": 2.1, "ckpt925": 0.8}
    # A decision's recorded verdicts are read by type too (per rule, or one verdict in older rows).
    v = Verdicts.from_json({"voice": {"global-max-spread": "FAIL"}, "copying": "NOT-COPIED", "damage": None})
    assert v.voice_under("global-max-spread") is Voice.FAIL and v.voice_under("pairwise-max-spread") is None
    assert Verdicts.from_json({"voice": "PASS"}).voice_under("any-rule") is Voice.PASS
    assert v.to_json() == {"voice": {"global-max-spread": "FAIL"}, "copying": "NOT-COPIED", "damage": None}
