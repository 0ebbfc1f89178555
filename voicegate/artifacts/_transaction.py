"""One verdict, one transaction: every file it touches ends with all of it or none of it.

A score, ship or amendment changes up to six files: the three artifacts (gate
record, adapter README, compose.yaml) and the run's own state (`recorded.json`,
`decisions.jsonl` or `amendments.jsonl`, and the entry ledger). Each write is
atomic on its own, but a kill between two of them would leave the record with
an entry the README lacks, and a re-run would then append it twice.

So the whole change is computed first, in memory, under every lock it needs,
and written as an **intent** to the run directory (`pending-entry.json`: for
each file its sha256 before, and its complete bytes after). Only then are the
files replaced, one by one; last, the intent is removed. A crash anywhere
leaves either no intent (nothing was written, or everything was) or an intent
whose every file is in its *before* or its *after* state. The next verdict
command completes such an intent before doing anything else, and `verify`
reports it; a file in neither state (edited by hand since) is refused, never
overwritten.

The **ledger** (`entries.jsonl`) is part of every transaction: one line per
verdict, naming each artifact entry it wrote and that entry's marker hash. It
is what lets `verify` know which entries must exist, even when an artifact was
deleted, emptied or overwritten whole, where no chain is left to check.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voicegate import _json as strict_json
from voicegate._atomic import write_atomic
from voicegate._errors import VoicegateError
from voicegate.artifacts import _chain
from voicegate.run import RunDir


def _sha(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def read_or_none(path: Path) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        return None


@dataclass(frozen=True)
class Write:
    """One file of a transaction: what it held when the change was computed, and what it will hold."""

    path: Path
    before: bytes | None  # None: the file did not exist
    after: bytes


@dataclass(frozen=True)
class Pending:
    """An intent left by a command that was killed before it finished."""

    kind: str
    time: str
    done: tuple[Path, ...]      # files already in their "after" state
    missing: tuple[Path, ...]   # files still in their "before" state
    changed: tuple[Path, ...]   # files in neither: edited since; the intent cannot complete


def _encode(kind: str, time: str, writes: Iterable[Write]) -> bytes:
    return (json.dumps({
        "kind": kind, "time": time,
        "writes": [{"path": str(Path(os.path.realpath(w.path))), "before_sha256": _sha(w.before),
                    "after_sha256": _sha(w.after), "after": base64.b64encode(w.after).decode("ascii")}
                   for w in writes],
    }, indent=1) + "\n").encode("utf-8")


def _decode(run: RunDir) -> tuple[str, str, list[dict[str, Any]]] | None:
    raw = read_or_none(run.intent)
    if raw is None:
        return None
    try:
        obj = strict_json.loads(raw)
        writes = obj["writes"]
        for w in writes:
            if not (isinstance(w["path"], str) and isinstance(w["after"], str)
                    and isinstance(w["after_sha256"], str) and isinstance(w["before_sha256"], (str, type(None)))
                    and base64.b64decode(w["after"], validate=True) is not None):
                raise TypeError("bad write")
        return str(obj["kind"]), str(obj["time"]), writes
    except (ValueError, TypeError, KeyError):
        raise VoicegateError(f"{run.intent}: an unfinished verdict's intent is unreadable; "
                             "it was not written by voicegate — inspect it and remove it by hand") from None


def pending_after(run: RunDir, path: Path) -> bytes | None:
    """What an unfinished transaction in `run` will write to `path` (None: no intent, or not that file)."""
    decoded = _decode(run)
    if decoded is None:
        return None
    want = os.path.realpath(path)
    for w in decoded[2]:
        if os.path.realpath(w["path"]) == want:
            return base64.b64decode(w["after"])
    return None


def pending(run: RunDir) -> Pending | None:
    """The unfinished transaction in `run`, if any, and how far it got (reads only)."""
    decoded = _decode(run)
    if decoded is None:
        return None
    kind, time, writes = decoded
    done, missing, changed = [], [], []
    for w in writes:
        path = Path(w["path"])
        now = _sha(read_or_none(path))
        if now == w["after_sha256"]:
            done.append(path)
        elif now == w["before_sha256"]:
            missing.append(path)
        else:
            changed.append(path)
    return Pending(kind, time, tuple(done), tuple(missing), tuple(changed))


def complete(run: RunDir) -> str | None:
    """Finish an unfinished transaction (the caller holds the gate's and the artifacts' locks).

    Returns what to tell the user, or None when there was nothing to finish.
    """
    found = pending(run)
    if found is None:
        return None
    decoded = _decode(run)
    assert decoded is not None
    if found.changed:
        names = ", ".join(str(p) for p in found.changed)
        raise VoicegateError(f"an unfinished {found.kind} entry from {found.time} cannot be completed: {names} "
                             f"changed since it began (see {run.intent}); nothing written")
    for w in decoded[2]:
        if Path(w["path"]) in found.missing:
            _chain.atomic_write(Path(w["path"]), base64.b64decode(w["after"]))
    run.intent.unlink()
    return (f"completed an unfinished {found.kind} entry from {found.time} "
            f"({len(found.missing)} of {len(found.missing) + len(found.done)} files were still missing it)")


def commit(run: RunDir, kind: str, time: str, writes: list[Write]) -> None:
    """Write the intent, then every file, then drop the intent (the caller holds every lock)."""
    if run.intent.exists():
        raise VoicegateError(f"{run.intent}: an unfinished entry is pending; it must be completed first")
    for w in writes:
        if read_or_none(w.path) != w.before:
            raise VoicegateError(f"{w.path}: changed while the entry was being prepared; nothing written")
    write_atomic(run.intent, _encode(kind, time, writes), fixed_tmp=True)
    for w in writes:
        _chain.atomic_write(w.path, w.after)
    run.intent.unlink()
