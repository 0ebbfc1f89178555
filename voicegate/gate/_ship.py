"""`ship` and `note`: a person's decision or note, recorded beside (never over) the verdicts."""

from __future__ import annotations

import datetime as _dt
from functools import partial
from pathlib import Path

from voicegate.gate._state import recorded_standing
from voicegate.spec import check_registered, load_spec, workspace_root


def ship(root: Path | str | None, gate: str, arm: str, reason: str, *, now: _dt.datetime | None = None) -> list[str]:
    """Append the decision to every artifact the spec names; returns one line per artifact touched.

    Refused (nothing written) without a reason, for the base carrier, before any
    score is recorded, or when compose cannot take the entry: a shipped adapter
    must be listed for deploy.
    """
    from voicegate.artifacts import record_ship

    spec = load_spec(workspace_root(root), gate)
    check_registered(spec)
    return record_ship(spec, arm, reason, now=now, standing_of=partial(recorded_standing, spec))


def note(root: Path | str | None, gate: str, text: str, *, now: _dt.datetime | None = None) -> list[str]:
    """Append a person's note (a defect found and left alone, say) to every artifact the spec names; no verdict
    changes."""
    from voicegate.artifacts import record_note

    spec = load_spec(workspace_root(root), gate)
    check_registered(spec)
    return record_note(spec, text, now=now, standing_of=partial(recorded_standing, spec))
