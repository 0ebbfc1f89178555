"""A result stored before welch-t existed still prints, amends and reports; an
amendment to welch-t adds its column (and its detectable delta) to every artifact; the Dickens case reads
INCONCLUSIVE, with its floor, and "nearer" nowhere; `ship` against the verdicts names every short axis."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.bronte import bronte_workspace, generations, patch_scoring, write_jsonl
from helpers.workspace import register_prospective, run_cli

from voicegate.artifacts._format import specificity_phrase, specificity_summary, verdict_line
from voicegate.report._table import make_console, print_score
from voicegate.scoring._result import CandidateResult, Control, GateResult, Impostors, Specific
from voicegate.scoring._specificity import specificity

GATE = "lv-bronte"
AFTER_WELCH = "1796601600"  # 2026-12-07: the day after welch-t@1 was registered


@pytest.fixture
def scored_before_welch(tmp_path: Path, compose_fixture: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """lv-bronte registered and scored on 2026-12-02, under the two rules in force then."""
    from helpers.bronte import as_shipped

    patch_scoring(monkeypatch)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1796169600")
    root = bronte_workspace(tmp_path / "ws", as_shipped(compose_fixture), prospective=False)
    assert run_cli("import", GATE, write_jsonl(tmp_path / "g.jsonl", generations()), cwd=root).code == 0
    assert run_cli("score", GATE, cwd=root).code == 0
    return root


def test_a_result_stored_before_welch_t_prints_amends_and_reports(scored_before_welch: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    root = scored_before_welch
    stored = json.loads((root / "runs" / GATE / "scores.json").read_text(encoding="utf-8"))
    assert set(stored["arms"][1]["floors"]) == {"global-max-spread", "pairwise-max-spread"}
    assert "welch-t" not in stored["signature"]["rules"]
    # Printed by today's voicegate: the result's own two rules, no third column, no KeyError.
    again = run_cli("score", GATE, "--dry-run", cwd=root, env={"COLUMNS": "200"})
    assert again.code == 0, again.stderr
    assert "welch" not in again.stdout and "0.251 (0.8x)" in again.stdout
    # A later gate registers welch-t as its deciding rule; a day after the rule existed, lv-bronte is amended to it.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", AFTER_WELCH)
    register_prospective(root, "lv-hemingway", "welch-t")
    compose = root / "deploy" / "compose.yaml"
    record = root / "gates" / f"{GATE}.md"
    before = {p: p.read_bytes() for p in (compose, record)}
    # registered after lv-bronte's numbers: a post-hoc correction, said as such
    done = run_cli("amend", GATE, "--rule", "welch-t", "--post-hoc", "--reason",
                   "a range floor loses power with seeds; the t floor gains it", cwd=root)
    assert done.code == 0, done.stderr
    assert done.stdout.splitlines()[:3] == [
        "ckpt475: VOICE FAIL -> PASS 1.4x (+0.193 vs floor 0.140) · NOT-COPIED · NO-DAMAGE",
        "ckpt925: VOICE FAIL (unchanged) (+0.210 vs floor 0.538) · NOT-COPIED · NO-DAMAGE",
        "ships under welch-t: ckpt475 (under global-max-spread: none)"]
    # Every earlier byte is still there; the amendment carries every rule's floor, the new one's included.
    for path, old in before.items():
        assert path.read_bytes().startswith(old[:200]) and len(path.read_bytes()) > len(old)
    text = record.read_text(encoding="utf-8")
    assert "| ckpt475 | +0.193 | 0.251 | 0.140 | 0.091 | FAIL 0.8x | PASS 1.4x | DISAGREE |" in text
    assert "rules:global-max-spread@1,pairwise-max-spread@1,welch-t@1" in text
    assert run_cli("verify", GATE, cwd=root).code == 0
    report = run_cli("report", GATE, cwd=root)
    assert report.code == 0, report.stderr


# -- the Dickens case: a margin within noise is INCONCLUSIVE, never "nearer Eliot" -----------------

# Per-seed distances that give the numbers: delta toward Dickens +0.021, toward Eliot -0.005,
# margin over Eliot +0.026, pairwise floor of the margin 0.113.
_BASE = {1: 0.500, 2: 0.500, 3: 0.500}
DICKENS = {"base": _BASE, "lv-dickens": {1: 0.479, 2: 0.479, 3: 0.479}}
ELIOT = {"base": {1: 0.500, 2: 0.500, 3: 0.500}, "lv-dickens": {1: 0.505 - 0.0565, 2: 0.505, 3: 0.505 + 0.0565}}


def _dickens_result() -> GateResult:
    axis = specificity(DICKENS, {"George Eliot": ELIOT}, "base", "lv-dickens", author="Charles Dickens",
                       decides=True, rule="pairwise-max-spread", rules=("global-max-spread", "pairwise-max-spread"))
    cand = CandidateResult(name="lv-dickens", role="candidate", model="lv-dickens", distances={},
                           mean_distance=None, spread=None, delta_cb=0.021,
                           floors={"global-max-spread": 0.0, "pairwise-max-spread": 0.0},
                           voice={"global-max-spread": "PASS", "pairwise-max-spread": "PASS"},
                           copying="NOT-COPIED", damage="NO-DAMAGE", specificity=axis)
    return GateResult(gate="lv-dickens", rule="pairwise-max-spread", ships=None,
                      control=Control(arm="base", overlap=0.0),
                      arms=(cand,), impostors=Impostors(author="Charles Dickens", mode="decides",
                                                        authors=("George Eliot",)))


def test_the_dickens_case_is_inconclusive_with_its_floor_and_nearer_nowhere(capsys: pytest.CaptureFixture[str]) -> None:
    result = _dickens_result()
    (cand,) = result.candidates
    axis = cand.specificity
    assert axis is not None
    assert axis.deltas == {"Charles Dickens": 0.021, "George Eliot": -0.005}
    assert axis.margins == {"George Eliot": 0.026} and axis.floors["pairwise-max-spread"] == 0.113
    assert axis.under("pairwise-max-spread") == Specific.INCONCLUSIVE and axis.nearer("pairwise-max-spread") == []
    phrase = specificity_phrase(cand, "pairwise-max-spread")
    summary = specificity_summary(result)
    assert phrase is not None and summary is not None
    assert phrase.startswith("INCONCLUSIVE, deciding (pairwise-max-spread: margin +0.026 over George Eliot vs "
                             "floor 0.113, 0.2x: within noise (more seeds or longer pools are a new registration, "
                             "recorded as a follow-up design)")
    assert summary.endswith("lv-dickens INCONCLUSIVE (margin +0.026 over George Eliot vs floor 0.113: within noise; "
                            "more seeds are a new registration)")
    print_score(result, make_console())
    table = capsys.readouterr().out
    for shown in (phrase, summary, verdict_line(cand, "pairwise-max-spread"), table):
        assert "nearer" not in shown
    assert "INCONCLUSIVE" in table and "0.113" in table
    # Where specificity decides, an INCONCLUSIVE candidate does not ship, and shipping it names the axis.
    assert cand.short_of("pairwise-max-spread") == ["SPECIFICITY INCONCLUSIVE"]


def test_nearer_is_said_only_where_the_margin_is_below_minus_its_floor() -> None:
    toward = {"base": _BASE, "lv-dickens": {1: 0.30, 2: 0.31, 3: 0.32}}  # moved +0.19 toward the impostor
    axis = specificity(DICKENS, {"George Eliot": toward}, "base", "lv-dickens", author="Charles Dickens",
                       decides=True, rule="pairwise-max-spread")
    assert axis.under("pairwise-max-spread") == Specific.NOT_SPECIFIC and axis.nearer("pairwise-max-spread") == [
        "George Eliot"]
    cand = CandidateResult(name="lv-dickens", role="candidate", model="m", distances={}, mean_distance=None,
                           spread=None, specificity=axis, voice={"pairwise-max-spread": "PASS"})
    assert "nearer George Eliot (-0.169)" in (specificity_phrase(cand, "pairwise-max-spread") or "")
