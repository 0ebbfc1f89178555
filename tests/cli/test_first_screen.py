"""The reviewer's first screen: every entry of the gate record and the adapter README, every compose comment
and the report's header lead with one line saying what is in force — the deciding rule and how it came to
decide (as registered, a prospective amendment, a POST-HOC correction), what ships, the error-rate statement
("not stated" for a gate registered before error rates were stated) — then the details. The record's seat
integrity is a one-line verdict, its method one heading away. Walked on the demo, which ends with a post-hoc amendment.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.workspace import voicegate

GATE = "lv-marlowe"
# The demo's gate is registered today, under range floors: they register no false-pass rate, and no pilot of the
# demo's voice is on record.
RATES = "false pass not stated (a range floor), power unknown"
REGISTERED = f"rule global-max-spread, as registered; ships: none; error rates: {RATES}"
POST_HOC = ("rule pairwise-max-spread, POST-HOC correction of global-max-spread (a rule registered after the "
            f"numbers); ships: ckpt475; error rates: {RATES}")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("demo")
    done = voicegate(tmp, "demo", str(tmp / "ws"))
    assert done.returncode == 0, done.stderr[-2000:]
    return tmp / "ws"


def _entries(text: str, heading: str) -> list[tuple[str, str]]:
    """(heading line, first line of the body) of every entry under a heading starting with `heading`."""
    out = []
    for body in re.split(r"^<!-- voicegate:entry .*$", text, flags=re.MULTILINE):
        lines = [ln for ln in body.splitlines() if ln.strip()]
        head = next((i for i, ln in enumerate(lines) if ln.startswith(heading)), None)
        if head is not None:
            out.append((lines[head], lines[head + 1]))
    return out


def test_every_record_and_readme_entry_leads_with_what_is_in_force(demo: Path) -> None:
    record = (demo / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    said = [(h.split(" — ")[0], first) for h, first in _entries(record, "## ") if not h.startswith("## Numbers")]
    assert said == [("## Score", f"**In force:** {REGISTERED}."),
                    ("## Shipping decision", f"**In force:** {REGISTERED}."),
                    ("## Note", f"**In force:** {REGISTERED}."),
                    ("## Amendment", f"**In force:** {POST_HOC}.")]
    readme = (demo / "demo" / "adapters" / "lv-marlowe-v1" / "README.md").read_text(encoding="utf-8")
    said = [(h.split(" — ")[0], first) for h, first in _entries(readme, "### voicegate")]
    assert said == [("### voicegate verdict", f"**In force:** {REGISTERED}."),
                    ("### voicegate shipping decision", f"**In force:** {REGISTERED}."),
                    ("### voicegate note", f"**In force:** {REGISTERED}."),
                    ("### voicegate amendment", f"**In force:** {POST_HOC}.")]


def test_every_compose_comment_says_it_on_its_first_line(demo: Path) -> None:
    compose = (demo / "demo" / "deploy" / "compose.yaml").read_text(encoding="utf-8")
    firsts = [ln.strip() for ln in compose.splitlines() if re.match(r"\s*# voicegate \d{4}-\d\d-\d\d ", ln)]
    assert [re.sub(r"^# voicegate \S+ ", "", ln) for ln in firsts] == [
        f"{GATE} score (rule global-max-spread@1) — in force: {REGISTERED}",
        f"{GATE}: a person SHIPPED ckpt475 — in force: {REGISTERED}",
        f"{GATE} NOTE — in force: {REGISTERED}",
        f"{GATE} AMENDED — in force: {POST_HOC}"]


def test_the_report_header_says_it_first(demo: Path) -> None:
    page = (demo / "runs" / GATE / "report.html").read_text(encoding="utf-8")
    header = page[page.index("<header>"):page.index("</header>")]
    first = re.sub(r"<[^>]+>", "", header.split("</h1>", 1)[1].split("</p>", 1)[0]).strip()
    assert first == f"In force: {POST_HOC}."


def test_the_seat_integrity_is_one_line_and_its_method_one_heading_away(demo: Path) -> None:
    record = (demo / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    verdict = re.search(r"^\*\*Seat integrity:\*\* (.*)$", record, re.MULTILINE)
    assert verdict is not None and verdict.group(1).startswith("HOLDS: ")
    assert len(verdict.group(0)) < 320 and "Identity" not in verdict.group(0)  # was ~2,500 characters
    score = record[record.index("## Score — "):record.index("## Shipping decision — ")]
    details = score.index("\n### Seat integrity — details\n")
    assert score.index("**Verdicts.**") < details < score.index("Method `canary-reproduction@3`")
    assert score.index("Identity of each arm's weights") > details
    # verify names each entry by its own heading, never by the details sub-heading inside it
    from helpers.workspace import run_cli

    checked = run_cli("verify", GATE, cwd=demo)
    assert checked.code == 0 and re.search(r"entry \d+ \(Score — \S+ — rule global-max-spread@1\) OK", checked.stdout)
    assert "Seat integrity" not in checked.stdout


def test_counts_say_what_is_true_and_a_post_hoc_rule_withdraws_nothing(demo: Path) -> None:
    import json

    from helpers.workspace import run_cli

    doc = json.loads(run_cli("score", GATE, "--json", "--dry-run", cwd=demo).stdout)
    rules = doc["arms"][1]["floors"]
    assert len(rules) > 2 and doc["error_rates"]["statement"] == RATES
    readme = (demo / "demo" / "adapters" / "lv-marlowe-v1" / "README.md").read_text(encoding="utf-8")
    assert f"; all {len(rules)} floors shown." in readme and "both floors" not in readme
    record = (demo / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    assert "is withdrawn" not in record and "The FAIL under the registered rule is not withdrawn" in record


def test_an_error_rate_statement_is_said_where_not_stated_was() -> None:
    """The slot the error-rates statement fills: `ErrorRates` on the state, printed as given on every first line."""
    from voicegate.gate import ErrorRates, Standing

    stated = ErrorRates(rule="pairwise-max-spread", seeds=3, false_pass=0.01, false_pass_text="α 0.01",
                        power=0.42, power_text="power 0.42 (pilot lv-pilot)")
    standing = Standing(rule="pairwise-max-spread", ships="ckpt475", amended_from="global-max-spread",
                        error_rates=stated)
    assert standing.line() == ("in force: rule pairwise-max-spread, prospective amendment from global-max-spread; "
                               "ships: ckpt475; error rates: false pass α 0.01 by design, power 0.42 at 3 seeds "
                               "(pilot)")
    assert Standing(rule="r", ships=None).words() == "rule r, as registered; ships: none; error rates: not stated"


def test_the_terminal_the_quiet_line_and_junit_carry_the_error_rates_the_json_states(demo: Path,
                                                                                    tmp_path: Path) -> None:
    import json
    import xml.etree.ElementTree as ET

    from helpers.workspace import run_cli

    doc = json.loads(run_cli("score", GATE, "--json", "--dry-run", cwd=demo).stdout)
    assert doc["error_rates"]["statement"] == RATES
    table = run_cli("score", GATE, "--dry-run", cwd=demo).stdout.splitlines()
    assert table[0].startswith("note: as amended") and table[1] == f"in force: {POST_HOC}"
    quiet = run_cli("score", GATE, "--dry-run", "-q", cwd=demo).stdout
    assert quiet.endswith(f"a POST-HOC correction; error rates: {RATES}\n"), quiet
    junit = tmp_path / "score.xml"
    run_cli("score", GATE, "--dry-run", "--junit", junit, cwd=demo)
    props = {p.get("name"): p.get("value") for p in ET.parse(junit).iter("property")}
    assert props["error_rates"] == RATES


def test_the_report_says_post_hoc_on_the_pick_the_amendment_and_what_changed(demo: Path) -> None:
    page = (demo / "runs" / GATE / "report.html").read_text(encoding="utf-8")

    def text(html: str) -> str:
        return " ".join(re.sub(r"<[^>]+>", " ", html).split())

    card = page[page.index('<article class="card st-card-ships"'):]
    card = card[:card.index("</article>")]
    head = text(card[card.index('<strong class="standing'):card.index("</strong>", card.index('class="standing'))])
    assert head == "✓ ships under a POST-HOC rule" and "under a post-hoc rule" in text(card.split("</h3>")[0])
    amendments = page[page.index('<section id="amendments">'):page.index('<section id="decisions">')]
    assert "· POST-HOC correction" in text(amendments.split("</h3>")[0])
    changed = text(amendments[amendments.index("<h4>What changed</h4>"):].split("</ul>")[0])
    assert "a POST-HOC correction: pairwise-max-spread registered for lv-marlowe-v2" in changed
