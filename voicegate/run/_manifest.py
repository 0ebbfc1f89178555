"""The run manifest `<data dir>/<gate>/run.json`: where a gate's generations came from.

`generate` writes it (the seat, its version and models, the schedule, the seed
rule) and `import` writes it (the file and its sha256); `score`, the artifacts
and the report read it. One reader and one writer, so every command agrees on
what an unreadable manifest means.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from voicegate import _json as strict_json
from voicegate._atomic import write_atomic
from voicegate._errors import VoicegateError
from voicegate.run._rundir import RunDir


def manifest_path(run_dir: Path) -> Path:
    return RunDir(run_dir, run_dir.parent).manifest


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    """The manifest, or None before any run; a damaged one is refused, never guessed at."""
    path = manifest_path(run_dir)
    if not path.exists():
        return None
    try:
        data = strict_json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise VoicegateError(f"{path}: unreadable run manifest ({exc})") from None
    if not isinstance(data, dict):
        raise VoicegateError(f"{path}: unreadable run manifest (not a JSON object)")
    return data


def write_manifest(run_dir: Path, data: dict[str, Any]) -> None:
    write_atomic(manifest_path(run_dir), json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
