"""Malformed specs and names exit 2 with one line, no traceback, nothing written."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.workspace import base_spec, cli, git, make_workspace, tree_snapshot

Spec = dict[str, Any]


def _set(path: str, value: Any) -> Callable[[Spec], None]:
    def edit(spec: Spec) -> None:
        *head, last = path.split(".")
        node = spec
        for k in head:
            node = node[int(k)] if isinstance(node, list) else node[k]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return edit


def _drop(key: str) -> Callable[[Spec], None]:
    return lambda spec: spec.pop(key)


def _two_bases(spec: Spec) -> None:
    spec["arms"][1]["role"] = "base"


def _dup_arm(spec: Spec) -> None:
    spec["arms"][2]["name"] = "ckpt475"


def _dup_model(spec: Spec) -> None:
    spec["arms"][2]["model"] = spec["arms"][1]["model"]


def _only_base(spec: Spec) -> None:
    spec["arms"] = spec["arms"][:1]


# (id, edit of the spec dict, extra files to write or None, text the message must contain)
CASES: list[tuple[str, Callable[[Spec], None] | None, dict[str, bytes] | None, str]] = [
    ("missing-arms", _drop("arms"), None, "arms: required key is missing"),
    ("missing-three", lambda spec: [spec.pop(k) for k in ("arms", "seeds", "floor")], None,
     "required keys are missing: arms, seeds, floor"),
    ("two-base-arms", _two_bases, None, "exactly one arm with role: base"),
    ("duplicate-arm-names", _dup_arm, None, "duplicate arm name"),
    ("duplicate-models", _dup_model, None, "duplicate arm model"),
    ("no-candidate", _only_base, None, "at least one candidate"),
    ("unknown-floor-rule", _set("floor.rule", "median-spread"), None, "unknown floor rule"),
    ("empty-prompts-file", None, {"prompts/beats.txt": b"\n  \n"}, "no non-empty prompt"),
    ("missing-corpus", _set("corpora.heldout", ["corpora/nowhere/*.txt"]), None, "matches no file"),
    ("non-utf8-corpus", None, {"corpora/train/train.txt": b"caf\xe9 \xff\xfe"}, "not UTF-8"),
    ("negative-max-tokens", _set("sampling.max_tokens", -5), None, "sampling.max_tokens"),
    ("unknown-key", lambda s: s.__setitem__("floors", {"rule": "x"}), None, "floors: unknown key"),
    ("unknown-nested-key", _set("copying.tolerence", 0.1), None, "copying.tolerence: unknown key"),
    ("empty-seeds", _set("seeds", []), None, "seeds"),
    ("duplicate-seeds", _set("seeds", [101, 101]), None, "seeds are not unique"),
    ("string-seed", _set("seeds", [101, "202"]), None, "seeds[1]"),
    ("temperature-out-of-range", _set("sampling.temperature", 9), None, "sampling.temperature"),
    ("bad-role", _set("arms.1.role", "champion"), None, "arms[1].role"),
    ("no-background-for-stylometric", lambda s: s["corpora"].pop("background"), None, "corpora.background"),
    ("bad-gate-in-spec", _set("gate", "LV BAD"), None, "gate"),
    ("hub-embedding-unpinned", _set("voice", {"view": "embedding", "model": "some/hub-model"}), None,
     "voice.revision"),
    ("seat-url-not-http", _set("seat.url", "ftp://seat"), None, "seat.url"),
    ("broken-yaml", None, {"preregistrations/lv-test.yaml": b"gate: lv-test\narms: [\n"}, "not valid YAML"),
    ("spec-not-a-mapping", None, {"preregistrations/lv-test.yaml": b"- just\n- a list\n"}, "must be a mapping"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_malformed_spec_is_refused(tmp_path: Path, case) -> None:
    _, edit, files, expected = case
    spec = copy.deepcopy(base_spec())
    if edit is not None:
        edit(spec)
    make_workspace(tmp_path, spec)
    for rel, data in (files or {}).items():
        (tmp_path / rel).write_bytes(data)
    before = tree_snapshot(tmp_path)
    head = (tmp_path / ".git" / "HEAD").read_bytes()

    done = cli(tmp_path, "register", "lv-test")

    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert expected in lines[0]
    assert "lv-test.yaml" in lines[0]  # names the file
    assert tree_snapshot(tmp_path) == before
    assert (tmp_path / ".git" / "HEAD").read_bytes() == head


@pytest.mark.parametrize("name", ["../../etc/passwd", "LV BAD", "lv_bad", "bronte", "lv-", "lv-x/../y", ""])
def test_bad_gate_names_are_refused_before_touching_a_path(tmp_path: Path, name: str) -> None:
    make_workspace(tmp_path)
    before = tree_snapshot(tmp_path)
    for command in (["register", name], ["score", name], ["generate", name]):
        done = cli(tmp_path, *command)
        assert done.returncode == 2, (command, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1
        assert "Traceback" not in done.stderr
    assert tree_snapshot(tmp_path) == before


def test_name_pattern_is_configurable(tmp_path: Path) -> None:
    spec = base_spec("voice-test")
    make_workspace(tmp_path, spec)
    refused = cli(tmp_path, "register", "voice-test")
    assert refused.returncode == 2 and "lv-[a-z0-9-]+" in refused.stderr
    done = cli(tmp_path, "register", "voice-test", env={"VOICEGATE_NAME_PATTERN": r"voice-[a-z]+"})
    assert done.returncode == 0, done.stderr


def test_missing_spec_file(tmp_path: Path) -> None:
    make_workspace(tmp_path)
    done = cli(tmp_path, "register", "lv-nobody")
    assert done.returncode == 2
    assert "lv-nobody.yaml: no such spec" in done.stderr


def test_prompt_ids_follow_the_design(tmp_path: Path) -> None:
    from voicegate.spec._spec import parse_spec

    path = make_workspace(tmp_path)
    spec = parse_spec(path, tmp_path)
    # 0-based index among NON-EMPTY lines (the file has a blank second line)
    assert [(p.id, p.text) for p in spec.prompts] == [
        ("0", "Write about the moor."), ("1", "Write about a letter."), ("2", "Write about rain.")]
    (tmp_path / "prompts" / "beats.jsonl").write_text(
        '{"id": "moor", "text": "Moor."}\n{"id": 7, "text": "Seven."}\n', encoding="utf-8")
    raw = base_spec()
    raw["prompts"] = "prompts/beats.jsonl"
    path.write_text(__import__("yaml").safe_dump(raw), encoding="utf-8")
    assert [p.id for p in parse_spec(path, tmp_path).prompts] == ["moor", "7"]


def test_every_missing_file_is_named_in_one_line(tmp_path: Path) -> None:
    # prompts, corpora, probes and the README's folder at once, not one error per attempt
    spec = copy.deepcopy(base_spec())
    spec["prompts"] = "prompts/nowhere.txt"
    spec["corpora"]["heldout"] = ["corpora/held-missing/*.txt"]
    spec["corpora"]["background"] = ["corpora/back/*.txt", "corpora/more/*.txt"]
    spec["damage"]["probes"] = "probes/none.yaml"
    spec["artifacts"]["readme"] = "adapters/lv-test-v1/README.md"
    make_workspace(tmp_path, spec)
    (tmp_path / "adapters" / "lv-test-v1").rmdir()
    (tmp_path / "probes" / "none.yaml").unlink()   # the helper writes every file the spec names
    before = tree_snapshot(tmp_path)

    done = cli(tmp_path, "register", "lv-test")

    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    line = lines[0]
    assert "lv-test.yaml" in line and "5 files the spec needs are missing" in line, line
    for part in ("prompts prompts/nowhere.txt", "corpora.heldout[0] glob 'corpora/held-missing/*.txt' matches no file",
                 "corpora.background[1] glob 'corpora/more/*.txt' matches no file", "damage.probes probes/none.yaml",
                 "artifacts.readme adapters/lv-test-v1/README.md (its folder adapters/lv-test-v1/ does not exist"):
        assert part in line, part
    assert "corpora.background[0]" not in line  # that glob matches
    assert "artifacts.compose deploy/compose.yaml does not exist yet" in line  # named, as not needed yet
    assert tree_snapshot(tmp_path) == before


def test_a_compose_file_to_come_is_a_note_not_a_refusal(tmp_path: Path) -> None:
    spec = copy.deepcopy(base_spec())
    make_workspace(tmp_path, spec)
    done = cli(tmp_path, "register", "lv-test")
    assert done.returncode == 0, done.stderr
    assert "note: artifacts.compose deploy/compose.yaml does not exist yet" in done.stderr
    assert "pinned in the record, not committed" in done.stdout
    committed = git(tmp_path, "show", "--name-only", "--format=", "HEAD").split()
    assert committed == ["preregistrations/lv-test.registration.json", "preregistrations/lv-test.yaml"]
