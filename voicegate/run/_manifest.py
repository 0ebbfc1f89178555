"""The run manifest `<data dir>/<gate>/run.json`: where a gate's generations came from.

`generate` writes it (the seat, its version and models, the schedule, the seed
rule) and `import` writes it (the file and its sha256); `score`, the artifacts
and the report read it as a `RunManifest` (`load_manifest`). One reader and one
writer, so every command agrees on what an unreadable manifest means and on
where the seat and its version are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
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


@dataclass(frozen=True, kw_only=True)
class RunManifest:
    """run.json as its readers read it: every fallback between the forms it was written in, here once.

    `generate` records the seat as ``{"url", "version", "models"}``; older and hand-written manifests
    say ``seat_url``/``vllm_version`` (or ``version``) at the top. `import` records the file it read.
    `data` is the mapping itself, for the writers that extend it; readers use the typed fields (the
    integrity verdict, `scoring._integrity`, reads `arms`, `sessions`, `integrity`, `quarantine`).
    """

    data: Mapping[str, Any] = field(repr=False)
    source: str | None
    seat_url: str | None
    seat_version: str | None
    seat_models: tuple[str, ...]
    file: str | None
    file_sha256: str | None
    order_seed: str | None
    registration_commit: str | None
    runtime_loaded: tuple[str, ...]
    sessions: tuple[Mapping[str, Any], ...]
    integrity: Mapping[str, Any] | None
    arms: tuple[str, ...] = ()                    # the arms' names, as the run recorded them
    quarantine: Mapping[str, Any] | None = None   # what was moved to the quarantine file, and where
    # run.json's sessions by their index (a session that is not a mapping reads as {}): what a row's
    # ``session`` number points at
    indexed: tuple[Mapping[str, Any], ...] = field(default=(), repr=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RunManifest:
        seat = d.get("seat_url") or d.get("seat")
        version = d.get("vllm_version") or d.get("version")
        models: list[Any] = []
        if isinstance(seat, Mapping):
            version = version or seat.get("version")
            listed = seat.get("models")
            models = listed if isinstance(listed, list) else []
            seat = seat.get("url")
        if isinstance(version, Mapping):
            version = version.get("version")
        sessions = d.get("sessions")
        loaded = d.get("runtime_loaded")
        integrity = d.get("integrity")
        arms = d.get("arms")
        quarantine = d.get("quarantine")
        return cls(
            data=d, source=_text(d.get("source")), seat_url=_text(seat), seat_version=_text(version),
            seat_models=tuple(str(m.get("id", m) if isinstance(m, Mapping) else m) for m in models),
            file=_text(d.get("file")), file_sha256=_text(d.get("file_sha256")),
            order_seed=_text(d.get("order_seed")), registration_commit=_text(d.get("registration_commit")),
            runtime_loaded=tuple(map(str, loaded)) if isinstance(loaded, list) else (),
            sessions=tuple(s for s in sessions if isinstance(s, Mapping)) if isinstance(sessions, list) else (),
            integrity=integrity if isinstance(integrity, Mapping) else None,
            arms=tuple(str(a.get("name")) for a in arms if isinstance(a, Mapping)) if isinstance(arms, list) else (),
            quarantine=quarantine if isinstance(quarantine, Mapping) else None,
            indexed=tuple(s if isinstance(s, Mapping) else {} for s in sessions) if isinstance(sessions, list) else ())

    def session(self, index: int) -> Mapping[str, Any]:
        """The session a row's ``session`` number names ({} when run.json has none there)."""
        return self.indexed[index] if 0 <= index < len(self.indexed) else {}

    @property
    def imported(self) -> bool:
        return self.source == "imported"


def load_manifest(run_dir: Path) -> RunManifest | None:
    """The run manifest, typed; None before any run (a damaged one is refused, as by `read_manifest`)."""
    data = read_manifest(run_dir)
    return None if data is None else RunManifest.from_json(data)


def _text(value: Any) -> str | None:
    """A manifest value as shown: absent and empty are both "not recorded"."""
    return None if value in (None, "") else str(value)
