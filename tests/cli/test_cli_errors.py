"""Filesystem refusals end as one line and exit 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

from helpers.workspace import GATE, author_like, carrier_like, vg_in, voice_rows, write_rows
from helpers.workspace import scoring_workspace as make_workspace


def test_report_to_an_impossible_place_is_one_line(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws")
    write_rows(root, voice_rows({"base": carrier_like("b"), "cand": author_like("c"), "other": carrier_like("o")}))
    assert vg_in(root, "score", GATE, "--quiet").returncode == 0
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    done = vg_in(root, "report", GATE, "--out", str(blocker / "sub" / "report.html"))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and str(blocker) in done.stderr
    assert blocker.read_text() == "not a directory"
