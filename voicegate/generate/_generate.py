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
5. every arm answers each integrity canary twice alone on the seat (its
   reference and the session's calibration, `generate._integrity`); with
   replicas, every replica's references must reproduce the first replica's, or
   the run is refused before any cell;
6. up to N requests are kept in flight in schedule order, the canary checks
   at unpredictable places among them; each finished generation is appended
   whole and fsync'd before the next is counted. Under ``--isolate-arms`` the
   same requests go in waves of one arm, each drained before the next and
   each opened by a check;
7. whatever voicegate loaded is unloaded, and nothing else — also on SIGTERM
   (`seat._adapters` writes each name down before its load request); the
   session's integrity verdict goes into run.json (and `voicegate generate`
   exits 4 when it failed).

A run whose integrity check failed is not continued as it was: ``--isolate-arms``
first moves the suspect rows (every row of a failed session) to the quarantine
file, then regenerates them. Rows of a session that stopped before its first
check are moved there too, by any `generate`, and regenerated.

**Replicas** (issue 13). Given several URLs (``seat.replicas``, or ``--seat`` more
than once), step 3 asks every replica and refuses, before any request, one that
is not the same seat as the first (`seat._identity`); steps 4–7 happen on each.
A cell — one (seed, prompt) with every arm — runs whole on one replica
(`generate._cells`), recorded on each row as ``replica``; a replica that stays
unreachable has its unfinished cells moved whole to the others and the run ends
on the survivors (exit 3 only when none is left).

A crash at any point loses at most the generations in flight; the next run
skips every stored key and cuts a torn last line.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import itertools
import math
import os
import random
import secrets
import time
from collections import deque
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Self, cast

from voicegate._errors import SeatUnreachable, VoicegateError
from voicegate._hashing import sha256_text
from voicegate._locks import gate_lock
from voicegate._version import __version__
from voicegate.generate._cells import Cell, CellKey, build_cells, cell_key, plan_cells, replica_of
from voicegate.generate._integrity import (
    METHOD,
    METHOD_ID,
    Calibration,
    Canary,
    CanaryCheck,
    CanaryParams,
    CanaryReference,
    Part,
    Tally,
    attribute,
    calibrate,
    checks_per_arm,
    choose_canaries,
    describe_parts,
    failed_parts,
    part_of,
    place_in_wave,
    plan_checks,
    positions,
    reference_waves,
    replica_differs,
    unchecked_parts,
    verdict,
)
from voicegate.generate._quarantine import move_to_quarantine, row_identity
from voicegate.generate._schedule import (
    CELL_RULE,
    ORDER_RULE,
    SEED_RULE,
    SEED_RULE_ID,
    WAVE_RULE,
    Job,
    build_schedule,
    isolate_waves,
)
from voicegate.generate._sigterm import POLL_S, UNLOAD_S, Stop, Terminated
from voicegate.run import _manifest as manifest_file
from voicegate.run._store import append_rows, read_generations, read_rows, repair_tail, row_key
from voicegate.seat._adapters import AdapterTrack, RuntimeAdapters, tracked
from voicegate.seat._client import (
    Completion,
    ModelCard,
    RetryPolicy,
    SeatClient,
    api_key_from_env,
    redact_url,
)
from voicegate.seat._errors import ModelNotFound, SeatError
from voicegate.seat._identity import SeatState, check_identical
from voicegate.spec._registration import Registration, check_registered
from voicegate.spec._seat_url import check_seat_url
from voicegate.spec._spec import GateSpec
from voicegate.spec._workspace import shown_path

SEAT_URL_ENV = "VOICEGATE_SEAT_URL"
ISOLATE_KEY = "generation.isolate_arms"
WAVE_FACTOR = 4   # an isolated wave holds up to WAVE_FACTOR x concurrency jobs of one arm


Say = Callable[[str], None]


def resolve_seat_urls(spec: GateSpec, explicit: Sequence[str] = ()) -> list[str]:
    """The replicas: every --seat, else $VOICEGATE_SEAT_URL, else the spec's seat.replicas, else its seat.url."""
    if explicit:
        urls = [check_seat_url(u, "--seat") for u in explicit]
        twice = sorted({redact_url(u) for u in urls if urls.count(u) > 1})
        if twice:
            raise VoicegateError(f"--seat: {', '.join(twice)} is given twice; each replica once")
        return urls
    if os.environ.get(SEAT_URL_ENV):
        return [check_seat_url(os.environ[SEAT_URL_ENV], f"${SEAT_URL_ENV}")]
    return list(spec.seat.replicas) or [check_seat_url(spec.seat.url, "seat URL")]


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
    replicas: list[dict[str, Any]] = field(default_factory=list)   # per replica: cells, rows, tokens/s, status
    shown: str = ""  # `path` as messages print it: workspace-relative, like every other path voicegate prints

    @property
    def where(self) -> str:
        return self.shown or str(self.path)

    def summary(self) -> str:
        if self.generated == 0:
            return f"{self.gate}: nothing to generate, all {self.total} generations are stored in {self.where}"
        tps = self.completion_tokens / self.wall_s if self.wall_s > 0 else 0.0
        text = (f"{self.gate}: generated {self.generated} ({self.stored}/{self.total} stored in {self.where}) "
                f"in {self.wall_s:.1f}s, {self.completion_tokens} tokens, {tps:.0f} tok/s")
        if len(self.replicas) > 1:
            text += "\n" + "\n".join(
                f"  replica {r['url']}: {r['cells']} cells, {r['rows']} rows, "
                f"{r['tokens_per_s'] or 0:.0f} tok/s" + ("" if r["status"] == "ok" else f" ({r['status']})")
                for r in self.replicas)
        return text + "\n" + self.integrity_line()

    def integrity_line(self) -> str:
        t = self.canaries
        mode = "arms isolated" if self.isolate_arms else "arms mixed in flight"
        head = (f"{self.gate}: seat integrity {'FAILED' if t.failed else 'holds'} ({mode}): {t.sent} canaries "
                f"sent, {t.right} reproduced their reference, {t.wrong} wrong")
        if t.foreign:
            head += f", {t.foreign} foreign weights"
        if t.confusions:
            head += " (" + ", ".join(f"{a} answered as {b} ×{n}" for (a, b), n in sorted(t.confusions.items())) + ")"
        if t.unclear:
            head += f", {t.unclear} unclear"
        head += f"; {t.references} references"
        seat, one_arm = t.floors()
        if seat is not None and one_arm is not None:
            head += (f"; catches a fault on {100 * seat:.1f}% of requests with 95% "
                     f"({100 * one_arm:.1f}% on one arm alone)")
        if t.problems:
            head += "; " + "; ".join(dict.fromkeys(t.problems))
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
    explicit = [seat_url] if isinstance(seat_url, str) else list(seat_url or [])
    urls = resolve_seat_urls(spec, explicit)
    api_key = api_key_from_env(spec.seat.api_key_env)
    conc = concurrency or spec.seat.concurrency
    if conc < 1:
        raise VoicegateError(f"--concurrency must be at least 1, got {conc}")
    if canaries is not None and canaries < 1:
        raise VoicegateError(f"--canaries must be at least 1, got {canaries}")
    isolate = bool(spec.values.get(ISOLATE_KEY, False)) if isolate_arms is None else isolate_arms
    mode = _Mode(isolate, wave_size or conc * WAVE_FACTOR, CanaryParams(checks_per_arm=canaries))
    jobs = build_schedule(spec)
    stop = Stop()
    with stop.guarding(), gate_lock(spec.run_dir, spec.gate, "generate"):
        # A resume hint must reach the same seat: keep --seat when it was given (credentials redacted).
        resume = f"voicegate generate {spec.gate}" + "".join(f" --seat {redact_url(u)}" for u in explicit)
        return _generate_locked(spec, reg, urls, api_key, conc, jobs, quiet, retry, say or (lambda line: None), mode,
                                resume, stop)


def _quarantine(spec: GateSpec, manifest: dict[str, Any], rows: list[dict[str, Any]], failed: set[Part | None],
                say: Say, *, unchecked: bool = False) -> list[dict[str, Any]]:
    """Move every row of a failed (or unchecked) (session, replica) to the quarantine file (appended first)."""
    why = "carried no seat-integrity check" if unchecked else "seat integrity failed"
    moved = move_to_quarantine(
        spec, lambda r: (f"{why} in session {describe_parts([p]) if p is not None else '(none recorded)'}"
                         if (p := part_of(r)) in failed else None),
        "generate" if unchecked else "generate --isolate-arms")
    q = manifest.get("quarantine", {})
    known = {p for p in failed if p is not None}
    manifest["quarantine"] = {**q, "file": spec.run.quarantine.name, "rows": int(q.get("rows", 0)) + moved,
                              "sessions": sorted(set(q.get("sessions", [])) | {s for s, _ in known}),
                              "reason": q.get("reason") if unchecked and q.get("reason") else
                              ("generations without a seat-integrity check" if unchecked else
                               "seat integrity failed (canaries not reproduced: another arm's or foreign weights)")}
    manifest_file.write_manifest(spec.run_dir, manifest)
    if unchecked:
        say(f"note: {moved} stored generation(s) of session(s) {describe_parts(known) or '(none recorded)'} carry no "
            f"seat-integrity check (the run stopped before its first); moved them to {spec.run.quarantine} (kept, not "
            "scored) and regenerating them")
    else:
        say(f"note: seat integrity failed in session(s) {describe_parts(known)}: moved {moved} "
            f"suspect generation(s) to {spec.run.quarantine} (kept, not scored); regenerating them with arms isolated")
    return [r for r in rows if part_of(r) not in failed]


def _generate_locked(spec: GateSpec, reg: Registration, urls: list[str], api_key: str | None, conc: int,
                     jobs: list[Job], quiet: bool, retry: RetryPolicy | None, say: Say, mode: _Mode,
                     resume: str, stop: Stop | None = None) -> GenerateResult:
    stop = stop or Stop()
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
    canary_rows = read_rows(spec.run.canaries)
    failed: set[Part] = failed_parts(canary_rows, manifest) & {p for r in rows if (p := part_of(r)) is not None}
    quarantined = 0
    unchecked = unchecked_parts(rows, canary_rows) - set(failed)
    if unchecked and manifest is not None:
        before = len(rows)
        rows = _quarantine(spec, manifest, rows, unchecked, say, unchecked=True)
        quarantined += before - len(rows)
    if failed and manifest is not None:
        if not mode.isolate:
            suspect = sum(part_of(r) in failed for r in rows)
            raise VoicegateError(
                f"{spec.gate}: seat integrity failed in session(s) {describe_parts(failed)} "
                f"({suspect} generations suspect); not continuing with arms mixed: run "
                f"`voicegate generate {spec.gate} --isolate-arms` (the suspect rows are kept in quarantine)")
        before = len(rows)
        rows = _quarantine(spec, manifest, rows, set(failed), say)
        quarantined += before - len(rows)
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
            ran = asyncio.run(_run(spec, reg, urls, api_key, conc, jobs, rows, manifest, result,
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
        raise Terminated(f"terminated (SIGTERM); {_saved(result)}{unloaded}; {_resume_hint(result)}") from None
    except VoicegateError:
        if created and not path.exists() and not manifest_path(spec).exists():
            # A refusal on a first run writes nothing: take back the directories it made.
            _remove_quietly(created)
        raise


def _saved(result: GenerateResult) -> str:
    """Where the stored generations are; a file that was never written is not named."""
    if result.stored == 0 and not result.path.exists():
        return f"no generation is stored yet (0/{result.total})"
    return f"{result.stored}/{result.total} generations are saved in {result.where}"


def _resume_hint(result: GenerateResult) -> str:
    return f"run `{result.resume}` again to resume"


def _remove_quietly(dirs: list[Path]) -> None:
    try:
        for d in dirs:  # deepest first
            d.rmdir()
    except OSError:
        pass


async def _seat_states(replicas: list[_Replica], say: Say) -> list[SeatState]:
    """What every replica serves, asked of all at once; a replica that cannot be reached is left out."""
    async def ask(r: _Replica) -> SeatState:
        return SeatState(r.url, await r.client.version(), tuple(await r.client.models()))

    answers = await asyncio.gather(*(ask(r) for r in replicas), return_exceptions=True)
    states: list[SeatState] = []
    lost: list[tuple[_Replica, SeatUnreachable]] = []
    for r, got in zip(replicas, answers, strict=True):
        if isinstance(got, SeatUnreachable):
            lost.append((r, got))
        elif isinstance(got, BaseException):
            raise got
        else:
            states.append(got)
    if lost and (len(replicas) == 1 or not states):
        if len(replicas) == 1:
            raise lost[0][1]
        raise SeatUnreachable(f"none of the {len(replicas)} replicas could be reached (the last: {lost[-1][1]})")
    for r, exc in lost:
        r.alive = False
        r.status = "unreachable"
        say(f"note: replica {r.url} could not be reached ({exc}); running on the other {len(states)}")
    return states


async def _run(spec: GateSpec, reg: Registration, urls: list[str], api_key: str | None, conc: int,
               jobs: list[Job], rows: list[dict[str, Any]], manifest: dict[str, Any] | None,
               result: GenerateResult, quiet: bool, retry: RetryPolicy | None, say: Say,
               stop: Stop, mode: _Mode) -> GenerateResult:
    # Notes that change what a user should expect always print; routine steps only without --quiet.
    info: Say = (lambda line: None) if quiet else say
    progress: _Progress | None = None
    runner: _Runner | None = None

    def retry_note(line: str) -> None:
        if progress is not None:
            progress.say(f"voicegate: retrying {line}")  # printed as is, beside the bars
        else:
            say(f"retrying {line}")  # `say` adds the "voicegate: " itself
    track = AdapterTrack(spec.run.adapters)
    paths = {a.model: a.adapter_path for a in spec.candidates if a.adapter_path}
    replicas: list[_Replica] = []
    for i, raw in enumerate(urls):
        shown = redact_url(raw)
        client = SeatClient(raw, api_key=api_key, timeout=spec.seat.timeout, retry=retry,
                            max_connections=conc + 4, api_key_env=spec.seat.api_key_env,
                            on_retry=None if quiet else retry_note)
        adapters = RuntimeAdapters(client, track, paths, say=say, info=info, replica=shown)
        replicas.append(_Replica(i, shown, client, adapters))
    stop.attach()
    wrote_manifest = False
    session: dict[str, Any] = {"started": _now(), "seat_url": replicas[0].url, "concurrency": conc,
                               "voicegate_version": __version__, "isolate_arms": mode.isolate}
    if len(replicas) > 1:
        session["replicas"] = [r.url for r in replicas]
    if mode.isolate:
        session.update(wave_size=mode.wave_size, wave_rule=WAVE_RULE)
    t0 = time.monotonic()
    try:
        # every refusal happens here, before any generation
        states = await _seat_states(replicas, say)
        different = check_identical(states, base_model=spec.base.model, runtime=paths.keys())
        if different is not None:
            raise VoicegateError(different)
        live = [r for r in replicas if r.alive]
        plans = {r.url: _plan(spec, r.url, list(s.cards), s.version, manifest, tracked(spec.run.adapters, r.url))
                 for r, s in zip(live, states, strict=True)}
        for r in live:
            r.adapters.adopt(plans[r.url].ours)
        to_load = sorted({a.model for p in plans.values() for a in p.to_load})
        if to_load:
            say(f"note: loading {', '.join(to_load)} at run time; runtime-loaded adapters do not persist (the "
                "next seat restart drops them, only --lora-modules survive) and voicegate unloads them after this "
                "run")
        for r in live:
            for load in plans[r.url].to_load:
                await r.adapters.load(load.model, load.adapter_path)
        snapshots = [SeatState(s.url, s.version, tuple(await r.client.models())) if plans[r.url].to_load else s
                     for r, s in zip(live, states, strict=True)]
        ours = set().union(*(r.adapters.ours for r in live))
        manifest = _manifest(spec, reg, snapshots, jobs, manifest, ours, conc, result.stored)
        session["models"] = [c.as_dict() for c in snapshots[0].cards]
        manifest["sessions"].append(session)
        index = len(manifest["sessions"]) - 1
        manifest["integrity"] = {**manifest.get("integrity", {}), "method": METHOD_ID, "description": METHOD,
                                 "params": mode.params.as_dict()}
        manifest_file.write_manifest(spec.run_dir, manifest)
        wrote_manifest = True

        cells = plan_cells(jobs, rows, [r.url for r in live])
        if cells.orphans:
            moved = _orphan_rows(spec, manifest, cells.orphans, "the replica it ran on is not in this run")
            result.stored -= moved
            result.quarantined += moved
            say(f"note: {moved} stored generation(s) of {len({cell_key(x) for x in cells.orphans})} unfinished cell(s) came "
                f"from a replica not in this run; moved them to {spec.run.quarantine} (kept, not scored) and "
                "re-running those cells whole on one replica")
        for r in live:
            r.pinned.extend(cells.pinned.get(r.url, []))
        stored_now = {row_key(x) for x in rows} - {row_key(x) for x in cells.orphans}
        progress = _Progress(spec, jobs, stored_now, quiet)
        # The session's canaries: drawn from a nonce the seat never sees (recorded when the session ends).
        nonce = secrets.token_hex(16)
        canaries = choose_canaries([(p.id, p.text) for p in spec.prompts], mode.params.count, nonce, spec.seeds)
        runner = _Runner(spec, replicas, build_cells(jobs), cells.free, result, progress, index, mode, conc, say,
                         manifest, canaries, nonce, stop)
        with progress:
            await runner.run()
        stop.check()  # a SIGTERM whose cancel some await swallowed still stops the run here
        session["status"] = "complete"
    except SeatUnreachable as exc:
        session["status"] = "seat-unreachable"
        raise SeatUnreachable(f"{exc}; {_saved(result)}; {_resume_hint(result)}") from None
    except (VoicegateError, asyncio.CancelledError, KeyboardInterrupt):
        session["status"] = "stopped"
        raise
    finally:
        stop.cleaning = True
        result.wall_s = time.monotonic() - t0
        result.completion_tokens = progress.tokens if progress is not None else 0
        complete = session.get("status") == "complete"
        for r in replicas:
            await r.adapters.unload_all(complete=complete and r.alive, within_s=UNLOAD_S if stop.signalled else None)
            at = f" on {r.url}" if len(replicas) > 1 else ""
            result.loaded += [m + at for m in r.adapters.loaded]
            result.unloaded += [m + at for m in r.adapters.unloaded]
            result.reloads += r.adapters.reloads
            await r.client.aclose()
        result.replicas = [r.stats() for r in replicas]
        if wrote_manifest and manifest is not None:
            session.setdefault("status", "stopped")
            session.update({"finished": _now(), "generated": result.generated, "reloads": result.reloads,
                            "loaded": result.loaded, "unloaded": result.unloaded,
                            "integrity": result.canaries.as_dict()})
            session["per_replica"] = result.replicas
            if runner is not None:
                session["canaries"] = {"nonce": runner.nonce, "canaries": [c.as_dict() for c in runner.canaries],
                                       "planned_per_replica": runner.planned}
            try:
                current = verdict(read_rows(spec.generations_path), read_rows(spec.run.canaries), manifest)
            except (OSError, ValueError):
                current = None
            if current is not None:
                manifest["integrity"]["current"] = current.to_json()
            left: set[str] = set().union(*(r.adapters.ours for r in replicas))
            gone: set[str] = set().union(*(r.adapters.unloaded for r in replicas))
            manifest["runtime_loaded"] = sorted((set(manifest.get("runtime_loaded", [])) - gone) | left)
            manifest["counts"]["stored"] = result.stored
            manifest_file.write_manifest(spec.run_dir, manifest)
    return result


def _orphan_rows(spec: GateSpec, manifest: dict[str, Any], orphans: Iterable[Mapping[str, Any]], why: str) -> int:
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


def _manifest(spec: GateSpec, reg: Registration, states: list[SeatState], jobs: list[Job],
              previous: dict[str, Any] | None, ours: set[str], conc: int, stored: int) -> dict[str, Any]:
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
        "seed_rule": {"id": SEED_RULE_ID, "rule": SEED_RULE},
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


# -- the run over the replicas -------------------------------------------------------


class _Replica:
    """One replica in this run: its client, its adapters, the cells it holds and what it has done."""

    def __init__(self, index: int, url: str, client: SeatClient, adapters: RuntimeAdapters) -> None:
        self.index = index
        self.url = url
        self.client = client
        self.adapters = adapters
        self.alive = True
        self.status = "ok"
        self.pinned: deque[Cell] = deque()          # partly stored cells that must finish here
        self.local: deque[Job] = deque()            # the claimed cells' jobs, in schedule order
        self.claimed: dict[CellKey, set[tuple[str, str, int, str]]] = {}  # cell -> job keys not yet answered
        self.references: dict[str, dict[str, list[str]]] = {}   # canary -> arm -> its asks alone on this replica
        self.calibration: Calibration | None = None
        self.checks: deque[tuple[int, CanaryCheck]] = deque()   # (due before the n-th job, check)
        self.rng = random.Random()
        self.seq = 0
        self.sent = 0
        self.tally = Tally()
        self.cells_done = 0
        self.rows = 0
        self.tokens = 0
        self.first: float | None = None
        self.last: float | None = None

    def stats(self) -> dict[str, Any]:
        busy = (self.last - self.first) if self.first is not None and self.last is not None else 0.0
        return {"url": self.url, "status": self.status, "cells": self.cells_done, "rows": self.rows,
                "tokens": self.tokens, "busy_s": round(busy, 3),
                "tokens_per_s": round(self.tokens / busy, 1) if busy > 0 else None,
                "canaries": self.tally.as_dict()}


async def _together(coros: Iterable[Coroutine[Any, Any, None]]) -> None:
    """Run `coros` as tasks; the first to raise cancels the others, and its exception is raised."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    if not tasks:
        return
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for t in tasks:
            if t in done and not t.cancelled() and t.exception() is not None:
                raise cast(BaseException, t.exception())
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class _Runner:
    """Every replica kept at its concurrency; cells go whole to whichever replica has room.

    A replica's workers take its claimed cells' jobs in schedule order and claim the next
    cell (its pinned ones first, then the free ones) when they run out, so a faster replica
    takes more cells. Each finished generation goes to the one writer and is stored before it
    is counted. A replica that stays unreachable is dropped: its unfinished cells go back to
    the front of the free cells, whole, and their stored arms from it to the quarantine file.
    """

    def __init__(self, spec: GateSpec, replicas: list[_Replica], all_cells: list[Cell], free: list[Cell],
                 result: GenerateResult, progress: _Progress, session: int, mode: _Mode, conc: int, say: Say,
                 manifest: dict[str, Any], canaries: list[Canary], nonce: str, stop: Stop | None = None):
        self.spec = spec
        self.stop = stop or Stop()
        self.replicas = replicas
        self.whole = {c.key: c for c in all_cells}
        self.free: deque[Cell] = deque(free)
        self.result = result
        self.progress = progress
        self.session = session
        self.mode = mode
        self.conc = conc
        self.say = say
        self.manifest = manifest
        self.arms = [(a.name, a.model) for a in spec.arms]
        self._changed = asyncio.Condition()
        self._finished: asyncio.Queue[tuple[Any, ...] | None] = asyncio.Queue()
        self.canaries = canaries
        self.nonce = nonce
        self.planned: dict[str, int] = {}
        live = [r for r in replicas if r.alive]
        work = sum(len(c.jobs) for c in free) + sum(len(c.jobs) for r in live for c in r.pinned)
        share = max(1, math.ceil(work / max(1, len(live))))
        params = mode.params
        for r in live:
            r.rng = random.Random(f"{nonce}:{r.index}")
            per_arm = checks_per_arm(params, len(self.arms), share)
            if mode.isolate:
                # Every wave opens with a check and each arm's last wave holds one more: only the rest are random.
                waves_per_arm = math.ceil(share / max(1, len(self.arms)) / max(1, mode.wave_size))
                checks = plan_checks(params, self.arms, max(0, per_arm - waves_per_arm - 1), canaries, r.rng,
                                     closing=False)
            else:
                checks = plan_checks(params, self.arms, per_arm, canaries, r.rng)
            r.seq = len(checks)
            r.checks = deque(positions(checks, share, params, r.rng))
            self.planned[r.url] = len(checks)

    # -- the whole run ------------------------------------------------------------

    async def run(self) -> None:
        writer = asyncio.create_task(self._writer())
        work = asyncio.create_task(self._all())
        try:
            await asyncio.wait({writer, work}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if writer.done() or not work.done():
                work.cancel()  # a disk that cannot be written stops the run (nothing would be kept), as does a kill
            await asyncio.gather(work, return_exceptions=True)
            # Whatever happened, every finished generation is on disk before we return or raise.
            if not writer.done():
                await self._finished.put(None)
            await writer
        work.result()

    async def _all(self) -> None:
        """Every replica's references first (each arm alone), then the cross-check, then the cells."""
        await _together(self._references(r) for r in self.replicas if r.alive)
        self._calibrate()
        await _together(self._replica(r) for r in self.replicas if r.alive)

    async def _references(self, r: _Replica) -> None:
        try:
            for wave in reference_waves(self.mode.params, self.arms, self.canaries, r.rng):
                await self._drain(r, list(wave))
        except SeatUnreachable as exc:
            await self._lost(r, exc)

    def _calibrate(self) -> None:
        """Each replica's threshold from its own references; a replica whose references differ is refused."""
        params = self.mode.params
        live = [r for r in self.replicas if r.alive]
        names = [a for a, _ in self.arms]
        for r in live:
            r.calibration = calibrate(r.references, names, params)
            if r.calibration.problem is not None:
                where = f" (replica {r.url})" if len(self.replicas) > 1 else ""
                r.tally.problems.append(r.calibration.problem)
                self.result.canaries.problems.append(r.calibration.problem)
                self.say(f"warning: seat integrity cannot hold for this session{where}: {r.calibration.problem}")
        if len(live) < 2:
            self.result.canaries.calibration = live[0].calibration if live else None
            return
        first = live[0]
        cal = first.calibration or Calibration(None, None, None)
        for r in live[1:]:
            differs = replica_differs(first.references, r.references, cal, params)
            if differs is not None:
                arm, sim = differs
                model = dict(self.arms)[arm]
                raise VoicegateError(
                    f"refusing replica {r.url}: its answers for arm {arm} ({model!r}) do not reproduce those of "
                    f"{first.url} (canary similarity {sim:.3f}, threshold {cal.threshold or 1.0:.3f}): "
                    "it serves other weights under the same name; no cell was generated")

    async def _replica(self, r: _Replica) -> None:
        try:
            if self.mode.isolate:
                await self._isolated(r)
            else:
                await _together(self._worker(r) for _ in range(self.conc))
        except SeatUnreachable as exc:
            await self._lost(r, exc)

    async def _drain(self, r: _Replica, items: list[Any]) -> None:
        queue: deque[Any] = deque(items)

        async def worker() -> None:
            while queue:
                self.stop.check()
                await self._send(r, queue.popleft())

        await _together(worker() for _ in range(min(self.conc, len(queue))))

    async def _worker(self, r: _Replica) -> None:
        while (item := await self._next(r)) is not None:
            await self._send(r, item)

    def _new_check(self, r: _Replica, arm: str, model: str, role: str) -> CanaryCheck:
        check = CanaryCheck(r.seq, arm, model, r.rng.choice(self.canaries), role)
        r.seq += 1
        return check

    async def _isolated(self, r: _Replica) -> None:
        """Batches of cells, each sent as waves of one arm (drained before the next) on this replica.

        Every wave opens with a check of its arm (the first request after the switch); the random
        checks due in the batch go to random places in their arm's waves; the batch that ends the
        replica's run holds one more check per arm in that arm's last wave.
        """
        while jobs := await self._claim_batch(r, self.mode.wave_size):
            arms = {j.arm for j in jobs}
            due: dict[str, list[CanaryCheck]] = {}     # the checks that fall in this batch, per arm
            later: deque[tuple[int, CanaryCheck]] = deque()
            for at, check in r.checks:
                if at < r.sent + len(jobs) and check.arm in arms:
                    due.setdefault(check.arm, []).append(check)
                else:
                    later.append((at, check))
            r.checks = later
            r.sent += len(jobs)
            last = not self.free and not r.pinned
            waves = isolate_waves(jobs, self.mode.wave_size, self.spec.order_seed)
            mine: dict[str, list[int]] = {}
            for i, wave in enumerate(waves):
                mine.setdefault(wave[0].arm, []).append(i)
            extra: dict[int, list[CanaryCheck]] = {}
            for arm, cs in due.items():
                for c in cs:
                    extra.setdefault(r.rng.choice(mine[arm]), []).append(c)
            if last:
                for arm, slots in mine.items():
                    extra.setdefault(slots[-1], []).append(self._new_check(r, arm, waves[slots[-1]][0].model,
                                                                           "closing"))
            for i, wave in enumerate(waves):
                opening = self._new_check(r, wave[0].arm, wave[0].model, "opening")
                await self._drain(r, place_in_wave(wave, opening, extra.get(i, []), r.rng))
        left = [c for _, c in r.checks]
        r.checks.clear()
        for arm, _model in self.arms:
            await self._drain(r, [c for c in left if c.arm == arm])

    # -- who sends what -------------------------------------------------------------

    def _claim(self, r: _Replica) -> Cell | None:
        """`r`'s next cell: its pinned ones first, then the free ones."""
        cell = r.pinned.popleft() if r.pinned else (self.free.popleft() if self.free else None)
        if cell is not None:
            r.claimed[cell.key] = {j.key for j in cell.jobs}
        return cell

    def _others_busy(self) -> bool:
        return any(x.alive and (x.claimed or x.pinned) for x in self.replicas)

    async def _next(self, r: _Replica) -> Job | CanaryCheck | None:
        """What one of `r`'s workers sends next: a check when one is due, else its claimed cells' next job.

        None when nothing is left for `r`. While a replica still holds cells it waits instead: a cell
        may yet come back from one that is lost.
        """
        while r.alive:
            self.stop.check()
            if not r.local and (cell := self._claim(r)) is not None:
                r.local.extend(cell.jobs)
            if r.local:
                if r.checks and r.checks[0][0] <= r.sent:
                    return r.checks.popleft()[1]
                r.sent += 1
                return r.local.popleft()
            if not self._others_busy():
                return r.checks.popleft()[1] if r.checks else None   # checks left: the plan assumed more jobs
            await self._wait()
        return None

    async def _claim_batch(self, r: _Replica, size: int) -> list[Job]:
        """The jobs of up to `size` more cells for `r`, in schedule order; empty when none is left for it.

        While a replica still holds cells an empty claim waits instead (as `_next` does).
        """
        while True:
            self.stop.check()
            batch: list[Cell] = []
            while len(batch) < size and (cell := self._claim(r)) is not None:
                batch.append(cell)
            if batch or not self._others_busy():
                return [j for c in batch for j in c.jobs]
            await self._wait()

    async def _wait(self) -> None:
        """Until a cell finishes or comes back, or `POLL_S` passed (the callers loop, and look at the stop mark)."""
        async with self._changed:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL_S):
                    await self._changed.wait()

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _lost(self, r: _Replica, exc: SeatUnreachable) -> None:
        """`r` stayed unreachable: its unfinished cells go back whole, or the run stops when it was the last."""
        r.alive = False
        r.status = "unreachable"
        survivors = [x for x in self.replicas if x.alive]
        if not survivors:
            if len(self.replicas) == 1:
                raise exc
            raise SeatUnreachable(f"every replica became unreachable (the last, {r.url}: {exc})")
        back = sorted((self.whole[k] for k in [*(c.key for c in r.pinned), *r.claimed]), key=lambda c: c.index)
        r.pinned.clear()
        r.claimed.clear()
        r.local.clear()
        r.checks.clear()
        if back:
            await self._finished.put(("orphan", r.url, frozenset(c.key for c in back)))
        self.free.extendleft(reversed(back))
        self.say(f"note: replica {r.url} is unreachable ({exc}); moving its {len(back)} unfinished cell(s), whole, "
                 f"to the other {len(survivors)} (their stored arms from it go to quarantine)")
        await self._notify()

    # -- one request ------------------------------------------------------------------

    async def _send(self, r: _Replica, item: Job | CanaryReference | CanaryCheck) -> None:
        if isinstance(item, Job):
            await self._generation(r, item)
        else:
            await self._canary(r, item)

    async def _generation(self, r: _Replica, job: Job) -> None:
        started = time.monotonic()
        completion = await self._chat(r, job.model, job.arm, job.prompt, job.request_seed, self.spec.sampling)
        row = {
            "kind": job.kind, "arm": job.arm, "model": job.model, "seed": job.seed,
            "request_seed": job.request_seed, "prompt_id": job.prompt_id,
            "prompt_sha256": sha256_text(job.prompt), "sampling": self.spec.sampling.as_dict(),
            "text": completion.text, "finish_reason": completion.finish_reason, "usage": completion.usage,
            "latency_s": round(completion.latency_s, 4), "seat_url": r.url, "replica": r.url, "time": _now(),
            "order": job.order, "session": self.session, "isolated": self.mode.isolate,
        }
        await self._finished.put(("generation", row))
        r.rows += 1
        r.tokens += int((completion.usage or {}).get("completion_tokens", 0))
        r.first = started if r.first is None else min(r.first, started)
        r.last = time.monotonic()
        key = cell_key(job)
        left = r.claimed.get(key)
        if left is not None:
            left.discard(job.key)
            if not left:
                del r.claimed[key]
                r.cells_done += 1
                await self._notify()

    async def _canary(self, r: _Replica, item: CanaryReference | CanaryCheck) -> None:
        """A canary is the gate's own prompt under the gate's own sampling, with the canary's fixed seed."""
        params = self.mode.params
        c = item.canary
        completion = await self._chat(r, item.model, item.arm, c.prompt, c.seed, self.spec.sampling)
        row: dict[str, Any] = {
            "session": self.session, "phase": "reference" if isinstance(item, CanaryReference) else "check",
            "arm": item.arm, "model": item.model, "canary": c.id, "prompt_id": c.prompt_id,
            "prompt_sha256": sha256_text(c.prompt), "seed": c.seed, "sampling": self.spec.sampling.as_dict(),
            "text": completion.text, "finish_reason": completion.finish_reason, "usage": completion.usage,
            "latency_s": round(completion.latency_s, 4), "isolated": self.mode.isolate, "replica": r.url,
            "time": _now(),
        }
        if isinstance(item, CanaryReference):
            row["ask"] = item.ask
            r.references.setdefault(c.id, {}).setdefault(item.arm, []).append(completion.text)
            self.result.canaries.references += 1
            r.tally.references += 1
        else:
            cal = r.calibration or Calibration(None, None, None, "no references")
            found = attribute(completion.text, item.arm, r.references.get(c.id, {}), cal, params)
            row.update(seq=item.seq, role=item.role, status=found.status, answered_as=found.answered_as,
                       similarities=found.similarities, threshold=cal.threshold)
            self.result.canaries.add(item.arm, found)
            r.tally.add(item.arm, found)
        await self._finished.put(("canary", row))

    async def _writer(self) -> None:
        """The one writer: appends (fsync'd) off the event loop, so slow disks never idle the seat.

        Items are written in the order they came; rows that finished while the previous write
        was syncing go out together. A row counts as generated only once append_rows has
        returned for it; a lost replica's stored arms of its unfinished cells go to the
        quarantine file in their turn, after every row that came before.
        """
        try:
            while True:
                batch = [await self._finished.get()]
                while not self._finished.empty():
                    batch.append(self._finished.get_nowait())
                for kind, group in itertools.groupby(batch, key=lambda item: None if item is None else item[0]):
                    items = list(group)
                    if kind == "canary":
                        await asyncio.to_thread(append_rows, self.spec.run.canaries, [i[1] for i in items if i])
                    elif kind == "generation":
                        rows = [i[1] for i in items if i]
                        await asyncio.to_thread(append_rows, self.spec.generations_path, rows)
                        for row in rows:
                            self.result.generated += 1
                            self.result.stored += 1
                            self.result.requests += 1
                            self.progress.advance(row["arm"], (row["usage"] or {}).get("completion_tokens", 0))
                    elif kind == "orphan":
                        for _, url, keys in (i for i in items if i):
                            await asyncio.to_thread(self._orphan, url, keys)
                if None in batch:
                    return
        except BaseException:
            for r in self.replicas:
                r.alive = False
            raise

    def _orphan(self, url: str, keys: frozenset[tuple[str, int, str]]) -> None:
        rows = [x for x in read_rows(self.spec.generations_path) if cell_key(x) in keys and replica_of(x) == url]
        moved = _orphan_rows(self.spec, self.manifest, rows, f"replica {url} became unreachable")
        self.result.stored -= moved
        self.result.quarantined += moved

    async def _chat(self, r: _Replica, model: str, arm: str, prompt: str, seed: int, sampling: Any) -> Completion:
        while True:
            epoch = r.adapters.epoch(model)
            try:
                return await r.client.chat(model, prompt, seed=seed, sampling=sampling)
            except ModelNotFound:
                if model not in r.adapters.ours:
                    raise SeatError(f"the seat{'' if len(self.replicas) == 1 else ' replica ' + r.url} stopped "
                                    f"serving {model!r} (arm {arm}) mid-run; it was served when the run started "
                                    "and voicegate did not load it") from None
                await r.adapters.reload(model, arm, epoch)
