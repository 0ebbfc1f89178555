"""One verdict on every surface of `score`: after an amendment, the exit code under --strict, the quiet
line, the table, --json and --junit all say the same rule in force, what ships under it, and whether the
amendment is a post-hoc correction. JUnit carries CI's meaning (red exactly when --strict exits 1) and is
valid against the JUnit schema vendored beside these tests (tests/helpers/junit-10.xsd) for any string.

The story is lv-bronte's, through the command line: registered under global-max-spread, imported, scored
(nothing ships), shipped against the verdict, amended to pairwise-max-spread citing another gate's
registration — before its numbers (prospective) or after them (a post-hoc correction, as the demo ends).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from helpers.bronte import as_shipped, bronte_workspace, generations, patch_scoring, write_jsonl
from helpers.junit import cases, junit, properties
from helpers.workspace import register_prospective, run_cli, voicegate

GATE = "lv-bronte"
PAIRWISE = "pairwise-max-spread"
SHIPS = "ships: ckpt475 (VOICE PASS 2.1x under pairwise-max-spread, NOT-COPIED, NO-DAMAGE)"

# What a gate registered today under a range floor states of its error rates (no pilot of its voice on record).
RANGE_RATES = "false pass not stated (a range floor), power unknown"


@pytest.fixture(params=["prospective", "post-hoc"])
def story(request: pytest.FixtureRequest, tmp_path: Path, compose_fixture: Path,
          monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """lv-bronte scored under global (nothing ships) and shipped; the amendment is made by the test."""
    patch_scoring(monkeypatch)
    prospective = request.param == "prospective"
    root = bronte_workspace(tmp_path / "ws", as_shipped(compose_fixture), prospective=prospective)
    for command in (("import", GATE, write_jsonl(tmp_path / "g.jsonl", generations())), ("score", GATE),
                    ("ship", GATE, "ckpt475", "--reason", "additive, reversible and safety-clean")):
        done = run_cli(*command, cwd=root)
        assert done.code == 0, (command, done.stderr)
    return root, request.param


def test_before_the_amendment_every_surface_says_nothing_ships_and_ci_is_red(story: tuple[Path, str],
                                                                          tmp_path: Path) -> None:
    root, _ = story
    report = tmp_path / "before.xml"
    quiet = run_cli("score", GATE, "--strict", "-q", "--dry-run", "--junit", report, cwd=root)
    assert quiet.code == 1
    assert quiet.stdout == ("lv-bronte: ships: none (no candidate passes VOICE, COPYING and DAMAGE under "
                            "global-max-spread)\n")
    assert quiet.stderr.endswith("\nvoicegate: lv-bronte: no candidate ships under global-max-spread\n")
    doc = json.loads(run_cli("score", GATE, "--strict", "--json", "--dry-run", cwd=root).stdout)
    assert (doc["rule"], doc["ships"], doc["registered_rule"], doc["amendment"]) == (
        "global-max-spread", None, "global-max-spread", None)
    root_xml = junit(report)
    assert cases(root_xml) == [
        ("voicegate.lv-bronte", "gate outcome", "failure"),
        *((f"voicegate.lv-bronte.{arm}", name, outcome) for arm in ("ckpt475", "ckpt925") for name, outcome in (
            ("voice under global-max-spread", "failure"), ("copying", "passed"), ("damage", "passed")))]
    failure = next(root_xml.iter("failure"))
    assert failure.get("message") == "lv-bronte: no candidate ships under global-max-spread"
    props = properties(root_xml)
    assert (props["rule"], props["registered_rule"], props["amendment"], props["ships"]) == (
        "global-max-spread", "global-max-spread", "none", "none")
    # the rule shown beside the deciding one is a property, never a test case
    assert props["shown, not deciding: ckpt475 voice under pairwise-max-spread"] == (
        "VOICE PASS under pairwise-max-spread: delta_cb +0.193 vs floor 0.091 (ratio 2.12x)")


def test_after_the_amendment_every_surface_says_the_rule_in_force(story: tuple[Path, str], tmp_path: Path) -> None:
    root, kind = story
    post_hoc = kind == "post-hoc"
    if post_hoc:  # registered after lv-bronte's numbers, as the demo's second gate is
        register_prospective(root, "lv-dummy", "pairwise-max-spread")
    amended = run_cli("amend", GATE, "--rule", "pairwise-max-spread", "--reason", "the global floor misled",
                      *(("--post-hoc",) if post_hoc else ()), cwd=root)
    assert amended.code == 0, amended.stderr
    said = "a POST-HOC correction" if post_hoc else "prospective"
    cited = "lv-dummy" if post_hoc else "lv-hemingway"
    # the record withdraws the registered rule's FAIL only for a pre-registered rule
    text = (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    withdrawn = "- ckpt475: VOICE FAIL → PASS (2.1x): the floor that applies is 0.091, not 0.251; any conclusion " \
                "drawn from the FAIL is withdrawn."
    kept = ("- ckpt475: VOICE FAIL → PASS (2.1x) under a rule chosen after the numbers: the floor it applies is "
            "0.091, not 0.251. The FAIL under the registered rule is not withdrawn; it stays the pre-registered "
            "verdict, and this PASS is a post-hoc correction to be read beside it.")
    assert (kept in text, withdrawn in text) == (post_hoc, not post_hoc)

    # the table, recorded for real: the note, then the amended decision; nothing new to append
    record = (root / "gates" / f"{GATE}.md").read_bytes()
    table = run_cli("score", GATE, cwd=root)
    assert table.code == 0, table.stderr
    note = table.stdout.splitlines()[0]
    assert note.startswith("note: as amended ") and (
        f"global-max-spread -> pairwise-max-spread on these same generations ({said}; cites pairwise-max-spread "
        f"registered for {cited} at commit ") in note
    assert note.endswith("; the decision in force is under pairwise-max-spread")
    assert SHIPS in table.stdout and "ships: none" not in table.stdout
    assert (root / "gates" / f"{GATE}.md").read_bytes() == record

    # the quiet line and --strict: the same rule, the same pick, exit 0
    report = tmp_path / "after.xml"
    quiet = run_cli("score", GATE, "--strict", "-q", "--junit", report, cwd=root)
    assert quiet.code == 0, quiet.stderr
    assert quiet.stdout == f"lv-bronte: {SHIPS}; rule in force by amendment from global-max-spread, {said}\n"
    assert quiet.stderr.startswith(f"voicegate: {note}\n")

    # --json: rule and ships in force, the registered rule and the amendment beside them
    as_json = run_cli("score", GATE, "--strict", "--json", cwd=root)
    assert as_json.code == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    assert list(doc)[:6] == ["gate", "rule", "ships", "registered_rule", "registered_ships", "amendment"]
    assert (doc["rule"], doc["ships"], doc["registered_rule"], doc["registered_ships"]) == (
        "pairwise-max-spread", "ckpt475", "global-max-spread", None)
    amendment = doc["amendment"]
    assert (amendment["rule_from"], amendment["rule_to"], amendment["post_hoc"]) == (
        "global-max-spread", "pairwise-max-spread", post_hoc)
    assert amendment["citation"]["gate"] == cited and amendment["citation"]["post_hoc"] is post_hoc
    commit = amendment["citation"]["commit"]
    ckpt475 = next(a for a in doc["arms"] if a["name"] == "ckpt475")
    assert ckpt475["voice"]["pairwise-max-spread"] == "PASS" and ckpt475["ratio"] == ckpt475["ratios"][
        "pairwise-max-spread"]
    assert doc["signature_text"].find("rule:pairwise-max-spread@1") > 0

    # --junit: green (nothing fails when --strict exits 0), the rule in force deciding, the global one shown
    root_xml = junit(report)
    assert cases(root_xml) == [
        ("voicegate.lv-bronte", "gate outcome", "passed"),
        ("voicegate.lv-bronte.ckpt475", "voice under pairwise-max-spread", "passed"),
        ("voicegate.lv-bronte.ckpt475", "copying", "passed"), ("voicegate.lv-bronte.ckpt475", "damage", "passed"),
        ("voicegate.lv-bronte.ckpt925", "voice under pairwise-max-spread", "skipped"),
        ("voicegate.lv-bronte.ckpt925", "copying", "passed"), ("voicegate.lv-bronte.ckpt925", "damage", "passed")]
    assert root_xml.get("failures") == "0"
    outcome = next(root_xml.iter("testcase")).find("system-out")
    assert outcome is not None and outcome.text is not None
    assert outcome.text.startswith(f"{SHIPS}; rule in force: pairwise-max-spread, amended from global-max-spread ")
    assert f"({said}; cites pairwise-max-spread registered for {cited}" in outcome.text
    skipped = next(root_xml.iter("skipped"))
    assert skipped.get("message") == ("VOICE FAIL under pairwise-max-spread: delta_cb +0.210 vs floor 0.251 "
                                      "(ratio 0.84x) (not shipped: the gate ships ckpt475 under pairwise-max-spread)")
    props = properties(root_xml)
    assert (props["rule"], props["registered_rule"], props["ships"], props["amended_from"]) == (
        "pairwise-max-spread", "global-max-spread", "ckpt475", "global-max-spread")
    assert props["amendment"] == ("post-hoc correction" if post_hoc else "prospective")
    assert props["shown, not deciding: ckpt475 voice under global-max-spread"].startswith("VOICE FAIL under global")

    # the report: its header, the pick's card, the amendment's heading and "What changed" say it too
    assert run_cli("report", GATE, cwd=root).code == 0
    words = " ".join(re.sub(r"<[^>]+>", " ", (root / "runs" / GATE / "report.html").read_text(encoding="utf-8"))
                     .split())
    header = ("deciding rule pairwise-max-spread (as amended; originally scored under global-max-spread) · "
              "a POST-HOC correction , not a pre-registered rule")
    assert (header in words, "recommended under a post-hoc rule" in words) == (post_hoc, post_hoc)
    heading = re.search(r"Amendment 1 · \S+ · global-max-spread → pairwise-max-spread · ([^·]+?) Reason:", words)
    assert heading is not None and heading.group(1) == ("POST-HOC correction" if post_hoc else "prospective")
    changed = (f"a POST-HOC correction: pairwise-max-spread registered for lv-dummy (commit {commit[:12]}), 1 "
               "commit(s) after this gate's numbers; the verdicts under global-max-spread are not withdrawn, "
               "they stay the pre-registered ones" if post_hoc else
               f"prospective: pairwise-max-spread registered for lv-hemingway (commit {commit[:12]}), before "
               "this gate's numbers")
    assert changed in words.replace("&#39;", "'")


def test_the_demo_ends_with_one_answer_on_every_surface(tmp_path: Path) -> None:
    """The issue's first scenario: the demo's post-hoc amendment, then `score --strict -q` said ckpt475 ships
    under pairwise and exited 1 "no candidate ships under global-max-spread"."""
    ws = tmp_path / "demo"
    done = voicegate(tmp_path, "demo", str(ws))
    assert done.returncode == 0, done.stderr[-2000:]
    quiet = run_cli("score", "lv-marlowe", "--strict", "-q", cwd=ws)
    assert quiet.code == 0, quiet.stderr
    assert quiet.stdout == ("lv-marlowe: ships: ckpt475 (VOICE PASS 7.0x under pairwise-max-spread, NOT-COPIED, "
                            "NO-DAMAGE); rule in force by amendment from global-max-spread, a POST-HOC correction; "
                            f"error rates: {RANGE_RATES}\n")
    report = tmp_path / "demo.xml"
    as_json = run_cli("score", "lv-marlowe", "--strict", "--json", "--dry-run", "--junit", report, cwd=ws)
    assert as_json.code == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    assert (doc["rule"], doc["ships"], doc["registered_rule"], doc["amendment"]["post_hoc"]) == (
        "pairwise-max-spread", "ckpt475", "global-max-spread", True)
    root = junit(report)
    assert root.get("failures") == "0" and properties(root)["amendment"] == "post-hoc correction"
    assert properties(root)["rule"] == "pairwise-max-spread" and properties(root)["ships"] == "ckpt475"
    # counts that are true: the demo's gate computes three rules, and its plot's title says so
    page = (ws / "runs" / "lv-marlowe" / "report.html").read_text(encoding="utf-8")
    rules = json.loads(run_cli("score", "lv-marlowe", "--json", "--dry-run", cwd=ws).stdout)["arms"][1]["floors"]
    assert len(rules) > 2  # the demo, registered today, computes more than the two seeds' rules
    assert f"<title>delta_cb per candidate with all {len(rules)} floors</title>" in page
    assert "with both floors<" not in page
    # verify --junit: the record's case says its amendment is a post-hoc correction
    checked = tmp_path / "verify.xml"
    assert run_cli("verify", "lv-marlowe", "--junit", checked, cwd=ws).code == 0
    record = next(c for c in junit(checked).iter("testcase") if c.get("name") == "record: gates/lv-marlowe.md")
    said = record.find("system-out")
    assert said is not None and (said.text or "").startswith(
        "entry 4 is a POST-HOC correction: it cites lv-marlowe-v2's registration of pairwise-max-spread")


# -- JUnit messages and hostile strings ----------------------------------------------------------------------


def _state(result: object) -> object:
    from voicegate.gate import GateState

    return GateState(result=result, registered=result)  # type: ignore[arg-type]


def _with_specificity(axis: object, authors: tuple[str, ...], rule: str = "r") -> object:
    from voicegate.scoring._result import CandidateResult, Control, GateResult, Impostors

    cand = CandidateResult(name="lv-dickens", role="candidate", model="m", distances={}, mean_distance=None,
                           spread=None, delta_cb=0.3, floors={rule: 0.1}, voice={rule: "PASS"}, ratios={rule: 3.0},
                           copying="NOT-COPIED", damage="NO-DAMAGE", specificity=axis)  # type: ignore[arg-type]
    return GateResult(gate="lv-dickens", rule=rule, ships=None, control=Control(arm="base", overlap=0.0),
                      arms=(cand,), impostors=Impostors(author="Charles Dickens", mode="decides", authors=authors))


def test_a_specificity_message_pairs_the_margin_and_floor_of_the_same_impostor() -> None:
    """The issue's case: Eliot is the nearest impostor (+0.105), Thackeray decides (+0.150 vs his 0.178)."""
    from voicegate.cli._machine import score_cases, score_properties
    from voicegate.scoring._result import Specificity

    axis = Specificity(decides=True, verdict={"r": "INCONCLUSIVE", "s": "SPECIFIC"}, margin=0.105,
                       nearest="George Eliot", binding={"r": "Thackeray", "s": "George Eliot"},
                       floors={"r": 0.178, "s": 0.05},
                       margins={"George Eliot": 0.105, "Thackeray": 0.150},
                       impostor_floors={"George Eliot": {"r": 0.090, "s": 0.05}, "Thackeray": {"r": 0.178, "s": 0.2}})
    state = _state(_with_specificity(axis, ("George Eliot", "Thackeray")))
    (spec,) = [c for c in score_cases(state) if c.name.startswith("specificity")]  # type: ignore[arg-type]
    assert (spec.name, spec.outcome, spec.message) == (
        "specificity under r", "skipped", "INCONCLUSIVE under r: margin +0.150 over Thackeray vs floor 0.178")
    assert score_properties(state)["shown, not deciding: lv-dickens specificity under s"] == (  # type: ignore[arg-type]
        "SPECIFIC under s: margin +0.105 over George Eliot vs floor 0.050")


HOSTILE = "Ann\uffffe \ufffe]]><x>&\x01\x1b\x7f"


def test_hostile_names_and_paths_give_valid_junit_and_json(tmp_path: Path) -> None:
    from voicegate.cli._machine import document_bytes, junit_xml, score_junit, verify_cases
    from voicegate.scoring._result import Specificity

    axis = Specificity(decides=True, verdict={"r": "NOT-SPECIFIC"}, margin=-0.3, nearest=HOSTILE,
                       binding={"r": HOSTILE}, floors={"r": 0.1}, margins={HOSTILE: -0.3},
                       impostor_floors={HOSTILE: {"r": 0.1}})
    text = score_junit(_state(_with_specificity(axis, (HOSTILE,))))  # type: ignore[arg-type]
    path = tmp_path / "hostile.xml"
    path.write_text(text, encoding="utf-8")
    root = junit(path)
    failure = next(c for c in root.iter("testcase") if c.get("name") == "specificity under r").find("failure")
    assert failure is not None and failure.get("message") == (
        "NOT-SPECIFIC under r: margin -0.300 over Ann\\uffffe \\ufffe]]><x>&\\u0001\\u001b\x7f vs floor 0.100")
    # four in the name, each in the message and in the failure text
    assert properties(root)["escaped"] == "8 character(s) XML cannot carry are written as \\xNN or \\uNNNN"
    # a path holding a byte that is not UTF-8, and a control character: as verify --junit names its files
    odd = os.fsdecode(b"ws\xff\x02/gates/lv-x.md")
    files = [{"gates": ["lv-x"], "kind": "record", "path": odd, "ok": False, "problem": "gone", "lines": [],
              "exists": True}]
    path.write_text(junit_xml("voicegate verify", verify_cases(files), {"workspace": odd}), encoding="utf-8")
    assert properties(junit(path))["workspace"] == "ws\\xff\\u0002/gates/lv-x.md"
    # the same strings in a --json document: valid UTF-8 JSON, the odd byte escaped, not dropped
    data = document_bytes({"path": odd, "name": HOSTILE})
    assert json.loads(data.decode("utf-8")) == {"path": odd, "name": HOSTILE}


def test_json_on_a_workspace_path_that_is_not_utf8_is_one_document(tmp_path: Path) -> None:
    root = tmp_path / os.fsdecode(b"ws\xff")
    root.mkdir()
    for encoding in ({}, {"PYTHONIOENCODING": "utf-8"}):
        done = voicegate(tmp_path, "verify", "--json", "-C", str(root), env=encoding)
        assert done.returncode == 2, done.stderr
        doc = json.loads(done.stdout)
        assert doc["exit"] == 2 and doc["error"].endswith("is not a voicegate workspace (no preregistrations/); "
                                                          "run `verify` in one or give -C DIR")
        assert doc["error"].startswith(str(tmp_path) + "/ws\udcff ")


def test_calibrate_with_a_negative_seed_is_an_error_document() -> None:
    done = run_cli("calibrate", "lv-x", "--seeds", "2", "--seed", "-1", "--json")
    assert done.code == 2
    assert json.loads(done.stdout) == {"error": "Invalid value for '--seed': Input should be greater than or "
                                                "equal to 0", "exit": 2}


def test_the_table_says_nearer_only_for_not_specific(capsys: pytest.CaptureFixture[str]) -> None:
    """A margin below zero but within its floor is INCONCLUSIVE: the table names the impostor, not "nearer"."""
    from voicegate.report._table import make_console, print_score
    from voicegate.scoring._specificity import specificity

    base = {1: 0.500, 2: 0.500, 3: 0.500}
    toward_dickens = {"base": base, "lv-dickens": {1: 0.479, 2: 0.479, 3: 0.479}}  # delta_cb +0.021
    # delta toward Eliot +0.025 (margin -0.004), its by-seed difference spread 0.113: within noise
    toward_eliot = {"base": base, "lv-dickens": {1: 0.475 - 0.0565, 2: 0.475, 3: 0.475 + 0.0565}}
    axis = specificity(toward_dickens, {"George Eliot": toward_eliot}, "base", "lv-dickens",
                       author="Charles Dickens", decides=True, rule=PAIRWISE, rules=(PAIRWISE,))
    assert axis.under(PAIRWISE) == "INCONCLUSIVE" and axis.margin is not None and axis.margin < 0
    print_score(_with_specificity(axis, ("George Eliot",), PAIRWISE), make_console())  # type: ignore[arg-type]
    table = capsys.readouterr().out
    assert "George Eliot (-0.004)" in table and "nearer George Eliot" not in table


def test_a_gate_with_impostors_says_the_same_words_on_every_surface(tmp_path: Path) -> None:
    """Two impostors; the mimic writes like the first. The table, the quiet line, --json and --junit agree on
    what ships and on each candidate's specificity, and JUnit pairs each margin with its own impostor's floor."""
    from helpers.workspace import GATE as TEST_GATE
    from helpers.workspace import N_PROMPTS, SEEDS, impostor_spec, impostor_workspace, text

    root = impostor_workspace(tmp_path / "ws", impostor_spec({"Impostor One": ["corpora/imp/*.txt"],
                                                              "Impostor Two": ["corpora/imp2/*.txt"]}))
    style = {"base": None, "cand": 0, "mimic": 1}
    rows = [{"arm": arm, "seed": s, "prompt_id": str(p), "text": text(160, f"{arm}/{s}/{p}", st)}
            for arm, st in style.items() for s in SEEDS for p in range(N_PROMPTS)]
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for args in (("register", TEST_GATE), ("import", TEST_GATE, source)):
        done = run_cli(*args, cwd=root)
        assert done.code == 0, done.stderr
    report = tmp_path / "imp.xml"
    as_json = run_cli("score", TEST_GATE, "--json", "--dry-run", "--junit", report, cwd=root)
    assert as_json.code == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    rule, ships = doc["rule"], doc["ships"]
    axes = {a["name"]: a["specificity"] for a in doc["arms"] if a["role"] == "candidate"}
    assert ships == "cand" and axes["cand"]["verdict"][rule] == "SPECIFIC"
    assert axes["mimic"]["verdict"][rule] == "NOT-SPECIFIC"

    quiet = run_cli("score", TEST_GATE, "-q", "--dry-run", "--strict", cwd=root)
    assert quiet.code == 0 and quiet.stdout.startswith(f"{TEST_GATE}: ships: cand (VOICE PASS ")
    assert quiet.stdout.rstrip().endswith(f", SPECIFIC); error rates: {RANGE_RATES}")
    table = run_cli("score", TEST_GATE, "--dry-run", cwd=root, env={"COLUMNS": "200"}).stdout
    assert "ships: cand (VOICE PASS" in table and "nearer Impostor One" in table

    root_xml = junit(report)
    assert root_xml.get("failures") == "0"
    outcomes = {(c, n): o for c, n, o in cases(root_xml)}
    assert outcomes[(f"voicegate.{TEST_GATE}.cand", f"specificity under {rule}")] == "passed"
    assert outcomes[(f"voicegate.{TEST_GATE}.mimic", f"specificity under {rule}")] == "skipped"
    for arm, axis in axes.items():
        who = axis["binding"][rule]
        said = (f"{axis['verdict'][rule]} under {rule}: margin {axis['margins'][who]:+.3f} over {who} vs floor "
                f"{axis['impostor_floors'][who][rule]:.3f}")
        case = next(c for c in root_xml.iter("testcase") if c.get("classname") == f"voicegate.{TEST_GATE}.{arm}"
                    and c.get("name") == f"specificity under {rule}")
        child = case.find("skipped") if arm == "mimic" else case.find("system-out")
        assert child is not None
        text_said = child.get("message") if arm == "mimic" else child.text
        assert (text_said or "").startswith(said), (arm, text_said, said)
    # the specificity under every other rule is a property, its numbers its own impostor's too
    props = properties(root_xml)
    for arm, axis in axes.items():
        for other in axis["verdict"]:
            if other != rule:
                who = axis["binding"][other]
                assert props[f"shown, not deciding: {arm} specificity under {other}"] == (
                    f"{axis['verdict'][other]} under {other}: margin {axis['margins'][who]:+.3f} over {who} vs floor "
                    f"{axis['impostor_floors'][who][other]:.3f}")
