"""Acceptance 1: the lv-bronte story, end to end, through the real CLI, on the fleet's compose file.

As it happened (DESIGN.md §3): 360 generations that predate voicegate are
imported; scored under global-max-spread both candidates FAIL the voice axis
(floor 0.251, from ckpt925's outlier seed); a person ships ckpt475 anyway as
"additive, reversible and safety-clean"; the rule is later amended to
pairwise-max-spread and the SAME generations re-scored: ckpt475 PASSES 2.1x,
ckpt925 still FAILS, NOT-COPIED and NO-DAMAGE unchanged. All of it lands in
the gate record, the adapter README and the compose comment, and nothing that
was there before moves.

The per-(arm, seed) voice distances are driven through the scoring core's seam
(`_bronte.patch_scoring`); everything else — import, scoring of copying and
damage on the stored rows, verdicts, the artifacts — is the product's own code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from helpers.bronte import ITEM, README, as_shipped, bronte_workspace, generations, patch_scoring, write_jsonl
from helpers.workspace import run_cli

from voicegate._hashing import sha256_file

RECORD = "gates/lv-bronte.md"
READ_ME = "adapters/lv-bronte-4b-v1/README.md"
COMPOSE = "deploy/compose.yaml"
FAIL_475 = ("ckpt475: VOICE FAIL (global-max-spread: +0.193 vs floor 0.251, 0.8x; pairwise-max-spread would "
            "PASS 2.1x (floor 0.091): DISAGREE) · NOT-COPIED · NO-DAMAGE")
FAIL_925 = ("ckpt925: VOICE FAIL (global-max-spread: +0.210 vs floor 0.251, 0.8x; pairwise-max-spread: "
            "FAIL 0.8x (floor 0.251)) · NOT-COPIED · NO-DAMAGE")
V475 = FAIL_475.split(": ", 1)[1]  # the verdict phrase itself, as every entry quotes it
REASON = "additive, reversible and safety-clean"
AMEND = ("the global floor let ckpt925, which nobody ships, fail ckpt475; pairwise-max-spread was registered "
         "for lv-hemingway before any of its numbers existed")


def _texts(root: Path) -> dict[str, str]:
    return {p: (root / p).read_text(encoding="utf-8") for p in (RECORD, READ_ME, COMPOSE)}


def _removed_only_added(old: bytes, new: bytes) -> list[bytes]:
    """The lines new has beyond old, asserting every old line is still there, in order."""
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    added, i = [], 0
    for line in new_lines:
        if i < len(old_lines) and line == old_lines[i]:
            i += 1
        else:
            added.append(line)
    assert i == len(old_lines), "every pre-existing line is still there, in order"
    return added


@pytest.fixture
def story(tmp_path: Path, compose_fixture: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    patch_scoring(monkeypatch)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1796169600")  # 2026-12-02, fixed so the bytes are stable
    return bronte_workspace(tmp_path / "ws", as_shipped(compose_fixture))


def test_lv_bronte_story(story: Path) -> None:
    root = story
    compose_shipped = (root / COMPOSE).read_bytes()
    readme_before = (root / READ_ME).read_bytes()
    assert readme_before == README.encode()
    ws = ("-C", str(root))

    # -- import: the 360 generations that predate voicegate ------------------------------
    source = write_jsonl(root / "lv-bronte-360.jsonl", generations())
    code, out, err = run_cli("import", "lv-bronte", str(source), *ws)
    assert code == 0, err
    assert "imported 360 generations" in out
    run = json.loads((root / "runs" / "lv-bronte" / "run.json").read_text())
    assert run["source"] == "imported" and run["file_sha256"] == sha256_file(source)

    # -- score under the registered rule: VOICE FAIL for both ------------------------------
    code, out, err = run_cli("score", "lv-bronte", *ws)
    assert code == 0, err
    assert "no redeploy needed" in out
    scores = json.loads((root / "runs" / "lv-bronte" / "scores.json").read_text())
    arms = {a["name"]: a for a in scores["arms"]}
    assert scores["rule"] == "global-max-spread" and scores["ships"] is None
    assert arms["ckpt475"]["floors"] == {"global-max-spread": 0.251, "pairwise-max-spread": 0.091}
    assert arms["ckpt475"]["delta_cb"] == 0.193 and arms["ckpt925"]["delta_cb"] == 0.21
    assert arms["ckpt475"]["voice"] == {"global-max-spread": "FAIL", "pairwise-max-spread": "PASS"}
    texts = _texts(root)
    for name, text in texts.items():
        assert FAIL_475 in text, name
        assert FAIL_925 in text, name
    record = texts[RECORD]
    assert "**Run.** Imported (generations made outside voicegate) from `lv-bronte-360.jsonl`" in record
    assert f"file sha256 `{sha256_file(source)}`" in record
    assert "360 generations (360 voice, 0 probe): 3 arms × 3 seeds × 40 prompts" in record
    assert ("| ckpt475 | candidate | +0.193 | 0.091 | 0.251 | FAIL 0.8x (deciding) | 0.091 | PASS 2.1x | DISAGREE |"
            in record)
    assert "| ckpt925 | candidate | +0.210 | 0.251 | 0.251 | FAIL 0.8x (deciding) | 0.251 | FAIL 0.8x | — |" in record
    assert "- ckpt925: 101 → 0.520 (440 words), 202 → 0.539 (440 words), 303 → 0.771 (440 words)" in record
    assert "**Ships (the rule's recommendation):** none — no candidate passes all three axes." in record
    after_score = {p: (root / p).read_bytes() for p in (RECORD, READ_ME, COMPOSE)}

    # -- the same generations, the same rule: nothing appended ----------------------------
    code, out, err = run_cli("score", "lv-bronte", *ws)
    assert code == 0, err
    assert "the record is current" in out
    assert {p: (root / p).read_bytes() for p in after_score} == after_score

    # -- a person ships ckpt475 against the FAIL ---------------------------------------
    code, out, err = run_cli("ship", "lv-bronte", "ckpt475", "--reason", REASON, *ws)
    assert code == 0, err
    texts = _texts(root)
    assert f"A person decided to ship **ckpt475** (`lv-bronte-ckpt475`) as `lv-bronte`.\nReason, as given: “{REASON}”" \
        in texts[RECORD]
    assert "It goes against the rule's recommendation (no candidate ships)" in texts[RECORD]
    assert f"A person shipped **ckpt475** as `lv-bronte`: “{REASON}”." in texts[READ_ME]
    assert ("      # voicegate 2026-12-02 lv-bronte: a person SHIPPED ckpt475 — in force: rule global-max-spread, as "
            f'registered; ships: none; error rates: not stated\n      #   reason: "{REASON}"\n') in texts[COMPOSE]
    for name, text in texts.items():
        assert text.count(V475) == 2, name  # the decision sits beside the FAIL; the FAIL is not touched
    decisions = [json.loads(ln) for ln in (root / "runs" / "lv-bronte" / "decisions.jsonl").read_text().splitlines()]
    assert [(d["arm"], d["reason"], d["verdicts"]["voice"]["global-max-spread"]) for d in decisions] == \
        [("ckpt475", REASON, "FAIL")]

    # -- the amendment: same generations, pairwise-max-spread ----------------------------
    code, out, err = run_cli("amend", "lv-bronte", "--rule", "pairwise-max-spread", "--reason", AMEND, *ws)
    assert code == 0, err
    assert "no redeploy needed" in out
    texts = _texts(root)
    compose = texts[COMPOSE]
    assert ("      #   ckpt475 (shipped): VOICE FAIL -> PASS 2.1x (+0.193 vs floor 0.091; global-max-spread floor "
            "0.251: DISAGREE) · NOT-COPIED · NO-DAMAGE unchanged\n") in compose
    assert ("      #   ckpt925: VOICE still FAIL 0.8x (+0.210 vs floor 0.251; global-max-spread floor 0.251) "
            "· NOT-COPIED · NO-DAMAGE unchanged\n") in compose
    readme = texts[READ_ME]
    assert ("- ckpt475 (shipped): VOICE FAIL → PASS 2.1x (+0.193 vs floor 0.091; global-max-spread floor 0.251: "
            "DISAGREE) · NOT-COPIED · NO-DAMAGE, unchanged") in readme
    assert "- ckpt925: VOICE still FAIL 0.8x (+0.210 vs floor 0.251; global-max-spread floor 0.251)" in readme
    record = texts[RECORD]
    assert "| ckpt475 | +0.193 | 0.251 | 0.091 | FAIL 0.8x | PASS 2.1x | DISAGREE | NOT-COPIED | NO-DAMAGE |" in record
    assert "| ckpt925 | +0.210 | 0.251 | 0.251 | FAIL 0.8x | FAIL 0.8x | — | NOT-COPIED | NO-DAMAGE |" in record
    assert ("- ckpt475: VOICE FAIL → PASS (2.1x): the floor that applies is 0.091, not 0.251; any conclusion "
            "drawn from the FAIL is withdrawn.") in record
    assert "- ckpt925: VOICE stays FAIL (+0.210 vs floor 0.251, 0.8x)." in record
    assert "- ckpt475: NOT-COPIED and NO-DAMAGE, as recorded." in record
    assert (f"- The shipping decision: ckpt475 shipped (2026-12-02T00:00:00Z, “{REASON}”); it stands as recorded: "
            "an amendment corrects verdicts, not decisions.") in record
    assert f"Reason, as given: “{AMEND}”" in record
    for name, text in texts.items():
        # the original verdicts are still there, word for word
        assert text.count(FAIL_475) == 1 and text.count(V475) == 2, name
    amendments = [json.loads(ln) for ln in (root / "runs" / "lv-bronte" / "amendments.jsonl").read_text().splitlines()]
    assert len(amendments) == 1
    a = amendments[0]
    assert (a["rule_from"], a["rule_to"], a["reason"]) == ("global-max-spread", "pairwise-max-spread", AMEND)
    assert {c["arm"]: (c["before"], c["after"]) for c in a["changes"]} == \
        {"ckpt475": ("FAIL", "PASS"), "ckpt925": ("FAIL", "FAIL")}
    assert a["result"]["ships"] == "ckpt475"

    # -- append-only, byte for byte -------------------------------------------------------
    final = {p: (root / p).read_bytes() for p in (RECORD, READ_ME, COMPOSE)}
    assert final[READ_ME].startswith(readme_before)
    assert final[RECORD].startswith(after_score[RECORD]) and final[READ_ME].startswith(after_score[READ_ME])
    added = _removed_only_added(compose_shipped, final[COMPOSE])
    assert added and all(line.startswith(b"      # ") for line in added)
    lines = final[COMPOSE].splitlines(keepends=True)
    item = lines.index(f"      {ITEM}\n".encode())
    assert lines[item - len(added):item] == added, "all added lines sit directly above the lv-bronte item"
    assert lines[item - len(added) - 1] == b"      #\n"  # after the human-written block, which ends with '#'
    assert yaml.safe_load(compose_shipped) == yaml.safe_load(final[COMPOSE])
    assert sum(b"# voicegate:entry" in ln for ln in added) == 3

    code, out, err = run_cli("verify", "lv-bronte", *ws)
    assert code == 0, err
    assert out.count(" OK") == 9


def test_the_fleet_compose_as_it_is_today_takes_the_same_entries(story: Path, compose_fixture: Path) -> None:
    # The fixture with the human-written correction block: entries go after it, above the item.
    root = story
    (root / COMPOSE).write_bytes(compose_fixture.read_bytes())
    code, _, err = run_cli("import", "lv-bronte", str(write_jsonl(root / "g.jsonl", generations())), "-C", str(root))
    assert code == 0, err
    code, _, err = run_cli("score", "lv-bronte", "-C", str(root))
    assert code == 0, err
    new = (root / COMPOSE).read_bytes()
    added = _removed_only_added(compose_fixture.read_bytes(), new)
    lines = new.splitlines(keepends=True)
    item = lines.index(f"      {ITEM}\n".encode())
    assert lines[item - len(added):item] == added
    assert lines[item - len(added) - 1] == b"      # persistent-memory.d/2026-09-17-lv-bronte-gate.md\n"
    assert yaml.safe_load(compose_fixture.read_bytes()) == yaml.safe_load(new)
