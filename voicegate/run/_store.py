"""The generations file: one JSON object a line, appended whole, read back torn-line safe.

`<data dir>/<gate>/generations.jsonl` is the only input scoring has. A row is
appended with one write and fsync'd, so after a crash at most the last line is
torn; readers drop such a line instead of failing, and writers truncate it
before appending so it is never duplicated or glued to the next row.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from voicegate._hashing import sha256_json

Row = dict[str, Any]
REQUIRED = ("arm", "seed", "prompt_id", "text")


def row_key(row: Row) -> tuple[str, str, int, str]:
    """(kind, arm, seed, prompt_id): one generation per key, ever."""
    return (row.get("kind", "voice"), row["arm"], int(row["seed"]), str(row["prompt_id"]))


def read_rows(path: Path) -> list[Row]:
    """All whole rows; a torn final line (from a kill mid-write) is ignored."""
    if not path.exists():
        return []
    data = path.read_bytes()
    rows: list[Row] = []
    lines = data.split(b"\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            if i == len(lines) - 1:  # no newline after it: the write never finished
                break
            raise
    return rows


def repair_tail(path: Path) -> None:
    """Cut a torn final line so the next append starts on a fresh line."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        with open(path, "r+b") as fh:
            fh.truncate(keep)
            fh.flush()
            os.fsync(fh.fileno())


def append_rows(path: Path, rows: Iterable[Row]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as fh:
        for row in rows:
            fh.write((json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())


def generations_hash(rows: Iterable[Row]) -> str:
    """sha256 of the canonical rows sorted by (kind, arm, seed, prompt_id) — finish order is irrelevant."""
    ordered = sorted(({"kind": "voice", **r} for r in rows), key=row_key)
    return sha256_json(ordered)
