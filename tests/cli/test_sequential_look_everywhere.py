"""A registered sequential design's decision at a look is the state in force on every surface.

The same stored seeds, scored at a look, say the same thing in the record's score entry (its In force and Ships
lines), the README and compose entries, `score`'s terminal, `--quiet`, `--json` (its `look`), `--strict`, JUnit,
the report (its in-force line, its recommendation, each candidate's card) and `ship`'s warning: a look that
decides nothing yet ships nothing and names the next look, a futility stop ships nothing, a PASS ships. Under
welch-t, the fixed rule would ship `cand` at 3 seeds; the design's look does not.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers.junit import cases, junit, properties
from helpers.sequential import look_rows, sequential_workspace
from helpers.workspace import GATE, carrier_like, run_cli, scoring_workspace, write_rows

RATES = ("error rates: false pass ≤ α 0.01 overall across looks 3, 5 (the sequential design's, simulated at "
         "register), design power not simulated")
LOOK1 = "look 1 of 2 (3 seeds): CONTINUE — nothing ships yet; continue to look 2 (5 seeds)"
LOOK2 = "look 2 of 2 (5 seeds): PASS — cand ships"


def _flat(text: str) -> str:
    """The terminal's text with rich's wrapping undone."""
    return " ".join(text.split())


def _report(root: Path) -> str:
    out = root / "report.html"
    done = run_cli("report", GATE, "-C", root, "--out", out)
    assert done.code == 0, done.stderr
    return out.read_text(encoding="utf-8")


def test_a_look_that_decides_nothing_yet_ships_nothing_on_every_surface(tmp_path: Path) -> None:
    root = sequential_workspace(tmp_path / "ws", rule="welch-t", artifacts=True)
    write_rows(root, look_rows([1, 2, 3]))
    in_force = f"rule welch-t, as registered; sequential design, {LOOK1}; ships: none; {RATES}"
    ships = f"ships: none (sequential design, {LOOK1})"

    table = run_cli("score", GATE, "-C", root, "--junit", tmp_path / "score.xml")
    assert table.code == 0, table.stderr
    assert f"in force: {in_force}" in table.stdout.splitlines()
    assert ships in _flat(table.stdout)
    document = run_cli("score", GATE, "-C", root, "--json")
    assert document.code == 0, document.stderr
    doc = json.loads(document.stdout)
    look = doc["look"]
    assert (doc["ships"], doc["registered_ships"], doc["fixed_rule_ships"]) == (None, None, "cand")
    assert {k: look[k] for k in ("index", "of", "seeds", "decision", "ships", "summary", "next")} == {
        "index": 1, "of": 2, "seeds": 3, "decision": "CONTINUE", "ships": None, "summary": LOOK1,
        "next": {"index": 2, "seeds": 5}}
    assert {name: c["decision"] for name, c in look["candidates"].items()} == {"cand": "CONTINUE", "other": "FAIL"}
    registration = json.loads((root / "preregistrations" / f"{GATE}.registration.json").read_text("utf-8"))
    assert look["boundaries"] == registration["sequential"]["looks"]
    # each candidate's decision, as the terminal lists it, from the very numbers --json gives
    cand, other = look["candidates"]["cand"], look["candidates"]["other"]
    assert (f"cand: look 1 of 2, 3 seeds: CONTINUE (p {cand['p']:.5f}, between {cand['efficacy']:g} and "
            f"{cand['futility']:g}): not decided at this look: generate to the next look") in table.stdout
    assert f"other: look 1 of 2, 3 seeds: FAIL (p {other['p']:.5f} over 0.5: futility)" in table.stdout

    quiet = run_cli("score", GATE, "-C", root, "--quiet")
    assert quiet.code == 0 and quiet.stdout == f"{GATE}: {ships}; {RATES}\n", quiet.stdout
    strict = run_cli("score", GATE, "-C", root, "--quiet", "--strict")
    assert strict.code == 1
    assert strict.stderr.splitlines()[-1] == (f"voicegate: {GATE}: no candidate ships under welch-t: sequential "
                                              f"design, {LOOK1}")
    xml = junit(tmp_path / "score.xml")
    assert properties(xml)["sequential design"] == LOOK1
    assert [c for c in cases(xml) if c[1].startswith(("gate", "voice"))] == [
        (f"voicegate.{GATE}", "gate outcome", "failure"), (f"voicegate.{GATE}.cand", "voice at look 1 of 2", "skipped"),
        (f"voicegate.{GATE}.other", "voice at look 1 of 2", "failure")]

    record = (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    assert f"**In force:** {in_force}." in record
    assert f"**Ships (the rule's recommendation):** none — sequential design, {LOOK1}." in record
    readme = (root / "adapters" / GATE / "README.md").read_text(encoding="utf-8")
    assert f"- Ships (the rule's recommendation): none (sequential design, {LOOK1})." in readme
    assert "(recommended)" not in readme  # the fixed rule's pick is not the design's
    compose = (root / "deploy" / "compose.yaml").read_text(encoding="utf-8")
    assert f"— in force: {in_force}" in compose and "ships (rule's recommendation): none;" in compose

    page = _report(root)
    assert f"sequential design, {LOOK1}; ships: <strong>none</strong>" in page
    assert f"Recommended by the rule: <strong>none</strong> (sequential design, {LOOK1})." in page
    assert 'data-standing="continue"' in page and "VOICE CONTINUE at look 1 of 2: not decided yet" in page
    assert 'data-standing="voice-fail"' in page and "VOICE FAIL at look 1 of 2" in page
    assert 'data-standing="ships"' not in page
    assert f"under welch-t: cand CONTINUE, other FAIL; sequential design, {LOOK1}" in page  # the timeline

    shipped = run_cli("ship", GATE, "cand", "--reason", "the reviewer hears the voice already", "-C", root)
    assert shipped.code == 0, shipped.stderr
    assert shipped.stderr == (f"warning: cand is not what the registered sequential design ships (look 1 of 2, 3 "
                              f"seeds: CONTINUE (p {cand['p']:.5f}, between {cand['efficacy']:g} and "
                              f"{cand['futility']:g}): not decided at this look: generate to the next look; "
                              f"{ships}); the decision is recorded beside it\n")
    record = (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    assert "It goes against the rule's recommendation (no candidate ships)" in record
    assert record.count(f"**In force:** {in_force}.") == 2  # the ship entry leads with the same state
    decision = json.loads((root / "runs" / GATE / "decisions.jsonl").read_text("utf-8").splitlines()[-1])
    assert decision["recommendation"] is None


def test_a_pass_at_a_later_look_ships_on_every_surface(tmp_path: Path) -> None:
    root = sequential_workspace(tmp_path / "ws", rule="welch-t", artifacts=True)
    write_rows(root, look_rows([1, 2, 3]))
    assert run_cli("score", GATE, "-C", root, "--quiet").code == 0
    write_rows(root, look_rows([4, 5]))
    quiet = run_cli("score", GATE, "-C", root, "--quiet")
    ships = f"ships: cand (sequential design, {LOOK2})"
    assert quiet.code == 0 and quiet.stdout == f"{GATE}: {ships}; {RATES}\n", quiet.stdout
    doc = json.loads(run_cli("score", GATE, "-C", root, "--json").stdout)
    assert (doc["ships"], doc["look"]["decision"], doc["look"]["next"]) == ("cand", "PASS", None)
    assert run_cli("score", GATE, "-C", root, "--quiet", "--strict").code == 0
    record = (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    assert f"**Ships (the rule's recommendation):** none — sequential design, {LOOK1}." in record  # look 1 stays
    assert f"**Ships (the rule's recommendation):** cand — sequential design, {LOOK2}." in record
    assert f"**In force:** rule welch-t, as registered; sequential design, {LOOK2}; ships: cand; {RATES}." in record
    page = _report(root)
    assert f"sequential design, {LOOK2}; ships: <strong>cand</strong>" in page
    assert 'data-standing="ships"' in page

    other = run_cli("ship", GATE, "other", "--reason", "the reviewer prefers its voice", "-C", root)
    assert other.code == 0 and other.stderr.startswith(
        "warning: other is not what the registered sequential design ships (stopped at look 1 of 2, 3 seeds: FAIL "
        "(p 0.90129 over 0.5: futility); final: not decided again at look 2;"), other.stderr
    assert other.stderr.endswith(f"; {ships}); the decision is recorded beside it\n")
    cand = run_cli("ship", GATE, "cand", "--reason", "it passed the registered design", "-C", root)
    assert cand.code == 0 and cand.stderr == "", cand.stderr
    assert "It follows the rule's recommendation (cand)." in (root / "gates" / f"{GATE}.md").read_text("utf-8")


def test_a_futility_stop_ships_nothing(tmp_path: Path) -> None:
    root = sequential_workspace(tmp_path / "ws", rule="welch-t")
    write_rows(root, look_rows([1, 2, 3], {"base": carrier_like("b"), "cand": carrier_like("c"),
                                           "other": carrier_like("o")}))
    quiet = run_cli("score", GATE, "-C", root, "--quiet")
    assert quiet.code == 0
    assert quiet.stdout == (f"{GATE}: ships: none (sequential design, look 1 of 2 (3 seeds): FAIL for futility — "
                            f"nothing ships); {RATES}\n")


def test_the_same_rows_under_the_fixed_design_say_what_they_said(tmp_path: Path) -> None:
    # no look anywhere: the fixed rule's pick ships, and --json has no look (lv-bronte's goldens hold the bytes)
    root = scoring_workspace(tmp_path / "ws", extra={"floor": {"rule": "welch-t"}, "seeds": [1, 2, 3]})
    write_rows(root, look_rows([1, 2, 3]))
    quiet = run_cli("score", GATE, "-C", root, "--quiet")
    assert quiet.code == 0
    assert quiet.stdout.startswith(f"{GATE}: ships: cand (VOICE PASS 1.1x under welch-t, NOT-COPIED, NO-DAMAGE);")
    doc = json.loads(run_cli("score", GATE, "-C", root, "--json").stdout)
    assert doc["ships"] == "cand" and "look" not in doc and "fixed_rule_ships" not in doc
    record = (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    assert "**Ships (the rule's recommendation):** cand." in record and "sequential" not in record


def test_the_error_rates_stated_are_the_designs_not_the_fixed_rules(tmp_path: Path) -> None:
    # the In force line, --json and the record's error rates claim the design's overall α across its looks, as
    # simulated at register, and say its power is not simulated (not the fixed rule's α at the seeds scored)
    root = sequential_workspace(tmp_path / "ws", rule="welch-t-min-effect")
    write_rows(root, look_rows([1, 2, 3]))
    table = run_cli("score", GATE, "-C", root)
    assert table.code == 0, table.stderr
    assert table.stdout.splitlines()[0].endswith(f"; {RATES}")
    registration = json.loads((root / "preregistrations" / f"{GATE}.registration.json").read_text("utf-8"))
    assert registration["sequential"]["simulated"] == {"runs": 100000, "seed": 20261208, "false_pass": 0.00989,
                                                       "expected_seeds": 4.02}
    rates = json.loads(run_cli("score", GATE, "-C", root, "--json").stdout)["error_rates"]
    assert (rates["false_pass"], rates["power"]) == (0.01, None)
    assert rates["design"] == {"looks": [3, 5], "alpha": 0.01, "false_pass_overall": 0.01,
                               "simulated": registration["sequential"]["simulated"], "power": None,
                               "power_text": "not simulated"}
    record = (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    assert ("- false-pass rate of the sequential design (looks at 3, 5 seeds per arm, welch-t-min-effect's "
            "statistic) by design: at most α 0.01 overall, the chance that any of its looks passes a candidate whose "
            "true effect is exactly ε, not α at each look (its boundaries were simulated at register to hold it); on "
            "100,000 fresh simulated runs at that effect it passed 0.0099 (± 0.0006) and used 4.02 seeds per arm on "
            "average, of at most 5\n") in record
    assert ("- power of the sequential design: not simulated here (it depends on the true effect; calibrate "
            "simulates these looks on a pilot's seeds, and register quotes a pilot's simulation on file)\n") in record
    assert "false-pass rate of welch-t-min-effect by design" not in record
