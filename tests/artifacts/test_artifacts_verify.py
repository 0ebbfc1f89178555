"""Acceptance 2: `verify` holds on untouched artifacts and names the entry after any tampering.

Each of the three artifacts of a scored, shipped and amended lv-bronte gate
(three entries each) is tampered with in one of four ways — a digit changed in
an earlier entry, a line removed, two entries swapped, a marker deleted — and
`voicegate verify` must exit 1 and name the entry.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.bronte import as_shipped, scored_workspace
from helpers.workspace import git, run_cli

from voicegate.run._manifest import RunManifest

ARTIFACTS = {"record": "gates/lv-bronte.md", "readme": "adapters/lv-bronte-4b-v1/README.md",
             "compose": "deploy/compose.yaml"}
MD_MARKER = re.compile(rb"^<!-- voicegate:entry (\d+) .*\n", re.MULTILINE)
COMPOSE_MARKER = re.compile(rb"^ *# voicegate:entry (\d+) lines=(\d+) .*\n", re.MULTILINE)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    from helpers.shared import COMPOSE_FIXTURE as fixture

    if not fixture.is_file():
        pytest.skip(f"fleet compose fixture not present at {fixture}")
    root = scored_workspace(tmp_path_factory.mktemp("verify") / "ws", as_shipped(fixture))
    return {"root": str(root).encode(), **{k: (root / p).read_bytes() for k, p in ARTIFACTS.items()}}


def _workspace(tmp_path: Path, pristine: dict[str, bytes]) -> Path:
    import shutil

    root = tmp_path / "ws"
    shutil.copytree(pristine["root"].decode(), root, symlinks=True)
    return root


def _entries_md(data: bytes) -> list[tuple[int, int]]:
    """(start, end) byte span of each entry: from just after the previous marker to the end of its own."""
    spans, prev = [], None
    for m in MD_MARKER.finditer(data):
        spans.append((prev if prev is not None else m.start(), m.end()))
        prev = m.end()
    return spans


def _entries_compose(data: bytes) -> list[tuple[int, int]]:
    lines = data.splitlines(keepends=True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))
    spans = []
    for i, ln in enumerate(lines):
        m = COMPOSE_MARKER.match(ln)
        if m:
            k = int(m.group(2))
            spans.append((starts[i - k + 1], starts[i + 1]))
    return spans


def digit_changed(kind: str, data: bytes) -> tuple[bytes, str]:
    spans = _entries_compose(data) if kind == "compose" else _entries_md(data)
    start, end = spans[0]
    at = data.index(b"0.251", start if kind == "compose" else 0)
    assert at < end, "the first 0.251 is in entry 1"
    return data[:at] + b"0.252" + data[at + 5:], "entry 1"


def line_removed(kind: str, data: bytes) -> tuple[bytes, str]:
    spans = _entries_compose(data) if kind == "compose" else _entries_md(data)
    start, end = spans[1]
    needle = b"additive, reversible and safety-clean"
    at = data.index(needle, start)
    assert at < end
    line_start = data.rfind(b"\n", 0, at) + 1
    line_end = data.index(b"\n", at) + 1
    return data[:line_start] + data[line_end:], "entry 2"


def swapped(kind: str, data: bytes) -> tuple[bytes, str]:
    spans = _entries_compose(data) if kind == "compose" else _entries_md(data)
    (s2, e2), (s3, e3) = spans[1], spans[2]
    assert e2 == s3
    return data[:s2] + data[s3:e3] + data[s2:e2] + data[e3:], "entry 3"


def marker_deleted(kind: str, data: bytes) -> tuple[bytes, str]:
    pattern = COMPOSE_MARKER if kind == "compose" else MD_MARKER
    m = next(m for m in pattern.finditer(data) if m.group(1) == b"2")
    return data[:m.start()] + data[m.end():], "entry 2"


TAMPERS = {"digit": digit_changed, "line": line_removed, "swap": swapped, "marker": marker_deleted}


def test_untouched_artifacts_verify(tmp_path: Path, pristine: dict[str, bytes]) -> None:
    root = _workspace(tmp_path, pristine)
    done = run_cli("verify", cwd=root)
    assert done.code == 0, done.stdout + done.stderr
    for path in ARTIFACTS.values():
        assert f"{path} (" in done.stdout
    assert done.stdout.count(" OK") == 9  # three entries in each of three artifacts
    assert "every chain holds" in done.stdout


@pytest.mark.parametrize("tamper", TAMPERS)
@pytest.mark.parametrize("artifact", ARTIFACTS)
def test_tampering_is_detected_and_names_the_entry(tmp_path: Path, pristine: dict[str, bytes],
                                                    artifact: str, tamper: str) -> None:
    root = _workspace(tmp_path, pristine)
    path = root / ARTIFACTS[artifact]
    changed, entry = TAMPERS[tamper](artifact, path.read_bytes())
    assert changed != path.read_bytes()
    path.write_bytes(changed)
    done = run_cli("verify", "lv-bronte", cwd=root)
    assert done.code == 1, done.stdout + done.stderr
    err = done.stderr.strip()
    assert err.startswith(f"voicegate: {ARTIFACTS[artifact]}: "), err
    assert re.search(rf"\b{entry}\b", err), err
    # The other two artifacts still verify: the report pins the break to one file.
    assert done.stdout.count("BROKEN") == 1


def test_git_check_catches_a_commit_that_removed_the_newest_entry(tmp_path: Path,
                                                                  pristine: dict[str, bytes]) -> None:
    # Dropping the last entry whole leaves a valid shorter chain: only history can tell.
    root = _workspace(tmp_path, pristine)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "verdicts")
    record = root / ARTIFACTS["record"]
    data = record.read_bytes()
    last = _entries_md(data)[-1]
    record.write_bytes(data[:last[0]])
    done = run_cli("verify", "lv-bronte", cwd=root)
    assert done.code == 1
    assert "uncommitted change deletes" in done.stdout
    git(root, "commit", "-q", "-am", "tidy the record")
    done = run_cli("verify", "lv-bronte", cwd=root)
    assert done.code == 1
    assert re.search(r"git: commit [0-9a-f]{12} deleted \d+ line\(s\) from lv-bronte\.md", done.stdout), done.stdout
    record_part = done.stdout.split("lv-bronte.md")[1].split("README")[0]
    assert "entry 2 (" in record_part and "  entry 3 (" not in record_part
    # The run's ledger saw it too, git or not: entry 3 was written and is gone.
    assert "BROKEN: entry 3 (written by `amend`" in record_part


def test_the_ledger_catches_the_newest_entry_cut_off_without_git(tmp_path: Path, pristine: dict[str, bytes]) -> None:
    root = _workspace(tmp_path, pristine)
    for name in ARTIFACTS.values():
        path = root / name
        data = path.read_bytes()
        if name.endswith(".md"):
            path.write_bytes(data[:_entries_md(data)[-1][0]])
        else:  # compose: take the newest comment block out whole
            lines = data.splitlines(keepends=True)
            idx = max(i for i, ln in enumerate(lines) if b"voicegate:entry 3 " in ln)
            k = int(re.search(rb"lines=(\d+)", lines[idx]).group(1))
            path.write_bytes(b"".join(lines[:idx - k + 1] + lines[idx + 1:]))
        done = run_cli("verify", "lv-bronte", cwd=root, env={"GIT_DIR": str(tmp_path / "no-git")})
        assert done.code == 1, done.stdout
        assert f"{name}: entry 3 (written by `amend`" in done.stderr, done.stderr
        path.write_bytes(data)


def test_appending_commits_pass_the_git_check(tmp_path: Path, pristine: dict[str, bytes]) -> None:
    root = _workspace(tmp_path, pristine)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "verdicts")
    done = run_cli("verify", cwd=root)
    assert done.code == 0, done.stdout + done.stderr
    assert done.stdout.count("every one only added lines") == 3


def test_verify_without_any_entry_or_spec(tmp_path: Path) -> None:
    (tmp_path / "preregistrations").mkdir()
    done = run_cli("verify", cwd=tmp_path)
    assert done.code == 0
    assert "nothing to verify" in done.stdout


def test_history_before_the_first_entry_is_not_judged(tmp_path: Path, compose_fixture: Path) -> None:
    # A compose.yaml has years of edits before voicegate's first comment; only what follows is checked.
    from helpers.bronte import bronte_workspace, generations, result, write_jsonl

    from voicegate.artifacts import record_score
    from voicegate.generate._import import import_file
    from voicegate.spec._registration import check_registered
    from voicegate.spec._spec import load_spec

    root = bronte_workspace(tmp_path / "ws", as_shipped(compose_fixture))
    compose = root / ARTIFACTS["compose"]
    compose.write_bytes(compose.read_bytes().replace(b"    restart: unless-stopped\n", b""))
    git(root, "commit", "-q", "-am", "ops: no restart policy")
    spec = load_spec(root, "lv-bronte")
    record_score(spec, check_registered(spec), result("global-max-spread"),
                 RunManifest.from_json(import_file(spec, write_jsonl(root / "g.jsonl", generations()))))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "verdicts")
    done = run_cli("verify", "lv-bronte", cwd=root)
    assert done.code == 0, done.stdout + done.stderr
    assert done.stdout.count("git: 1 commit(s), every one only added lines") == 3


def test_verify_all_gates_checks_a_shared_compose_once(tmp_path: Path, pristine: dict[str, bytes]) -> None:
    import yaml

    root = _workspace(tmp_path, pristine)
    other = yaml.safe_load((root / "preregistrations/lv-bronte.yaml").read_text())
    other.update(gate="lv-yarros", artifacts={"record": "gates/lv-yarros.md", "compose": "deploy/compose.yaml"})
    (root / "preregistrations/lv-yarros.yaml").write_text(yaml.safe_dump(other))
    (root / "preregistrations/notes.yaml").write_text("not: a gate\n")  # not a gate name: ignored
    done = run_cli("verify", cwd=root)
    assert done.code == 0, done.stdout + done.stderr
    assert done.stdout.count("deploy/compose.yaml (compose, lv-bronte, lv-yarros):") == 1
    assert "gates/lv-yarros.md: not written yet" in done.stdout


def test_another_gates_spec_that_is_not_utf8_is_one_line_not_a_traceback(tmp_path: Path,
                                                                        pristine: dict[str, bytes]) -> None:
    """verify of every gate names the spec whose bytes are not UTF-8 (exit 2, one line); this gate's commands, which
    read the other gates' records for a pilot of the same author, are not stopped by it."""
    root = _workspace(tmp_path, pristine)
    (root / "preregistrations" / "lv-other.yaml").write_bytes(b"\xff\xfe gate: lv-other\n")
    every = run_cli("verify", cwd=root)
    assert every.code == 2 and every.stderr == (
        f"voicegate: {root / 'preregistrations' / 'lv-other.yaml'}: unreadable ('utf-8' codec can't decode byte "
        "0xff in position 0: invalid start byte)\n"), every.stderr
    assert run_cli("verify", "lv-bronte", cwd=root).code == 0
    scored = run_cli("score", "lv-bronte", "--dry-run", "--quiet", cwd=root)
    assert scored.code == 0 and "Traceback" not in scored.stderr, scored.stderr
