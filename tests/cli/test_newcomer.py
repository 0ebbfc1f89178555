"""What a new user meets first: refusals that say where they are and what was meant."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import COMPOSE_FIXTURE
from helpers.bronte import as_shipped, bronte_workspace, generations, patch_scoring, write_jsonl
from helpers.workspace import base_spec, make_workspace, run_cli, tree_snapshot


def test_verify_outside_a_workspace_is_refused_not_an_all_clear(tmp_path: Path) -> None:
    done = run_cli("verify", cwd=tmp_path)
    assert done.code == 2
    assert done.stderr.strip() == (f"voicegate: {tmp_path.resolve()} is not a voicegate workspace "
                                   "(no preregistrations/); run `verify` in one or give -C DIR")
    assert "every chain holds" not in done.stdout


def test_an_empty_workspace_has_nothing_to_verify(tmp_path: Path) -> None:
    (tmp_path / "preregistrations").mkdir()
    done = run_cli("verify", cwd=tmp_path)
    assert done.code == 0 and "nothing to verify" in done.stdout


def test_a_misspelled_gate_names_the_gate_meant(tmp_path: Path) -> None:
    make_workspace(tmp_path, base_spec("lv-bronte"))
    before = tree_snapshot(tmp_path)
    for command in (("score", "lv-bornte"), ("verify", "lv-bornte"), ("register", "lv-bornte")):
        done = run_cli(*command, cwd=tmp_path)
        assert done.code == 2, (command, done.stderr)
        assert done.stderr.strip().endswith("lv-bornte.yaml: no such spec; did you mean lv-bronte?"), done.stderr
    assert tree_snapshot(tmp_path) == before


def test_an_unknown_gate_lists_the_gates_there_are(tmp_path: Path) -> None:
    make_workspace(tmp_path, base_spec("lv-bronte"))
    done = run_cli("score", "lv-hemingway", cwd=tmp_path)
    assert done.code == 2
    assert done.stderr.strip().endswith("lv-hemingway.yaml: no such spec (the gates here: lv-bronte); "
                                        "write it, then `voicegate register lv-hemingway`")


def test_a_gate_outside_any_workspace_says_so(tmp_path: Path) -> None:
    done = run_cli("score", "lv-bronte", cwd=tmp_path)
    assert done.code == 2 and "is not a voicegate workspace (no preregistrations/)" in done.stderr


def test_score_after_amend_shows_the_amended_decision(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After `amend`, `score` printed the old rule and "ships: none" while the record said ckpt475."""
    if not COMPOSE_FIXTURE.is_file():
        pytest.skip(f"fleet compose fixture not present at {COMPOSE_FIXTURE}")
    patch_scoring(monkeypatch)
    root = bronte_workspace(tmp_path / "ws", as_shipped(COMPOSE_FIXTURE))
    source = write_jsonl(tmp_path / "g.jsonl", generations())
    for command in (("import", "lv-bronte", str(source)), ("score", "lv-bronte"),
                    ("ship", "lv-bronte", "ckpt475", "--reason", "additive, reversible and safety-clean"),
                    ("amend", "lv-bronte", "--rule", "pairwise-max-spread", "--reason", "the global floor misled")):
        assert run_cli(*command, cwd=root).code == 0, command
    record = (root / "gates" / "lv-bronte.md").read_bytes()
    done = run_cli("score", "lv-bronte", cwd=root)
    assert done.code == 0, done.stderr
    assert "note: as amended " in done.stdout
    assert "global-max-spread -> pairwise-max-spread on these same generations" in done.stdout
    assert "ships: ckpt475 (VOICE PASS 2.1x under pairwise-max-spread" in done.stdout
    assert "ships: none" not in done.stdout
    assert (root / "gates" / "lv-bronte.md").read_bytes() == record  # nothing new to append
    quiet = run_cli("score", "lv-bronte", "--quiet", cwd=root)
    assert quiet.stdout.startswith("lv-bronte: ships: ckpt475") and "as amended" in quiet.stderr
    as_json = run_cli("score", "lv-bronte", "--json", cwd=root)
    assert '"rule": "pairwise-max-spread"' in as_json.stdout and "as amended" in as_json.stderr
    assert '"registered_rule": "global-max-spread"' in as_json.stdout


def test_amend_prints_the_new_verdicts_and_ship_warns_on_a_failed_candidate(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    if not COMPOSE_FIXTURE.is_file():
        pytest.skip(f"fleet compose fixture not present at {COMPOSE_FIXTURE}")
    patch_scoring(monkeypatch)
    root = bronte_workspace(tmp_path / "ws", as_shipped(COMPOSE_FIXTURE))
    assert run_cli("import", "lv-bronte", str(write_jsonl(tmp_path / "g.jsonl", generations())), cwd=root).code == 0
    assert run_cli("score", "lv-bronte", cwd=root).code == 0
    before = tree_snapshot(root)
    placeholder = run_cli("ship", "lv-bronte", "ckpt475", "--reason", "...", cwd=root)
    assert placeholder.code == 2 and "needs --reason" in placeholder.stderr and "'...' is not one" in placeholder.stderr
    assert tree_snapshot(root) == before
    shipped = run_cli("ship", "lv-bronte", "ckpt475", "--reason", "additive, reversible and safety-clean", cwd=root)
    assert shipped.code == 0
    assert shipped.stderr.strip() == (
        "warning: ckpt475 is not what the gate recommends under global-max-spread (short on VOICE FAIL; "
        "ships: none); the decision is recorded beside those verdicts")
    amended = run_cli("amend", "lv-bronte", "--rule", "pairwise-max-spread", "--reason", "the global floor misled",
                      cwd=root)
    assert amended.code == 0
    lines = amended.stdout.splitlines()
    assert lines[0] == "ckpt475: VOICE FAIL -> PASS 2.1x (+0.193 vs floor 0.091) · NOT-COPIED · NO-DAMAGE"
    assert lines[1] == "ckpt925: VOICE FAIL (unchanged) (+0.210 vs floor 0.251) · NOT-COPIED · NO-DAMAGE"
    assert lines[2] == "ships under pairwise-max-spread: ckpt475 (under global-max-spread: none)"


def test_bare_voicegate_shows_help_and_no_empty_error_line() -> None:
    for args, usage in (((), "Usage: voicegate [OPTIONS] COMMAND [ARGS]..."),
                        (("seat",), "Usage: voicegate seat [OPTIONS] COMMAND [ARGS]...")):
        done = run_cli(*args)
        assert done.code == 0 and done.stderr == ""
        lines = done.stdout.splitlines()
        assert lines[0] == usage and "Commands:" in lines  # the help as --help prints it, not one flattened line
        assert done.stdout == run_cli(*args, "--help").stdout


def test_help_pages_name_arguments_as_the_docs_do() -> None:
    done = run_cli("ship", "--help")
    assert done.code == 0
    lines = done.stdout.splitlines()
    assert lines[0] == "Usage: voicegate ship [OPTIONS] GATE ARM"
    assert any(ln.startswith("  GATE  The adapter's gate name") for ln in lines)
    assert "<str>" not in done.stdout and "{" not in done.stdout
    assert "--reason TEXT" in done.stdout and "[required]" in done.stdout.split("--reason", 1)[1].split("-C,")[0]
    demo = run_cli("demo", "--help").stdout
    assert demo.splitlines()[0] == "Usage: voicegate demo [OPTIONS] [DIR]"  # optional: in brackets
    assert "--prompts N" in demo and "--max-tokens N" in demo
    for command in (("score",), ("generate",), ("seat", "cost"), ("seat", "check"), ("report",), ("init",)):
        text = run_cli(*command, "--help").stdout
        assert not re.search(r"<(str|int|float|bool|path|list)\b|\{", text), (command, text)
