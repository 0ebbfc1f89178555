"""What `score` checks before it scores: the cells are harness-matched and the seat served each arm.

Both are judged from what the run stored (the rows, run.json, canaries.jsonl),
before anything is written; what they find goes into scoring whole, as the
result's `Provenance`, so the result is built once and its signature names the
evidence. The refusals are exit 2 (`VoicegateError`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from voicegate._errors import VoicegateError
from voicegate.run import RunManifest
from voicegate.scoring import (
    Integrity,
    IntegrityEvidence,
    Provenance,
    ReplicaShare,
    mixed_cells,
    replica_shares,
    verdict,
)
from voicegate.spec import GateSpec


class MixedCells(VoicegateError):
    """A cell's arms came from different replicas: they were not generated harness-matched (exit 2)."""


class IntegrityRefused(VoicegateError):
    """The seat did not serve every arm its own weights: no verdict on these generations (exit 2)."""


def check_cells(gate: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """Refuse rows where one (seed, prompt) cell's arms came from more than one replica."""
    mixed = mixed_cells(rows)
    if mixed:
        (kind, seed, prompt), where = mixed[0]
        raise MixedCells(f"{gate}: refusing to score: the cell ({kind}, seed {seed}, {prompt}) mixes replicas "
                         f"{' and '.join(where)} ({len(mixed)} cell(s) in all); every arm of a cell must come from "
                         "one replica — move the stored rows aside and run `voicegate generate` again")


def provenance(spec: GateSpec, rows: Sequence[Mapping[str, Any]], manifest: RunManifest | None) -> Provenance:
    """The seat behind `rows`: its integrity judged again from the stored texts, the replicas, the evidence.

    Imported rows (and rows written by hand) carry no canaries and are scored as they always were;
    generated rows must carry their checks (``canaries.jsonl``, run.json's integrity record).
    """
    from voicegate.run import read_rows

    try:
        canaries = read_rows(spec.run.canaries)
    except ValueError as exc:
        raise VoicegateError(f"{spec.run.canaries}: a row is not valid JSON ({exc})") from None
    integrity = verdict(rows, canaries, manifest)
    shares = replica_shares(rows, list(manifest.sessions) if manifest else [])
    return Provenance(integrity=integrity, replicas=tuple(ReplicaShare.from_json(d) for d in shares),
                      evidence=None if integrity is None else _evidence(spec, manifest))


def _evidence(spec: GateSpec, manifest: RunManifest | None) -> IntegrityEvidence:
    """sha256 of run.json's integrity block (canonical JSON) and of canaries.jsonl's bytes."""
    from voicegate._hashing import sha256_file, sha256_json

    block = None if manifest is None else manifest.integrity
    path = spec.run.canaries
    return IntegrityEvidence(integrity_sha256=sha256_json(block) if block is not None else None,
                             canaries_sha256=sha256_file(path) if path.exists() else None)


def check_integrity(gate: str, integrity: Integrity | None) -> None:
    """Refuse to decide on generations whose seat failed its check, or was never checked."""
    if integrity is not None and not integrity.holds:
        raise IntegrityRefused(refusal(gate, integrity))


def integrity_note(manifest: RunManifest | None, integrity: Integrity | None) -> str:
    """What a table says about the seat's integrity, also when nothing was checked."""
    if integrity is not None:
        return f"seat integrity: {integrity.line()}"
    if manifest is not None and manifest.imported:
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
