"""A seat that mixes arms on first-time requests only, and the stored rows that give it away.

The seat (`repeats_right` keyed by cell, the reference waves spared) answers the first arm asked each cell
with the next served model's weights and every later arm of that cell with its own: about a third of the
rows are another arm's. Every canary check is a repeat of its cell (asked in the reference waves), so it
reproduces; only a re-ask of a row that was its cell's first ask meets the fault, and with a few re-asks a
run HELD about 1 time in 4. The rows themselves say it on every cell the fault hit: the wrong row is, word
for word, the next arm's right row of the same cell.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.workspace import cli, gate_spec, manifest, registered_workspace, rows, run_cli

from voicegate.generate import _generate
from voicegate.scoring import CanaryParams
from voicegate.seat import StandinSeat

GATE = "lv-ftm"
SERVED = f"{GATE}-ckpt475"
SEEDS = [101, 202, 303, 404]
PROMPTS = [f"Write scene {i} of the story, in the author's voice." for i in range(7)]
SPARED = 24     # the reference waves: each arm's own ask, its canary cells' rows, filled to the concurrency (8)


def _canary_checks_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every check a canary under a shorter max_tokens (no re-ask drawn): the run where the re-asks missed."""
    monkeypatch.setattr(_generate, "CanaryParams", lambda **kw: CanaryParams(reask_share=0.0, **kw))


def _workspace(tmp_path: Path, url: str) -> Path:
    return registered_workspace(tmp_path / "ws", gate_spec(GATE, url=url, concurrency=8, seeds=SEEDS),
                                prompts=PROMPTS)


def _checks(root: Path) -> list[dict]:
    lines = (root / "runs" / GATE / "canaries.jsonl").read_text().splitlines()
    return [c for c in map(json.loads, lines) if c["phase"] == "check"]


def test_first_time_only_mixing_fails_on_the_stored_rows_though_every_check_reproduces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _canary_checks_only(monkeypatch)
    with StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, token_time=0.0005, slots=8,
                     repeats_right=True, repeats_by_cell=True, faults_from=SPARED) as seat:
        root = _workspace(tmp_path, seat.url)
        done = cli(root, "generate", GATE, "--quiet")
    assert 15 <= seat.wrong_served <= 30, seat.wrong_served          # about a third of the 84 rows
    checks = _checks(root)
    assert checks and all(c["check"] == "canary" and c["status"] == "right" for c in checks)
    assert done.returncode == 4, done.stdout + done.stderr
    v = manifest(root, GATE)["sessions"][0]["integrity"]
    assert v["status"] == "failed" and v["right"] == v["sent"]
    [problem] = v["problems"]
    assert "stored cell(s) where two arms of different models answered alike" in problem
    assert "one arm's weights answered under the other's name" in problem
    assert "warning: seat integrity cannot hold for this session: " in done.stderr
    out = run_cli("score", GATE, cwd=root)
    lines = out.stderr.strip().splitlines()
    assert out.code == 2 and len(lines) == 1 and "refusing to decide: seat integrity" in lines[0], out.stderr
    assert "answered alike" in lines[0]
    assert not (root / "runs" / GATE / "scores.json").exists()
    # Held to the rows, as generate held them: --isolate-arms on a clean seat sets them aside and makes them again.
    with StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, token_time=0.0005, slots=8) as clean:
        again = cli(root, "generate", GATE, "--quiet", "--isolate-arms", "--seat", clean.url)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(rows(root, GATE)) == 84 and {r["session"] for r in rows(root, GATE)} == {1}
    assert len((root / "runs" / GATE / "quarantine.jsonl").read_text().splitlines()) == 84
    assert run_cli("score", GATE, cwd=root).code == 0


def test_a_clean_seat_leaves_no_cell_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same gate on a clean seat, every check a canary: holds, and score holds it."""
    _canary_checks_only(monkeypatch)
    with StandinSeat(adapters={SERVED: f"/adapters/{GATE}/ckpt475"}, token_time=0.0005, slots=8) as seat:
        root = _workspace(tmp_path, seat.url)
        done = cli(root, "generate", GATE, "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    assert manifest(root, GATE)["sessions"][0]["integrity"]["problems"] == []
    assert run_cli("score", GATE, cwd=root).code == 0


def test_a_cell_answered_alike_by_arms_of_one_model_or_in_a_few_words_is_no_problem() -> None:
    from voicegate.scoring import Calibration, alike_problem

    cal = Calibration(1.0, 0.3, 0.53)
    params = CanaryParams()
    long = "the moor was grey and the wind rose over the hills all night long"
    cell = ("voice", 101, "p1")
    models = {"base": "voices-base", "aa": "voices-base", "x": "lv-x"}
    assert alike_problem({cell: {"base": long, "aa": long}}, cal, models, params) is None
    assert alike_problem({cell: {"base": "Yes, she said.", "x": "Yes, she said."}}, cal, models, params) is None
    said = alike_problem({cell: {"base": long, "x": long.upper()}}, cal, models, params)
    assert said == ("1 stored cell(s) where two arms of different models answered alike (base and x; e.g. prompt p1 "
                    "seed 101: base and x at similarity 1.000, the seat's own reproduction 1.000): one arm's weights "
                    "answered under the other's name")
    # An uncalibrated session fails on its calibration already: nothing more is said.
    assert alike_problem({cell: {"base": long, "x": long}}, Calibration(None, None, None, "no references"),
                         models, params) is None
