"""The report's first screen shows the order of events above the cards.

Registered, scored, shipped against the verdict (or with it), amended citing the other
gate's registration: so "recommended" and "shipped" beside each other on a card can
never read as "shipped because recommended".
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.report_data import make_amendment, make_decision, reference_data

from voicegate.report import render_report
from voicegate.report._data import ReportData
from voicegate.report._timeline import timeline

CITED = {"gate": "lv-hemingway", "commit": "0bb4938" + "0" * 33, "spec_sha256": "ab" * 32,
         "rule": "pairwise-max-spread", "committed": "2026-09-17T08:00:00Z"}


def _data(**overrides) -> ReportData:  # type: ignore[no-untyped-def]
    amendment = {**make_amendment(), "citation": CITED}
    base = {"amendments": [amendment], "events": [["score", "2026-09-16T12:00:00Z"], ["ship", "2026-09-16T15:40:00Z"],
                                                   ["amend", "2026-09-18T10:12:00Z"]]}
    return ReportData.from_plain(reference_data(**{**base, **overrides}))


def _items(page: str) -> list[str]:
    section = page[page.index('<section id="timeline">'):]
    section = section[:section.index("</section>")]
    return [" ".join(re.sub(r"<[^>]+>", "", li).split()) for li in re.findall(r"<li[^>]*>.*?</li>", section, re.DOTALL)]


def test_the_timeline_tells_the_reference_case_in_order() -> None:
    events = timeline(_data())
    assert [e.kind for e in events] == ["registered", "scored", "shipped-against", "registered-other", "amended"]
    assert [e.time for e in events] == ["2026-09-10T09:00:00Z", "2026-09-16T12:00:00Z", "2026-09-16T15:40:00Z",
                                        "2026-09-17T08:00:00Z", "2026-09-18T10:12:00Z"]
    assert events[1].text == ("under global-max-spread: ckpt475 VOICE FAIL, ckpt925 VOICE FAIL; "
                              "the rule recommends none")
    assert events[2].label == "ckpt475 shipped AGAINST the verdict"
    assert "VOICE FAIL under global-max-spread, the rule recommended none" in events[2].text
    assert events[3].label == "lv-hemingway registered" and "commit 0bb493800000" in events[3].text
    assert events[4].label == "amended citing lv-hemingway"
    assert "global-max-spread → pairwise-max-spread" in events[4].text
    assert events[4].text.endswith("the rule now recommends ckpt475")


def test_the_timeline_is_on_the_first_screen_above_the_cards() -> None:
    page = render_report(_data())
    assert page.index('<section id="timeline">') < page.index('<div class="cards">')
    assert page.index('<section id="timeline">') < page.index('<section id="verdicts">')
    items = _items(page)
    assert len(items) == 5
    assert items[2].startswith("2026-09-16T15:40:00Z ckpt475 shipped AGAINST the verdict by a person")
    assert items[4].startswith("2026-09-18T10:12:00Z amended citing lv-hemingway")


def test_a_decision_that_follows_the_recommendation_reads_shipped_with_the_verdict() -> None:
    decision = {**make_decision(), "rule": "pairwise-max-spread", "recommendation": "ckpt475",
                "time": "2026-09-19T09:00:00Z"}
    events = timeline(_data(decisions=[decision], events=[["score", "2026-09-16T12:00:00Z"],
                                                           ["amend", "2026-09-18T10:12:00Z"],
                                                           ["ship", "2026-09-19T09:00:00Z"]]))
    assert [e.kind for e in events] == ["registered", "scored", "registered-other", "amended", "shipped-with"]
    assert events[-1].label == "ckpt475 shipped with the verdict"


def test_without_a_ledger_events_are_ordered_by_time() -> None:
    events = timeline(_data(events=[]))
    assert [e.kind for e in events] == ["registered", "scored", "shipped-against", "registered-other", "amended"]


@pytest.fixture
def amended_workspace(tmp_path: Path, compose_fixture: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from helpers.bronte import as_shipped, patch_scoring, scored_workspace

    patch_scoring(monkeypatch)
    return scored_workspace(tmp_path / "ws", as_shipped(compose_fixture), ship=True, amend=True)


def test_the_report_of_a_real_workspace_draws_its_timeline_from_the_ledger(amended_workspace: Path) -> None:
    from helpers.bronte import result
    from helpers.workspace import git, run_cli

    from voicegate.run._store import generations_hash, read_rows

    root = amended_workspace
    # The library path the fixture takes records the score without scores.json (`score` writes it): as `score` would.
    gh = generations_hash(read_rows(root / "runs/lv-bronte/generations.jsonl"))
    (root / "runs/lv-bronte/scores.json").write_text(json.dumps(result("global-max-spread", gh).to_json()))
    code, _, err = run_cli("report", "lv-bronte", "-C", str(root))
    assert code == 0, err
    items = _items((root / "runs/lv-bronte/report.html").read_text())
    kinds = [re.sub(r"^\S+ ", "", i) for i in items]
    commit = git(root, "log", "-n", "1", "--format=%H", "--",
                 "preregistrations/lv-hemingway.registration.json").strip()
    assert kinds[0].startswith("registered lv-bronte under global-max-spread")
    order = [next(i for i, k in enumerate(kinds) if k.startswith(s)) for s in (
        "registered lv-bronte", "scored under", "ckpt475 shipped AGAINST the verdict", "amended citing lv-hemingway")]
    assert order == sorted(order)
    assert any(k.startswith(f"lv-hemingway registered under pairwise-max-spread, before any of its numbers existed "
                            f"(commit {commit[:12]})") for k in kinds)
    assert kinds.index(next(k for k in kinds if k.startswith("lv-hemingway registered"))) < order[-1]


@pytest.mark.browser
@pytest.mark.parametrize("width, height", [(1400, 900), (800, 1000)])
def test_the_timeline_is_on_screen_before_any_scrolling(tmp_path: Path, width: int, height: int) -> None:
    from helpers.cdp import Browser
    from helpers.dom import chromium

    page = tmp_path / "lv-bronte.html"
    page.write_text(render_report(_data()), encoding="utf-8")
    b = Browser(chromium(), tmp_path / "profile")
    try:
        b.open(page.resolve().as_uri(), width, height)
        box = b.evaluate("""(() => {
            const t = document.querySelector('ol.timeline').getBoundingClientRect();
            const c = document.querySelector('.cards').getBoundingClientRect();
            return {bottom: t.bottom, top: t.top, cards: c.top,
                    items: document.querySelectorAll('ol.timeline li').length};
        })()""")
        assert b.console() == []
    finally:
        b.close()
    assert box["items"] == 5
    assert 0 <= box["top"] < box["bottom"] <= height, box   # the whole timeline on the first screen
    assert box["bottom"] <= box["cards"], box               # and above the cards
