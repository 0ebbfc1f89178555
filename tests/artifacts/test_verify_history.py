"""What `verify` must call broken beyond the chains themselves.

- an artifact removed in a commit (`git rm`), when git history holds entries for it:
  broken in place, with the run data lost, and in a fresh clone;
- an entry with a valid chain that no ledger lists (a forged fourth entry);
- any byte after the newest marker (a forged "Shipping decision", junk) — and the next
  verdict refuses to seal such bytes into its hash;
- the ledger itself is chained: a line deleted, two swapped, the newest dropped.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.bronte import committed_story
from helpers.workspace import git, run_cli, tree_snapshot

from voicegate.artifacts import _chain

ARTIFACTS = {"record": "gates/lv-bronte.md", "readme": "adapters/lv-bronte-4b-v1/README.md",
             "compose": "deploy/compose.yaml"}
LEDGER = "runs/lv-bronte/entries.jsonl"
NO_GIT = {"GIT_DIR": "/nonexistent/no-git"}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return committed_story(tmp_path_factory.mktemp("history") / "ws")


@pytest.fixture
def ws(tmp_path: Path, pristine: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(pristine, root, symlinks=True)
    return root


def test_the_pristine_workspace_verifies_with_its_chained_ledger(ws: Path) -> None:
    done = run_cli("verify", "lv-bronte", cwd=ws)
    assert done.code == 0, done.stdout + done.stderr
    assert f"{LEDGER} (ledger, lv-bronte):" in done.stdout
    assert "3 line(s), each chained to the lines before it" in done.stdout
    lines = [json.loads(x) for x in (ws / LEDGER).read_text().splitlines()]
    assert [x["line"] for x in lines] == [1, 2, 3] and all(len(x["prev_sha256"]) == 64 for x in lines)


# -- a committed `git rm` ------------------------------------------------------


@pytest.mark.parametrize("artifact", ARTIFACTS)
def test_a_committed_git_rm_is_broken_in_place_without_run_data_and_in_a_fresh_clone(
        ws: Path, tmp_path: Path, artifact: str) -> None:
    git(ws, "rm", "-q", ARTIFACTS[artifact])
    git(ws, "commit", "-q", "-m", "drop it")
    done = run_cli("verify", "lv-bronte", cwd=ws)
    assert done.code == 1, done.stdout  # the run's ledger sees it
    shutil.rmtree(ws / "runs")           # run data lost: git history alone must see it
    done = run_cli("verify", "lv-bronte", cwd=ws)
    assert done.code == 1, done.stdout
    assert "not written yet" not in done.stdout and "every chain holds" not in done.stdout
    assert f"voicegate: {ARTIFACTS[artifact]}: the file is gone, but commit " in done.stderr, done.stderr
    assert "removed it, and the version before holds it with 3 entries" in done.stderr
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ws), str(clone)], check=True, capture_output=True)
    done = run_cli("verify", cwd=clone)
    assert done.code == 1, done.stdout
    assert "removed it, and the version before holds it with 3 entries" in done.stderr


def test_an_uncommitted_delete_is_broken_without_run_data(ws: Path) -> None:
    shutil.rmtree(ws / "runs")
    (ws / ARTIFACTS["record"]).unlink()
    done = run_cli("verify", "lv-bronte", cwd=ws)
    assert done.code == 1
    assert "the file is gone, but git's HEAD holds it with 3 entries" in done.stderr


# -- entries the ledger does not list, bytes after the newest marker --------------


@pytest.mark.parametrize("artifact", ["record", "readme"])
def test_an_entry_with_a_valid_chain_that_no_ledger_lists_is_broken(ws: Path, artifact: str) -> None:
    path = ws / ARTIFACTS[artifact]
    forged, number, _ = _chain.md_appended(path.read_bytes(), "## Shipping decision\n\nckpt925 SHIPPED.")
    path.write_bytes(forged)
    assert _chain.md_verify(path).problem is None  # the chain alone holds
    done = run_cli("verify", "lv-bronte", cwd=ws, env=NO_GIT)
    assert done.code == 1, done.stdout
    assert f"{ARTIFACTS[artifact]}: entry {number} is not in the run's ledger" in done.stderr, done.stderr


def test_a_compose_entry_no_ledger_lists_is_broken(ws: Path) -> None:
    from voicegate.artifacts import _compose

    path = ws / ARTIFACTS["compose"]
    new, _ = _compose.plan(path, path.read_bytes(), "lv-bronte", ["voicegate lv-bronte: forged, SHIPPED"])
    path.write_bytes(new)
    assert _chain.compose_verify(path).problem is None
    done = run_cli("verify", "lv-bronte", cwd=ws, env=NO_GIT)
    assert done.code == 1, done.stdout
    assert "deploy/compose.yaml: entry 4 is not in the run's ledger" in done.stderr, done.stderr


@pytest.mark.parametrize("tail", [b"\n**Shipping decision: ckpt925 SHIPPED.**\n", b"x" * (2 << 20), b"\n"],
                         ids=["forged-decision", "2MB-of-junk", "one-newline"])
@pytest.mark.parametrize("artifact", ["record", "readme"])
def test_bytes_after_the_newest_marker_are_broken_and_never_sealed(ws: Path, artifact: str, tail: bytes) -> None:
    path = ws / ARTIFACTS[artifact]
    path.write_bytes(path.read_bytes() + tail)
    done = run_cli("verify", "lv-bronte", cwd=ws, env=NO_GIT)
    assert done.code == 1, done.stdout
    assert f"{ARTIFACTS[artifact]}: {len(tail)} byte(s)" in done.stderr and "after entry 3's marker" in done.stderr
    # The next verdict would cover them with its hash: it refuses instead, writing nothing.
    before = tree_snapshot(ws)
    again = run_cli("ship", "lv-bronte", "ckpt475", "--reason", "again", cwd=ws)
    assert again.code == 2, again.stdout + again.stderr
    assert "nothing written" in again.stderr and "after entry 3's marker" in again.stderr
    assert tree_snapshot(ws) == before


# -- the ledger is chained -------------------------------------------------


def _ledger_lines(ws: Path) -> list[bytes]:
    return (ws / LEDGER).read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize("how", ["delete-first", "delete-middle", "swap", "drop-newest", "edit-time"])
def test_deleting_swapping_or_dropping_ledger_lines_fails_verify(ws: Path, how: str) -> None:
    lines = _ledger_lines(ws)
    assert len(lines) == 3
    if how == "delete-first":
        lines = lines[1:]
    elif how == "delete-middle":
        lines = [lines[0], lines[2]]
    elif how == "swap":
        lines = [lines[0], lines[2], lines[1]]
    elif how == "drop-newest":
        lines = lines[:2]
    else:
        row = json.loads(lines[0])
        row["time"] = "2020-01-01T00:00:00Z"
        lines[0] = (json.dumps(row, sort_keys=True) + "\n").encode()
    (ws / LEDGER).write_bytes(b"".join(lines))
    done = run_cli("verify", "lv-bronte", cwd=ws, env=NO_GIT)
    assert done.code == 1, done.stdout
    if how == "drop-newest":  # the ledger's own chain holds; the amendment's entries are now unlisted
        assert "entry 3 is not in the run's ledger" in done.stderr, done.stderr
    else:
        ledger_part = done.stdout.split(f"{LEDGER} (ledger, lv-bronte):")[1]
        assert ledger_part.lstrip().startswith("BROKEN: line "), done.stdout


def test_a_ledger_written_before_chaining_is_accepted_and_covered_by_the_next_line(ws: Path) -> None:
    lines = [json.loads(x) for x in _ledger_lines(ws)]
    for row in lines:
        row.pop("line"), row.pop("prev_sha256")
    (ws / LEDGER).write_bytes(b"".join((json.dumps(r, sort_keys=True) + "\n").encode() for r in lines))
    done = run_cli("verify", "lv-bronte", cwd=ws, env=NO_GIT)
    assert done.code == 0, done.stdout + done.stderr
    assert "written before the ledger was chained" in done.stdout
    # A legacy line after a chained one is not accepted.
    from voicegate.artifacts import _ledger

    data = _ledger.appended((ws / LEDGER).read_bytes(), {"kind": "ship", "entries": []})
    data += (json.dumps(lines[0], sort_keys=True) + "\n").encode()
    assert "carries no chain hash" in (_ledger.read_bytes(data).problem or "")


def test_verify_of_an_empty_gate_name_is_refused(ws: Path) -> None:
    done = run_cli("verify", "", cwd=ws)
    assert done.code == 2, done.stdout
    assert "every chain holds" not in done.stdout and done.stderr.startswith("voicegate: ")
