"""`voicegate note` — the place for "defect found, not acted on".

The seeds' lv-bronte correction is legitimate because the defect was written into the
record and left alone first, then the rule was registered for another gate, then the
post-hoc correction said it was one. A note is appended to all three artifacts (chained,
in the ledger), changes no verdict, is refused before any score or without a sentence,
is not appended twice, and a later post-hoc amendment says whether one preceded it.
The report's timeline shows it in its place.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.bronte import as_shipped, patch_scoring, scored_workspace
from helpers.report_data import reference_data
from helpers.workspace import register_prospective, run_cli, tree_snapshot

from voicegate.report._data import ReportData
from voicegate.report._timeline import timeline

TEXT = "the global floor is one outlier seed of ckpt925; written down, not acted on for this gate"
ARTIFACTS = ("gates/lv-bronte.md", "adapters/lv-bronte-4b-v1/README.md", "deploy/compose.yaml")


@pytest.fixture
def shipped(tmp_path: Path, compose_fixture: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    patch_scoring(monkeypatch)
    return scored_workspace(tmp_path / "ws", as_shipped(compose_fixture), ship=True, amend=False, prospective=False)


def _amend(root: Path) -> tuple[int, str, str]:
    return run_cli("amend", "lv-bronte", "--rule", "pairwise-max-spread", "--reason",
                   "the global floor let an unshipped arm fail the shipped one", "--post-hoc", "-C", str(root))


def test_a_note_goes_into_every_artifact_changes_no_verdict_and_verifies(shipped: Path) -> None:
    before = {a: (shipped / a).read_bytes() for a in ARTIFACTS}
    recorded = (shipped / "runs/lv-bronte/recorded.json").read_bytes()
    code, out, err = run_cli("note", "lv-bronte", "--text", TEXT, "-C", str(shipped))
    assert code == 0, err
    for a in ARTIFACTS:
        after = (shipped / a).read_bytes()
        assert after.startswith(before[a][:before[a].rfind(b"voicegate:entry 2")]) and TEXT.encode() in after, a
    assert "## Note — " in (shipped / ARTIFACTS[0]).read_text()
    assert f'lv-bronte NOTE — in force: rule global-max-spread, as registered; ships: none; error rates: not stated\n' \
        f'      #   note: "{TEXT}"' in (shipped / ARTIFACTS[2]).read_text()
    assert "gates/lv-bronte.md: appended entry 3 (note)" in out
    assert (shipped / "runs/lv-bronte/recorded.json").read_bytes() == recorded  # no verdict moved
    code, out, _ = run_cli("verify", "lv-bronte", "-C", str(shipped))
    assert code == 0, out
    snap = tree_snapshot(shipped)
    code, out, _ = run_cli("note", "lv-bronte", "--text", TEXT, "-C", str(shipped))  # a re-run after a kill
    assert code == 0 and "this note (same text, same verdicts) is already recorded" in out
    assert tree_snapshot(shipped) == snap


@pytest.mark.parametrize("text", ["", "-", "..."])
def test_a_note_without_a_sentence_is_refused_and_writes_nothing(shipped: Path, text: str) -> None:
    snap = tree_snapshot(shipped)
    code, _, err = run_cli("note", "lv-bronte", "--text", text, "-C", str(shipped))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "a note needs --text" in err
    assert tree_snapshot(shipped) == snap


def test_a_note_before_any_score_is_refused(tmp_path: Path, compose_fixture: Path) -> None:
    from helpers.bronte import bronte_workspace

    root = bronte_workspace(tmp_path / "ws", as_shipped(compose_fixture), prospective=False)
    snap = tree_snapshot(root)
    code, _, err = run_cli("note", "lv-bronte", "--text", TEXT, "-C", str(root))
    assert code == 2 and "nothing to note: no score is recorded for lv-bronte" in err
    assert tree_snapshot(root) == snap


def test_a_post_hoc_amendment_says_whether_a_note_preceded_it(shipped: Path, tmp_path: Path) -> None:
    import shutil

    unnoted = tmp_path / "unnoted"
    shutil.copytree(shipped, unnoted, symlinks=True)
    assert run_cli("note", "lv-bronte", "--text", TEXT, "-C", str(shipped))[0] == 0
    for root in (shipped, unnoted):
        register_prospective(root, "lv-hemingway", "pairwise-max-spread")
        code, _, err = _amend(root)
        assert code == 0, err
    assert f"Noted on the record before this correction: “{TEXT}” (" in (shipped / ARTIFACTS[0]).read_text()
    assert ("No note on the record put the defect down before this correction"
            in (unnoted / ARTIFACTS[0]).read_text())


def test_the_timeline_shows_the_note_in_its_place() -> None:
    data = ReportData.from_plain(reference_data(
        amendments=[], notes=[{"time": "2026-09-16T16:00:00Z", "text": TEXT}],
        events=[["score", "2026-09-16T12:00:00Z"], ["ship", "2026-09-16T15:40:00Z"], ["note", "2026-09-16T16:00:00Z"]]))
    events = timeline(data)
    assert [e.kind for e in events][-3:] == ["scored", "shipped-against", "noted"]
    assert events[-1].label == "noted on the record" and TEXT in events[-1].text


def test_note_json_is_one_document(shipped: Path) -> None:
    import json

    code, out, err = run_cli("note", "lv-bronte", "--text", TEXT, "--json", "-C", str(shipped))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["gate"] == "lv-bronte" and doc["appended"] is True and doc["note"]["text"] == TEXT
    assert len(doc["artifacts"]) == 3
    code, out, _ = run_cli("note", "lv-bronte", "--text", "", "--json", "-C", str(shipped))
    assert code == 2 and json.loads(out)["exit"] == 2 and "a note needs --text" in json.loads(out)["error"]
