"""`voicegate generate`: drive a gate's registered generations through one seat.

The order of events is the guarantee:

1. the spec must match its registration; the schedule is derived from it;
2. a lock file makes this the only `generate` on the gate;
3. the seat is asked what it serves (``/v1/models``, ``/version``) and every
   refusal happens now, before any generation request (`generate._plan`);
   with replicas, every replica is asked and one that is not the same seat as
   the first is refused (`generate._session`);
4. candidates the seat does not serve are loaded at run time (and said once
   not to persist); the run manifest ``run.json`` records the seat
   (`generate._runlog`);
5. every arm answers each integrity canary twice alone on the seat (its
   reference and the session's calibration); with replicas, every replica's
   references must reproduce the first replica's, or the run is refused before
   any cell (`generate._seat_checks`);
6. up to N requests are kept in flight in schedule order, the canary checks
   at unpredictable places among them; each finished generation is appended
   whole and fsync'd before the next is counted; ``--isolate-arms`` sends waves
   of one arm (`generate._runner`; the one writer, `generate._writer`);
7. whatever voicegate loaded is unloaded, and nothing else — also on SIGTERM
   (`generate._sigterm`); the session's integrity verdict goes into run.json
   (and `voicegate generate` exits 4 when it failed).

Before step 3, rows a run may not continue from — every row of a session whose
integrity check failed (only under ``--isolate-arms``), that stopped before its
first check, or that left an arm's identity not decided — go to the quarantine file
and are regenerated (`generate._runlog`).
Steps 3-7 are one session (`generate._session`); what it prints is `generate._progress`,
what it returns `generate._result`.

A crash at any point loses at most the generations in flight; the next run
skips every stored key and cuts a torn last line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from voicegate._errors import VoicegateError
from voicegate._locks import gate_lock
from voicegate.generate._carrier_files import carrier_bound
from voicegate.generate._looks import LookStop, decided, next_look, not_scored
from voicegate.generate._plan import resolve_seat_urls
from voicegate.generate._progress import Say, resume_hint, saved
from voicegate.generate._replica import Mode
from voicegate.generate._result import GenerateResult
from voicegate.generate._runlog import RunLog
from voicegate.generate._schedule import build_schedule
from voicegate.generate._session import run_session
from voicegate.generate._sigterm import Stop, Terminated
from voicegate.run import RunManifest, read_generations, read_rows, repair_tail, row_key
from voicegate.scoring import (
    CanaryParams,
    Part,
    describe_parts,
    failed_parts,
    part_of,
    unchecked_parts,
    undecided_parts,
)
from voicegate.seat import RetryPolicy, api_key_from_env, redact_url
from voicegate.spec import GateSpec, Registration, check_registered, shown_path

__all__ = ["GenerateResult", "generate"]

ISOLATE_KEY = "generation.isolate_arms"


def registered_isolation(spec: GateSpec) -> bool:
    """Whether the spec sends one arm at a time (`generation.isolate_arms`; `--isolate-arms` overrides it)."""
    return bool(spec.values.get(ISOLATE_KEY, False))
WAVE_FACTOR = 4   # an isolated wave holds up to WAVE_FACTOR x concurrency jobs of one arm


def generate(spec: GateSpec, *, seat_url: str | Sequence[str] | None = None, concurrency: int | None = None,
             quiet: bool = False, retry: RetryPolicy | None = None,
             say: Say | None = None, isolate_arms: bool | None = None, canaries: int | None = None,
             wave_size: int | None = None) -> GenerateResult:
    """Make every registered generation not yet stored. Raises VoicegateError / SeatUnreachable.

    `seat_url` is one URL or several (replicas of one seat; default: $VOICEGATE_SEAT_URL, then the
    spec's ``seat.replicas``, then ``seat.url``). `concurrency` is per replica.
    `isolate_arms` (default: the spec's ``generation.isolate_arms``) sends waves of one arm;
    `canaries` fixes the integrity checks per arm (default: within 5% of the requests);
    `wave_size` overrides an isolated wave's size (default 4 x the concurrency).
    """
    reg = check_registered(spec)
    final = decided(spec, reg)  # a sequential design decided: nothing to make, nothing written, no seat asked
    if final is not None:
        return _stopped(spec, final, read_generations(spec.generations_path))
    explicit = [seat_url] if isinstance(seat_url, str) else list(seat_url or [])
    urls = resolve_seat_urls(spec, explicit)
    api_key = api_key_from_env(spec.seat.api_key_env)
    conc = concurrency or spec.seat.concurrency
    if conc < 1:
        raise VoicegateError(f"--concurrency must be at least 1, got {conc}")
    if canaries is not None and canaries < 1:
        raise VoicegateError(f"--canaries must be at least 1, got {canaries}")
    carrier_bound()    # a malformed bound refuses here, before any seat is asked
    isolate = registered_isolation(spec) if isolate_arms is None else isolate_arms
    mode = Mode(isolate, wave_size or conc * WAVE_FACTOR, CanaryParams(checks_per_arm=canaries))
    stop = Stop()
    with stop.guarding(), gate_lock(spec.run_dir, spec.gate, "generate"):
        # A resume hint must reach the same seat: keep --seat when it was given (credentials redacted).
        resume = f"voicegate generate {spec.gate}" + "".join(f" --seat {redact_url(u)}" for u in explicit)
        return _generate_locked(spec, reg, urls, api_key, conc, quiet, retry, say or (lambda line: None), mode,
                                resume, stop)


def _stopped(spec: GateSpec, look: LookStop, rows: list[dict[str, Any]]) -> GenerateResult:
    """What a `generate` that stopped at `look` says: that look's generations, none made."""
    wanted = {j.key for j in build_schedule(replace(spec, seeds=spec.seeds[:look.seeds]))}
    path = spec.generations_path
    return GenerateResult(spec.gate, len(wanted), len(wanted & {row_key(r) for r in rows}), 0, path,
                          shown=shown_path(spec.root, path), look=look)


def _generate_locked(spec: GateSpec, reg: Registration, urls: list[str], api_key: str | None, conc: int,
                     quiet: bool, retry: RetryPolicy | None, say: Say, mode: Mode,
                     resume: str, stop: Stop | None = None) -> GenerateResult:
    """Under the gate's lock: the stored rows checked and set aside as needed, then one session for the rest.

    Under a sequential design the look to make is read from the rows kept (a look whose rows went to quarantine
    is made again before the next), and a look stored but not scored stops the run before any request."""
    stop = stop or Stop()
    log = RunLog(spec)
    if log.data is not None and log.data.get("source") != "generated":
        raise VoicegateError(f"{spec.gate}: its generations were imported ({log.path}); "
                             "generate will not mix a seat's generations into an imported set")
    created = [d for d in (spec.run_dir, *spec.run_dir.parents) if not d.exists()]
    spec.run_dir.mkdir(parents=True, exist_ok=True)
    path = spec.generations_path
    repair_tail(path)
    rows = read_generations(path)
    if any(r.get("imported") for r in rows):
        raise VoicegateError(f"{path} holds imported generations; generate will not mix sources")
    rows, quarantined = _set_aside(spec, log, rows, mode, say)
    unscored = not_scored(spec, reg, rows)
    if unscored is not None:
        return _stopped(spec, unscored, rows)
    spec = next_look(spec, rows)  # a sequential design: one look at a time
    jobs = build_schedule(spec)
    done = {row_key(r) for r in rows}
    wanted = {j.key for j in jobs}
    pending = [j for j in jobs if j.key not in done]
    stored = len(wanted & done)
    result = GenerateResult(spec.gate, len(jobs), stored, 0, path, isolate_arms=mode.isolate,
                            quarantined=quarantined, resume=resume, shown=shown_path(spec.root, path))
    if not pending:
        return result
    try:
        try:
            ran = asyncio.run(run_session(spec, reg, urls, api_key, conc, jobs, rows, log, result,
                                          quiet, retry, say, stop, mode))
        finally:
            stop.rearm()  # the closed loop left SIGTERM at its default
        if stop.signalled:  # it came as the run was ending: the run is whole, the signal still ends it
            raise asyncio.CancelledError()
        return ran
    except asyncio.CancelledError:
        if not stop.signalled:
            raise
        unloaded = f"; unloaded {', '.join(result.unloaded)}" if result.unloaded else ""
        raise Terminated(f"terminated (SIGTERM); {saved(result)}{unloaded}; {resume_hint(result)}") from None
    except VoicegateError:
        if created and not path.exists() and not log.path.exists():
            # A refusal on a first run writes nothing: take back the directories it made.
            _remove_quietly(created)
        raise


def _set_aside(spec: GateSpec, log: RunLog, rows: list[dict[str, Any]], mode: Mode,
               say: Say) -> tuple[list[dict[str, Any]], int]:
    """The stored rows this run may continue from, and how many went to the quarantine file instead.

    Rows of a session that stopped before its first check go, by any `generate`; rows of a
    session whose integrity check failed go only under ``--isolate-arms``, which regenerates
    them with arms isolated; without it the run is refused.
    """
    canary_rows = read_rows(spec.run.canaries)
    manifest = log.data
    typed = None if manifest is None else RunManifest.from_json(manifest)
    failed: set[Part] = failed_parts(canary_rows, typed, rows) & {p for r in rows if (p := part_of(r)) is not None}
    quarantined = 0
    unchecked = unchecked_parts(rows, canary_rows) - set(failed)
    if unchecked and manifest is not None:
        before = len(rows)
        rows = log.quarantine_parts(rows, unchecked, say, unchecked=True)
        quarantined += before - len(rows)
    # A session whose weights' identity was not decided cannot hold: its rows are made again, by any generate.
    undecided = undecided_parts(canary_rows, typed) & {p for r in rows if (p := part_of(r)) is not None}
    if undecided and manifest is not None:
        before = len(rows)
        rows = log.quarantine_parts(rows, set(undecided), say, undecided=True)
        quarantined += before - len(rows)
    if failed and manifest is not None:
        if not mode.isolate:
            suspect = sum(part_of(r) in failed for r in rows)
            raise VoicegateError(
                f"{spec.gate}: seat integrity failed in session(s) {describe_parts(failed)} "
                f"({suspect} generations suspect); not continuing with arms mixed: run "
                f"`voicegate generate {spec.gate} --isolate-arms` (the suspect rows are kept in quarantine)")
        before = len(rows)
        rows = log.quarantine_parts(rows, set(failed), say)
        quarantined += before - len(rows)
    return rows, quarantined


def _remove_quietly(dirs: list[Path]) -> None:
    try:
        for d in dirs:  # deepest first
            d.rmdir()
    except OSError:
        pass
