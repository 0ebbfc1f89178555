"""The run's entry ledger (`<data>/<gate>/entries.jsonl`), chained like the artifacts it witnesses.

One line per verdict (score, ship, amend), written in the verdict's transaction, naming
each artifact entry it wrote and that entry's marker hash. `verify` holds the artifacts
against it: every entry it lists must still be there, and every entry an artifact holds
past the first one it lists must be listed.

So the ledger itself must not be editable unseen: each line carries ``line`` (1, 2, 3, …)
and ``prev_sha256``, the sha256 of every byte of the file before that line. A line
deleted, swapped or edited breaks the next line's ``prev_sha256`` or its number; the
newest line dropped leaves its artifact entries unlisted, which `verify` calls broken too.
Lines written before the ledger was chained (no ``prev_sha256``) are accepted only as the
file's first lines, where the first chained line's hash covers them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voicegate import _json as strict_json

CHAIN_KEY = "prev_sha256"


def appended(before: bytes | None, row: dict[str, Any]) -> bytes:
    """The ledger's bytes with `row` added as its next chained line."""
    head = before or b""
    if head and not head.endswith(b"\n"):
        head += b"\n"
    number = len([ln for ln in head.split(b"\n") if ln.strip()]) + 1
    chained = {**row, "line": number, CHAIN_KEY: hashlib.sha256(head).hexdigest()}
    return head + (json.dumps(chained, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")


@dataclass
class Ledger:
    """What a ledger file holds, and the first place its chain does not hold (None: it holds)."""

    path: Path
    rows: list[dict[str, Any]] = field(default_factory=list)
    problem: str | None = None
    unchained: int = 0     # leading lines written before the ledger was chained
    damaged: bool = False  # a line that is not a JSON object at all


def read(path: Path) -> Ledger | None:
    """The ledger at `path`, its chain checked; None when there is no such file."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    return read_bytes(data, Path(path))


def read_bytes(data: bytes, path: Path = Path("entries.jsonl")) -> Ledger:
    """A ledger's bytes, its chain checked."""
    out = Ledger(path)
    offset = 0
    chained = False
    for i, raw in enumerate(data.splitlines(keepends=True), 1):
        start, offset = offset, offset + len(raw)
        if not raw.strip():
            out.problem = f"line {i} is blank: voicegate writes none (the ledger was edited)"
            return out
        try:
            row = strict_json.loads(raw)
        except ValueError:
            row = None
        if not isinstance(row, dict):
            out.damaged = True
            out.problem = f"line {i} is not a ledger entry"
            return out
        if CHAIN_KEY not in row:
            if chained:
                out.problem = (f"line {i} carries no chain hash, after chained lines: it was not written by "
                               "voicegate, or lines were moved")
                return out
            out.unchained += 1
        else:
            chained = True
            if row.get("line") != i:
                out.problem = (f"line {i} says it is line {row.get('line')!r}: ledger lines were deleted, "
                               "added or reordered")
                return out
            if row[CHAIN_KEY] != hashlib.sha256(data[:start]).hexdigest():
                out.problem = (f"line {i} does not chain to the lines before it: an earlier ledger line was "
                               "edited, removed or reordered")
                return out
        out.rows.append(row)
    if data and not data.endswith(b"\n"):
        out.problem = f"line {len(out.rows)} was cut short (no line ending): the ledger was truncated"
    return out
