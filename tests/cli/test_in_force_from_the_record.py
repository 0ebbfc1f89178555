"""What is in force comes from the gate record's chained entries (and git), never the run directory.

The run directory's recorded.json and amendments.jsonl are copies a user can edit or delete. After a post-hoc
amendment of lv-bronte, deleting them or editing them by hand changes nothing `score` says is in force — the quiet
line, `--json` (rule, ships, the amendment, its citation, post-hoc) — and nothing is appended to the record, the
README or the compose file (`score` rebuilds a deleted recorded.json, byte for byte). Before, `score` read the
amendment in force from those files: with them gone it appended a second score entry and said the registered rule
decided (nothing ships); with them edited it said what the edit said.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.bronte import as_shipped, bronte_workspace, generations, patch_scoring, write_jsonl
from helpers.workspace import register_prospective, run_cli

GATE = "lv-bronte"
SHIPS = "ships: ckpt475 (VOICE PASS 2.1x under pairwise-max-spread, NOT-COPIED, NO-DAMAGE)"
QUIET = f"{GATE}: {SHIPS}; rule in force by amendment from global-max-spread, a POST-HOC correction\n"


def _delete(run: Path) -> None:
    (run / "recorded.json").unlink()
    (run / "amendments.jsonl").unlink()


def _edit(run: Path) -> None:
    rows = [json.loads(line) for line in (run / "amendments.jsonl").read_text(encoding="utf-8").splitlines()]
    rows[-1]["rule_from"] = "welch-t"
    rows[-1]["citation"]["post_hoc"] = False
    rows[-1]["citation"]["gate"] = "lv-hemingway"
    (run / "amendments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    state = json.loads((run / "recorded.json").read_text(encoding="utf-8"))
    state["current_kind"] = "score"
    (run / "recorded.json").write_text(json.dumps(state), encoding="utf-8")


def _said(root: Path) -> tuple[str, dict[str, Any]]:
    quiet = run_cli("score", GATE, "--strict", "-q", cwd=root)
    assert quiet.code == 0, quiet.stderr
    as_json = run_cli("score", GATE, "--strict", "--json", cwd=root)
    assert as_json.code == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    return quiet.stdout, {k: doc[k] for k in ("rule", "ships", "registered_rule", "registered_ships", "amendment")}


@pytest.mark.parametrize("tamper", [_delete, _edit], ids=["deleted", "edited"])
def test_the_run_directorys_copies_cannot_change_what_is_in_force(tamper: Any, tmp_path: Path,
                                                                  compose_fixture: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    patch_scoring(monkeypatch)
    root = bronte_workspace(tmp_path / "ws", as_shipped(compose_fixture), prospective=False)
    for command in (("import", GATE, write_jsonl(tmp_path / "g.jsonl", generations())), ("score", GATE),
                    ("ship", GATE, "ckpt475", "--reason", "additive, reversible and safety-clean")):
        done = run_cli(*command, cwd=root)
        assert done.code == 0, (command, done.stderr)
    register_prospective(root, "lv-dummy", "pairwise-max-spread")  # after lv-bronte's numbers: post-hoc
    amended = run_cli("amend", GATE, "--rule", "pairwise-max-spread", "--reason", "the global floor misled",
                      "--post-hoc", cwd=root)
    assert amended.code == 0, amended.stderr

    quiet, doc = _said(root)
    assert quiet == QUIET
    assert (doc["rule"], doc["ships"], doc["registered_rule"], doc["registered_ships"]) == (
        "pairwise-max-spread", "ckpt475", "global-max-spread", None)
    amendment = doc["amendment"]
    assert (amendment["rule_from"], amendment["post_hoc"]) == ("global-max-spread", True)
    assert (amendment["citation"]["gate"], amendment["citation"]["post_hoc"]) == ("lv-dummy", True)
    artifacts = [root / "gates" / f"{GATE}.md", root / "adapters" / "lv-bronte-4b-v1" / "README.md",
                 *sorted(root.rglob("compose*.y*ml"))]
    before = [p.read_bytes() for p in artifacts]

    kept = (root / "runs" / GATE / "recorded.json").read_bytes()
    tamper(root / "runs" / GATE)
    assert _said(root) == (quiet, doc)
    assert [p.read_bytes() for p in artifacts] == before  # nothing appended: the record is current
    if tamper is _delete:
        # score rebuilt the run's copy of the result in force from the record (the amendment's result, checked
        # against the sha256 its entry states), byte for byte: ship and note read it again
        assert (root / "runs" / GATE / "recorded.json").read_bytes() == kept
