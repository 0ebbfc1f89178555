"""`kill -9` of `score`, `ship` and `amend` at every point between two writes.

Each trial copies a pristine lv-bronte workspace, runs the real CLI in a
process of its own (forked by `tests/helpers/crashrun.py --serve`, which imports voicegate once) and SIGKILLs it just
before or just after
its K-th file replacement — every whole-file write voicegate makes is one
`os.replace`, so K walks the kill through the whole command. Then, as a user
would after a crash:

1. every artifact holds all of the verdict's entry or none of it (its entry
   count is n0 or n0 + 1, its chain intact), and no temp file is left beside it
   once the next command has run;
2. `voicegate verify` is truthful: exit 1 exactly when the three artifacts are
   out of step (and it says the entry is unfinished), else exit 0;
3. the same command run again finishes the job: every artifact ends with
   exactly n0 + 1 entries — never a duplicate — and `verify` exits 0.

Every (K, before|after) point of each command is tried, once each: the kill points are
deterministic, so a second trial at the same point repeats the first (random points that
filled the trials up to 30 per command only ever repeated points already swept).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import COMPOSE_FIXTURE, REPO
from helpers.bronte import as_shipped, bronte_workspace, marker_count, patch_scoring, scored_workspace, write_jsonl
from helpers.bronte import generations as bronte_rows
from helpers.workspace import run_cli

DRIVER = Path(__file__).resolve().parents[1] / "helpers" / "crashrun.py"
ARTIFACTS = ("gates/lv-bronte.md", "adapters/lv-bronte-4b-v1/README.md", "deploy/compose.yaml")
SHIP_REASON = "additive, reversible and safety-clean"
AMEND_REASON = "the global floor let an unshipped arm fail the shipped one"
COMMANDS = {
    "score": ("score", "lv-bronte"),
    "ship": ("ship", "lv-bronte", "ckpt475", "--reason", SHIP_REASON),
    "amend": ("amend", "lv-bronte", "--rule", "pairwise-max-spread", "--reason", AMEND_REASON),
}


def _pristine(kind: str, root: Path) -> Path:
    compose = as_shipped(COMPOSE_FIXTURE)
    if kind == "score":
        bronte_workspace(root, compose)
        from voicegate.generate._import import import_file
        from voicegate.spec._spec import load_spec

        import_file(load_spec(root, "lv-bronte"), write_jsonl(root / "bronte-360.jsonl", bronte_rows()))
        return root
    return scored_workspace(root, compose, ship=kind == "amend", amend=False)


def _counts(root: Path) -> list[int]:
    # A record not yet written holds no entry (before the first score it does not exist).
    return [marker_count((root / rel).read_bytes()) if (root / rel).exists() else 0 for rel in ARTIFACTS]


class Driver:
    """`_crashrun.py --serve`: one interpreter with voicegate imported, forking one process per trial."""

    def __init__(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("VOICEGATE_")}
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
        self.proc = subprocess.Popen([sys.executable, str(DRIVER), "--serve"], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def run(self, root: Path, args: tuple[str, ...], *, at: int | None = None, phase: str = "before",
            count: Path | None = None) -> subprocess.CompletedProcess[str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        out = root.parent / f"{root.name}.out"
        self.proc.stdin.write(json.dumps({"cwd": str(root), "args": list(args), "out": str(out),
                                          "crash": f"{at}:{phase}" if at is not None else None,
                                          "count": str(count) if count is not None else None}) + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        assert answer, "the crash driver died"
        text = out.read_text(errors="replace")
        return subprocess.CompletedProcess(list(args), json.loads(answer)["returncode"], text, text)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


@pytest.fixture(scope="module")
def driver() -> Iterator[Driver]:
    d = Driver()
    try:
        yield d
    finally:
        d.close()


def _temps(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob(".*.voicegate-tmp"))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory, driver: Driver) -> dict[str, tuple[Path, int]]:
    """Per command: a workspace ready for it, and how many file replacements a whole run makes."""
    if not COMPOSE_FIXTURE.is_file():
        pytest.skip(f"fleet compose fixture not present at {COMPOSE_FIXTURE}")
    out: dict[str, tuple[Path, int]] = {}
    for kind, args in COMMANDS.items():
        root = _pristine(kind, tmp_path_factory.mktemp(f"pristine-{kind}"))
        probe = tmp_path_factory.mktemp(f"count-{kind}") / "ws"
        shutil.copytree(root, probe, symlinks=True)
        counter = probe.parent / "count"
        done = driver.run(probe, args, count=counter)
        assert done.returncode == 0, done.stderr
        assert _counts(probe) == [c + 1 for c in _counts(root)], "an uninterrupted run appends one entry each"
        out[kind] = (root, int(counter.read_text()))
    return out


def _points(replaces: int) -> list[tuple[int, str]]:
    """Every distinct kill point: just before and just after each of the command's file replacements."""
    return [(k, phase) for k in range(1, replaces + 1) for phase in ("before", "after")]


@pytest.mark.parametrize("kind", list(COMMANDS))
def test_a_kill_anywhere_leaves_all_or_nothing_and_the_next_run_exactly_one_entry(
        kind: str, pristine: dict[str, tuple[Path, int]], driver: Driver, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    patch_scoring(monkeypatch)  # the re-run below is in this process: same scoring seam as the driver
    source, replaces = pristine[kind]
    n0 = _counts(source)
    assert replaces >= 6, f"{kind} made only {replaces} replacements: the kill points would not cover it"
    args = COMMANDS[kind]
    seen_out_of_step = seen_whole = 0
    for trial, (at, phase) in enumerate(_points(replaces)):
        root = tmp_path / f"t{trial}"
        shutil.copytree(source, root, symlinks=True)
        where = f"{kind}: killed {phase} replacement {at} of {replaces}"
        killed = driver.run(root, args, at=at, phase=phase)
        assert killed.returncode == -signal.SIGKILL, f"{where}: not killed ({killed.returncode}) {killed.stderr}"

        counts = _counts(root)
        assert all(c in (n, n + 1) for c, n in zip(counts, n0, strict=True)), \
            f"{where}: entry counts {counts} from {n0}"
        out_of_step = len({c - n for c, n in zip(counts, n0, strict=True)}) > 1
        seen_out_of_step += out_of_step
        seen_whole += all(c == n + 1 for c, n in zip(counts, n0, strict=True))

        checked = run_cli("verify", "lv-bronte", cwd=root)
        if out_of_step:
            assert checked.code == 1, f"{where}: verify passed artifacts out of step {counts}\n{checked.stdout}"
            assert "unfinished" in checked.stdout + checked.stderr, f"{where}: {checked.stdout}"
        else:
            assert checked.code == 0, f"{where}: verify failed artifacts in step {counts}\n{checked.stdout}"

        again = run_cli(*args, cwd=root)
        assert again.code == 0, f"{where}: the re-run failed: {again.stderr}"
        assert _counts(root) == [n + 1 for n in n0], f"{where}: after the re-run {_counts(root)} from {n0}"
        assert _temps(root) == [], f"{where}: temp files left: {_temps(root)}"
        final = run_cli("verify", "lv-bronte", cwd=root)
        assert final.code == 0, f"{where}: verify after the re-run: {final.stdout}"
        shutil.rmtree(root)
    # The points must really reach between the artifact writes, not only before or after them all.
    assert seen_out_of_step >= 2 and seen_whole >= 1, (seen_out_of_step, seen_whole)
