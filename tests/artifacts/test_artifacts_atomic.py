"""Acceptance 4: a writer killed between temp file and rename leaves the old file; two writers never interleave."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers.bronte import as_shipped, scored_workspace
from helpers.workspace import cli

from voicegate._errors import VoicegateError
from voicegate.artifacts import _chain

TESTS = Path(__file__).resolve().parents[1]
ARTIFACTS = ("gates/lv-bronte.md", "adapters/lv-bronte-4b-v1/README.md", "deploy/compose.yaml")

DRIVER = textwrap.dedent("""
    import os, signal, sys, time
    sys.path.insert(0, {tests!r})
    from pathlib import Path
    from helpers.bronte import patch_scoring
    from voicegate.artifacts import _chain

    patch_scoring()
    mode = os.environ["DRIVER_MODE"]
    if mode == "kill":
        # Killed for real between the fsync'd temp file and the rename.
        _chain._replace = lambda src, dst: os.kill(os.getpid(), signal.SIGKILL)
    elif mode == "slow":
        real = _chain.atomic_write
        def slow(path, data):
            time.sleep(0.4)  # widen the read-modify-write window: without the lock one entry would be lost
            real(path, data)
        _chain.atomic_write = slow
    start = os.environ.get("DRIVER_START")
    while start and not Path(start).exists():
        time.sleep(0.01)
    from voicegate.cli import main
    main(sys.argv[1:])
""").format(tests=str(TESTS))


def _driver(root: Path, mode: str, *args: str, start: Path | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "DRIVER_MODE": mode, "DRIVER_START": str(start or "")}
    return subprocess.Popen([sys.executable, "-c", DRIVER, *args, "-C", str(root)], cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def compose_bytes(compose_fixture: Path) -> bytes:
    return as_shipped(compose_fixture)


def test_replace_failing_leaves_the_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "record.md"
    _chain.md_append(path, "## first\n\nbody", header="# header\n")
    before = path.read_bytes()

    def boom(src: str, dst: str) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(_chain, "_replace", boom)
    with pytest.raises(VoicegateError, match="cannot write \\(disk gone\\); the file is unchanged"):
        _chain.md_append(path, "## second\n\nbody")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.md"]  # the temp file was cleaned up


def test_killed_writer_leaves_every_artifact_intact(tmp_path: Path, compose_bytes: bytes) -> None:
    root = scored_workspace(tmp_path / "ws", compose_bytes, ship=False, amend=False)
    before = {a: (root / a).read_bytes() for a in ARTIFACTS}
    proc = _driver(root, "kill", "ship", "lv-bronte", "ckpt475", "--reason", "additive, reversible and safety-clean")
    proc.communicate(timeout=120)
    assert proc.returncode == -9  # SIGKILL, mid-write
    assert {a: (root / a).read_bytes() for a in ARTIFACTS} == before
    assert (root / "gates" / ".lv-bronte.md.voicegate-tmp").exists()  # the orphan the kill left behind
    assert not (root / "runs" / "lv-bronte" / "decisions.jsonl").exists()
    done = cli(root, "verify", "lv-bronte")
    assert done.returncode == 0, done.stdout + done.stderr
    # The next writer takes the lock the dead one held, overwrites the orphan, and appends.
    done = cli(root, "ship", "lv-bronte", "ckpt475", "--reason", "additive, reversible and safety-clean")
    assert done.returncode == 0, done.stderr
    assert not (root / "gates" / ".lv-bronte.md.voicegate-tmp").exists()
    for a in ARTIFACTS:
        assert (root / a).read_bytes().count(b"voicegate:entry 2 ") == 1
        assert (root / a).read_bytes().startswith(before[a][:before[a].index(b"voicegate:entry 1")])
    assert cli(root, "verify", "lv-bronte").returncode == 0


def test_two_concurrent_writers_append_two_whole_entries(tmp_path: Path, compose_bytes: bytes) -> None:
    root = scored_workspace(tmp_path / "ws", compose_bytes, ship=False, amend=False)
    start = tmp_path / "go"
    ship = _driver(root, "slow", "ship", "lv-bronte", "ckpt475", "--reason", "additive, reversible and safety-clean",
                   start=start)
    amend = _driver(root, "slow", "amend", "lv-bronte", "--rule", "pairwise-max-spread", "--reason",
                    "the global floor let an unshipped arm fail the shipped one", start=start)
    time.sleep(1.5)  # both interpreters up and waiting at the barrier
    start.touch()
    outs = [p.communicate(timeout=300) for p in (ship, amend)]
    assert ship.returncode == 0, outs[0]
    assert amend.returncode == 0, outs[1]
    orders = []
    for a in ARTIFACTS:
        data = (root / a).read_bytes()
        for n in (1, 2, 3):
            assert data.count(f"voicegate:entry {n} ".encode()) == 1, (a, n)
        assert data.count(b"voicegate:entry") == 3
        ship_at = data.index(b"additive, reversible and safety-clean")
        amend_at = data.index(b"the global floor let an unshipped arm fail the shipped one")
        orders.append(ship_at < amend_at)
        # Whole entries: nothing of one lies between the other's first line and its marker.
        if a.endswith(".md"):
            entries = data.split(b"<!-- voicegate:entry")[1:]  # each chunk: a marker's tail + the next entry
            heads = [[ln for ln in e.splitlines() if ln.startswith((b"## ", b"### voicegate"))] for e in entries]
            assert [len(h) for h in heads] == [1, 1, 0]
    assert len(set(orders)) == 1, "one gate lock: the same order in all three artifacts"
    done = cli(root, "verify", "lv-bronte")
    assert done.returncode == 0, done.stdout + done.stderr
