"""Locks between voicegate processes: one per artifact file, one per gate.

Lock files live outside the workspace (`$TMPDIR/voicegate-locks-<uid>`, or
`$VOICEGATE_LOCK_DIR`), keyed by the real path they guard, so no lock file ever
lands in a repository and two spellings of one path share one lock.

The **gate lock** is held by every command that writes a gate's run data
(`generate`, `import`, `score`, `amend`, `ship`). Long commands (`generate`,
`import`) never wait for it: two of them on one gate would both see a row as
missing and store it twice. The verdict commands are short, so they wait for
one another (a `ship` and an `amend` at the same moment run one after the
other) but not behind a long command, which could hold the gate for hours.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from voicegate._errors import VoicegateError

ARTIFACT_WAIT = 120.0
LONG_COMMANDS = frozenset({"generate", "import"})


def lock_root() -> Path:
    """Where the lock files live (not created here)."""
    return Path(os.environ.get("VOICEGATE_LOCK_DIR")
                or os.path.join(tempfile.gettempdir(), f"voicegate-locks-{os.getuid()}"))


def lock_dir() -> Path:
    path = lock_root()
    path.mkdir(parents=True, exist_ok=True)
    return path


def _key(path: Path) -> str:
    # The path's own bytes (a UTF-8 path hashes as it always did; one holding other bytes hashes, not crashes).
    return hashlib.sha256(os.fsencode(Path(path).resolve())).hexdigest()[:32]


def lock_for(path: Path, timeout: float = ARTIFACT_WAIT) -> FileLock:
    """One lock per artifact (by its real path), shared by every voicegate process on the machine."""
    return FileLock(str(lock_dir() / f"{_key(path)}.lock"), timeout=timeout)


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold `path`'s artifact lock; refuses after ARTIFACT_WAIT seconds."""
    try:
        with lock_for(path):
            yield
    except Timeout:
        raise VoicegateError(f"{path}: another voicegate process has held its lock for "
                             f"{ARTIFACT_WAIT:.0f} s; try again") from None


def _holder_file(run_dir: Path) -> Path:
    return lock_dir() / f"{_key(run_dir)}.gate-holder"


@contextmanager
def gate_lock(run_dir: Path, gate: str, command: str) -> Iterator[None]:
    """Hold the gate's lock for `command`; refuses at once when a long command holds it."""
    lock = FileLock(str(lock_dir() / f"{_key(run_dir)}.gate.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        holder, pid = _read_holder(run_dir)
        running = f"another `voicegate {holder} {gate}`" if holder else "another voicegate command"
        where = f" (pid {pid})" if pid else ""
        if command in LONG_COMMANDS or holder in LONG_COMMANDS:
            raise VoicegateError(f"{running} is already running on this gate{where}; wait for it to finish, "
                                 f"then run `{command}` again") from None
        try:
            lock.acquire(timeout=ARTIFACT_WAIT)
        except Timeout:
            raise VoicegateError(f"{running} has held this gate for {ARTIFACT_WAIT:.0f} s{where}; "
                                 "try again") from None
    try:
        _holder_file(run_dir).write_text(f"{command} {os.getpid()}", encoding="utf-8")
    except OSError:
        pass  # only used to name the holder in a refusal
    try:
        yield
    finally:
        lock.release()


def _read_holder(run_dir: Path) -> tuple[str, str]:
    """(command, pid) of the last process that took the gate's lock; empty when unknown."""
    try:
        words = _holder_file(run_dir).read_text(encoding="utf-8").split()
    except OSError:
        return "", ""
    return (words[0], words[1]) if len(words) == 2 else ("", "")
