"""Golden bytes of the lv-bronte reference case: score JSON, gate record, README and compose.

The story (import, score, ship, note, amend --post-hoc, score --json) runs through the real CLI in
this process with fixed dates and git identities; the four artifacts and both JSON
outputs are compared byte for byte with `tests/golden/`. Only what depends on the
machine (the temporary workspace path, the git commit id, voicegate's version, the
seat-independent python/numpy versions in the signature) is normalised first.

Regenerate (after a change that is meant to alter the bytes) with
`VOICEGATE_UPDATE_GOLDEN=1 python3 -m pytest tests/artifacts/test_golden_bronte.py`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from helpers.bronte import as_shipped, bronte_workspace, generations, patch_scoring, write_jsonl
from helpers.workspace import register_prospective, run_cli

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
NOTE = ("the global floor (0.251) is one outlier seed of ckpt925, and it fails the shipped ckpt475 (+0.193); "
        "written down, not acted on for this gate")
FILES = {"record.md": "gates/lv-bronte.md", "README.md": "adapters/lv-bronte-4b-v1/README.md",
         "compose.yaml": "deploy/compose.yaml"}


def _normalise(text: str, root: Path) -> str:
    text = text.replace(str(root), "<ws>")
    text = re.sub(r"\b[0-9a-f]{40}\b", "<commit>", text)
    for lib in ("numpy", "scipy", "python"):
        text = re.sub(rf'({lib}:|"{lib}": ")[0-9][0-9a-z.+]*', rf"\g<1><{lib}>", text)
    return text


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("VOICEGATE_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"golden file {path} missing (set VOICEGATE_UPDATE_GOLDEN=1 to write it)"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden bytes"


@pytest.fixture
def story(tmp_path: Path, compose_fixture: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    patch_scoring(monkeypatch)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1796169600")
    for var in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.setenv(var, "2026-12-02T00:00:00+00:00")
    # As the seeds tell it: lv-hemingway's pairwise rule is registered AFTER lv-bronte's numbers (below).
    return bronte_workspace(tmp_path / "ws", as_shipped(compose_fixture), prospective=False)


def test_reference_case_bytes_are_golden(story: Path) -> None:
    root = story
    ws = ("-C", str(root))
    source = write_jsonl(root / "lv-bronte-360.jsonl", generations())
    assert run_cli("import", "lv-bronte", str(source), *ws)[0] == 0
    assert run_cli("score", "lv-bronte", *ws)[0] == 0
    # After the first score, not before: a dry run before it would anchor the numbers in an entry of its own.
    code, scored_json, err = run_cli("score", "lv-bronte", "--json", "--dry-run", *ws)
    assert code == 0, err
    assert run_cli("ship", "lv-bronte", "ckpt475", "--reason", "additive, reversible and safety-clean", *ws)[0] == 0
    # The defect, written into the record and left alone first; then the rule registered for another gate;
    # then the correction, which says it is a post-hoc one (DESIGN.md §6b).
    code, _, err = run_cli("note", "lv-bronte", "--text", NOTE, *ws)
    assert code == 0, err
    register_prospective(root, "lv-hemingway", "pairwise-max-spread")
    code, _, err = run_cli("amend", "lv-bronte", "--rule", "pairwise-max-spread", "--reason",
                           "the global floor let an unshipped arm fail the shipped one", "--post-hoc", *ws)
    assert code == 0, err
    code, out, err = run_cli("verify", "lv-bronte", *ws)
    assert code == 0, out + err
    assert "entry 4 is a POST-HOC correction: it cites lv-hemingway's registration of pairwise-max-spread" in out
    code, amended_json, err = run_cli("score", "lv-bronte", "--json", "--dry-run", *ws)
    assert code == 0, err
    _check("score-global.json", _normalise(scored_json, root))
    _check("score-amended.json", _normalise(amended_json, root))
    for name, rel in FILES.items():
        _check(name, _normalise((root / rel).read_text(encoding="utf-8"), root))
