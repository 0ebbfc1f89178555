"""A sequential design's decision for a candidate is final at the look that makes it.

A candidate that PASSes at a look stays PASS (and the gate's pick stays the one that look shipped); one stopped
for futility stays FAIL: a later look, scored because another candidate continued or because seeds were made
anyway, does not decide either again, and every surface says where it stopped. The constructed arms change
voice after seed 3, so a later look on all the seeds would decide them differently.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.junit import cases, junit
from helpers.sequential import _mixed, look_rows
from helpers.workspace import GATE, carrier_like, run_cli, scoring_workspace, write_rows


def _after(first: Any, then: Any) -> Any:
    """`first`'s texts for seeds 1-3, `then`'s after."""
    return lambda seed, p: (first if seed <= 3 else then)(seed, p)


def _workspace(root: Path) -> Path:
    return scoring_workspace(root, extra={"floor": {"rule": "welch-t", "looks": [3, 4, 5]}, "seeds": [1, 2, 3, 4, 5]})


def _quiet(root: Path) -> str:
    done = run_cli("score", GATE, "-C", root, "--quiet")
    assert done.code == 0, done.stderr
    return done.stdout.split("; error rates:")[0]


def test_a_pass_and_a_futility_stop_at_look_1_stay_decided_at_later_looks(tmp_path: Path) -> None:
    texts = {"base": carrier_like("b"), "cand": _after(_mixed("c", 80), carrier_like("c")),
             "other": _after(carrier_like("o"), _mixed("o", 100))}
    root = _workspace(tmp_path / "ws")
    write_rows(root, look_rows([1, 2, 3], texts))
    assert _quiet(root) == f"{GATE}: ships: cand (sequential design, look 1 of 3 (3 seeds): PASS — cand ships)"
    stopped = "(stopped at look 1, 3 seeds)"
    for index, seeds in ((2, 4), (3, 5)):  # seeds made anyway: cand alone would now CONTINUE, other too
        write_rows(root, look_rows([seeds], texts))
        assert _quiet(root) == (f"{GATE}: ships: cand (sequential design, look {index} of 3 ({seeds} seeds): PASS — "
                                f"cand ships {stopped})")
    table = run_cli("score", GATE, "-C", root, "--junit", tmp_path / "score.xml")
    assert table.code == 0, table.stderr
    said = {"cand": "stopped at look 1 of 3, 3 seeds: PASS (p 0.00128 under 0.00162863); final: not decided "
                    "again at look 3",
            "other": "stopped at look 1 of 3, 3 seeds: FAIL (p 0.90129 over 0.5: futility); final: not decided "
                     "again at look 3"}
    for name, line in said.items():
        assert f"{name}: {line}" in table.stdout
    record = (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    assert f"- cand: {said['cand']}" in record and f"- other: {said['other']}" in record
    look = json.loads(run_cli("score", GATE, "-C", root, "--json").stdout)["look"]
    assert {n: (c["decision"], c["look"]) for n, c in look["candidates"].items()} == {
        "cand": ("PASS", 1), "other": ("FAIL", 1)}
    assert [c for c in cases(junit(tmp_path / "score.xml")) if c[1].startswith("voice")] == [
        (f"voicegate.{GATE}.cand", "voice at look 3 of 3", "passed"),
        (f"voicegate.{GATE}.other", "voice at look 3 of 3", "skipped")]
    out = root / "report.html"
    assert run_cli("report", GATE, "-C", root, "--out", out).code == 0
    page = out.read_text(encoding="utf-8")
    assert "under welch-t: cand PASS at look 1, other FAIL at look 1; sequential design" in page
    assert "VOICE FAIL at look 1 of 3" in page and 'data-standing="ships"' in page


def test_every_candidate_stopped_for_futility_stays_stopped(tmp_path: Path) -> None:
    texts = {"base": carrier_like("b"), "cand": _after(carrier_like("c"), _mixed("c", 100)),
             "other": carrier_like("o")}
    root = _workspace(tmp_path / "ws")
    write_rows(root, look_rows([1, 2, 3], texts))
    assert _quiet(root) == (f"{GATE}: ships: none (sequential design, look 1 of 3 (3 seeds): FAIL for futility — "
                            "nothing ships)")
    write_rows(root, look_rows([4], texts))
    assert _quiet(root) == (f"{GATE}: ships: none (sequential design, look 2 of 3 (4 seeds): FAIL for futility — "
                            "nothing ships (stopped at look 1, 3 seeds))")
    doc = json.loads(run_cli("score", GATE, "-C", root, "--json").stdout)
    assert doc["look"]["decision"] == "FAIL" and doc["look"]["candidates"]["cand"]["look"] == 1
