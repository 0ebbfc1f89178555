"""The report's candidate cards render the gate's state in force: each card's headline (ships, blocked, passes,
…), its "recommended" and "under a post-hoc rule" tags are the state's words for that candidate
(`voicegate.gate.Standing.candidates`), never worked out by the page from the verdicts. Data handed in without a
state gets the one `gate` computes from the result in force; a pick under a POST-HOC rule says so on its headline.
"""

from __future__ import annotations

import re
from dataclasses import replace

from helpers.report_data import reference_data

from voicegate.gate import Standing
from voicegate.gate._state import CandidateStanding
from voicegate.report import render_report
from voicegate.report._data import ReportData


def _cards(html: str) -> dict[str, tuple[str, str, str]]:
    """name -> (data-standing, the tags after the name, the headline as read)."""
    out = {}
    for kind, name, tags, head in re.findall(
            r'data-standing="([\w-]+)">\n<h3><span>([^<]+)</span><span>(.*?)</h3>\n<p class="headline">'
            r'<strong class="standing[^"]*">(.*?)</strong>', html, flags=re.DOTALL):
        out[name] = (kind, " ".join(re.sub(r"<[^>]+>", " ", tags).split()), re.sub(r"<[^>]+>", "", head))
    return out


def test_the_cards_say_what_the_state_says() -> None:
    data = ReportData.from_plain(reference_data())
    state = Standing.of(data.current, amended_from="global-max-spread")
    assert _cards(render_report(replace(data, standing=state))) == {
        "ckpt475": ("ships", "recommended shipped by a person", "✓ships"), "ckpt925": ("voice-fail", "", "✗VOICE FAIL")}
    # A state that says otherwise is what the page shows: the cards hold no verdict logic of their own.
    said = (CandidateStanding(name="ckpt475", kind="blocked", label="blocked by DAMAGE", blockers=("DAMAGE",),
                              voice="PASS"),
            CandidateStanding(name="ckpt925", kind="ships", label="ships under a POST-HOC rule", blockers=(),
                              voice="PASS", recommended=True, post_hoc=True))
    html = render_report(replace(data, standing=replace(state, post_hoc=True, candidates=said)))
    assert _cards(html) == {"ckpt475": ("blocked", "shipped by a person", "✗blocked by DAMAGE"),
                            "ckpt925": ("ships", "recommended under a post-hoc rule", "✓ships under a POST-HOC rule")}


def test_without_a_state_the_page_takes_gates_and_a_post_hoc_pick_says_so() -> None:
    plain = reference_data()
    assert _cards(render_report(plain))["ckpt475"] == ("ships", "recommended shipped by a person", "✓ships")
    cited = {"gate": "lv-hemingway", "rule": "pairwise-max-spread", "commit": "ab" * 20, "post_hoc": "true",
             "after_numbers": 2}
    plain["amendments"] = [{**plain["amendments"][0], "citation": cited}]
    html = render_report(plain)
    assert _cards(html)["ckpt475"] == ("ships", "recommended under a post-hoc rule shipped by a person",
                                               "✓ships under a POST-HOC rule")
