"""RULER-WEAK: the gate knows when its ruler is blind (`ruler-weak@1`, in force for gates registered since
2026-12-07).

The pool check (`_ruler.pool_check`) measures what a verdict needs at a verdict's pool length: is the author's
other writing (the training text) nearer the held-out text than strangers' (the background), and than each
impostor's? Under 0.8 VOICE (or specificity, naming the impostor) is RULER-WEAK: an abstention that never ships.
A gate registered before the check re-scores exactly as it did (lv-bronte's golden bytes are the other proof).

The constructed corpora (`_workspace.text`): the gate author writes style 0, the impostor style 1, the
background style 2; each text here is 40,000 words, four pools of 10,000.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import workspace
from helpers.workspace import GATE

from voicegate.scoring._result import Specific, Voice
from voicegate.scoring._specificity import specificity
from voicegate.scoring._verdicts import decide
from voicegate.spec import RULES

PAIRWISE, GLOBAL, WELCH = "pairwise-max-spread", "global-max-spread", "welch-t"
BEFORE = "1796169600"   # 2026-12-02
SINCE = "1796601600"    # 2026-12-07
WORDS = 40_000


# -- the pure core -----------------------------------------------------------------------------

GATE_D = {"base": {1: 1.00, 2: 1.00, 3: 1.00}, "cand": {1: 0.75, 2: 0.80, 3: 0.85}}   # delta_cb +0.20
TOWARD_A = {"base": {1: 1.00, 2: 1.00, 3: 1.00}, "cand": {1: 0.95, 2: 0.95, 3: 0.95}}  # delta +0.05
OK = {"cand": "NOT-COPIED"}, {"cand": "NO-DAMAGE"}


def test_a_weak_ruler_turns_every_voice_verdict_into_ruler_weak_which_never_ships() -> None:
    seen = decide(GATE_D, "base", ["cand"], rule=PAIRWISE, copying=OK[0], damage=OK[1])
    assert seen.candidates[0].voice_decides == Voice.PASS and seen.ships == "cand"
    blind = decide(GATE_D, "base", ["cand"], rule=PAIRWISE, copying=OK[0], damage=OK[1], ruler_weak=True)
    c = blind.candidates[0]
    assert c.voice == dict.fromkeys((r for r in RULES if not RULES[r].by_choice), Voice.RULER_WEAK)  # every rule
    assert blind.ships is None and not c.disagree
    assert (c.delta_cb, c.floors, c.ratios) == (seen.candidates[0].delta_cb, seen.candidates[0].floors,
                                                seen.candidates[0].ratios)   # the numbers are still shown


def test_an_impostor_the_ruler_cannot_tell_from_the_author_is_named_and_blocks_specific() -> None:
    axis = specificity(GATE_D, {"A": TOWARD_A}, "base", "cand", author="Gate", decides=True, rule=PAIRWISE)
    assert axis.verdict[PAIRWISE] == Specific.SPECIFIC and axis.weak == ()
    blind = specificity(GATE_D, {"A": TOWARD_A}, "base", "cand", author="Gate", decides=True, rule=PAIRWISE,
                        weak=("A",))
    assert set(blind.verdict.values()) == {Specific.RULER_WEAK} and blind.weak == ("A",)
    assert blind.to_json()["ruler_weak"] == ["A"] and "ruler_weak" not in axis.to_json()
    assert blind.margins == axis.margins
    d = decide(GATE_D, "base", ["cand"], rule=PAIRWISE, copying=OK[0], damage=OK[1], specificity={"cand": blind})
    assert d.candidates[0].voice_decides == Voice.PASS and d.ships is None


# -- end to end --------------------------------------------------------------------------------


def _scored(root: Path, **kw: Any) -> tuple[dict[str, Any], str]:
    return workspace.ruler_scored(root, **kw)


def _arm(result: dict[str, Any], name: str) -> dict[str, Any]:
    return next(a for a in result["arms"] if a["name"] == name)


def test_an_author_whose_own_texts_are_not_nearer_than_the_background_is_ruler_weak(tmp_path: Path) -> None:
    # The author's second text reads like another writer (style 1), and half the background is written like the
    # held-out text (style 0: the author's own writing filed as background): her own other writing is no nearer
    # H than strangers' is, so a move toward H is no evidence that a voice learned her.
    result, _ = _scored(tmp_path / "ws", training_style=1, impostors=None, day=SINCE, background=(0, 2))
    pool = result["ruler"]["stylometric"]["pool"]
    assert pool["weak_author"] is True and pool["author_auc"] == 0.5 and pool["threshold"] == 0.8
    assert pool["training_pools"] == 4 and pool["background_pools"] == 8 and pool["words"] == 10_000
    cand = _arm(result, "cand")
    assert set(cand["voice"].values()) == {"RULER-WEAK"} and cand["delta_cb"] > 0
    assert result["ships"] is None
    assert any(w.startswith("the ruler cannot tell Test Author's other writing from strangers' at a pool's length")
               for w in result["warnings"])
    root = tmp_path / "ws"
    record = (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    assert "- cand: VOICE RULER-WEAK (pairwise-max-spread: +" in record
    assert "- cand: VOICE RULER-WEAK (" in (root / "adapters" / "lv-test" / "README.md").read_text(encoding="utf-8")
    assert workspace.run_cli("report", GATE, "-C", root).code == 0
    assert "VOICE is RULER-WEAK, an abstention" in (root / "runs" / GATE / "report.html").read_text(encoding="utf-8")
    junit = tmp_path / "junit.xml"
    assert workspace.run_cli("score", GATE, "--dry-run", "-q", "--junit", junit, "-C", root).code == 0
    case = junit.read_text(encoding="utf-8").split(f'name="voice under {PAIRWISE}"')[1].split("</testcase>")[0]
    assert "<skipped" in case and "RULER-WEAK" in case   # an abstention: neither passed nor failed


def test_the_author_told_from_strangers_is_decided_as_before(tmp_path: Path) -> None:
    result, _ = _scored(tmp_path / "ws", training_style=0, impostors=None, day=SINCE)
    pool = result["ruler"]["stylometric"]["pool"]
    assert pool["author_auc"] == 1.0 and pool["weak_author"] is False
    assert _arm(result, "cand")["voice"][PAIRWISE] == "PASS" and result["ships"] == "cand"


def test_an_impostor_that_writes_like_the_author_is_named_and_nothing_is_specific(tmp_path: Path) -> None:
    result, _ = _scored(tmp_path / "ws", training_style=0, day=SINCE,
                        impostors={"Twin": ["corpora/twin/*.txt"], "Impostor One": ["corpora/imp/*.txt"]})
    pool = result["ruler"]["stylometric"]["pool"]
    assert pool["weak_impostors"] == ["Twin"] and pool["impostor_auc"]["Impostor One"] == 1.0
    assert pool["impostor_auc"]["Twin"] < 0.8 and pool["weak_author"] is False
    for name in ("cand", "mimic"):
        axis = _arm(result, name)["specificity"]
        assert set(axis["verdict"].values()) == {"RULER-WEAK"} and axis["ruler_weak"] == ["Twin"]
    assert _arm(result, "cand")["voice"][PAIRWISE] == "PASS" and result["ships"] is None
    assert any("from impostor 'Twin''s at a pool's length" in w for w in result["warnings"])


def test_a_gate_registered_before_the_check_re_scores_as_it_always_did(tmp_path: Path) -> None:
    result, _ = _scored(tmp_path / "old", training_style=1, impostors=None, day=BEFORE, background=(0, 2))
    assert "pool" not in result["ruler"]["stylometric"] and "checks" not in result["signature"]
    assert _arm(result, "cand")["voice"][PAIRWISE] == "PASS" and result["ships"] == "cand"
    again = workspace.run_cli("score", GATE, "--json", "--dry-run", "-C", tmp_path / "old")
    assert again.code == 0, again.stderr
    assert json.loads(again.stdout)["ruler"] == result["ruler"]


def test_calibrate_abstains_as_the_score_does(tmp_path: Path) -> None:
    shares = {}
    for day in (BEFORE, SINCE):
        root = tmp_path / day
        _scored(root, training_style=1, impostors=None, day=day, background=(0, 2), seeds=[101, 202, 303])
        done = workspace.run_cli("calibrate", GATE, "--seeds", "2", "--draws", "20", "--json", "-C", root)
        assert done.code == 0, done.stderr
        cand = json.loads(done.stdout)["candidates"]["cand"]["rules"][PAIRWISE]
        shares[day] = (cand["would_ship"]["share"], cand["all_seeds"]["voice"])
    assert shares[BEFORE][0] > 0 and shares[BEFORE][1] == "PASS"
    assert shares[SINCE] == (0.0, "RULER-WEAK")
