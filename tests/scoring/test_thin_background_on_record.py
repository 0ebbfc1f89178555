"""A background mostly of one author's text is thin evidence on the record: the score entry of the gate's record
and the report say it (`thin-evidence@1`, gates registered since 2026-12-07), not only `register`'s stdout. A gate
registered before the check keeps the record it had."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import workspace
from helpers.workspace import GATE, SEEDS, impostor_spec, impostor_workspace, text
from helpers.workspace import N_PROMPTS as PROMPTS

BEFORE = "1796169600"   # 2026-12-02
SINCE = "1796601600"    # 2026-12-07
MOSTLY = ("corpora.background is mostly one author's text (its files named Austen_… hold 61% of its bytes): the "
          "ruler every margin is measured with leans on that writer's habits, and an impostor near them reads as near "
          "the author; balance the background across authors")


def _record_and_report(root: Path, day: str) -> tuple[str, str, str]:
    impostor_workspace(root, impostor_spec({"Impostor One": ["corpora/imp/*.txt"],
                                            "Impostor Two": ["corpora/imp2/*.txt"]}))
    for name, body in {"corpora/bg/Austen_Emma.txt": text(3000, "emma", 2),
                       "corpora/bg/Austen_Pride.txt": text(3000, "pride", 2),
                       "corpora/bg/Dickens_Hard.txt": text(800, "hard", 2)}.items():
        (root / name).write_text(body, encoding="utf-8")
    workspace.git(root, "add", "-A")
    workspace.git(root, "commit", "-q", "-m", "a background mostly of Austen")
    rows = [{"arm": arm, "seed": s, "prompt_id": str(p), "text": text(160, f"{arm}/{s}/{p}", style)}
            for arm, style in (("base", None), ("cand", 0), ("mimic", 1)) for s in SEEDS for p in range(PROMPTS)]
    source = root / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    env = {"SOURCE_DATE_EPOCH": day}
    registered = workspace.run_cli("register", GATE, "-C", root, env=env)
    for args in (("import", GATE, str(source)), ("score", GATE), ("report", GATE)):
        done = workspace.run_cli(*args, "-C", root, env=env)
        assert done.code == 0, done.stderr
    return (registered.stdout + registered.stderr, (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8"),
            (root / "runs" / GATE / "report.html").read_text(encoding="utf-8"))


def test_a_background_mostly_of_one_author_is_in_the_score_entry_and_the_report(tmp_path: Path) -> None:
    said, record, report = _record_and_report(tmp_path / "ws", SINCE)
    assert MOSTLY in said   # register said it before the check too
    entry = record.split("\n## Score — ")[1]
    assert MOSTLY.replace("Austen_", "Austen\\_") in entry   # markdown-escaped in the record
    assert "Warning (not deciding): corpora.background is mostly one author&#39;s text (its files named Austen_… " \
           "hold 61% of its bytes)" in report


def test_a_gate_registered_before_the_check_has_it_only_on_registers_stdout(tmp_path: Path) -> None:
    said, record, report = _record_and_report(tmp_path / "ws", BEFORE)
    assert MOSTLY in said
    assert "mostly one author" not in record and "mostly one author" not in report
