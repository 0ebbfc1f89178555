"""An artifact cut back by hand: the record deleted, its newest entry cut off, the README emptied, the compose file
put back as it was before voicegate wrote to it.

`verify` says BROKEN (an entry the run's ledger lists is gone). No verdict command appends past that: an entry
written then would begin the file again, or follow the gap, stating what is in force from a record that lost the
entries saying so (a ship after the amendment was cut off wrote "pairwise-max-spread, as registered" into every
artifact, where `score` said global-max-spread was in force). Each refuses: exit 2, one line naming the file and
what is gone, nothing written — run data included. Nor does `report` draw a page from a record cut back: its
header would say "as registered" of the rule the lost amendment put in force.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.bronte import ITEM, README, as_shipped, bronte_workspace, generations, patch_scoring, write_jsonl
from helpers.workspace import Templates, register_prospective, run_cli

GATE = "lv-bronte"
RECORD, READ_ME, COMPOSE = "gates/lv-bronte.md", "adapters/lv-bronte-4b-v1/README.md", "deploy/compose.yaml"


def _build(root: Path, compose: bytes) -> None:
    with pytest.MonkeyPatch.context() as mp:
        patch_scoring(mp)
        bronte_workspace(root, compose, prospective=False)
        rows = write_jsonl(root.parent / f"{root.name}.jsonl", generations())
        register_prospective(root, "lv-dummy", "pairwise-max-spread")
        for command in (("import", GATE, rows), ("score", GATE),
                        ("amend", GATE, "--rule", "pairwise-max-spread", "--post-hoc", "--reason",
                         "the global floor lets one arm's outlier seed decide every candidate")):
            done = run_cli(*command, cwd=root)
            assert done.code == 0, (command, done.stderr)


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Templates:
    return Templates(tmp_path_factory.mktemp("cut-back"))


@pytest.fixture
def ws(templates: Templates, tmp_path: Path, compose_fixture: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    patch_scoring(monkeypatch)
    return templates.copy("amended", lambda p: _build(p, as_shipped(compose_fixture)), tmp_path / "ws")


def _cut_newest_entry(path: Path) -> None:
    """The record as it was before its newest entry (the amendment): through the score entry's marker."""
    text = path.read_text(encoding="utf-8")
    end = text.index("-->\n", text.index("<!-- voicegate:entry 1 ")) + len("-->\n")
    path.write_text(text[:end], encoding="utf-8")


def _uncompose(root: Path) -> None:
    """compose.yaml as it was before voicegate wrote to it: every voicegate comment line gone."""
    path = root / COMPOSE
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if ln.strip() == ITEM)
    first = next(i for i in range(at, -1, -1) if "# voicegate" not in lines[i - 1])
    path.write_text("".join(lines[:first] + lines[at:]), encoding="utf-8")


CUTS: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "record deleted": (lambda r: (r / RECORD).unlink(), RECORD,
                       ("the file is gone, but the run's ledger lists 2 entries written to it (the newest, entry 2, "
                        "by `amend` at ")),
    "record's newest entry cut": (lambda r: _cut_newest_entry(r / RECORD), RECORD,
                                  "entry 2 (written by `amend` at "),
    "README emptied": (lambda r: (r / READ_ME).write_text("", encoding="utf-8"), READ_ME,
                       "entry 1 (written by `score` at "),
    "README as before voicegate": (lambda r: (r / READ_ME).write_text(README, encoding="utf-8"), READ_ME,
                                   "entry 1 (written by `score` at "),
    "compose as before voicegate": (_uncompose, COMPOSE, "entry "),
}


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.parts and not p.name.endswith(".lock")}


@pytest.mark.parametrize("cut", list(CUTS))
def test_no_verdict_command_appends_to_an_artifact_cut_back_by_hand(ws: Path, cut: str) -> None:
    damage, path, said = CUTS[cut]
    damage(ws)
    checked = run_cli("verify", GATE, cwd=ws)
    assert checked.code == 1 and f"BROKEN: {said}" in checked.stdout, checked.stdout
    before = _files(ws)
    for command in (("ship", GATE, "ckpt475", "--reason", "additive, reversible and safety-clean"),
                    ("note", GATE, "--text", "looked at the record again"),
                    ("amend", GATE, "--rule", "welch-t", "--post-hoc", "--reason", "a sampling model for the floor"),
                    ("score", GATE)):
        done = run_cli(*command, cwd=ws)
        assert done.code == 2, (command, done.stdout, done.stderr)
        lines = [ln for ln in done.stderr.splitlines() if not ln.startswith("voicegate: note: as amended")]
        assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
        assert lines[0].startswith(f"voicegate: {path}: {said}"), (command, lines[0])
        assert "(`voicegate verify` says BROKEN)" in lines[0], lines[0]
        assert lines[0].endswith("(from git, or a backup) and run the command again"), lines[0]
        assert _files(ws) == before, command
    if path == RECORD:  # the page's header reads what is in force from the record: no page from a cut one
        done = run_cli("report", GATE, cwd=ws)
        assert done.code == 2 and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith(f"voicegate: {path}: {said}") and "so no page is drawn" in done.stderr
        assert _files(ws) == before


EDITS: dict[str, tuple[str, str]] = {
    # the amendment's own heading names the rule it put in force: edited, `score` said welch-t decides
    "the amendment's rule": ("→ pairwise-max-spread@1", "→ welch-t@1"),
    "a delta_cb of the score": ("+0.193", "+0.293"),
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_no_surface_reads_what_is_in_force_from_a_record_edited_by_hand(ws: Path, edit: str) -> None:
    """What is in force is read from the record's entries, which only a chain that holds vouches for: edited, every
    command that reads them refuses — `score` (a dry run too), `ship`, `note`, `report`, and `amend`, which reads
    what the gate was ever decided under from them — in one line, nothing written."""
    old, new = EDITS[edit]
    record = ws / RECORD
    text = record.read_text(encoding="utf-8")
    assert old in text
    record.write_text(text.replace(old, new, 1), encoding="utf-8")
    checked = run_cli("verify", GATE, cwd=ws)
    assert checked.code == 1 and " was edited: the bytes before its marker changed" in checked.stdout
    before = _files(ws)
    for command in (("score", GATE, "--dry-run", "--quiet"), ("score", GATE, "--json"), ("score", GATE),
                    ("ship", GATE, "ckpt475", "--reason", "additive, reversible and safety-clean"),
                    ("note", GATE, "--text", "looked at the record again"), ("report", GATE),
                    ("amend", GATE, "--rule", "welch-t", "--post-hoc", "--reason", "a sampling model for the floor")):
        done = run_cli(*command, cwd=ws)
        assert done.code == 2, (command, done.stdout, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.startswith(f"voicegate: {RECORD}: entry ") and " was edited: " in done.stderr, done.stderr
        assert "welch-t" not in done.stdout and "ships: ckpt475 (VOICE PASS" not in done.stdout, done.stdout
        assert _files(ws) == before, command
