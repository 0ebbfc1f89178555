"""Thin evidence on the record: a gate with one impostor, an impostor's file that is also background, or a
background mostly of one author's text is said in the score result's warnings, so the score entry of the record
and the report show it, not only `register`'s stdout. Dated like a rule (`thin-evidence@1`, 2026-12-07): a gate
registered before it re-scores with the warnings it always had."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import workspace
from helpers.workspace import GATE, SEEDS, impostor_spec, impostor_workspace, text
from helpers.workspace import N_PROMPTS as PROMPTS

ONE = ("one impostor ('Impostor One'): SPECIFIC then says 'nearer the author than Impostor One', not than other "
       "authors; register two or more")
BACKGROUND = ("corpora.background is one author's text (a single file, bg1.txt): the ruler every margin is measured "
              "with (its word list and z-scores) then describes that writer's habits, and an impostor near them "
              "reads as near the author; give the background several authors")
SHARED = ("impostor 'Impostor One': corpora/bg/bg1.txt is also in corpora.background: the gate's ruler (its word "
          "list and z-scores) is built on the very text the candidates are compared with as another author")
BEFORE = "1796169600"   # 2026-12-02, before the check: lv-bronte's registration day in the golden story
SINCE = "1796601600"    # 2026-12-07, the day it came in force


def _scored(root: Path, impostors: dict[str, list[str]], *, day: str, files: dict[str, str] | None = None
            ) -> dict[str, Any]:
    impostor_workspace(root, impostor_spec(impostors))
    for name, body in (files or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body, encoding="utf-8")
    workspace.git(root, "add", "-A")
    workspace.git(root, "commit", "-q", "--allow-empty", "-m", "more")
    rows = [{"arm": arm, "seed": s, "prompt_id": str(p), "text": text(160, f"{arm}/{s}/{p}", style)}
            for arm, style in (("base", None), ("cand", 0), ("mimic", 1)) for s in SEEDS for p in range(PROMPTS)]
    source = root / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    env = {"SOURCE_DATE_EPOCH": day}
    for args in (("register", GATE), ("import", GATE, str(source)), ("score", GATE)):
        done = workspace.run_cli(*args, "-C", root, env=env)
        assert done.code == 0, done.stderr
    return json.loads((root / "runs" / GATE / "scores.json").read_text(encoding="utf-8"))


def test_one_impostor_that_is_also_background_over_a_one_file_background_is_on_every_record(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    result = _scored(root, {"Impostor One": ["corpora/bg/*.txt"]}, day=SINCE)
    thin = [w for w in result["warnings"] if w in (ONE, BACKGROUND, SHARED)]
    assert thin == [ONE, BACKGROUND, SHARED]
    assert result["signature"]["checks"] == ["thin-evidence@1", "ruler-weak@1"]
    assert "checks:thin-evidence@1,ruler-weak@1" in result["signature_text"]
    record = (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    for line in (ONE, BACKGROUND, SHARED):
        assert line in record, line
    assert workspace.run_cli("report", GATE, "-C", root).code == 0
    page = (root / "runs" / GATE / "report.html").read_text(encoding="utf-8")
    assert "Warning (not deciding): one impostor (&#39;Impostor One&#39;)" in page
    assert "is also in corpora.background" in page


def test_a_background_mostly_of_one_author_is_on_the_record(tmp_path: Path) -> None:
    files = {"corpora/bg/Austen_Emma.txt": text(3000, "emma", 2), "corpora/bg/Austen_Pride.txt": text(3000, "pride", 2),
             "corpora/bg/Dickens_Hard.txt": text(800, "hard", 2)}
    spec_impostors = {"Impostor One": ["corpora/imp/*.txt"], "Impostor Two": ["corpora/imp2/*.txt"]}
    result = _scored(tmp_path / "ws", spec_impostors, day=SINCE, files=files)
    mostly = [w for w in result["warnings"] if "mostly one author's text" in w]
    assert len(mostly) == 1 and "its files named Austen_… hold " in mostly[0], result["warnings"]
    assert not any(w in result["warnings"] for w in (ONE, SHARED))  # two impostors, none in the background


def test_a_gate_registered_before_the_check_keeps_the_warnings_it_had(tmp_path: Path) -> None:
    result = _scored(tmp_path / "ws", {"Impostor One": ["corpora/bg/*.txt"]}, day=BEFORE)
    assert not any(w in result["warnings"] for w in (ONE, BACKGROUND, SHARED)), result["warnings"]
    assert "checks" not in result["signature"] and "checks:" not in result["signature_text"]


def test_the_share_of_one_author_is_read_from_the_file_names_and_sizes(tmp_path: Path) -> None:
    from voicegate.spec._resolve import _most_background_author

    def files(**sizes: int) -> list[Path]:
        out = []
        for name, size in sizes.items():
            (tmp_path / f"{name}.txt").write_text("x" * size, encoding="utf-8")
            out.append(tmp_path / f"{name}.txt")
        return out

    assert _most_background_author(files(Austen_Emma=60, Dickens_Hard=40)) == (
        "its files named Austen_… hold 60% of its bytes")
    assert _most_background_author(files(Austen_Emma=50, Dickens_Hard=50)) is None   # half is not most
    assert _most_background_author(files(a=90, Dickens_Hard=10)) is None              # unnamed bytes claim nothing
