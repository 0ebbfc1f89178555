"""One session of a generate run: steps 3-7 of `generate`, on every replica at once.

Every replica is asked what it serves, all at once; one that is not the same seat as
the first is refused (`seat._identity`), one that cannot be reached is left out (the
session runs on the others), and each gets its plan (`generate._plan`): every refusal
happens here, before any generation request. Candidates a replica does not serve are
loaded at run time (and said once not to persist); run.json records the seat and the
session (`generate._runlog`) before the runner (`generate._runner`) sends anything.
Whatever voicegate loaded is unloaded, and nothing else — also on SIGTERM
(`seat._adapters` writes each name down before its load request) — and the session's
end, however it came, goes into run.json.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any

from voicegate._errors import SeatUnreachable, VoicegateError
from voicegate._hashing import sha256_text
from voicegate.generate._adapter_files import adapter_dir, check_adapters, files_identity, spec_path
from voicegate.generate._canaries import Canary, choose_canaries
from voicegate.generate._carrier_files import base_identity, check_carrier
from voicegate.generate._cells import build_cells, cell_key, plan_cells
from voicegate.generate._identity import Reuse, arm_identities, earlier_asks, read_ledger, reusable, seat_fingerprint
from voicegate.generate._plan import Load, seat_plan
from voicegate.generate._progress import ProgressBars, Say, resume_hint, saved
from voicegate.generate._replica import Mode, Replica
from voicegate.generate._result import GenerateResult
from voicegate.generate._runlog import RunLog, now
from voicegate.generate._runner import Runner
from voicegate.generate._schedule import Job
from voicegate.generate._sigterm import UNLOAD_S, Stop
from voicegate.run import append_rows, read_rows, row_key
from voicegate.scoring import CanaryParams, alike_problem, cells_by_part
from voicegate.seat import (
    AdapterTrack,
    RetryPolicy,
    RunLease,
    RuntimeAdapters,
    SeatClient,
    SeatState,
    SeatTurns,
    check_identical,
    redact_url,
    tracked,
)
from voicegate.spec import GateSpec, Registration


def canaries_of(spec: GateSpec, reuse: Reuse) -> list[Canary] | None:
    """The lending session's canaries, rebuilt from the spec's prompts (None when a prompt is not the one asked)."""
    texts = {p.id: p.text for p in spec.prompts}
    out = []
    for c in reuse.canaries:
        pid, seed = str(c.get("prompt_id")), c.get("seed")
        text = texts.get(pid)
        if text is None or not isinstance(seed, int) or sha256_text(text) != c.get("prompt_sha256"):
            return None
        reg = c.get("registered_seed")
        out.append(Canary(str(c.get("id")), pid, text, seed, reg if isinstance(reg, int) else None))
    return out


def judge_rows(spec: GateSpec, index: int, live: list[Replica], result: GenerateResult, say: Say,
               params: CanaryParams) -> None:
    """The session's stored rows held to its calibration: two arms of different models answering a cell alike
    fail the replica that stored them (the same rule `score` applies, `scoring.alike_problem`)."""
    cells = cells_by_part(r for r in read_rows(spec.generations_path) if r.get("session") == index)
    models = {a.name: a.model for a in spec.arms}
    for r in live:
        mine = cells.get((index, r.url), {})
        problem = None if r.calibration is None else alike_problem(mine, r.calibration, models, params)
        if problem is not None:
            r.tally.problems.append(problem)
            result.canaries.problems.append(problem)
            say(f"warning: seat integrity cannot hold for this session: {problem}")


async def seat_states(replicas: list[Replica], say: Say) -> list[SeatState]:
    """What every replica serves, asked of all at once; a replica that cannot be reached is left out."""
    async def ask(r: Replica) -> SeatState:
        return SeatState(r.url, await r.client.version(), tuple(await r.client.models()))

    answers = await asyncio.gather(*(ask(r) for r in replicas), return_exceptions=True)
    states: list[SeatState] = []
    lost: list[tuple[Replica, SeatUnreachable]] = []
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


async def run_session(spec: GateSpec, reg: Registration, urls: list[str], api_key: str | None, conc: int,
                      jobs: list[Job], rows: list[dict[str, Any]], log: RunLog,
                      result: GenerateResult, quiet: bool, retry: RetryPolicy | None, say: Say,
                      stop: Stop, mode: Mode) -> GenerateResult:
    """Steps 3-7 of `generate`, on every replica: ask, refuse or plan, load, record, run, unload, record."""
    # Notes that change what a user should expect always print; routine steps only without --quiet.
    info: Say = (lambda line: None) if quiet else say
    progress: ProgressBars | None = None
    runner: Runner | None = None

    # Retries print under --quiet too: it silences progress, not the reason a run is waiting.
    def retry_note(line: str) -> None:
        if progress is not None and not quiet:
            progress.say(f"voicegate: retrying {line}")  # printed as is, beside the bars
        else:
            say(f"retrying {line}")  # `say` adds the "voicegate: " itself
    track = AdapterTrack(spec.run.adapters)
    paths = {a.model: a.adapter_path for a in spec.candidates if a.adapter_path}
    replicas: list[Replica] = []
    for i, raw in enumerate(urls):
        shown = redact_url(raw)
        client = SeatClient(raw, api_key=api_key, timeout=spec.seat.timeout, retry=retry,
                            max_connections=conc + 4, api_key_env=spec.seat.api_key_env,
                            on_retry=retry_note, quiet=quiet)
        if mode.isolate:    # one arm on the seat, whatever other isolated runs on this machine send to it
            client.turns = SeatTurns(raw)
        adapters = RuntimeAdapters(client, track, paths, say=say, info=info, replica=shown,
                                   lease=RunLease(spec.gate, spec.root, spec.run_dir, spec.run.adapters))
        replicas.append(Replica(i, shown, client, adapters, alone=len(urls) == 1))
    # The earlier answers on file are read before any request: a damaged store refuses the run here.
    ledger = read_ledger(spec.run.identity, say)
    stop.attach()
    wrote_manifest = False
    log.start([r.url for r in replicas], conc, mode.isolate, mode.wave_size)
    t0 = time.monotonic()
    try:
        # every refusal happens here, before any generation
        states = await seat_states(replicas, say)
        live = [r for r in replicas if r.alive]
        # What killed voicegate runs (any gate, any workspace) left loaded on each replica: unloaded first.
        states = [await r.adapters.sweep(s) for r, s in zip(live, states, strict=True)]
        different = check_identical(states, base_model=spec.base.model, runtime=paths.keys())
        if different is not None:
            raise VoicegateError(different)
        plans = {r.url: seat_plan(spec, r.url, list(s.cards), s.version, log.data, tracked(spec.run.adapters, r.url))
                 for r, s in zip(live, states, strict=True)}
        for r, st in zip(live, states, strict=True):
            r.adapters.adopt(plans[r.url].ours)
            # An adapter another live run loaded at run time is held by this run too, so that run's end leaves it
            # loaded; one gone by the time it was leased (its last holder just unloaded it) is loaded here.
            roots = {c.id: c.root for c in st.cards}
            joined = r.adapters.join({a.model: roots[a.model] for a in spec.candidates if a.model in roots})
            if joined:
                now_served = {c.id for c in await r.client.models()}
                plans[r.url].to_load += [Load(m, paths[m]) for m in sorted(joined - now_served) if m in paths]
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
        log.build(reg, snapshots, jobs, ours, conc, result.stored)
        # What each arm's identity rests on, and the earlier answers of the same weights it is held to.
        version = snapshots[0].version
        identities = arm_identities(spec, reg, snapshots[0].cards)
        # The base has no adapter file to pin: its greedy answers are held to the carrier's files, where at hand.
        base_root = next((c.root for c in snapshots[0].cards if c.id == spec.base.model), None)
        carrier = await check_carrier({r.url: r.client for r in live}, (spec.base.name, spec.base.model), base_root,
                                      [p.text for p in spec.prompts], now())
        log.note(carrier=carrier.check.as_dict())
        identities[spec.base.name] = base_identity(identities[spec.base.name], carrier.check, carrier.files)
        # Each adapter arm likewise against its own files (the carrier's with the adapter merged), where at hand.
        roots = {c.id: c.root for c in snapshots[0].cards}
        own_dirs = [(a.name, a.model, adapter_dir([spec_path(spec, a.adapter_path), roots.get(a.model)]))
                    for a in spec.candidates]
        t_own = time.monotonic()
        own = await check_adapters({r.url: r.client for r in live}, own_dirs, carrier,
                                   [p.text for p in spec.prompts], now())
        log.note(adapter_files={a: probe.check.as_dict() for a, probe in own.items()},
                 adapter_files_s=round(time.monotonic() - t_own, 3))     # its cost, local answers included
        for a, probe in own.items():
            identities[a] = files_identity(identities[a], probe.check)
        decided = {a for a, probe in [*own.items(), (spec.base.name, carrier)] if probe.check.status == "holds"}
        run_id = log.run_id()
        earlier = earlier_asks(ledger, identities, run_id, version)
        asks = earlier.asks
        log.note(identity={a: {**i.as_dict(), **({"unsealed": earlier.unsealed[a]} if a in earlier.unsealed
                                                else {})} for a, i in identities.items()},
                 identity_asks={a: {"gate": k.against.get("gate"), "session": k.against.get("session"),
                                    **({"version": k.against.get("version"), "version_now": version}
                                       if k.against.get("version") != version else {})}
                                for a, k in sorted(asks.items())})
        fingerprint = seat_fingerprint(identities, snapshots[0].cards, snapshots[0].version, [r.url for r in live])
        log.note(seat_fingerprint=fingerprint)
        reuse = None
        if len(asks) == len(spec.arms):   # every arm re-asked against a recorded answer, or no borrowing
            reuse = reusable(log.manifest, read_rows(spec.run.canaries), fingerprint, [r.url for r in live],
                             [a.name for a in spec.arms], mode.params)
        borrowed = canaries_of(spec, reuse) if reuse is not None else None
        if borrowed is not None and reuse is not None:
            log.note(references_reused_from=reuse.session)
        index = log.open(snapshots[0].cards, mode.params)
        probes = carrier.rows + [row for probe in own.values() for row in probe.rows]
        if probes:   # before the runner writes anything: the probes went first
            append_rows(spec.run.canaries, [{"session": index, **row} for row in probes])
        wrote_manifest = True

        cells = plan_cells(jobs, rows, [r.url for r in live])
        if cells.orphans:
            moved = log.quarantine_orphans(cells.orphans, "the replica it ran on is not in this run")
            result.stored -= moved
            result.quarantined += moved
            unfinished = len({cell_key(x) for x in cells.orphans})
            say(f"note: {moved} stored generation(s) of {unfinished} unfinished cell(s) came "
                f"from a replica not in this run; moved them to {spec.run.quarantine} (kept, not scored) and "
                "re-running those cells whole on one replica")
        for r in live:
            r.pinned.extend(cells.pinned.get(r.url, []))
        stored_now = {row_key(x) for x in rows} - {row_key(x) for x in cells.orphans}
        progress = ProgressBars(spec, jobs, stored_now, quiet)
        # The session's canaries: drawn from a nonce the seat never sees (recorded when the session ends).
        nonce = secrets.token_hex(16)
        canaries = borrowed or choose_canaries([(p.id, p.text) for p in spec.prompts], mode.params.count, nonce,
                                               spec.seeds)
        runner = Runner(spec, replicas, build_cells(jobs), cells.free, result, progress, index, mode, conc, say,
                        log, canaries, nonce, stop, identities=identities, identity_asks=asks, run_id=run_id,
                        version=version, decided_by_files=decided,
                        reuse=reuse if borrowed is not None else None)
        with progress:
            await runner.run()
        stop.check()  # a SIGTERM whose cancel some await swallowed still stops the run here
        judge_rows(spec, index, live, result, say, mode.params)
        log.status = "complete"
    except SeatUnreachable as exc:
        log.status = "seat-unreachable"
        raise SeatUnreachable(f"{exc}; {saved(result)}; {resume_hint(result)}") from None
    except (VoicegateError, asyncio.CancelledError, KeyboardInterrupt):
        log.status = "stopped"
        raise
    finally:
        stop.cleaning = True
        result.wall_s = time.monotonic() - t0
        result.completion_tokens = progress.tokens if progress is not None else 0
        complete = log.status == "complete"
        for r in replicas:
            await r.adapters.unload_all(complete=complete and r.alive, within_s=UNLOAD_S if stop.signalled else None)
            at = f" on {r.url}" if len(replicas) > 1 else ""
            result.loaded += [m + at for m in r.adapters.loaded]
            result.unloaded += [m + at for m in r.adapters.unloaded]
            result.reloads += r.adapters.reloads
            await r.client.aclose()
        result.replicas = [r.stats() for r in replicas]
        if wrote_manifest:
            log.close(result, runner.canary_record() if runner is not None else None,
                      left=set().union(*(r.adapters.ours for r in replicas)),
                      gone=set().union(*(r.adapters.unloaded for r in replicas),
                                       *(r.adapters.handed for r in replicas)))
    return result
