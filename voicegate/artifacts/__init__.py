"""Append-only artifacts: the gate record, the adapter README and the compose comment.

Public surface, used by the use cases in `voicegate.gate`:

- `record_score(spec, registration, result, run)` — `voicegate score` appends
  its verdicts (or says the record is current, rebuilding a missing recorded.json from it);
- `record_ship(spec, arm, reason)` — a person's shipping decision;
- `record_note(spec, text)` — a person's note (a defect found and left alone), changing no verdict;
- `record_amendment(spec, old, new, changes, ...)` — render and append an
  amendment that `voicegate.gate.amend` has already checked (the policy lives there);
- `verify_gates(root, gate)` / `describe(...)` — the chain and git checks.

The discipline itself (markers, atomic writes, locks) lives in `_chain`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from voicegate.artifacts._compose import has_module
from voicegate.artifacts._entries import (
    AmendmentChange,
    amendments,
    current_state,
    decisions,
    load_state,
    notes,
    record_amendment,
    record_anchor,
    record_calibration,
    record_note,
    record_ship,
    result_sha256,
    verdict_lock,
)
from voicegate.artifacts._entries import record_score as _record_score
from voicegate.artifacts._format import one_line, ratio_of
from voicegate.artifacts._recorded import Entry, recorded_entries
from voicegate.artifacts._verify import FileCheck, describe, record_problem, verify_gates
from voicegate.run import RunManifest
from voicegate.scoring import GateResult
from voicegate.spec import GateSpec, Registration


def entry_count(path: Path) -> int:
    """How many voicegate entries the markdown artifact at `path` holds (0: none, or no such file)."""
    from voicegate.artifacts._chain import md_markers

    return len(md_markers(path.read_bytes())) if path.is_file() else 0


def gate_records(root: Path) -> dict[str, Path]:
    """Every gate of the workspace and the record its spec names (a spec that names none, or cannot be read for
    it, is left out: it has no record to read)."""
    from voicegate._errors import VoicegateError
    from voicegate.artifacts._verify import all_gates, artifact_paths

    out = {}
    for gate in all_gates(root):
        try:
            out[gate] = artifact_paths(root, gate)["record"]
        except (VoicegateError, KeyError):
            continue
    return out


def record_score(spec: GateSpec, registration: Registration, result: GateResult, run: RunManifest | None,
                 *, scores: str | None = None, error_rates: list[str] | None = None,
                 standing: Any = None, look: list[str] | None = None,
                 in_force: GateResult | None = None) -> list[str]:
    """Append a score's verdicts to every artifact the spec names; returns one line per artifact touched.
    `standing` (a `voicegate.gate.Standing`) is what each entry's first line says is in force; `in_force`, the
    decision of an amendment in force on these generations (what a missing recorded.json is rebuilt to, when the
    record's newest verdict is that amendment)."""
    return _record_score(spec, registration, result, run, scores=scores, error_rates=error_rates,
                         standing=standing, look=look, in_force=in_force)


__all__ = [
    "AmendmentChange",
    "Entry",
    "FileCheck",
    "amendments",
    "current_state",
    "decisions",
    "describe",
    "entry_count",
    "gate_records",
    "has_module",
    "load_state",
    "notes",
    "one_line",
    "ratio_of",
    "record_amendment",
    "record_anchor",
    "record_calibration",
    "record_note",
    "record_problem",
    "record_score",
    "record_ship",
    "recorded_entries",
    "result_sha256",
    "verdict_lock",
    "verify_gates",
]
