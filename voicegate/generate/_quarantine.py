"""The quarantine file: generations that may not be scored, kept beside the run, never deleted.

Two things send rows there: a session whose seat-integrity check failed (`generate
--isolate-arms` regenerates them), and a cell left unfinished on a replica that
went away (its stored arms cannot be compared with arms from another replica, so
the cell is re-run whole elsewhere). The order is the guarantee: rows are appended
to the quarantine file and fsync'd *before* the generations file is rewritten
without them, and a row already quarantined is not appended twice, so a kill at
any point loses nothing and duplicates nothing.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Mapping
from typing import Any

from voicegate._atomic import write_atomic
from voicegate.generate._cells import replica_of
from voicegate.run import append_rows, read_rows, repair_tail, row_key
from voicegate.spec import GateSpec

Row = Mapping[str, Any]


def row_identity(row: Row) -> tuple[Any, ...]:
    """One stored row, told apart from a later row of the same key (its session, replica and time)."""
    return (row_key(row), row.get("session"), replica_of(row), row.get("time"))


def move_to_quarantine(spec: GateSpec, reason_for: Callable[[Row], str | None], by: str) -> int:
    """Every stored generation `reason_for` gives a reason for leaves the run for the quarantine file.

    Returns how many rows left the generations file.
    """
    rows = read_rows(spec.generations_path)
    reasons = [reason_for(r) for r in rows]
    suspects = [(r, why) for r, why in zip(rows, reasons, strict=True) if why]
    if not suspects:
        return 0
    qpath = spec.run.quarantine
    repair_tail(qpath)
    have = {row_identity(r) for r in read_rows(qpath)}
    when = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    moved = [{**r, "quarantined": {"time": when, "reason": why, "by": by}}
             for r, why in suspects if row_identity(r) not in have]
    append_rows(qpath, moved)   # kept (fsync'd) before they leave the generations file
    keep = [r for r, why in zip(rows, reasons, strict=True) if not why]
    write_atomic(spec.generations_path,
                 "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in keep))
    return len(suspects)
