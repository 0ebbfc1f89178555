"""The generations file: one JSON object a line, appended whole, read back torn-line safe.

`<data dir>/<gate>/generations.jsonl` is the only input scoring has. A row is
appended with one write and fsync'd, so after a crash at most the last line is
torn; readers drop such a line instead of failing, and writers truncate it
before appending so it is never duplicated or glued to the next row.

Every line is read as strict JSON (`voicegate._json`) and every generations row
checked for the stored shape (`row_problem`, which `import` applies to its input
too); any other damaged line is refused naming the file and the line, never
guessed at. Nothing non-finite is ever written.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from voicegate import _json
from voicegate._clip import clip
from voicegate._errors import VoicegateError
from voicegate._hashing import sha256_json

Row = dict[str, Any]
REQUIRED = ("arm", "seed", "prompt_id", "text")
KINDS = ("voice", "probe")
USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")


class DamagedFile(VoicegateError, ValueError):
    """A state file voicegate wrote is not what it wrote (exit 2, naming the file and the line).

    Also a ValueError, so a caller that already treats "not JSON" as damage keeps doing so.
    """


RowKey = tuple[str, str, int, str]   # (kind, arm, seed, prompt_id): one generation, ever


def row_key(row: Mapping[str, Any]) -> RowKey:
    """(kind, arm, seed, prompt_id): one generation per key, ever (the store, scoring, the report's runs)."""
    return (row.get("kind", "voice"), row["arm"], int(row["seed"]), str(row["prompt_id"]))


CellKey = tuple[str, int, str]   # (kind, seed, prompt_id): one cell, every arm of it


def cell_key(row: Mapping[str, Any]) -> CellKey:
    """The cell a stored row belongs to: its `row_key` without the arm."""
    return (str(row.get("kind", "voice")), int(row.get("seed", 0)), str(row.get("prompt_id")))


def _shown_type(value: Any) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", int: "integer", float: "number",
             type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _a(name: str) -> str:
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _got(value: Any) -> str:
    """A value as a one-line message shows it: a scalar as itself (cut short), a container by its type."""
    if isinstance(value, (dict, list)):
        return _a(_shown_type(value))
    shown = repr(value)
    return clip(shown, 40)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def usage_problem(usage: Any) -> str | None:
    """`usage` is null or an object whose token counts are whole numbers >= 0."""
    if usage is None:
        return None
    if not isinstance(usage, dict):
        return f"usage must be an object or null, got {_got(usage)}"
    for key in USAGE_KEYS:
        if key in usage and usage[key] is not None and not (_is_int(usage[key]) and usage[key] >= 0):
            return f"usage.{key} must be a whole number >= 0, got {_got(usage[key])}"
    return None


def finish_reason_problem(reason: Any) -> str | None:
    if reason is None or isinstance(reason, str):
        return None
    return f"finish_reason must be a string or null, got {_got(reason)}"


def row_problem(obj: Any) -> str | None:
    """What is wrong with the SHAPE of one generations row (stored, or read by `import`), or None.

    Whether its arm, seed and prompt are the gate's is the spec's question, asked by the caller.
    """
    if not isinstance(obj, dict):
        return f"must be a JSON object, got {_shown_type(obj)}"
    for key in REQUIRED:
        if key not in obj:
            return f"missing {key!r}"
    if not isinstance(obj["arm"], str) or not obj["arm"]:
        return f"arm must be a non-empty string, got {_got(obj['arm'])}"
    if not _is_int(obj["seed"]):
        return f"seed {_got(obj['seed'])} is not a registered seed: seeds are integers"
    pid = obj["prompt_id"]
    if not (_is_int(pid) or (isinstance(pid, str) and pid)):
        return f"prompt_id must be a string, got {_got(pid)}"
    if not isinstance(obj["text"], str):
        return f"text must be a string, got {_got(obj['text'])}"
    kind = obj.get("kind", "voice")
    if not isinstance(kind, str) or kind not in KINDS:
        return f"kind must be one of {', '.join(KINDS)}, got {_got(kind)}"
    if "model" in obj and (not isinstance(obj["model"], str) or not obj["model"]):
        return f"model must be a non-empty string, got {_got(obj['model'])}"
    for check in (finish_reason_problem(obj.get("finish_reason")), usage_problem(obj.get("usage"))):
        if check is not None:
            return check
    if "imported" in obj and not isinstance(obj["imported"], bool):
        return f"imported must be true or false, got {_got(obj['imported'])}"
    for key in ("request_seed", "order"):
        if obj.get(key) is not None and not _is_int(obj[key]):
            return f"{key} must be an integer, got {_got(obj[key])}"
    latency = obj.get("latency_s")
    if latency is not None and (isinstance(latency, bool) or not isinstance(latency, (int, float))):
        return f"latency_s must be a number, got {_got(latency)}"
    return None


def _numbered(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) of every whole line; a torn final line (a kill mid-write) is skipped."""
    if not path.exists():
        return
    lines = path.read_bytes().split(b"\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield i + 1, _json.loads(line)
        except ValueError as exc:
            if i == len(lines) - 1:  # no newline after it: the write never finished
                return
            raise DamagedFile(f"{path} line {i + 1}: not valid JSON ({exc}); the file is damaged") from None


def read_rows(path: Path) -> list[Row]:
    """All whole rows of a JSON-lines state file, each an object; a torn final line is ignored."""
    rows: list[Row] = []
    for n, obj in _numbered(path):
        if not isinstance(obj, dict):
            raise DamagedFile(f"{path} line {n}: not a JSON object ({_a(_shown_type(obj))}); the file is damaged")
        rows.append(obj)
    return rows


def read_generations(path: Path) -> list[Row]:
    """The generations file's rows, each of the stored shape (`row_problem`); a damaged one is refused."""
    rows: list[Row] = []
    for n, obj in _numbered(path):
        problem = row_problem(obj)
        if problem is not None:
            raise DamagedFile(f"{path} line {n}: {problem}; the generations file is damaged")
        rows.append(obj)
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
    """Append rows whole, fsync'd; every row is encoded first, so a NaN refuses them all before a byte is written.

    One write and one fsync per call: a kill part-way leaves whole rows and at most one torn line (`repair_tail`),
    as a sync per row would, and a row counts only once this returns. A sync per row made an import of 1,300
    rows wait on 1,300 disk flushes."""
    data = b"".join((_json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8") for row in rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def generations_hash(rows: Iterable[Row]) -> str:
    """sha256 of the canonical rows sorted by (kind, arm, seed, prompt_id) — finish order is irrelevant."""
    ordered = sorted(({"kind": "voice", **r} for r in rows), key=row_key)
    return sha256_json(ordered)
