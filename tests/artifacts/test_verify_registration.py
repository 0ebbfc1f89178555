"""`verify` holds each gate's registration as `generate` and `score` do: the record register committed, and the spec
and every pinned file unchanged since. Before, verify looked at the artifacts alone and said "every chain holds"
over a registration record replaced by `{}`, an edited spec and a changed corpus file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from helpers.workspace import base_spec, git, registered_workspace, run_cli

GATE = "lv-test"
REG = f"preregistrations/{GATE}.registration.json"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return registered_workspace(tmp_path_factory.mktemp("reg") / "ws", base_spec(GATE))


@pytest.fixture
def root(template: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(template, tmp_path / "ws", symlinks=True))


def _broken(root: Path, why: str) -> None:
    done = run_cli("verify", "-C", root)
    assert done.code == 1
    assert f"{REG} (registration, {GATE}):\n  BROKEN: {why}\n" in done.stdout
    assert done.stderr == f"voicegate: {REG}: {why}\n"
    assert "every chain holds" not in done.stdout


def test_an_intact_registration_is_said_with_its_commit(root: Path) -> None:
    commit = git(root, "log", "-1", "--format=%H", "--", REG).strip()
    done = run_cli("verify", "-C", root)
    assert done.code == 0, done.stderr
    assert (f"{REG} (registration, {GATE}):\n  the spec and its 4 pinned files as registered at commit {commit}\n"
            ) in done.stdout
    assert done.stdout.endswith("every chain holds\n")


def test_a_registration_record_replaced_by_hand_is_broken(root: Path) -> None:
    (root / REG).write_text("{}", encoding="utf-8")
    _broken(root, "not a registration record ('spec_sha256' must be a non-empty string); restore it from git, "
                  "where registration committed it")


def test_a_registration_record_edited_and_well_formed_is_not_the_one_register_committed(root: Path) -> None:
    data = json.loads((root / REG).read_text(encoding="utf-8"))
    data["registered_at"] = "2020-01-01T00:00:00Z"
    (root / REG).write_text(json.dumps(data, indent=2), encoding="utf-8")
    done = run_cli("verify", "-C", root)
    assert done.code == 1
    assert f"  BROKEN: {REG} is not the record `voicegate register` committed at " in done.stdout


def test_a_spec_edited_after_register_is_broken(root: Path) -> None:
    path = root / "preregistrations" / f"{GATE}.yaml"
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    spec["seeds"] = [101, 202, 303]
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    _broken(root, f"preregistrations/{GATE}.yaml differs from its registration: seeds (registered [101,202], "
                  "now [101,202,303])")


def test_a_pinned_file_changed_after_register_is_broken(root: Path) -> None:
    held = root / "corpora" / "held" / "held.txt"
    held.write_text(held.read_text(encoding="utf-8") + " one more word", encoding="utf-8")
    done = run_cli("verify", "-C", root)
    assert done.code == 1
    assert "  BROKEN: registered file changed since registration: corpora/held/held.txt; restore" in done.stdout


def test_without_git_the_record_is_held_to_the_spec_alone_and_says_so(root: Path) -> None:
    shutil.rmtree(root / ".git")
    done = run_cli("verify", "-C", root)
    assert done.code == 0, done.stderr
    assert ("  git: not checked: the workspace is not a git work tree, so no commit shows this is the record register "
            "committed (the spec and its files are held to the record alone)\n") in done.stdout
    (root / REG).write_text("{}", encoding="utf-8")
    assert run_cli("verify", "-C", root).code == 1
