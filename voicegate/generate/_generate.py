"""`voicegate generate`: drive a gate's registered generations through one seat.

The order of events is the guarantee:

1. the spec must match its registration; the schedule is derived from it;
2. a lock file makes this the only `generate` on the gate;
3. the seat is asked what it serves (``/v1/models``, ``/version``) and every
   refusal happens now, before any generation request: a candidate that is
   neither served nor loadable, a base that is not served, a seat that is not
   the one an earlier part of this run used;
4. candidates the seat does not serve are loaded at run time (and said once
   not to persist); the run manifest ``run.json`` records the seat;
5. every arm answers the integrity canaries alone on the seat (its reference,
   `generate._integrity`);
6. up to N requests are kept in flight in schedule order, the canary checks
   spread among them; each finished generation is appended whole and fsync'd
   before the next is counted. Under ``--isolate-arms`` the same requests go in
   waves of one arm, each drained before the next;
7. whatever voicegate loaded is unloaded, and nothing else — also on SIGTERM
   (`seat._adapters` writes each name down before its load request); the
   session's integrity verdict goes into run.json.

A run whose integrity check failed is not continued as it was: ``--isolate-arms``
first moves the suspect rows (every row of a failed session) to the quarantine
file, then regenerates them.

A crash at any point loses at most the generations in flight; the next run
skips every stored key and cuts a torn last line.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import os
import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Self

from voicegate._atomic import write_atomic
from voicegate._errors import SeatUnreachable, VoicegateError
from voicegate._hashing import sha256_text
from voicegate._locks import gate_lock
from voicegate._version import __version__
from voicegate.generate._integrity import (
    METHOD,
    METHOD_ID,
    CanaryCheck,
    CanaryParams,
    CanaryReference,
    Tally,
    attribute,
    failed_sessions,
    into_waves,
    plan_checks,
    reference_waves,
    spread,
    verdict,
)
from voicegate.generate._schedule import (
    ORDER_RULE,
    SEED_RULE,
    SEED_RULE_ID,
    WAVE_RULE,
    Job,
    build_schedule,
    isolate_waves,
)
from voicegate.run import _manifest as manifest_file
from voicegate.run._store import append_rows, read_generations, read_rows, repair_tail, row_key
from voicegate.seat._adapters import RuntimeAdapters, tracked
from voicegate.seat._client import (
    Completion,
    ModelCard,
    RetryPolicy,
    SeatClient,
    api_key_from_env,
    redact_url,
)
from voicegate.seat._errors import ModelNotFound, SeatError
from voicegate.spec._registration import Registration, check_registered
from voicegate.spec._seat_url import check_seat_url
from voicegate.spec._spec import GateSpec

SEAT_URL_ENV = "VOICEGATE_SEAT_URL"
TERMINATED = 143  # 128 + SIGTERM, the shell's convention
ISOLATE_KEY = "generation.isolate_arms"
WAVE_FACTOR = 4   # an isolated wave holds up to WAVE_FACTOR x concurrency jobs of one arm


class Terminated(VoicegateError):
    """SIGTERM (a `docker stop`, a CI timeout): the run stopped cleanly, adapters unloaded."""

    exit_code = TERMINATED

Say = Callable[[str], None]


def resolve_seat_url(spec: GateSpec, explicit: str | None = None) -> str:
    """--seat, then $VOICEGATE_SEAT_URL, then the spec's seat.url."""
    url = explicit or os.environ.get(SEAT_URL_ENV) or spec.seat.url
    return check_seat_url(url, "seat URL")


def manifest_path(spec: GateSpec) -> Path:
    return manifest_file.manifest_path(spec.run_dir)


def read_manifest(spec: GateSpec) -> dict[str, Any] | None:
    return manifest_file.read_manifest(spec.run_dir)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class GenerateResult:
    gate: str
    total: int
    stored: int
    generated: int
    path: Path
    wall_s: float = 0.0
    completion_tokens: int = 0
    loaded: list[str] = field(default_factory=list)
    unloaded: list[str] = field(default_factory=list)
    reloads: int = 0
    resume: str = ""  # the command that picks up where this run stopped, as the user gave it
    isolate_arms: bool = False
    requests: int = 0                        # generation requests answered this session
    canaries: Tally = field(default_factory=Tally)
    quarantined: int = 0

    def summary(self) -> str:
        if self.generated == 0:
            return f"{self.gate}: nothing to generate, all {self.total} generations are stored in {self.path}"
        tps = self.completion_tokens / self.wall_s if self.wall_s > 0 else 0.0
        text = (f"{self.gate}: generated {self.generated} ({self.stored}/{self.total} stored in {self.path}) "
                f"in {self.wall_s:.1f}s, {self.completion_tokens} tokens, {tps:.0f} tok/s")
        return text + "\n" + self.integrity_line()

    def integrity_line(self) -> str:
        t = self.canaries
        mode = "arms isolated" if self.isolate_arms else "arms mixed in flight"
        head = (f"{self.gate}: seat integrity {'FAILED' if t.failed else 'holds'} ({mode}): {t.sent} canaries "
                f"sent, {t.right} attributed right, {t.wrong} wrong")
        if t.confusions:
            head += " (" + ", ".join(f"{a} answered as {b} ×{n}" for (a, b), n in sorted(t.confusions.items())) + ")"
        if t.unclear:
            head += f", {t.unclear} unclear"
        head += f"; {t.references} references"
        if t.failed:
            head += (f"; `voicegate score {self.gate}` will refuse: regenerate with "
                     f"`voicegate generate {self.gate} --isolate-arms`")
        return head


# -- the plan against what the seat serves -------------------------------------


class _Load(NamedTuple):
    """A candidate the seat does not serve yet, and the adapter_path the spec gives to load it from."""

    model: str
    adapter_path: str


@dataclass
class _Plan:
    to_load: list[_Load]
    ours: set[str]                 # models voicegate loaded (now, or in an earlier part of this run)
    cards: list[ModelCard]
    version: str | None


def _plan(spec: GateSpec, url: str, cards: list[ModelCard], version: str | None,
          manifest: dict[str, Any] | None, loaded_before: set[str]) -> _Plan:
    served = {c.id: c for c in cards}
    listing = ", ".join(sorted(served)) or "nothing"
    base = spec.base
    if base.model not in served:
        raise VoicegateError(f"the seat at {url} does not serve the base model {base.model!r} "
                             f"(arm {base.name}); it serves: {listing}")
    # Loaded by an earlier part of this run: in its manifest, or only in the tracking file when
    # it was killed between the load and the manifest's first write.
    prev_loaded = set(manifest.get("runtime_loaded", [])) if manifest else set()
    prev_loaded |= loaded_before
    to_load: list[_Load] = []
    ours: set[str] = set()
    for arm in spec.candidates:
        card = served.get(arm.model)
        if card is None:
            if not arm.adapter_path:
                raise VoicegateError(
                    f"candidate {arm.name}: the seat at {url} does not serve {arm.model!r} and the spec gives "
                    f"no adapter_path to load it from (the seat serves: {listing})")
            to_load.append(_Load(arm.model, arm.adapter_path))
        else:
            # Harness-matched means one process: an adapter must sit on the base arm's model.
            if card.parent is not None and card.parent != base.model:
                raise VoicegateError(
                    f"candidate {arm.name}: {arm.model!r} is an adapter on {card.parent!r}, not on the base "
                    f"arm's {base.model!r}; arms must come from the same base in the same seat")
            if arm.model in prev_loaded:
                ours.add(arm.model)  # loaded by an earlier, interrupted part of this run
    if manifest is not None:
        _check_same_seat(spec, manifest, url, cards, version, to_load)
    return _Plan(to_load, ours, cards, version)


def _check_same_seat(spec: GateSpec, manifest: dict[str, Any], url: str, cards: list[ModelCard],
                     version: str | None, to_load: list[_Load]) -> None:
    seat = manifest.get("seat", {})
    was = seat.get("url")
    if seat.get("version") != version:
        raise VoicegateError(
            f"refusing to continue {spec.gate}: its run started on a seat reporting vLLM version "
            f"{seat.get('version')!r} ({was}); {url} reports {version!r}. Every arm must come from one seat")
    then = {m["id"]: m.get("root") for m in seat.get("models", [])}
    now: dict[str, Any] = {c.id: c.root for c in cards}
    now.update({a.model: a.adapter_path for a in to_load})
    for arm in spec.arms:
        a, b = then.get(arm.model), now.get(arm.model)
        if a is not None and b is not None and a != b:
            raise VoicegateError(
                f"refusing to continue {spec.gate}: {arm.model!r} was served from {a} when the run started "
                f"({was}) and is now served from {b} ({url}). Every arm must come from one seat")


# -- the run ------------------------------------------------------------------------


class _Progress:
    """Rich progress on stderr: done/total per arm, tokens/s, ETA. Silent under --quiet."""

    def __init__(self, spec: GateSpec, jobs: list[Job], done: set, quiet: bool):
        self.quiet = quiet
        self.tokens = 0
        self.t0 = time.monotonic()
        self._progress = None
        if quiet:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("{task.description:>14}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[tps]}"), TimeRemainingColumn(),
            console=Console(stderr=True), transient=False,
        )
        self._tasks = {}
        total = {a.name: 0 for a in spec.arms}
        have = {a.name: 0 for a in spec.arms}
        for j in jobs:
            total[j.arm] += 1
            have[j.arm] += j.key in done
        self._all = self._progress.add_task("all", total=len(jobs), completed=sum(have.values()), tps="")
        for a in spec.arms:
            self._tasks[a.name] = self._progress.add_task(a.name, total=total[a.name], completed=have[a.name], tps="")

    def __enter__(self) -> Self:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, arm: str, tokens: int) -> None:
        self.tokens += tokens
        if self._progress is None:
            return
        tps = self.tokens / max(time.monotonic() - self.t0, 1e-9)
        self._progress.update(self._all, advance=1, tps=f"{tps:,.0f} tok/s")
        self._progress.update(self._tasks[arm], advance=1)

    def say(self, line: str) -> None:
        if self._progress is not None:
            self._progress.console.print(line, markup=False, highlight=False, soft_wrap=True)


@dataclass(frozen=True)
class _Mode:
    """How this session sends its requests, and how it checks the seat."""

    isolate: bool
    wave_size: int
    params: CanaryParams


def generate(spec: GateSpec, *, seat_url: str | None = None, concurrency: int | None = None,
             quiet: bool = False, retry: RetryPolicy | None = None,
             say: Say | None = None, isolate_arms: bool | None = None, canaries: int | None = None,
             wave_size: int | None = None) -> GenerateResult:
    """Make every registered generation not yet stored. Raises VoicegateError / SeatUnreachable.

    `isolate_arms` (default: the spec's ``generation.isolate_arms``) sends waves of one arm;
    `canaries` fixes the integrity checks per arm (default: within 5% of the requests);
    `wave_size` overrides an isolated wave's size (default 4 x the concurrency).
    """
    reg = check_registered(spec)
    url = resolve_seat_url(spec, seat_url)
    api_key = api_key_from_env(spec.seat.api_key_env)
    conc = concurrency or spec.seat.concurrency
    if conc < 1:
        raise VoicegateError(f"--concurrency must be at least 1, got {conc}")
    if canaries is not None and canaries < 1:
        raise VoicegateError(f"--canaries must be at least 1, got {canaries}")
    isolate = bool(spec.values.get(ISOLATE_KEY, False)) if isolate_arms is None else isolate_arms
    mode = _Mode(isolate, wave_size or conc * WAVE_FACTOR, CanaryParams(checks_per_arm=canaries))
    jobs = build_schedule(spec)
    with gate_lock(spec.run_dir, spec.gate, "generate"):
        # A resume hint must reach the same seat: keep --seat when it was given (credentials redacted).
        resume = f"voicegate generate {spec.gate}" + (f" --seat {redact_url(url)}" if seat_url else "")
        return _generate_locked(spec, reg, url, api_key, conc, jobs, quiet, retry, say or (lambda line: None), mode,
                                resume)


def _quarantine(spec: GateSpec, manifest: dict[str, Any], rows: list[dict[str, Any]], failed: set[int],
                say: Say) -> list[dict[str, Any]]:
    """Move every row of a failed session to the quarantine file (appended first), then drop it from the run."""
    suspects = [r for r in rows if r.get("session") in failed]
    keep = [r for r in rows if r.get("session") not in failed]
    qpath = spec.run.quarantine
    repair_tail(qpath)
    have = {(row_key(r), r.get("session")) for r in read_rows(qpath)}
    when = _now()
    moved = [{**r, "quarantined": {"time": when, "reason": f"seat integrity failed in session {r.get('session')}",
                                   "by": "generate --isolate-arms"}}
             for r in suspects if (row_key(r), r.get("session")) not in have]
    append_rows(qpath, moved)   # kept (fsync'd) before they leave the generations file
    write_atomic(spec.generations_path,
                 "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in keep))
    total = len(read_rows(qpath))
    manifest["quarantine"] = {"file": qpath.name, "rows": total,
                              "sessions": sorted(set(manifest.get("quarantine", {}).get("sessions", [])) | failed),
                              "reason": "seat integrity failed (canaries answered with another arm's weights)"}
    manifest_file.write_manifest(spec.run_dir, manifest)
    say(f"note: seat integrity failed in session(s) {', '.join(map(str, sorted(failed)))}: moved {len(suspects)} "
        f"suspect generation(s) to {qpath} (kept, not scored); regenerating them with arms isolated")
    return keep


def _generate_locked(spec: GateSpec, reg: Registration, url: str, api_key: str | None, conc: int, jobs: list[Job],
                     quiet: bool, retry: RetryPolicy | None, say: Say, mode: _Mode,
                     resume: str) -> GenerateResult:
    manifest = read_manifest(spec)
    if manifest is not None and manifest.get("source") != "generated":
        raise VoicegateError(f"{spec.gate}: its generations were imported ({manifest_path(spec)}); "
                             "generate will not mix a seat's generations into an imported set")
    created = [d for d in (spec.run_dir, *spec.run_dir.parents) if not d.exists()]
    spec.run_dir.mkdir(parents=True, exist_ok=True)
    path = spec.generations_path
    repair_tail(path)
    rows = read_generations(path)
    if any(r.get("imported") for r in rows):
        raise VoicegateError(f"{path} holds imported generations; generate will not mix sources")
    failed = failed_sessions(read_rows(spec.run.canaries)) & {r.get("session") for r in rows}
    quarantined = 0
    if failed and manifest is not None:
        if not mode.isolate:
            suspect = sum(r.get("session") in failed for r in rows)
            raise VoicegateError(
                f"{spec.gate}: seat integrity failed in session(s) {', '.join(map(str, sorted(failed)))} "
                f"({suspect} generations suspect); not continuing with arms mixed: run "
                f"`voicegate generate {spec.gate} --isolate-arms` (the suspect rows are kept in quarantine)")
        before = len(rows)
        rows = _quarantine(spec, manifest, rows, failed, say)
        quarantined = before - len(rows)
    done = {row_key(r) for r in rows}
    wanted = {j.key for j in jobs}
    pending = [j for j in jobs if j.key not in done]
    stored = len(wanted & done)
    result = GenerateResult(spec.gate, len(jobs), stored, 0, path, isolate_arms=mode.isolate,
                            quarantined=quarantined, resume=resume)
    if not pending:
        return result
    terminated: list[int] = []
    try:
        return asyncio.run(_run(spec, reg, url, api_key, conc, jobs, pending, done, manifest, result,
                                quiet, retry, say, terminated, mode))
    except asyncio.CancelledError:
        if not terminated:
            raise
        unloaded = f"; unloaded {', '.join(result.unloaded)}" if result.unloaded else ""
        raise Terminated(f"terminated (SIGTERM); {result.stored}/{result.total} generations are saved in "
                         f"{result.path}{unloaded}; run `{result.resume}` again to resume") from None
    except VoicegateError:
        if created and not path.exists() and not manifest_path(spec).exists():
            # A refusal on a first run writes nothing: take back the directories it made.
            _remove_quietly(created)
        raise


def _remove_quietly(dirs: list[Path]) -> None:
    try:
        for d in dirs:  # deepest first
            d.rmdir()
    except OSError:
        pass


async def _run(spec: GateSpec, reg: Registration, url: str, api_key: str | None, conc: int,
               jobs: list[Job], pending: list[Job], done: set, manifest: dict[str, Any] | None,
               result: GenerateResult, quiet: bool, retry: RetryPolicy | None, say: Say,
               terminated: list[int], mode: _Mode) -> GenerateResult:
    recorded_url = redact_url(url)
    # Notes that change what a user should expect always print; routine steps only without --quiet.
    info: Say = (lambda line: None) if quiet else say
    progress = _Progress(spec, jobs, done, quiet)
    retry_note = (lambda line: progress.say(f"voicegate: retrying {line}")) if not quiet else None
    client = SeatClient(url, api_key=api_key, timeout=spec.seat.timeout, retry=retry,
                        max_connections=conc + 4, api_key_env=spec.seat.api_key_env, on_retry=retry_note)
    adapters = RuntimeAdapters(client, spec.run.adapters,
                               {a.model: a.adapter_path for a in spec.candidates if a.adapter_path},
                               say=say, info=info)
    _on_sigterm(terminated)
    wrote_manifest = False
    session: dict[str, Any] = {"started": _now(), "seat_url": recorded_url, "concurrency": conc,
                               "voicegate_version": __version__, "isolate_arms": mode.isolate}
    if mode.isolate:
        session.update(wave_size=mode.wave_size, wave_rule=WAVE_RULE)
    runner: _Runner | None = None
    t0 = time.monotonic()
    try:
        cards = await client.models()
        version = await client.version()
        # every refusal happens here, before any generation
        plan = _plan(spec, recorded_url, cards, version, manifest, tracked(spec.run.adapters))
        adapters.adopt(plan.ours)
        if plan.to_load:
            names = ", ".join(a.model for a in plan.to_load)
            say(f"note: loading {names} at run time; runtime-loaded adapters do not persist (the next seat "
                "restart drops them, only --lora-modules survive) and voicegate unloads them after this run")
        for load in plan.to_load:
            await adapters.load(load.model, load.adapter_path)
        snapshot = await client.models() if plan.to_load else cards
        manifest = _manifest(spec, reg, recorded_url, version, snapshot, jobs, manifest, adapters.ours, conc,
                             result.stored)
        session["models"] = [c.as_dict() for c in snapshot]
        manifest["sessions"].append(session)
        index = len(manifest["sessions"]) - 1
        manifest["integrity"] = {**manifest.get("integrity", {}), "method": METHOD_ID, "description": METHOD,
                                 "params": mode.params.as_dict()}
        manifest_file.write_manifest(spec.run_dir, manifest)
        wrote_manifest = True

        runner = _Runner(spec, client, recorded_url, adapters, result, progress, index, mode)
        with progress:
            await runner.run(_waves(spec, pending, conc, index, mode), conc)
        session["status"] = "complete"
    except SeatUnreachable as exc:
        session["status"] = "seat-unreachable"
        raise SeatUnreachable(f"{exc}; {result.stored}/{result.total} generations are saved in {result.path}; "
                              f"run `{result.resume}` again to resume") from None
    except (VoicegateError, asyncio.CancelledError, KeyboardInterrupt):
        session["status"] = "stopped"
        raise
    finally:
        result.wall_s = time.monotonic() - t0
        result.completion_tokens = progress.tokens
        await adapters.unload_all(complete=session.get("status") == "complete")
        result.loaded, result.unloaded, result.reloads = adapters.loaded, adapters.unloaded, adapters.reloads
        await client.aclose()
        if wrote_manifest and manifest is not None:
            session.setdefault("status", "stopped")
            session.update({"finished": _now(), "generated": result.generated, "reloads": result.reloads,
                            "loaded": result.loaded, "unloaded": result.unloaded,
                            "integrity": result.canaries.as_dict()})
            try:
                current = verdict(read_rows(spec.generations_path), read_rows(spec.run.canaries), manifest)
            except (OSError, ValueError):
                current = None
            if current is not None:
                manifest["integrity"]["current"] = current.to_json()
            manifest["runtime_loaded"] = sorted(set(manifest.get("runtime_loaded", [])) - set(result.unloaded))
            manifest["counts"]["stored"] = result.stored
            manifest_file.write_manifest(spec.run_dir, manifest)
    return result


def _waves(spec: GateSpec, pending: list[Job], conc: int, session: int, mode: _Mode) -> list[list[Any]]:
    """References (one wave per arm, alone), then the jobs with the canary checks among them."""
    arms = [(a.name, a.model) for a in spec.arms]
    refs: list[list[Any]] = [list(w) for w in reference_waves(mode.params, arms, spec.order_seed, session)]
    checks = plan_checks(mode.params, arms, len(pending), spec.order_seed, session)
    if mode.isolate:
        return refs + into_waves(isolate_waves(pending, mode.wave_size, spec.order_seed), checks)
    return refs + [spread(list(pending), checks)]


def _on_sigterm(terminated: list[int]) -> None:
    """SIGTERM cancels the run like Ctrl-C does, so its `finally` unloads the adapters and saves the manifest."""
    task = asyncio.current_task()
    if task is None:
        return

    def stop() -> None:
        terminated.append(signal.SIGTERM)
        task.cancel()

    try:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)
    except (NotImplementedError, RuntimeError, ValueError):
        pass  # not the main thread (a library caller's worker) or no signals here: the default applies


def _manifest(spec: GateSpec, reg: Registration, url: str, version: str | None, cards: list[ModelCard],
              jobs: list[Job], previous: dict[str, Any] | None, ours: set[str], conc: int,
              stored: int) -> dict[str, Any]:
    per_arm: dict[str, int] = {}
    for j in jobs:
        per_arm[j.arm] = per_arm.get(j.arm, 0) + 1
    served_as = {}
    ids = {c.id for c in cards}
    for a in spec.arms:
        served_as[a.name] = "base" if a.is_base else ("runtime-loaded" if a.model in ours else
                                                      "served" if a.model in ids else "missing")
    data: dict[str, Any] = {
        "source": "generated",
        "gate": spec.gate,
        "spec_sha256": reg.spec_sha256,
        "registration_commit": reg.commit,
        "voicegate_version": __version__,
        "seat": {"url": url, "version": version, "models": [c.as_dict() for c in cards]},
        "arms": [{"name": a.name, "model": a.model, "role": a.role, "adapter_path": a.adapter_path,
                  "served_as": served_as[a.name]} for a in spec.arms],
        "runtime_loaded": sorted(ours),
        "sampling": spec.sampling.as_dict(),
        "order_seed": spec.order_seed,
        "order_rule": ORDER_RULE,
        "seed_rule": {"id": SEED_RULE_ID, "rule": SEED_RULE},
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


class _Runner:
    """N workers take jobs in schedule order; each finished generation is stored before it is counted."""

    def __init__(self, spec: GateSpec, client: SeatClient, url: str, adapters: RuntimeAdapters,
                 result: GenerateResult, progress: _Progress, session: int, mode: _Mode):
        self.spec = spec
        self.client = client
        self.url = url
        self.adapters = adapters
        self.result = result
        self.progress = progress
        self.session = session
        self.mode = mode
        self.references: dict[str, dict[str, str]] = {}   # canary -> arm -> its answer alone on the seat

    async def run(self, waves: list[list[Any]], conc: int) -> None:
        """Each wave's items up to `conc` in flight; a wave is drained before the next one starts."""
        self._finished: asyncio.Queue = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        writer = asyncio.create_task(self._writer())
        try:
            for wave in waves:
                if not wave:
                    continue
                queue: deque[Any] = deque(wave)
                self._tasks = [asyncio.create_task(self._worker(queue)) for _ in range(min(conc, len(wave)))]
                done, _ = await asyncio.wait(self._tasks, return_when=asyncio.FIRST_EXCEPTION)
                if writer.done() or any(t.exception() is not None for t in done if not t.cancelled()):
                    break
        finally:
            for t in self._tasks:
                t.cancel()
            outcomes = await asyncio.gather(*self._tasks, return_exceptions=True)
            # Whatever happened, every finished generation is on disk before we return or raise.
            await self._finished.put(None)
            await writer
        for outcome in outcomes:
            if isinstance(outcome, BaseException) and not isinstance(outcome, asyncio.CancelledError):
                raise outcome

    async def _worker(self, queue: deque[Any]) -> None:
        while queue:
            job = queue.popleft()
            if not isinstance(job, Job):
                await self._canary(job)
                continue
            completion = await self._chat(job.model, job.arm, job.prompt, job.request_seed, self.spec.sampling)
            row = {
                "kind": job.kind, "arm": job.arm, "model": job.model, "seed": job.seed,
                "request_seed": job.request_seed, "prompt_id": job.prompt_id,
                "prompt_sha256": sha256_text(job.prompt), "sampling": self.spec.sampling.as_dict(),
                "text": completion.text, "finish_reason": completion.finish_reason, "usage": completion.usage,
                "latency_s": round(completion.latency_s, 4), "seat_url": self.url, "time": _now(),
                "order": job.order, "session": self.session, "isolated": self.mode.isolate,
            }
            await self._finished.put(("generation", row))

    async def _canary(self, item: CanaryReference | CanaryCheck) -> None:
        params = self.mode.params
        completion = await self._chat(item.model, item.arm, item.prompt, params.seed, params.sampling())
        row: dict[str, Any] = {
            "session": self.session, "phase": "reference" if isinstance(item, CanaryReference) else "check",
            "arm": item.arm, "model": item.model, "canary": item.canary, "seed": params.seed,
            "text": completion.text, "finish_reason": completion.finish_reason, "usage": completion.usage,
            "latency_s": round(completion.latency_s, 4), "isolated": self.mode.isolate, "time": _now(),
        }
        if isinstance(item, CanaryReference):
            self.references.setdefault(item.canary, {})[item.arm] = completion.text
        else:
            found = attribute(completion.text, item.arm, self.references.get(item.canary, {}), params)
            row.update(seq=item.seq, status=found.status, answered_as=found.answered_as,
                       similarities=found.similarities)
        self.result.canaries.add(row)
        await self._finished.put(("canary", row))

    async def _writer(self) -> None:
        """The one writer: appends (fsync'd) off the event loop, so slow disks never idle the seat.

        Rows that finished while the previous write was syncing go out together; a row
        counts as generated only once append_rows has returned for it.
        """
        try:
            while True:
                batch = [await self._finished.get()]
                while not self._finished.empty():
                    batch.append(self._finished.get_nowait())
                canaries = [r for item in batch if item is not None and item[0] == "canary" for r in item[1:]]
                if canaries:
                    await asyncio.to_thread(append_rows, self.spec.run.canaries, canaries)
                rows = [r for item in batch if item is not None and item[0] == "generation" for r in item[1:]]
                if rows:
                    await asyncio.to_thread(append_rows, self.spec.generations_path, rows)
                    for r in rows:
                        self.result.generated += 1
                        self.result.stored += 1
                        self.result.requests += 1
                        self.progress.advance(r["arm"], (r["usage"] or {}).get("completion_tokens", 0))
                if None in batch:
                    return
        except BaseException:
            for t in self._tasks:  # a disk that cannot be written stops the run: nothing would be kept
                t.cancel()
            raise

    async def _chat(self, model: str, arm: str, prompt: str, seed: int, sampling: Any) -> Completion:
        while True:
            epoch = self.adapters.epoch(model)
            try:
                return await self.client.chat(model, prompt, seed=seed, sampling=sampling)
            except ModelNotFound:
                if model not in self.adapters.ours:
                    raise SeatError(f"the seat stopped serving {model!r} (arm {arm}) mid-run; it was "
                                    "served when the run started and voicegate did not load it") from None
                await self.adapters.reload(model, arm, epoch)
