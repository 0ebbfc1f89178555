"""Run data deleted by hand: recorded.json, the ledger, or the whole run directory.

The run directory is not committed and a user can delete any of it; the gate record is the evidence. What each
command does then:

- recorded.json alone gone (the run's copy of the result in force, which ship, note and amend read): `verify`
  says so and names the fix; `score` rebuilds it, byte for byte, from the record's newest verdict entry — only when
  re-scoring the stored generations gives the very result that entry states (its sha256), never from other
  numbers (then exit 2, one line) — appends nothing to the artifacts, and the ledger says so for `verify`;
- the ledger gone beside recorded.json: every verdict command refuses (exit 2, one line, nothing written), where
  before `ship` and `note` appended and started a new ledger that turned verify's BROKEN into a note;
- the whole run directory gone: `score`, `ship`, `note`, `amend` and `report` refuse in one line that names
  what is gone and that runs/GATE/ must be restored; `verify` checks the chains alone.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.bronte import DISTANCES, as_shipped, bronte_workspace, generations, patch_scoring, write_jsonl
from helpers.workspace import Templates, register_prospective, run_cli

GATE = "lv-bronte"
RUN = f"runs/{GATE}"
ARTIFACTS = ("gates/lv-bronte.md", "adapters/lv-bronte-4b-v1/README.md", "deploy/compose.yaml")
SHIP = ("ship", GATE, "ckpt475", "--reason", "still additive, reversible and safety-clean")
NOTE = ("note", GATE, "--text", "looked at the run data again")
AMEND = ("amend", GATE, "--rule", "welch-t", "--reason", "a test of the refusal", "--post-hoc")


def _build(root: Path, compose: bytes, amend: bool) -> None:
    with pytest.MonkeyPatch.context() as mp:
        patch_scoring(mp)
        bronte_workspace(root, compose, prospective=False)
        rows = write_jsonl(root.parent / f"{root.name}.jsonl", generations())
        for command in (("import", GATE, rows), ("score", GATE),
                        ("ship", GATE, "ckpt475", "--reason", "additive, reversible and safety-clean")):
            done = run_cli(*command, cwd=root)
            assert done.code == 0, (command, done.stderr)
        if amend:
            register_prospective(root, "lv-dummy", "pairwise-max-spread")  # after lv-bronte's numbers: post-hoc
            done = run_cli("amend", GATE, "--rule", "pairwise-max-spread", "--reason", "the global floor misled",
                           "--post-hoc", cwd=root)
            assert done.code == 0, done.stderr


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Templates:
    return Templates(tmp_path_factory.mktemp("run-data-deleted"))


@pytest.fixture(params=[False, True], ids=["scored", "amended"])
def ws(request: pytest.FixtureRequest, templates: Templates, tmp_path: Path, compose_fixture: Path,
       monkeypatch: pytest.MonkeyPatch) -> Path:
    amend: bool = request.param
    patch_scoring(monkeypatch)
    name = "amended" if amend else "scored"
    return templates.copy(name, lambda p: _build(p, as_shipped(compose_fixture), amend), tmp_path / "ws")


def _artifacts(root: Path) -> list[bytes]:
    return [(root / a).read_bytes() for a in ARTIFACTS]


def _refused(root: Path, *command: str) -> str:
    """`command` exits 2 with one line on stderr and writes no artifact byte; returns that line."""
    before = _artifacts(root)
    done = run_cli(*command, "-C", root)
    assert done.code == 2, (command, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("voicegate: ") and "Traceback" not in done.stderr, done.stderr
    assert [ln for ln in lines if not ln.startswith("voicegate: note: as amended")] == [lines[-1]], lines
    assert _artifacts(root) == before, command
    return lines[-1]


def test_score_rebuilds_a_deleted_recorded_json_from_the_record_and_verify_says_so(ws: Path) -> None:
    state = ws / RUN / "recorded.json"
    kept, before = state.read_bytes(), _artifacts(ws)
    newest = json.loads(kept)
    state.unlink()

    missing = run_cli("verify", "-C", ws)
    assert missing.code == 0, missing.stdout
    assert (f"note: {RUN}/recorded.json (the run's copy of the result in force) is missing, so `ship`, `note` and "
            f"`amend` refuse: `voicegate score {GATE}` rebuilds it from the record") in missing.stdout
    assert _refused(ws, *NOTE).endswith(f"is missing; run `voicegate score {GATE}` to rebuild it from the record")

    done = run_cli("score", GATE, "-C", ws)
    assert done.code == 0, done.stderr
    what = "amendment" if newest["current_kind"] == "amend" else "score"
    entry = 3 if what == "amendment" else 1
    assert (f"{RUN}/recorded.json: rebuilt from entry {entry} of gates/{GATE}.md (the {what} of {newest['time']}): "
            "re-scoring the stored generations gives the result it states (sha256 ") in done.stdout
    assert state.read_bytes() == kept            # the very bytes the verdicts wrote
    assert _artifacts(ws) == before              # nothing appended, nothing duplicated

    again = run_cli("score", GATE, "-C", ws)     # rebuilt once: the record is current again
    assert again.code == 0 and "the record is current" in again.stdout and "rebuilt" not in again.stdout
    checked = run_cli("verify", "-C", ws)
    assert checked.code == 0, checked.stdout
    assert f"{RUN}/recorded.json rebuilt at " in checked.stdout and "(it was missing)" in checked.stdout
    assert "is missing, so" not in checked.stdout
    noted = run_cli(*NOTE, "-C", ws)             # ship, note and amend read it again
    assert noted.code == 0, noted.stderr
    assert run_cli("verify", "-C", ws).code == 0


def test_a_recorded_json_is_never_rebuilt_from_other_numbers(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (ws / RUN / "recorded.json").unlink()
    # the same generations, scored to other numbers (as a changed corpus or scorer would)
    monkeypatch.setitem(DISTANCES, "base", {**DISTANCES["base"], 101: 0.9})
    line = _refused(ws, "score", GATE)
    assert line.startswith(f"voicegate: {RUN}/recorded.json is missing, and re-scoring the stored generations gives "
                           "result sha256 "), line
    assert line.endswith(f"the run's copy of the result in force is not rebuilt from other numbers; restore {RUN}/ "
                         "from where it was kept"), line
    assert not (ws / RUN / "recorded.json").exists()


def test_a_deleted_ledger_stops_every_verdict_command(ws: Path) -> None:
    (ws / RUN / "entries.jsonl").unlink()
    refusal = (f"voicegate: {RUN}/entries.jsonl: {GATE}'s ledger is gone while its run data is here "
               f"({RUN}/recorded.json), so no entry is appended (`voicegate verify` says BROKEN): restore the ledger "
               "from a backup")
    for command in (("score", GATE), SHIP, NOTE, AMEND):
        assert _refused(ws, *command) == refusal
    assert not (ws / RUN / "entries.jsonl").exists()
    assert run_cli("verify", "-C", ws).code == 1  # still BROKEN: no new ledger turned it into a note

    # recorded.json gone with it: nothing to rebuild it beside
    (ws / RUN / "recorded.json").unlink()
    line = _refused(ws, "score", GATE)
    assert line.startswith(f"voicegate: {RUN}/recorded.json is missing and so is the run's ledger "
                           f"({RUN}/entries.jsonl)"), line
    assert line.endswith(f"restore {RUN}/ from where it was kept"), line
    for command in (SHIP, NOTE):
        assert _refused(ws, *command).endswith(f"restore {RUN}/ from where it was kept (its ledger is gone too)")


@pytest.mark.parametrize("lose", [lambda root: shutil.rmtree(root / "runs"), lambda root: shutil.rmtree(root / RUN)],
                         ids=["runs", "run-directory"])
def test_a_deleted_run_directory_is_named_by_every_command(ws: Path, lose: Callable[[Path], None]) -> None:
    lose(ws)
    score = _refused(ws, "score", GATE)
    assert ", though its record holds verdicts on generations sha256 " in score, score
    assert score.endswith(f": restore {RUN}/ from where it was kept (new generations from `voicegate generate` or "
                          "`import` are scored as a new run)"), score
    for command in (SHIP, NOTE, AMEND):
        what = command[0]
        assert _refused(ws, *command) == (
            f"voicegate: nothing to {what}: the record holds {GATE}'s verdicts but the run's copy of the result in "
            f"force ({RUN}/recorded.json) is missing; restore {RUN}/ from where it was kept (its generations are "
            "gone too)")
    assert "its run data is not in this checkout" in _refused(ws, "report", GATE)
    checked = run_cli("verify", "-C", ws)
    assert checked.code == 0 and "no run ledger lists it (run data absent?)" in checked.stdout, checked.stdout
    assert not (ws / RUN / "recorded.json").exists() and not (ws / RUN / "entries.jsonl").exists()


def test_an_amendment_is_scored_under_the_gates_registered_checks_so_recorded_json_rebuilds(tmp_path: Path) -> None:
    """A gate registered under dated checks (thin evidence, a weak ruler) is held to them by `amend` as by `score`:
    the amendment's signature names them as the score's does, and its result is the one `score` re-computes, so a
    deleted recorded.json is rebuilt from the amendment entry rather than refused as "other numbers"."""
    import re

    import yaml
    from helpers.workspace import GATE as TEST_GATE
    from helpers.workspace import N_PROMPTS, SEEDS, constructed_spec, scoring_workspace, text

    from voicegate.spec._registration import register
    from voicegate.spec._spec import load_spec

    root = scoring_workspace(tmp_path / "ws")
    style = {"base": 1, "cand": 0, "other": 2}
    rows = [{"arm": arm, "seed": s, "prompt_id": str(p), "text": text(120, f"{arm}/{s}/{p}", st)}
            for arm, st in style.items() for s in SEEDS for p in range(N_PROMPTS)]
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for args in (("import", TEST_GATE, source), ("score", TEST_GATE)):
        done = run_cli(*args, cwd=root)
        assert done.code == 0, (args, done.stderr)
    other = {**constructed_spec(), "gate": "lv-other", "floor": {"rule": "global-max-spread"},
             "artifacts": {"record": "gates/lv-other.md"}}
    (root / "preregistrations" / "lv-other.yaml").write_text(yaml.safe_dump(other), encoding="utf-8")
    register(load_spec(root, "lv-other"))  # after lv-test's numbers: a post-hoc citation
    done = run_cli("amend", TEST_GATE, "--rule", "global-max-spread", "--post-hoc", "--reason",
                   "the pairwise floor is the wrong question for this gate", cwd=root)
    assert done.code == 0, done.stderr

    record = (root / "gates" / f"{TEST_GATE}.md").read_text(encoding="utf-8")
    checks = [re.search(r"\|checks:([^|`]*)`", ln) for ln in record.splitlines() if ln.startswith("Signature: ")]
    assert len(checks) == 2 and checks[0] is not None and checks[1] is not None, checks
    assert checks[1].group(1) == checks[0].group(1) == "thin-evidence@1,ruler-weak@1"

    state = root / "runs" / TEST_GATE / "recorded.json"
    kept = state.read_bytes()
    state.unlink()
    rebuilt = run_cli("score", TEST_GATE, cwd=root)
    assert rebuilt.code == 0, rebuilt.stderr
    assert f"runs/{TEST_GATE}/recorded.json: rebuilt from entry 2 of gates/{TEST_GATE}.md (the amendment of " \
           in rebuilt.stdout
    assert state.read_bytes() == kept


def test_a_deleted_scores_json_alone_is_named_with_its_fix(ws: Path) -> None:
    """scores.json gone, the rest of the run directory here: `report` says `score` writes it again (not that the
    run data is not in this checkout), and after that `score` the page is drawn."""
    (ws / RUN / "scores.json").unlink()
    entries = (ws / f"gates/{GATE}.md").read_text(encoding="utf-8").count("<!-- voicegate:entry ")
    assert _refused(ws, "report", GATE) == (
        f"voicegate: {GATE} was scored ({entries} entries in gates/{GATE}.md), but {RUN}/scores.json is missing "
        f"beside its stored generations: run `voicegate score {GATE}` to write it again from them")
    assert run_cli("score", GATE, "-C", ws).code == 0
    assert run_cli("report", GATE, "-C", ws).code == 0


def test_a_recorded_json_edited_by_hand_is_never_written_into_an_artifact(ws: Path) -> None:
    """recorded.json edited with its own hashes made to agree (a delta_cb and a VOICE word changed): `ship`, `note`
    and `amend` write their verdict words from it, so each refuses (exit 2, one line, nothing written) as its result
    is not the one the record's newest verdict entry states; `verify` says so; deleted, `score` rebuilds it."""
    from voicegate.artifacts import result_sha256
    from voicegate.scoring import GateResult

    state_path = ws / RUN / "recorded.json"
    kept = state_path.read_bytes()
    state = json.loads(kept)
    arm = next(a for a in state["current"]["arms"] if a["name"] == "ckpt925")
    arm["delta_cb"], arm["voice"] = 0.999, {rule: "PASS" for rule in arm["voice"]}
    forged = GateResult.from_json(state["current"])
    state["current"], state["results"][forged.rule] = forged.to_json(), result_sha256(forged)
    state_path.write_text(json.dumps(state), encoding="utf-8")

    for command in (SHIP, NOTE, AMEND):
        line = _refused(ws, *command)
        assert line.startswith(f"voicegate: nothing to {command[0]}: {RUN}/recorded.json (the run's copy of the "
                               "result in force) is not the result entry "), line
        assert line.endswith("edited or replaced by hand; the record is the evidence (delete the copy: `voicegate "
                             "score` rebuilds it from the record)"), line
    checked = run_cli("verify", GATE, "-C", ws)
    assert checked.code == 1 and "BROKEN: recorded.json (the run's copy of the result in force) is not the result " \
        "entry " in checked.stdout, checked.stdout
    state_path.unlink()
    assert run_cli("score", GATE, "-C", ws).code == 0
    assert state_path.read_bytes() == kept
    assert run_cli(*SHIP, "-C", ws).code == 0 and run_cli("verify", GATE, "-C", ws).code == 0
