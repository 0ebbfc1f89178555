"""What a new user meets first (issue 14): refusals that say where they are and what was meant."""

from __future__ import annotations

from pathlib import Path

from _workspace import base_spec, make_workspace, run_cli, tree_snapshot


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
