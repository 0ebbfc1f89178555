"""RULER-WEAK on every surface: the terminal table, --json, JUnit, the record, the README, the compose comment
and the report say it, and where specificity abstains they name the impostor the ruler cannot tell from the
author (not only the impostor whose margin happens to decide under the rule).

The constructed corpora (`_workspace.text`): the gate author writes style 0, the impostor 'Impostor One' style 1,
'Twin' style 0 (the author's own style: the ruler cannot tell them apart), the background style 2 (or styles 0
and 2 for a background that holds the author's own writing). Each text is 40,000 words, four pools of 10,000.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import workspace
from helpers.workspace import GATE

SINCE = "1796601600"    # 2026-12-07: ruler-weak@1 in force
WORDS = 40_000
WEAK = "the ruler cannot tell Twin from the author at a pool's length"


def _workspace_scored(root: Path, **kw: Any) -> dict[str, Any]:
    return workspace.ruler_scored(root, day=SINCE, **kw)[0]


def _surfaces(root: Path, tmp_path: Path) -> dict[str, str]:
    table = workspace.run_cli("score", GATE, "--dry-run", "-C", root)
    as_json = workspace.run_cli("score", GATE, "--dry-run", "--json", "-C", root)
    junit = tmp_path / "junit.xml"
    quiet = workspace.run_cli("score", GATE, "--dry-run", "-q", "--junit", junit, "-C", root)
    report = workspace.run_cli("report", GATE, "-C", root)
    assert (table.code, as_json.code, quiet.code, report.code) == (0, 0, 0, 0)
    return {"table": table.stdout, "json": as_json.stdout, "junit": junit.read_text(encoding="utf-8"),
            "record": (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8"),
            "readme": (root / "adapters" / "lv-test" / "README.md").read_text(encoding="utf-8"),
            "compose": (root / "deploy" / "compose.yaml").read_text(encoding="utf-8"),
            "report": (root / "runs" / GATE / "report.html").read_text(encoding="utf-8")}


def test_a_blind_author_is_ruler_weak_on_every_surface(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _workspace_scored(root, training_style=1, impostors=None, background=(0, 2))
    s = _surfaces(root, tmp_path)
    assert "│ cand  │   +0.526 │ global       │  0.081 (6.5x) │ RULER-WEAK │" in s["table"]
    assert "VOICE is RULER-WEAK, an abstention that never ships" in s["table"]
    cand = next(a for a in json.loads(s["json"])["arms"] if a["name"] == "cand")
    assert set(cand["voice"].values()) == {"RULER-WEAK"}
    assert "<skipped" in s["junit"] and 'message="VOICE RULER-WEAK under pairwise-max-spread' in s["junit"]
    assert "- cand: VOICE RULER-WEAK (pairwise-max-spread: +0.526 vs floor 0.081" in s["record"]
    assert "- cand: VOICE RULER-WEAK (pairwise-max-spread: +0.526 vs floor 0.081" in s["readme"]
    assert "#   cand: VOICE RULER-WEAK (pairwise-max-spread: +0.526 vs floor 0.081" in s["compose"]
    assert "VOICE is RULER-WEAK, an abstention" in s["report"]


def test_an_impostor_the_ruler_cannot_tell_is_named_on_every_surface(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    result = _workspace_scored(root, training_style=0,
                               impostors={"Twin": ["corpora/twin/*.txt"], "Impostor One": ["corpora/imp/*.txt"]})
    assert result["ships"] is None
    # mimic's margin that decides is over Impostor One: the surfaces must still name Twin as the reason
    mimic = next(a for a in result["arms"] if a["name"] == "mimic")["specificity"]
    assert mimic["binding"]["pairwise-max-spread"] == "Impostor One" and mimic["ruler_weak"] == ["Twin"]
    s = _surfaces(root, tmp_path)
    assert s["table"].count(f"    RULER-WEAK: {WEAK}\n") == 2   # once per candidate
    assert json.loads(s["json"])["ruler"]["stylometric"]["pool"]["weak_impostors"] == ["Twin"]
    assert (f'message="RULER-WEAK under pairwise-max-spread: margin -0.675 over Impostor One vs floor 0.099; {WEAK}"'
            in s["junit"])
    for surface in ("record", "readme"):
        assert s[surface].count(f"RULER-WEAK, deciding ({WEAK}; pairwise-max-spread: margin") == 2, surface
    assert (f"#   specificity (decides; impostors Twin, Impostor One): cand RULER-WEAK ({WEAK}), "
            f"mimic RULER-WEAK ({WEAK})\n") in s["compose"]
    assert "blocked by SPECIFICITY RULER-WEAK (the ruler cannot tell Twin from the author)" in s["report"]
