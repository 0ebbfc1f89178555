"""`score`: a registered gate's stored generations scored, saved and appended to its artifacts.

The workflow `voicegate score` runs, as a function a Python user can call: the
CLI only chooses how to print. It goes one way: the registration, the rows and
run.json are read once; the pre-score checks (`gate._checks`) judge the cells
and the seat; scoring builds the result once, with that provenance in it; the
artifacts record it. Nothing is written under `dry_run` but the
content-addressed scoring cache (derived from the inputs, never a record).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from voicegate._errors import VoicegateError
from voicegate.gate._checks import check_cells, check_integrity, integrity_note, provenance
from voicegate.gate._error_rates import error_rates
from voicegate.gate._looks import check_look, look_state
from voicegate.gate._state import GateState, InForce, amended, gate_state, in_force
from voicegate.run import load_manifest, read_generations
from voicegate.scoring import GateResult, result_text
from voicegate.spec import GateSpec, check_artifact_paths, check_registered, load_spec, workspace_root


@dataclass(frozen=True)
class ScoreOutcome:
    spec: GateSpec
    result: GateResult
    # One line per artifact touched (or "the record is current"); empty under dry_run and before recording.
    recorded: tuple[str, ...]
    # The decision in force when an amendment re-scored these very generations under another rule.
    in_force: InForce | None = None
    # `result` with every number at full precision (same verdicts, same pick).
    full: GateResult | None = None
    # Lines said under the table that the result does not carry: "seat integrity: not checked (...)"
    # when the run had no canaries (a checked run's verdict is in `result.integrity`, and in the table).
    notes: tuple[str, ...] = ()
    # The state in force: what every surface of `score` shows (exit code, line, table, --json, --junit).
    state: GateState | None = None
    # A sequential design's decision at the look scored, one line a candidate (None: the fixed design).
    look: tuple[str, ...] | None = None

    @property
    def text(self) -> str:
        """The JSON bytes written to scores.json (every number rounded to 6 decimals, as recorded)."""
        return result_text(self.result)

    @property
    def shown(self) -> GateResult:
        """The decision a reader is shown: after an amendment, the amended one."""
        return self.in_force.result if self.in_force is not None else self.result

    @property
    def standing(self) -> GateState:
        """The state in force (built from `in_force` when a caller made the outcome without one)."""
        if self.state is not None:
            return self.state
        return gate_state(self.spec, self.result, self.full, self.in_force)


def load_generations(spec: GateSpec) -> list[dict[str, Any]]:
    """The stored generations; refuses an unreadable file or an empty one with what to run next."""
    rows = read_generations(spec.generations_path)  # a damaged line is refused, naming it
    if not rows:
        from voicegate.artifacts import recorded_entries

        scored = [e for e in recorded_entries(spec.artifacts.record) if e.kind in ("score", "amend")]
        if scored and scored[-1].generations_sha256:
            # New generations would be scored as a new run, over the verdicts the record holds: say what was lost
            raise VoicegateError(f"no generations for {spec.gate} at {spec.generations_path}, though its record "
                                 f"holds verdicts on generations sha256 {scored[-1].generations_sha256[:12]}: restore "
                                 f"runs/{spec.gate}/ from where it was kept (new generations from `voicegate "
                                 "generate` or `import` are scored as a new run)")
        raise VoicegateError(f"no generations for {spec.gate} at {spec.generations_path} "
                             f"(run `voicegate generate {spec.gate}` or `voicegate import`)")
    return rows


def score(root: Path | str | None, gate: str, *, dry_run: bool = False,
          on_scored: Callable[[ScoreOutcome], None] | None = None) -> ScoreOutcome:
    """Score `gate` under its registered rule; save scores.json and append the verdicts unless `dry_run`.

    `on_scored` sees the outcome (the result rounded as recorded and at full precision, the
    amendment in force, the notes) before anything is written, so a caller shows the numbers even
    when recording them is then refused (a read-only README, a failed seat check under --dry-run).
    """
    from voicegate.scoring import score_gate_both  # numpy and the cache: only when scoring

    spec = load_spec(workspace_root(root), gate)
    registration = check_registered(spec)
    if not dry_run:
        check_artifact_paths(spec)  # before the cache or scores.json is written; again under the locks
    rows = load_generations(spec)
    manifest = load_manifest(spec.run_dir)
    check_cells(spec.gate, rows)   # before anything is written, like the integrity refusal
    look = check_look(spec, registration, rows)  # a sequential design decides at its registered looks only
    if look is not None:  # scored as the look it is: its seeds, the first of the registered order
        spec = replace(spec, seeds=spec.seeds[:look])
    seat = provenance(spec, rows, manifest)
    if not dry_run:
        check_integrity(spec.gate, seat.integrity)  # before scores.json or anything else is written
    # The cache is derived data, not a record: a dry run fills it too, so the real run that follows is fast.
    result, full = score_gate_both(spec, rows, cache_dir=spec.run.cache, rules=registration.rules, write_cache=True,
                                   provenance=seat, checks=registration.checks)
    from voicegate.artifacts import record_anchor, record_score  # jinja2 and the chains

    # Numbers a person sees are ordered in git's history first: a dry run anchors them in the record's chain
    # (a real score's own entry does, unless its recording is refused after they were shown: see below).
    anchored = record_anchor(spec, result, "score --dry-run", registration.commit) if dry_run else []
    entry = in_force(spec, result)
    amendment, full_amended = None, None
    if entry is not None and entry.rule_to is not None:
        # The amended decision, as recorded and at full precision: the same rows, the rule in force deciding (the
        # record states the rule; the numbers are the stored generations', never a cached copy of them).
        both = score_gate_both(spec, rows, cache_dir=spec.run.cache, rule=entry.rule_to,
                               rules=list(dict.fromkeys([*result.rule_ids(), entry.rule_to])), write_cache=False,
                               provenance=seat, checks=registration.checks)
        amendment, full_amended = amended(entry, result, both.recorded), both.full
    # the look decides on the numbers as recorded, as `ship` and the report read them back
    look_decided = None if look is None else look_state(spec, registration.design, result)
    state = gate_state(spec, result, full, amendment, full_amended, look_decided)
    # the registered rule's, as its score entry records it: the state's own when no amendment is in force (each
    # statement reads every other gate's record for a pilot)
    stated = state.error_rates if amendment is None else error_rates(spec, result)
    looked = None if look_decided is None else look_decided.lines()
    notes = () if seat.integrity is not None else (integrity_note(manifest, None),)
    scored = ScoreOutcome(spec=spec, result=result, recorded=tuple(anchored), in_force=amendment, full=full,
                          notes=notes + tuple(looked or ()), state=state, look=None if looked is None else
                          tuple(looked))
    if on_scored is not None:
        on_scored(scored)
    if dry_run:
        check_integrity(spec.gate, seat.integrity)  # the numbers, then the refusal
        return scored
    try:
        recorded = record_score(spec, registration, result, manifest, scores=result_text(result),
                                error_rates=None if stated is None else stated.lines(),
                                standing=scored.standing.standing(), look=looked,
                                in_force=None if amendment is None else amendment.result)
    except VoicegateError:
        record_anchor(spec, result, "score", registration.commit)  # shown, not recorded: still ordered
        raise
    return replace(scored, recorded=tuple(recorded))
