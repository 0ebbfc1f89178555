"""An artifact path must be a file of its own, inside the workspace unless the spec says so.

`artifacts.record`, `artifacts.readme` and `artifacts.compose` are refused at
register (exit 2, one line, nothing written) when they name a file voicegate
owns or reads (the spec, a registration record, a run-dir file, a corpus, the
prompts, the probes, another artifact of the gate or of another gate), or
resolve — after symlinks — outside the workspace, unless
`artifacts.outside_workspace` names that artifact (an adapter directory on a
mounted volume). The same check runs again when `score`, `ship` and `amend`
write, because a file can be swapped for a symlink after register.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.bronte import README, as_shipped, bronte_spec, bronte_workspace, generations, patch_scoring, write_jsonl
from helpers.workspace import Result, git, register_prospective, run_cli, tree_snapshot

REASON = "additive, reversible and safety-clean"


@pytest.fixture
def compose_bytes(compose_fixture: Path) -> bytes:
    return as_shipped(compose_fixture)


def _spec(*, probes: bool = False, **artifacts: Any) -> dict[str, Any]:
    spec = bronte_spec()
    if probes:
        spec["damage"] = {"probes": "probes/general.yaml", "tolerance": 0.05}
    spec["artifacts"].update(artifacts)
    return spec


def _workspace(root: Path, spec: dict[str, Any], compose: bytes | None = None) -> Path:
    """An lv-bronte workspace for `spec`, not yet registered (with a probes file)."""
    probes = root / "probes" / "general.yaml"
    probes.parent.mkdir(parents=True, exist_ok=True)
    probes.write_text(yaml.safe_dump({"probes": [{"id": "p1", "prompt": "Capital of France?",
                                                  "check": {"regex": "(?i)paris"}}]}), encoding="utf-8")
    return bronte_workspace(root, compose, register=False, spec=spec)


def _refused(root: Path, done: Result, *words: str) -> None:
    assert done.code == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in lines[0], lines[0]


def _register_refused(root: Path, *words: str) -> None:
    before = tree_snapshot(root)
    head = git(root, "rev-parse", "HEAD")
    _refused(root, run_cli("register", "lv-bronte", cwd=root), *words)
    assert tree_snapshot(root) == before and git(root, "rev-parse", "HEAD") == head
    assert not (root / "preregistrations/lv-bronte.registration.json").exists()


# -- at register: files voicegate owns or reads -----------------------------------------------------

OWNED = {
    "the spec": "preregistrations/lv-bronte.yaml",
    "the registration record": "preregistrations/lv-bronte.registration.json",
    "generations.jsonl": "runs/lv-bronte/generations.jsonl",
    "run.json": "runs/lv-bronte/run.json",
    "the scoring cache": "runs/.cache/x.md",
    "a training corpus file": "corpora/train/train.txt",
    "a held-out corpus file": "corpora/held/held.txt",
    "a background corpus file": "corpora/back/back.txt",
    "the prompts file": "prompts/bronte-beats.txt",
    "the probes file": "probes/general.yaml",
    "git's own files": ".git/description",
}


@pytest.mark.parametrize("what", sorted(OWNED))
@pytest.mark.parametrize("key", ["readme", "record", "compose"])
def test_an_artifact_naming_a_file_voicegate_owns_or_reads_is_refused(tmp_path: Path, key: str, what: str) -> None:
    root = _workspace(tmp_path / "ws", _spec(probes=True, **{key: OWNED[what]}))
    _register_refused(root, f"artifacts.{key}", OWNED[what])


@pytest.mark.parametrize(("key", "other"), [("compose", "record"), ("readme", "record"), ("compose", "readme")])
def test_two_artifacts_of_one_gate_in_one_file_are_refused(tmp_path: Path, key: str, other: str,
                                                          compose_bytes: bytes) -> None:
    spec = _spec()
    spec["artifacts"][key] = spec["artifacts"][other]
    root = _workspace(tmp_path / "ws", spec, compose_bytes)
    _register_refused(root, f"artifacts.{key}", f"artifacts.{other}")


def test_the_same_file_spelled_two_ways_is_one_file(tmp_path: Path, compose_bytes: bytes) -> None:
    root = _workspace(tmp_path / "ws", _spec(record="deploy/../deploy/./compose.yaml"), compose_bytes)
    _register_refused(root, "artifacts.record", "artifacts.compose")


def test_another_gates_record_is_refused(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", _spec())
    other = bronte_spec()
    other.update(gate="lv-yarros", artifacts={"record": "gates/lv-yarros.md", "compose": "deploy/compose.yaml"})
    (root / "preregistrations/lv-yarros.yaml").write_text(yaml.safe_dump(other), encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "another gate")
    assert run_cli("register", "lv-yarros", cwd=root).code == 0
    spec = _spec(readme="gates/lv-yarros.md")
    (root / "preregistrations/lv-bronte.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    _register_refused(root, "artifacts.readme", "lv-yarros")


def test_a_hard_link_to_a_corpus_is_the_corpus(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", _spec())
    readme = root / "adapters/lv-bronte-4b-v1/README.md"
    readme.unlink()
    os.link(root / "corpora/train/train.txt", readme)
    _register_refused(root, "artifacts.readme", "training corpus")


def test_a_directory_is_not_an_artifact(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", _spec(readme="adapters/lv-bronte-4b-v1"))
    _register_refused(root, "artifacts.readme", "not a regular file")


# -- at register: outside the workspace -------------------------------------------------------------


def _mounted(tmp_path: Path) -> Path:
    """An adapter directory on a 'mounted volume' outside the workspace, with its README."""
    outside = tmp_path / "mnt" / "adapters" / "lv-bronte-4b-v1" / "README.md"
    outside.parent.mkdir(parents=True)
    outside.write_text(README, encoding="utf-8")
    return outside


def test_an_absolute_path_outside_the_workspace_is_refused(tmp_path: Path) -> None:
    outside = _mounted(tmp_path)
    root = _workspace(tmp_path / "ws", _spec(readme=str(outside)))
    _register_refused(root, "artifacts.readme", "outside the workspace", "artifacts.outside_workspace")
    assert outside.read_text(encoding="utf-8") == README


def test_a_relative_path_climbing_out_is_refused(tmp_path: Path) -> None:
    _mounted(tmp_path)
    root = _workspace(tmp_path / "ws", _spec(readme="../mnt/adapters/lv-bronte-4b-v1/README.md"))
    _register_refused(root, "artifacts.readme", "outside the workspace")


def test_a_symlink_inside_the_workspace_pointing_outside_is_refused(tmp_path: Path) -> None:
    outside = _mounted(tmp_path)
    root = tmp_path / "ws"
    _workspace(root, _spec())
    readme = root / "adapters/lv-bronte-4b-v1/README.md"
    readme.unlink()
    readme.symlink_to(outside)
    _register_refused(root, "artifacts.readme", "outside the workspace")


def test_a_symlinked_directory_pointing_outside_is_refused(tmp_path: Path) -> None:
    outside = _mounted(tmp_path)
    root = tmp_path / "ws"
    _workspace(root, _spec(readme="mounted/README.md"))
    (root / "mounted").rmdir()   # the helper made the README's folder; here it is a symlink out instead
    (root / "mounted").symlink_to(outside.parent)
    _register_refused(root, "artifacts.readme", "outside the workspace")


def test_a_symlink_to_a_corpus_is_the_corpus(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _workspace(root, _spec())
    readme = root / "adapters/lv-bronte-4b-v1/README.md"
    readme.unlink()
    readme.symlink_to(root / "corpora/held/held.txt")
    _register_refused(root, "artifacts.readme", "held-out corpus")


def test_the_gate_record_cannot_be_allowed_outside(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", _spec(outside_workspace=["record"]))
    _register_refused(root, "artifacts.outside_workspace", "'record'", "readme, compose")


def test_an_unknown_artifact_cannot_be_allowed_outside(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", _spec(outside_workspace=["readme", "weights"]))
    _register_refused(root, "artifacts.outside_workspace[1]", "'weights'")


def test_the_explicit_allowance_lets_a_mounted_readme_through(tmp_path: Path, compose_bytes: bytes,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    patch_scoring(monkeypatch)
    outside = _mounted(tmp_path)
    root = _workspace(tmp_path / "ws", _spec(readme=str(outside), outside_workspace=["readme"]), compose_bytes)
    assert run_cli("register", "lv-bronte", cwd=root).code == 0
    register_prospective(root)  # what the amendment below cites
    source = write_jsonl(tmp_path / "g.jsonl", generations())
    for step in (("import", "lv-bronte", source), ("score", "lv-bronte"),
                 ("ship", "lv-bronte", "ckpt475", "--reason", REASON),
                 ("amend", "lv-bronte", "--rule", "pairwise-max-spread", "--reason", "the global floor is defective")):
        done = run_cli(*step, cwd=root)
        assert done.code == 0, (step, done.stderr)
    text = outside.read_text(encoding="utf-8")
    assert text.startswith(README) and text.count("<!-- voicegate:entry ") == 3
    done = run_cli("verify", "lv-bronte", cwd=root)
    assert done.code == 0, done.stdout + done.stderr


def test_the_allowance_still_refuses_an_owned_file(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", _spec(readme="corpora/train/train.txt", outside_workspace="readme"))
    _register_refused(root, "artifacts.readme", "training corpus")


# -- again when a verdict is written ---------------------------------------------------------------


@pytest.fixture
def imported(tmp_path: Path, compose_bytes: bytes, monkeypatch: pytest.MonkeyPatch) -> Path:
    patch_scoring(monkeypatch)
    root = _workspace(tmp_path / "ws", _spec(), compose_bytes)
    assert run_cli("register", "lv-bronte", cwd=root).code == 0
    assert run_cli("import", "lv-bronte", write_jsonl(tmp_path / "g.jsonl", generations()), cwd=root).code == 0
    return root


def _swap_for_symlink(path: Path, target: Path) -> None:
    path.unlink()
    path.symlink_to(target)


def _verdict_refused(root: Path, step: tuple[str, ...], *words: str) -> None:
    before = tree_snapshot(root)
    _refused(root, run_cli(*step, cwd=root), *words)
    assert tree_snapshot(root) == before


def test_score_refuses_a_readme_swapped_for_a_symlink_outside(imported: Path, tmp_path: Path) -> None:
    outside = _mounted(tmp_path)
    _swap_for_symlink(imported / "adapters/lv-bronte-4b-v1/README.md", outside)
    _verdict_refused(imported, ("score", "lv-bronte"), "artifacts.readme", "outside the workspace")
    assert outside.read_text(encoding="utf-8") == README
    assert not (imported / "gates/lv-bronte.md").exists()


def test_score_refuses_a_readme_swapped_for_a_symlink_to_a_corpus(imported: Path) -> None:
    corpus = imported / "corpora/train/train.txt"
    held = corpus.read_bytes()
    _swap_for_symlink(imported / "adapters/lv-bronte-4b-v1/README.md", corpus)
    _verdict_refused(imported, ("score", "lv-bronte"), "artifacts.readme", "training corpus")
    assert corpus.read_bytes() == held


def test_ship_refuses_a_compose_swapped_for_a_symlink_outside(imported: Path, tmp_path: Path) -> None:
    assert run_cli("score", "lv-bronte", cwd=imported).code == 0
    compose = imported / "deploy/compose.yaml"
    outside = tmp_path / "srv" / "compose.yaml"
    outside.parent.mkdir()
    outside.write_bytes(compose.read_bytes())
    _swap_for_symlink(compose, outside)
    snapshot = outside.read_bytes()
    _verdict_refused(imported, ("ship", "lv-bronte", "ckpt475", "--reason", REASON),
                     "artifacts.compose", "outside the workspace")
    assert outside.read_bytes() == snapshot


def test_amend_refuses_a_record_swapped_for_a_symlink_to_the_spec(imported: Path) -> None:
    assert run_cli("score", "lv-bronte", cwd=imported).code == 0
    record = imported / "gates/lv-bronte.md"
    spec = imported / "preregistrations/lv-bronte.yaml"
    spec_bytes = spec.read_bytes()
    # the spec's own copy, so the registration check (which reads the spec) still passes
    _swap_for_symlink(record, spec)
    _verdict_refused(imported, ("amend", "lv-bronte", "--rule", "pairwise-max-spread", "--reason", "defective floor"),
                     "artifacts.record", "the spec")
    assert spec.read_bytes() == spec_bytes


def test_the_repositorys_hemingway_spec_keeps_its_artifacts_in_the_workspace() -> None:
    from voicegate.spec._artifact_paths import check_artifact_paths
    from voicegate.spec._spec import read_spec_yaml, validate

    repo = Path(__file__).resolve().parents[2]
    path = repo / "preregistrations" / "lv-hemingway.yaml"
    spec = validate(read_spec_yaml(path), path, repo, check_files=False)
    # the example names workspace-relative artifacts, so nothing is outside
    assert spec.artifacts.outside_workspace == ()
    check_artifact_paths(spec)
