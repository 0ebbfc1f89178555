"""run.json for a generate run: what the run, and each session of it, records about itself.

The manifest names the seat the run started on (later sessions must be that seat), the
arms and how each was served, the rules that made the schedule, and one entry per
session: when, how (concurrency, arms isolated or mixed, the waves), on which replicas,
what it generated, loaded and unloaded, its canaries and their tally. The integrity
section holds the method, its parameters and the verdict over every stored row.

A run whose integrity check failed is not continued as it was: ``--isolate-arms``
first moves the suspect rows (every row of a failed session) to the quarantine
file, then regenerates them. Rows of a session that stopped before its first
check are moved there too, by any `generate`, and regenerated; so are the stored
arms of a cell left unfinished on a replica that is gone. The quarantine section
counts what was moved and why.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from voicegate._version import __version__
from voicegate.generate._progress import Say
from voicegate.generate._quarantine import move_to_quarantine, row_identity
from voicegate.generate._result import GenerateResult
from voicegate.generate._schedule import (
    A_VS_A_SEED_RULE,
    CELL_RULE,
    ORDER_RULE,
    SEED_RULE,
    SEED_RULE_ID,
    WAVE_RULE,
    Job,
)
from voicegate.run import RunManifest, read_rows, write_manifest
from voicegate.run import manifest_path as run_manifest_path
from voicegate.run import read_manifest as run_read_manifest
from voicegate.scoring import METHOD, METHOD_ID, CanaryParams, Part, describe_parts, part_of, verdict
from voicegate.seat import ModelCard, SeatState
from voicegate.spec import GateSpec, Registration


def now() -> str:
    """UTC, to the microsecond: the time run.json, the rows and the canary rows record."""
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class RunLog:
    """run.json of one gate's generate run, built through this one object.

    `data` is the manifest as it stands (None before a first session builds it), `session` this
    session's entry: what the session learns goes into it (`note`), and it is written at the
    session's open and close; the quarantine counts are written as rows are moved.
    """

    def __init__(self, spec: GateSpec) -> None:
        self.spec = spec
        self.data: dict[str, Any] | None = run_read_manifest(spec.run_dir)
        self.session: dict[str, Any] = {}

    @property
    def path(self) -> Path:
        return run_manifest_path(self.spec.run_dir)

    @property
    def manifest(self) -> dict[str, Any]:
        """The manifest once built (or read): what a session's parts record into."""
        assert self.data is not None, "run.json is built before the session's parts use it"
        return self.data

    def start(self, urls: list[str], conc: int, isolate: bool, wave_size: int) -> None:
        self.session = _new_session(urls, conc, isolate, wave_size)

    def note(self, **fields: Any) -> None:
        """What this session learned about the seat, recorded in its entry."""
        self.session.update(fields)

    @property
    def status(self) -> str | None:
        return self.session.get("status")

    @status.setter
    def status(self, value: str) -> None:
        self.session["status"] = value

    def run_id(self) -> str:
        """This session's name among every run's: the gate, its index in run.json, when it started."""
        return f"{self.spec.gate}#{len(self.manifest['sessions'])}#{self.session['started']}"

    def build(self, reg: Registration, states: list[SeatState], jobs: list[Job], ours: set[str], conc: int,
              stored: int) -> None:
        self.data = _build_manifest(self.spec, reg, states, jobs, self.data, ours, conc, stored)

    def open(self, cards: Iterable[ModelCard], params: CanaryParams) -> int:
        return _open_session(self.spec, self.manifest, self.session, cards, params)

    def close(self, result: GenerateResult, canaries: dict[str, Any] | None, left: set[str], gone: set[str]) -> None:
        _close_session(self.spec, self.manifest, self.session, result, canaries, left, gone)

    def quarantine_parts(self, rows: list[dict[str, Any]], failed: set[Part | None], say: Say, *,
                         unchecked: bool = False, undecided: bool = False) -> list[dict[str, Any]]:
        return _quarantine_parts(self.spec, self.manifest, rows, failed, say, unchecked=unchecked,
                                undecided=undecided)

    def quarantine_orphans(self, orphans: Iterable[Mapping[str, Any]], why: str) -> int:
        return _quarantine_orphans(self.spec, self.manifest, orphans, why)


def _build_manifest(spec: GateSpec, reg: Registration, states: list[SeatState], jobs: list[Job],
                   previous: dict[str, Any] | None, ours: set[str], conc: int, stored: int) -> dict[str, Any]:
    """run.json as this session finds the run: the seat, arms, rules and schedule, and the sessions so far."""
    per_arm: dict[str, int] = {}
    for j in jobs:
        per_arm[j.arm] = per_arm.get(j.arm, 0) + 1
    served_as = {}
    first = states[0]
    ids = {c.id for c in first.cards}
    for a in spec.arms:
        served_as[a.name] = "base" if a.is_base else ("runtime-loaded" if a.model in ours else
                                                      "served" if a.model in ids else "missing")
    seat: dict[str, Any] = {"url": first.url, "version": first.version, "models": [c.as_dict() for c in first.cards]}
    if len(states) > 1:
        seat["replicas"] = [{"url": s.url, "version": s.version, "models": [c.as_dict() for c in s.cards]}
                            for s in states]
    data: dict[str, Any] = {
        "source": "generated",
        "gate": spec.gate,
        "spec_sha256": reg.spec_sha256,
        "registration_commit": reg.commit,
        "voicegate_version": __version__,
        "seat": seat,
        "arms": [{"name": a.name, "model": a.model, "role": a.role, "adapter_path": a.adapter_path,
                  "served_as": served_as[a.name]} for a in spec.arms],
        "runtime_loaded": sorted(ours),
        "sampling": spec.sampling.as_dict(),
        "order_seed": spec.order_seed,
        "order_rule": ORDER_RULE,
        "seed_rule": {"id": SEED_RULE_ID, "rule": SEED_RULE,
                      # only where an A-vs-A arm is registered: other runs keep their bytes
                      **({"a_vs_a": {"arms": [a.name for a in spec.a_vs_a], "rule": A_VS_A_SEED_RULE}}
                         if spec.a_vs_a else {})},
        "cell_rule": CELL_RULE,
        "counts": {"total": len(jobs), "voice": sum(j.kind == "voice" for j in jobs),
                   "probe": sum(j.kind == "probe" for j in jobs), "per_arm": per_arm, "stored": stored},
        "schedule": [j.summary() for j in jobs],
        "sessions": [],
    }
    if previous is not None:
        # The seat that started the run stays the run's seat; later parts are sessions of it.
        data["seat"] = previous.get("seat", data["seat"])
        data["sessions"] = list(previous.get("sessions", []))
        data["runtime_loaded"] = sorted(set(previous.get("runtime_loaded", [])) | ours)
        for key in ("integrity", "quarantine"):  # the seat's integrity record and the quarantine stay
            if key in previous:
                data[key] = previous[key]
    return data


def _new_session(urls: list[str], conc: int, isolate: bool, wave_size: int) -> dict[str, Any]:
    """This session's entry, as it starts: where (the replicas' redacted URLs) and how it sends."""
    session: dict[str, Any] = {"started": now(), "seat_url": urls[0], "concurrency": conc,
                               "voicegate_version": __version__, "isolate_arms": isolate}
    if len(urls) > 1:
        session["replicas"] = list(urls)
    if isolate:
        session.update(wave_size=wave_size, wave_rule=WAVE_RULE)
    return session


def _open_session(spec: GateSpec, manifest: dict[str, Any], session: dict[str, Any], cards: Iterable[ModelCard],
                 params: CanaryParams) -> int:
    """Write run.json with this session in it, before its first request; the session's index."""
    session["models"] = [c.as_dict() for c in cards]
    manifest["sessions"].append(session)
    manifest["integrity"] = {**manifest.get("integrity", {}), "method": METHOD_ID, "description": METHOD,
                             "params": params.as_dict()}
    write_manifest(spec.run_dir, manifest)
    return len(manifest["sessions"]) - 1


def _close_session(spec: GateSpec, manifest: dict[str, Any], session: dict[str, Any], result: GenerateResult,
                  canaries: dict[str, Any] | None, left: set[str], gone: set[str]) -> None:
    """Write run.json as the session ends, however it ended.

    `canaries` is the session's nonce, canaries and planned checks (None when it stopped before
    drawing them); `left` is what voicegate loaded and is still on the seat, `gone` what it unloaded.
    """
    session.setdefault("status", "stopped")
    session.update({"finished": now(), "generated": result.generated, "reloads": result.reloads,
                    "loaded": result.loaded, "unloaded": result.unloaded,
                    "integrity": result.canaries.as_dict()})
    session["per_replica"] = result.replicas
    if canaries is not None:
        session["canaries"] = canaries
    try:
        current = verdict(read_rows(spec.generations_path), read_rows(spec.run.canaries),
                          RunManifest.from_json(manifest))
    except (OSError, ValueError):
        current = None
    if current is not None:
        manifest["integrity"]["current"] = current.to_json()
    manifest["runtime_loaded"] = sorted((set(manifest.get("runtime_loaded", [])) - gone) | left)
    manifest["counts"]["stored"] = result.stored
    write_manifest(spec.run_dir, manifest)


def _quarantine_parts(spec: GateSpec, manifest: dict[str, Any], rows: list[dict[str, Any]],
                      failed: set[Part | None], say: Say, *, unchecked: bool = False,
                      undecided: bool = False) -> list[dict[str, Any]]:
    """Move every row of a failed (or unchecked, or undecided) (session, replica) to the quarantine file (appended
    first)."""
    why = ("left an arm's weights not decided" if undecided else
           "carried no seat-integrity check" if unchecked else "seat integrity failed")
    unchecked = unchecked or undecided
    moved = move_to_quarantine(
        spec, lambda r: (f"{why} in session {describe_parts([p]) if p is not None else '(none recorded)'}"
                         if (p := part_of(r)) in failed else None),
        "generate" if unchecked else "generate --isolate-arms")
    q = manifest.get("quarantine", {})
    known = {p for p in failed if p is not None}
    manifest["quarantine"] = {**q, "file": spec.run.quarantine.name, "rows": int(q.get("rows", 0)) + moved,
                              "sessions": sorted(set(q.get("sessions", [])) | {s for s, _ in known}),
                              "reason": q.get("reason") if unchecked and q.get("reason") else
                              ("generations whose weights' identity was not decided" if undecided else
                               "generations without a seat-integrity check" if unchecked else
                               "seat integrity failed (canaries not reproduced: another arm's or foreign weights)")}
    write_manifest(spec.run_dir, manifest)
    if undecided:
        say(f"note: {moved} stored generation(s) of session(s) {describe_parts(known)} left an arm's weights not "
            f"decided (its answers differ from earlier ones of the same weights on another vLLM version); moved them "
            f"to {spec.run.quarantine} (kept, not scored) and regenerating them")
    elif unchecked:
        say(f"note: {moved} stored generation(s) of session(s) {describe_parts(known) or '(none recorded)'} carry no "
            f"seat-integrity check (the run stopped before its first); moved them to {spec.run.quarantine} (kept, not "
            "scored) and regenerating them")
    else:
        say(f"note: seat integrity failed in session(s) {describe_parts(known)}: moved {moved} "
            f"suspect generation(s) to {spec.run.quarantine} (kept, not scored); regenerating them with arms isolated")
    return [r for r in rows if part_of(r) not in failed]


def _quarantine_orphans(spec: GateSpec, manifest: dict[str, Any], orphans: Iterable[Mapping[str, Any]],
                        why: str) -> int:
    """Stored arms of cells that will be re-run whole elsewhere: to the quarantine file, never deleted."""
    ids = {row_identity(r) for r in orphans}
    moved = move_to_quarantine(
        spec, lambda r: (f"its cell was left unfinished ({why}); re-run whole on one replica"
                         if row_identity(r) in ids else None),
        "generate (replicas)")
    q = manifest.get("quarantine", {})
    manifest["quarantine"] = {**q, "file": spec.run.quarantine.name,
                              "orphans": int(q.get("orphans", 0)) + moved}
    return moved
