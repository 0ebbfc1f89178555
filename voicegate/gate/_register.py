"""`register`: freeze a gate's spec (the registration commit), then warm the scoring cache.

The registration itself (`spec._registration.register`) hashes the spec and every
file it names and commits them. The cache comes after it: it is derived data, so a
failure to build it (a read-only data directory) costs only speed, never the
registration, and the first `score` then finds the corpora already tokenized,
profiled and indexed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from voicegate._errors import VoicegateError
from voicegate.spec._registration import Registration
from voicegate.spec._spec import GateSpec


@dataclass(frozen=True)
class Registered:
    spec: GateSpec
    registration: Registration
    warning: str | None   # the words-per-pool warning for a spec that went in
    cache_note: str | None  # why the cache could not be warmed (None: it was)
    notes: tuple[str, ...] = ()  # files the spec names that are not needed yet (a compose file to come)


def register(root: Path | str | None, gate: str, *, supersede: bool = False) -> Registered:
    from voicegate.scoring._score import warm_cache
    from voicegate.spec._registration import register as register_spec
    from voicegate.spec._registration import words_warning
    from voicegate.spec._spec import load_spec
    from voicegate.spec._workspace import workspace_root

    spec = load_spec(workspace_root(root), gate, for_register=True)
    registration = register_spec(spec, supersede=supersede)
    note = None
    try:
        warm_cache(spec, spec.run.cache)
    except (OSError, VoicegateError) as exc:
        note = f"the scoring cache was not warmed ({exc}); the first score builds it"
    from voicegate.spec._resolve import artifact_gaps

    later = tuple(artifact_gaps(spec.values, spec.root)[1])  # the inputs were checked when the spec loaded
    return Registered(spec, registration, words_warning(spec), note, later)
