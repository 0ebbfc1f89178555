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
from voicegate.spec import GateSpec, Registration


@dataclass(frozen=True)
class Registered:
    spec: GateSpec
    registration: Registration
    warning: str | None   # the words-per-pool warning for a spec that went in
    cache_note: str | None  # why the cache could not be warmed (None: it was)
    notes: tuple[str, ...] = ()  # files the spec names that are not needed yet (a compose file to come)
    untracked: tuple[str, ...] = ()  # pinned files in the repository that git does not track
    uncommitted: tuple[str, ...] = ()  # pinned files git tracks, with changes not committed
    warnings: tuple[str, ...] = ()   # what weakens the specificity check without making it wrong (impostors)

    def pin_warnings(self) -> list[str]:
        """One warning per pinned file a clone could not check, then how to commit them all."""
        lines = [f"warning: {name} is pinned by its sha256 but git does not track it" for name in self.untracked]
        lines += [f"warning: {name} is pinned by its sha256 but its changes are not committed"
                  for name in self.uncommitted]
        if lines:
            names = " ".join(_quoted(n) for n in (*self.untracked, *self.uncommitted))
            lines.append(f"commit them, so a clone holds what the registration pins: `git add {names} && "
                         f"git commit -m \"{self.spec.gate}: the gate's inputs\"`")
        return lines


def _compose_gap(spec: GateSpec) -> list[str]:
    """A compose file that exists but lists no --lora-modules item for the gate: score will write no comment."""
    compose = spec.artifacts.compose
    if compose is None or not compose.is_file():
        return []
    from voicegate.artifacts import has_module
    from voicegate.spec import shown_path

    name = shown_path(spec.root, compose)
    try:
        if has_module(compose.read_bytes(), spec.gate):
            return []
    except (OSError, UnicodeDecodeError, VoicegateError) as exc:
        return [f"artifacts.compose {name} could not be read for --lora-modules ({exc})"]
    return [(f"artifacts.compose {name} has no --lora-modules entry for {spec.gate} (an item `{spec.gate}=PATH`, "
            f"or the JSON form with \"name\": \"{spec.gate}\", after --lora-modules), so score writes no compose "
            "comment there until one is added (ship needs it)")]


def _quoted(name: str) -> str:
    import shlex

    return shlex.quote(name)


def check_replicates(spec: GateSpec) -> None:
    """Refuse a design whose seeds cannot be replicates: under greedy sampling every seed gives the same text, so
    every spread and every floor is 0 and the seeds measure no noise at all."""
    if spec.sampling.temperature == 0 and len(spec.seeds) > 1:
        raise VoicegateError(f"refusing to register {spec.gate}: sampling.temperature is 0 with {len(spec.seeds)} "
                             "seeds, and greedy sampling gives every seed the same text, so the seeds are not "
                             "replicates and no floor can measure noise; register a temperature above 0 (e.g. 0.8)")


def register(root: Path | str | None, gate: str, *, supersede: bool = False) -> Registered:
    from voicegate.scoring import warm_cache
    from voicegate.spec import load_spec, words_warning, workspace_root
    from voicegate.spec import register as register_spec

    spec = load_spec(workspace_root(root), gate, for_register=True)
    check_replicates(spec)
    registration = register_spec(spec, supersede=supersede)
    note = None
    try:
        warm_cache(spec, spec.run.cache)
    except (OSError, VoicegateError) as exc:
        note = f"the scoring cache was not warmed ({exc}); the first score builds it"
    from voicegate.spec import artifact_gaps, uncommitted_pins

    later = (*artifact_gaps(spec.values, spec.root)[1], *_compose_gap(spec))  # inputs: checked at load
    untracked, changed = uncommitted_pins(spec)
    from voicegate.spec import impostor_warnings

    return Registered(spec, registration, words_warning(spec), note, later, tuple(untracked), tuple(changed),
                      tuple(impostor_warnings(spec)))
