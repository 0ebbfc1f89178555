"""`score`: a registered gate's stored generations scored, saved and appended to its artifacts.

The workflow `voicegate score` runs, as a function a Python user can call: the
CLI only chooses how to print. Nothing is written under `dry_run` but the
content-addressed scoring cache (derived from the inputs, never a record).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from voicegate._errors import VoicegateError
from voicegate.run._manifest import read_manifest
from voicegate.run._store import read_generations, read_rows
from voicegate.scoring._result import GateResult, Integrity, ReplicaShare, result_text
from voicegate.spec._artifact_paths import check_artifact_paths
from voicegate.spec._registration import check_registered
from voicegate.spec._spec import GateSpec, load_spec
from voicegate.spec._workspace import workspace_root


@dataclass(frozen=True)
class InForce:
    """An amendment's result that still stands for these generations, and where it came from."""

    result: GateResult
    amended_from: str
    time: str

    def note(self) -> str:
        return (f"as amended {self.time}: {self.amended_from} -> {self.result.rule} on these same generations; "
                f"the decision in force is under {self.result.rule}")


def in_force(spec: GateSpec, result: GateResult) -> InForce | None:
    """The recorded amendment that supersedes `result` (same generations, another rule), if any."""
    from voicegate.artifacts._entries import amendments, load_state, result_sha256

    state = load_state(spec) or {}
    if state.get("current_kind") != "amend" or not isinstance(state.get("current"), dict):
        return None
    if (state.get("results") or {}).get(result.rule) != result_sha256(result):
        return None  # not the result that was amended: this score is news, and is recorded as such
    current = GateResult.from_json(state["current"])
    if current.rule == result.rule or current.generations_sha256 != result.generations_sha256:
        return None
    newest: dict[str, Any] = next(reversed(amendments(spec)), {})
    return InForce(current, str(newest.get("rule_from", result.rule)), str(state.get("time", "?")))


@dataclass(frozen=True)
class ScoreOutcome:
    spec: GateSpec
    result: GateResult
    # One line per artifact touched (or "the record is current"); empty under dry_run.
    recorded: tuple[str, ...]
    # The decision in force when an amendment re-scored these very generations under another rule.
    in_force: InForce | None = None
    # `result` with every number at full precision (same verdicts, same pick): what `score --json` prints.
    full: GateResult | None = None

    @property
    def text(self) -> str:
        """The JSON bytes written to scores.json (every number rounded to 6 decimals, as recorded)."""
        return result_text(self.result)


def load_generations(spec: GateSpec) -> list[dict[str, Any]]:
    """The stored generations; refuses an unreadable file or an empty one with what to run next."""
    rows = read_generations(spec.generations_path)  # a damaged line is refused, naming it
    if not rows:
        raise VoicegateError(f"no generations for {spec.gate} at {spec.generations_path} "
                             f"(run `voicegate generate {spec.gate}` or `voicegate import`)")
    return rows


class IntegrityRefused(VoicegateError):
    """The seat did not serve every arm its own weights: no verdict on these generations (exit 2)."""


def seat_integrity(spec: GateSpec, rows: Sequence[Mapping[str, Any]],
                   manifest: Mapping[str, Any] | None) -> Integrity | None:
    """The canary verdict behind `rows`, judged again from the stored texts; None when no row was generated.

    Imported rows (and rows written by hand) carry no canaries and are scored as they always were;
    generated rows must carry their checks (``canaries.jsonl``, run.json's integrity record).
    """
    from voicegate.generate._integrity import verdict

    try:
        canaries = read_rows(spec.run.canaries)
    except ValueError as exc:
        raise VoicegateError(f"{spec.run.canaries}: a row is not valid JSON ({exc})") from None
    return verdict(rows, canaries, manifest)


# The signature keys that bind a verdict to its integrity evidence (issue 25): only generated runs have them.
INTEGRITY_KEYS = ("integrity_sha256", "canaries_sha256")


def integrity_evidence(spec: GateSpec, manifest: Mapping[str, Any] | None) -> dict[str, str | None]:
    """sha256 of run.json's integrity block (canonical JSON) and of canaries.jsonl's bytes."""
    from voicegate._hashing import sha256_file, sha256_json

    block = (manifest or {}).get("integrity")
    path = spec.run.canaries
    return {"integrity_sha256": sha256_json(block) if block is not None else None,
            "canaries_sha256": sha256_file(path) if path.exists() else None}


class MixedCells(VoicegateError):
    """A cell's arms came from different replicas: they were not generated harness-matched (exit 2)."""


def check_cells(gate: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """Refuse rows where one (seed, prompt) cell's arms came from more than one replica."""
    from voicegate.generate._cells import mixed_cells

    mixed = mixed_cells(rows)
    if mixed:
        (kind, seed, prompt), where = mixed[0]
        raise MixedCells(f"{gate}: refusing to score: the cell ({kind}, seed {seed}, {prompt}) mixes replicas "
                         f"{' and '.join(where)} ({len(mixed)} cell(s) in all); every arm of a cell must come from "
                         "one replica — move the stored rows aside and run `voicegate generate` again")


def replicas_of(rows: Sequence[Mapping[str, Any]], manifest: Mapping[str, Any] | None) -> tuple[ReplicaShare, ...]:
    from voicegate.generate._cells import replica_shares

    sessions = (manifest or {}).get("sessions") or []
    return tuple(ReplicaShare.from_json(d) for d in replica_shares(rows, sessions if isinstance(sessions, list)
                                                                  else []))


def integrity_note(manifest: Mapping[str, Any] | None, integrity: Integrity | None) -> str:
    """What a table says about the seat's integrity, also when nothing was checked."""
    if integrity is not None:
        return f"seat integrity: {integrity.line()}"
    if manifest is not None and manifest.get("source") == "imported":
        return "seat integrity: not checked (imported)"
    return "seat integrity: not checked (no canaries in this run)"


def refusal(gate: str, integrity: Integrity) -> str:
    """The one line `score` exits 2 with."""
    if integrity.status == "not checked":
        why = "; ".join(integrity.problems) or (f"{integrity.unchecked_rows} generated rows come from sessions "
                                                "without a single integrity check")
        return (f"{gate}: refusing to decide: seat integrity NOT CHECKED for generated rows ({why}); run "
                f"`voicegate generate {gate}` to quarantine and regenerate them")
    arms = ", ".join(integrity.affected) or "every arm"
    against = integrity.wrong + integrity.foreign + integrity.unclear
    detail = [f"{against} of {integrity.sent} canaries did not reproduce their own arm's reference"]
    if integrity.confusions:
        detail.insert(0, integrity.confusion_text())
    detail += list(integrity.problems)
    return (f"{gate}: refusing to decide: seat integrity FAILED for arms {arms} ({'; '.join(detail)}); run "
            f"`voicegate generate {gate} --isolate-arms` to quarantine and regenerate them")


def score(root: Path | str | None, gate: str, *, dry_run: bool = False,
          on_scored: Callable[[GateResult, InForce | None, GateResult], None] | None = None) -> ScoreOutcome:
    """Score `gate` under its registered rule; save scores.json and append the verdicts unless `dry_run`.

    `on_scored` sees the result (rounded as recorded), the amendment in force and the same result at
    full precision before anything is written, so a caller shows the numbers even when recording them
    is then refused (a read-only README).
    """
    from voicegate.scoring._score import score_gate_both  # numpy and the cache: only when scoring

    spec = load_spec(workspace_root(root), gate)
    registration = check_registered(spec)
    if not dry_run:
        check_artifact_paths(spec)  # before the cache or scores.json is written; again under the locks
    rows = load_generations(spec)
    manifest = read_manifest(spec.run_dir)
    check_cells(spec.gate, rows)   # before anything is written, like the integrity refusal
    integrity = seat_integrity(spec, rows, manifest)
    if integrity is not None and not integrity.holds and not dry_run:
        raise IntegrityRefused(refusal(spec.gate, integrity))  # before scores.json or anything else is written
    # The cache is derived data, not a record: a dry run fills it too, so the real run that follows is fast.
    result, full = score_gate_both(spec, rows, cache_dir=spec.run.cache, write_cache=True)
    if integrity is not None:
        # The verdict names the evidence it stands on: edit either file and the signature changes.
        bound = integrity_evidence(spec, manifest)
        result = replace(result, integrity=integrity, signature={**result.signature, **bound})
        full = replace(full, integrity=integrity, signature={**full.signature, **bound})
    shares = replicas_of(rows, manifest)
    if shares:
        result, full = replace(result, replicas=shares), replace(full, replicas=shares)
    amended = in_force(spec, result)
    if on_scored is not None:
        on_scored(result, amended, full)
    if integrity is not None and not integrity.holds:
        raise IntegrityRefused(refusal(spec.gate, integrity))  # --dry-run: the numbers, then the refusal
    recorded: list[str] = []
    if not dry_run:
        from voicegate.artifacts import record_score  # jinja2 and the chains: only when recording

        recorded = record_score(spec, registration, result, manifest or {}, scores=result_text(result))
    return ScoreOutcome(spec=spec, result=result, recorded=tuple(recorded), in_force=amended, full=full)
