"""The specificity axis: the pure core on constructed distances, the spec's refusals, and a
constructed workspace scored end to end (table, JSON, the three artifacts, the ship pick).

The real-text proof is tests/scoring/test_specificity_voices.py (the trained tiny voices); these are the
exact numbers and the refusals.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import workspace
from helpers.workspace import GATE, SEEDS, text
from helpers.workspace import IMPOSTOR_CORPORA as CORPORA
from helpers.workspace import N_PROMPTS as PROMPTS
from helpers.workspace import impostor_spec as _spec
from helpers.workspace import impostor_workspace as _workspace

from voicegate.scoring._result import Specific
from voicegate.scoring._specificity import specificity
from voicegate.scoring._verdicts import decide
from voicegate.spec._registration import register
from voicegate.spec._rules import RULES
from voicegate.spec._spec import load_spec

PAIRWISE, GLOBAL, WELCH = "pairwise-max-spread", "global-max-spread", "welch-t"
MIN_EFFECT = "welch-t-min-effect"
TWO = (PAIRWISE, GLOBAL)  # the seeds' two rules: the constructed cases below are worked under them


# -- the pure core -----------------------------------------------------------------------------


GATE_D = {"base": {1: 1.00, 2: 1.00, 3: 1.00}, "cand": {1: 0.75, 2: 0.80, 3: 0.85}}   # delta_cb +0.20
TOWARD_A = {"base": {1: 1.00, 2: 1.00, 3: 1.00}, "cand": {1: 0.95, 2: 0.95, 3: 0.95}}  # delta +0.05
TOWARD_B = {"base": {1: 1.00, 2: 1.00, 3: 1.00}, "cand": {1: 0.85, 2: 0.85, 3: 0.85}}  # delta +0.15


def test_margin_is_delta_cb_minus_the_largest_impostor_delta_and_each_has_its_own_floor():
    axis = specificity(GATE_D, {"A": TOWARD_A}, "base", "cand", author="Gate", decides=True, rule=PAIRWISE,
                       rules=TWO)
    # r_A(cand) = d_gate - d_A = -0.20, -0.15, -0.10: spread 0.10; r_A(base) = 0: spread 0
    assert axis.deltas == {"Gate": 0.2, "A": 0.05}
    assert axis.margin == 0.15 and axis.nearest == "A" and axis.margins == {"A": 0.15}
    assert axis.floors == {PAIRWISE: 0.1, GLOBAL: 0.1} and axis.ratios == {PAIRWISE: 1.5, GLOBAL: 1.5}
    assert axis.verdict == {PAIRWISE: Specific.SPECIFIC, GLOBAL: Specific.SPECIFIC} and not axis.disagree

    both = specificity(GATE_D, {"A": TOWARD_A, "B": TOWARD_B}, "base", "cand", author="Gate", decides=True,
                       rule=PAIRWISE, rules=TWO)
    # against B the margin is +0.05, under its floor 0.10: not SPECIFIC, but no evidence of nearer B either
    assert both.margin == 0.05 and both.nearest == "B" and both.binding == {PAIRWISE: "B", GLOBAL: "B"}
    assert both.margins == {"A": 0.15, "B": 0.05} and both.floors[PAIRWISE] == 0.1
    assert both.impostor_floors == {"A": {GLOBAL: 0.1, PAIRWISE: 0.1}, "B": {GLOBAL: 0.1, PAIRWISE: 0.1}}
    assert both.verdict[PAIRWISE] == both.verdict[GLOBAL] == Specific.INCONCLUSIVE
    assert both.nearer(PAIRWISE) == []


def test_not_specific_needs_a_margin_below_minus_its_floor_and_names_who_it_is_nearer():
    # toward C the candidate moved +0.35 (more than its +0.20 toward the gate author): margin -0.15 vs floor 0.10
    toward_c = {"base": {1: 1.00, 2: 1.00, 3: 1.00}, "cand": {1: 0.65, 2: 0.65, 3: 0.65}}
    axis = specificity(GATE_D, {"A": TOWARD_A, "C": toward_c}, "base", "cand", author="Gate", decides=True,
                       rule=PAIRWISE, rules=TWO)
    assert axis.margins == {"A": 0.15, "C": -0.15} and axis.verdict[PAIRWISE] == Specific.NOT_SPECIFIC
    assert axis.nearer(PAIRWISE) == ["C"]
    # the same margin within a wider floor is INCONCLUSIVE, and "nearer" is said nowhere
    c_far = {"base": {1: 1.00, 2: 1.00, 3: 1.00}, "cand": {1: 0.45, 2: 0.70, 3: 0.77}}  # delta +0.36, r spread 0.22
    wide = specificity(GATE_D, {"C": c_far}, "base", "cand", author="Gate", decides=True, rule=PAIRWISE, rules=TWO)
    assert wide.margins["C"] < 0 and wide.floors[PAIRWISE] > -wide.margins["C"]
    assert wide.verdict[PAIRWISE] == Specific.INCONCLUSIVE and wide.nearer(PAIRWISE) == []


def test_both_rules_are_computed_and_disagree_is_flagged():
    # a third arm whose own (author - impostor) spread is 0.30: the global floor is 0.30 for everyone
    gate = {**GATE_D, "wild": {1: 0.60, 2: 0.90, 3: 0.75}}
    toward = {**TOWARD_A, "wild": {1: 1.0, 2: 1.0, 3: 1.0}}
    axis = specificity(gate, {"A": toward}, "base", "cand", author="Gate", decides=True, rule=PAIRWISE, rules=TWO)
    assert axis.floors == {PAIRWISE: 0.1, GLOBAL: 0.3}
    assert axis.verdict == {PAIRWISE: Specific.SPECIFIC, GLOBAL: Specific.INCONCLUSIVE} and axis.disagree
    every = specificity(gate, {"A": toward}, "base", "cand", author="Gate", decides=True, rule=PAIRWISE)
    assert set(every.verdict) == {r for r, f in RULES.items() if not f.by_choice}  # None: every rule computed unasked


def test_where_specificity_decides_a_not_specific_candidate_cannot_ship():
    both = {"A": TOWARD_A, "B": TOWARD_B}
    ok = {"cand": "NOT-COPIED"}, {"cand": "NO-DAMAGE"}
    for decides, ships in ((True, None), (False, "cand")):
        axis = {"cand": specificity(GATE_D, both, "base", "cand", author="Gate", decides=decides, rule=PAIRWISE,
                                    rules=TWO)}
        assert axis["cand"].under(PAIRWISE) == Specific.INCONCLUSIVE  # only SPECIFIC ships where it decides
        d = decide(GATE_D, "base", ["cand"], rule=PAIRWISE, copying=ok[0], damage=ok[1], specificity=axis)
        assert d.candidates[0].voice_decides == "PASS"      # the voice axis itself is unchanged
        assert d.ships == ships, decides
    assert decide(GATE_D, "base", ["cand"], rule=PAIRWISE, copying=ok[0], damage=ok[1]).ships == "cand"


# -- a constructed workspace --------------------------------------------------------------------
# Three word "styles" (`_workspace.text`): the gate author writes style 0, the impostor style 1,
# the background style 2. "cand" writes like the author; "mimic" writes like the impostor. The spec
# and corpora are `_workspace.impostor_spec` and `IMPOSTOR_CORPORA`.


def _rows() -> list[dict[str, Any]]:
    style = {"base": None, "cand": 0, "mimic": 1}
    return [{"arm": arm, "seed": s, "prompt_id": str(p), "text": text(160, f"{arm}/{s}/{p}", st)}
            for arm, st in style.items() for s in SEEDS for p in range(PROMPTS)]


def _imported(root: Path) -> None:
    source = root / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in _rows()), encoding="utf-8")
    for args in (("register", GATE), ("import", GATE, str(source))):
        code, _, err = workspace.run_cli(*args, "-C", root)
        assert code == 0, err


def _arm(result: dict[str, Any], name: str) -> dict[str, Any]:
    return next(a for a in result["arms"] if a["name"] == name)


@pytest.fixture
def scored(tmp_path: Path) -> Path:
    root = _workspace(tmp_path / "ws", _spec({"Impostor One": ["corpora/imp/*.txt"]}))
    _imported(root)
    return root


def test_scored_end_to_end_the_mimic_is_not_specific_and_never_ships(scored: Path):
    code, out, err = workspace.run_cli("score", GATE, "--json", "--dry-run", "-C", scored)
    assert code == 0, err
    result = json.loads(out)
    cand, mimic = _arm(result, "cand")["specificity"], _arm(result, "mimic")["specificity"]
    # registered today: every rule is in force; at 3 seeds the t floors cannot tell the margin from noise
    assert set(cand["verdict"]) == set(workspace.rules_of_gate(scored, GATE))
    assert {r: cand["verdict"][r] for r in (GLOBAL, PAIRWISE, WELCH, MIN_EFFECT)} == {
        GLOBAL: "SPECIFIC", PAIRWISE: "SPECIFIC", WELCH: "INCONCLUSIVE", MIN_EFFECT: "INCONCLUSIVE"}
    assert cand["margin"] > 0
    assert mimic["verdict"][PAIRWISE] == "NOT-SPECIFIC" and mimic["nearest"] == "Impostor One"
    assert mimic["deltas"]["Impostor One"] > mimic["deltas"]["Test Author"]
    assert result["ships"] != "mimic"
    assert result["impostors"] == {"author": "Test Author", "mode": "decides", "authors": ["Impostor One"],
                                   "ruler_auc": result["impostors"]["ruler_auc"]}
    assert result["signature"]["specificity"] == "impostors,decides,margin-floor-per-impostor@1"
    assert "spec-axis:impostors,decides" in result["signature_text"]


def test_scored_the_three_artifacts_carry_specificity_and_compose_stays_the_same_yaml(scored: Path):
    compose = scored / "deploy" / "compose.yaml"
    before = compose.read_bytes()
    code, out, err = workspace.run_cli("score", GATE, "-C", scored)
    assert code == 0, err
    assert "lv-test: author specificity" in out and "delta toward each author's text" in out
    record = (scored / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    assert "**Author specificity (decides: only a SPECIFIC candidate ships; score entry format 2).**" in record
    assert "| candidate | Test Author * | Impostor One |" in record
    assert "- mimic: VOICE" in record and "NOT-SPECIFIC, deciding (pairwise-max-spread: margin -" in record
    readme = (scored / "adapters" / "lv-test" / "README.md").read_text(encoding="utf-8")
    assert "NOT-SPECIFIC, deciding" in readme and "· SPECIFIC, deciding" in readme
    after = compose.read_bytes()
    lines = [ln for ln in after.decode().splitlines() if "specificity (" in ln]
    assert len(lines) == 1 and "mimic NOT-SPECIFIC (nearer Impostor One)" in lines[0] and "cand SPECIFIC" in lines[0]
    assert yaml.safe_load(after) == yaml.safe_load(before) and after.startswith(before[:10])
    assert workspace.run_cli("verify", GATE, "-C", scored).code == 0


def test_reported_specificity_is_shown_but_does_not_decide(tmp_path: Path):
    root = _workspace(tmp_path / "ws", _spec({"Impostor One": ["corpora/imp/*.txt"]}, "reported"))
    _imported(root)
    code, out, err = workspace.run_cli("score", GATE, "--json", "--dry-run", "-C", root)
    assert code == 0, err
    result = json.loads(out)
    mimic = _arm(result, "mimic")
    assert mimic["specificity"]["decides"] is False and result["impostors"]["mode"] == "reported"
    code, out, err = workspace.run_cli("score", GATE, "--dry-run", "-C", root)
    assert "specificity: reported, not deciding; impostors: Impostor One" in out


def test_without_impostors_specificity_reads_not_checked_and_nothing_else_changes(tmp_path: Path):
    root = _workspace(tmp_path / "ws", _spec(None))
    _imported(root)
    code, out, err = workspace.run_cli("score", GATE, "--json", "--dry-run", "-C", root)
    assert code == 0, err
    result = json.loads(out)
    assert "impostors" not in result and "specificity" not in result["signature"]
    assert all("specificity" not in a for a in result["arms"])
    code, out, err = workspace.run_cli("score", GATE, "--dry-run", "-C", root)
    assert "specificity: not checked (no impostors registered" in out


def test_the_narrow_table_keeps_every_verdict_whole(scored: Path):
    code, out, err = workspace.run_cli("score", GATE, "--dry-run", "-C", scored, env={"COLUMNS": "80"})
    assert code == 0, err
    section = out[out.index("author specificity"):out.index("copying (control")]
    assert "…" not in section
    verdicts = re.findall(r"^    (global|pairwise \*): (SPECIFIC|NOT-SPECIFIC) \(deciding impostor", section,
                          re.MULTILINE)
    assert verdicts == [("global", "SPECIFIC"), ("pairwise *", "SPECIFIC"),
                        ("global", "NOT-SPECIFIC"), ("pairwise *", "NOT-SPECIFIC")]


# -- refusals at register ---------------------------------------------------------------------------


@pytest.mark.parametrize("impostors, message", [
    ({"test author": ["corpora/imp/*.txt"]}, "'test author' is the gate author ('Test Author')"),
    ({"Someone": ["corpora/held/*.txt"]}, "corpora/held/held.txt is the gate author's held-out text"),
    ({"Someone": ["corpora/train/*.txt"]}, "corpora/train/train.txt is a training file"),
    ({"Someone": []}, "an empty impostor group"),
    ({"Someone": ["corpora/nowhere/*.txt"]},
     "corpora.impostors.Someone[0] glob 'corpora/nowhere/*.txt' matches no file"),
    ({"One": ["corpora/imp/*.txt"], "Two": ["corpora/imp/imp.txt"]}, "is also listed under 'One'"),
    ({"One": ["corpora/imp/*.txt"], "one ": ["corpora/imp2/*.txt"]}, "name the same author"),
])
def test_bad_impostors_are_refused_at_register_with_one_line_and_nothing_written(tmp_path: Path, impostors, message):
    root = _workspace(tmp_path / "ws", _spec(impostors))
    before = workspace.tree_snapshot(root)
    head = workspace.git(root, "rev-parse", "HEAD")
    code, _, err = workspace.run_cli("register", GATE, "-C", root)
    assert code == 2 and message in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert workspace.tree_snapshot(root) == before and workspace.git(root, "rev-parse", "HEAD") == head


def test_a_copy_of_the_held_out_text_under_another_name_is_refused(tmp_path: Path):
    root = _workspace(tmp_path / "ws", _spec({"Someone": ["corpora/copy/*.txt"]}))
    (root / "corpora" / "copy").mkdir()
    (root / "corpora" / "copy" / "renamed.txt").write_text(CORPORA["corpora/held/held.txt"], encoding="utf-8")
    code, _, err = workspace.run_cli("register", GATE, "-C", root)
    assert code == 2 and "is the gate author's held-out text (corpora/held/held.txt)" in err


def test_impostor_files_are_pinned_like_every_corpus(tmp_path: Path):
    root = _workspace(tmp_path / "ws", _spec({"Impostor One": ["corpora/imp/*.txt"]}))
    spec = load_spec(root, GATE)
    reg = register(spec)
    assert "corpora/imp/imp.txt" in reg.data["files"]
    (root / "corpora" / "imp" / "imp.txt").write_text("changed " * 200, encoding="utf-8")
    code, _, err = workspace.run_cli("score", GATE, "--dry-run", "-C", root)
    assert code == 2 and "registered file changed since registration: corpora/imp/imp.txt" in err


def test_an_impostor_the_ruler_cannot_tell_from_the_gate_author_is_warned_about(tmp_path: Path):
    # the impostor writes in the gate author's own style: her ruler cannot tell the two texts apart
    corpora = {**CORPORA, "corpora/twin/twin.txt": text(3000, "twin", 0)}
    root = tmp_path / "ws"
    workspace.make_workspace(root, _spec({"Twin": ["corpora/twin/*.txt"], "Impostor One": ["corpora/imp/*.txt"]}),
                             corpora=corpora)
    workspace.git(root, "add", "-A")
    workspace.git(root, "commit", "-q", "-m", "workspace")
    _imported(root)
    code, out, err = workspace.run_cli("score", GATE, "--json", "--dry-run", "-C", root)
    assert code == 0, err
    result = json.loads(out)
    aucs = result["impostors"]["ruler_auc"]
    assert aucs["Twin"] < 0.8 <= aucs["Impostor One"]
    warned = [w for w in result["warnings"] if "cannot tell" in w]
    assert len(warned) == 1 and "'Twin'" in warned[0] and "Test Author" in warned[0]


def test_an_amendment_re_decides_specificity_under_the_new_rule_and_says_so_everywhere(tmp_path: Path):
    spec = _spec({"Impostor One": ["corpora/imp/*.txt"]})
    spec["floor"] = {"rule": GLOBAL}
    root = _workspace(tmp_path / "ws", spec)
    _imported(root)
    assert workspace.run_cli("score", GATE, "-C", root).code == 0
    workspace.register_prospective(root)   # pairwise, registered for an un-run gate after these numbers
    code, out, err = workspace.run_cli("amend", GATE, "--rule", PAIRWISE, "--post-hoc", "--reason",
                                       "pairwise registered for another gate",
                                       "-C", root)
    assert code == 0, err
    assert "mimic: VOICE" in out and "· NOT-SPECIFIC" in out
    record = (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    amendment = record.split("## Amendment")[1]
    assert "- mimic: specificity stays NOT-SPECIFIC under pairwise-max-spread (margins unchanged)." in amendment
    readme = (root / "adapters" / "lv-test" / "README.md").read_text(encoding="utf-8")
    assert "still NOT-SPECIFIC" in readme.split("voicegate amendment")[1]
    compose = (root / "deploy" / "compose.yaml").read_text(encoding="utf-8")
    assert "still NOT-SPECIFIC" in compose.split("AMENDED")[1]
    assert workspace.run_cli("verify", GATE, "-C", root).code == 0
