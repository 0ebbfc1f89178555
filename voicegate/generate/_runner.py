"""The runner: every replica kept at its concurrency, canary checks among the requests, one writer.

Before any check, every arm answers the integrity canaries alone on each replica (the first
twice, the others once: its references and the session's calibration, `scoring._similarity`),
the canary cells' own real rows being answers where the replica holds those cells; with replicas,
every replica's references must reproduce the first replica's, or the run is refused
before any check. Then up to N requests per replica are kept in flight in schedule
order, the canary checks at unpredictable places among them; each finished generation
is appended whole and fsync'd before the next is counted. Under ``--isolate-arms`` the
same requests go in waves of one arm; consecutive waves of one arm are one turn, kept at
the concurrency as slots free, and only an arm switch waits for the seat to empty and
opens with a check (issue 35: one arm on the seat is the invariant, not an empty seat).

**Replicas** (issue 13). A cell — one (seed, prompt) with every arm — runs whole on one
replica (`generate._cells`), recorded on each row as ``replica``; a replica that stays
unreachable has its unfinished cells moved whole to the others and the run ends on the
survivors (exit 3 only when none is left).

A crash at any point loses at most the generations in flight; the next run skips every
stored key and cuts a torn last line.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import math
import random
import time
from collections import Counter, deque
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, cast

from voicegate._errors import SeatUnreachable, VoicegateError
from voicegate._hashing import sha256_text
from voicegate.generate._canaries import (
    Canary,
    CanaryCheck,
    CanaryReference,
    after_references,
    checks_per_arm,
    own_asks,
    place_in_wave,
    plan_checks,
    positions,
    reference_asks,
    reference_order,
)
from voicegate.generate._cells import Cell, CellKey, cell_key, replica_of
from voicegate.generate._identity import ArmIdentity, IdentityAsk, Reuse, record_references
from voicegate.generate._progress import ProgressBars, Say
from voicegate.generate._result import GenerateResult
from voicegate.generate._runlog import now, quarantine_orphans
from voicegate.generate._schedule import Job, isolate_waves
from voicegate.generate._sigterm import POLL_S, Stop
from voicegate.run import append_rows, read_rows
from voicegate.scoring import (
    Calibration,
    CanaryParams,
    Tally,
    attribute,
    calibrate,
    canary_cell,
    identity_outcome,
    is_prefix,
    replica_differs,
)
from voicegate.seat import Completion, ModelNotFound, RuntimeAdapters, SeatClient, SeatError
from voicegate.spec import GateSpec


@dataclass(frozen=True)
class Mode:
    """How this session sends its requests, and how it checks the seat."""

    isolate: bool
    wave_size: int
    params: CanaryParams


def wave_jobs(wave_size: int) -> int:
    """An isolated wave's real requests: its size less the check that opens it (issue 35). A wave of 4 x the
    concurrency then fills 4 rounds exactly; with the opening check on top it took a fifth, mostly idle."""
    return max(1, wave_size - 1)


class Replica:
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
        self.doubling: dict[tuple[str, str, int, str], tuple[Canary, int]] = {}  # a real row that is a reference ask
        # this session's answered rows on this replica, by cell (what a re-ask check compares with), and the
        # cells a re-ask has already asked (a fresh cell per check while any is left)
        self.answered: dict[CellKey, dict[str, tuple[Job, str]]] = {}
        self.reasked: set[CellKey] = set()
        self.identity: list[tuple[IdentityAsk, str]] = []   # earlier answers of the same weights, asked again
        self.calibration: Calibration | None = None
        self.checks: deque[tuple[int, CanaryCheck]] = deque()   # (due before the n-th job, check)
        self.budget = 0                       # isolated: the checks each arm is owed on this replica
        self.checked: dict[str, int] = {}     # arm -> checks sent on this replica (counted as each goes out)
        self.closed: set[str] = set()         # arms whose closing check is placed
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


async def together(coros: Iterable[Coroutine[Any, Any, None]]) -> None:
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


class Runner:
    """Every replica kept at its concurrency; cells go whole to whichever replica has room.

    A replica's workers take its claimed cells' jobs in schedule order and claim the next
    cell (its pinned ones first, then the free ones) when they run out, so a faster replica
    takes more cells. Each finished generation goes to the one writer and is stored before it
    is counted. A replica that stays unreachable is dropped: its unfinished cells go back to
    the front of the free cells, whole, and their stored arms from it to the quarantine file.
    """

    def __init__(self, spec: GateSpec, replicas: list[Replica], all_cells: list[Cell], free: list[Cell],
                 result: GenerateResult, progress: ProgressBars, session: int, mode: Mode, conc: int, say: Say,
                 manifest: dict[str, Any], canaries: list[Canary], nonce: str, stop: Stop | None = None,
                 identities: dict[str, ArmIdentity] | None = None, identity_asks: dict[str, IdentityAsk] | None = None,
                 run_id: str = "", reuse: Reuse | None = None, version: str | None = None,
                 decided_by_files: set[str] | None = None):
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
        self.identities = identities or {}
        self.identity_asks = identity_asks or {}
        self.run_id = run_id
        self.reuse = reuse
        self.version = version
        self.decided_by_files = decided_by_files or set()   # arms whose own files reproduced the seat's answers
        self.planned: dict[str, int] = {}
        live = [r for r in replicas if r.alive]
        work = sum(len(c.jobs) for c in free) + sum(len(c.jobs) for r in live for c in r.pinned)
        share = max(1, math.ceil(work / max(1, len(live))))
        self.share = share
        params = mode.params
        # What a replica sends besides its checks: each arm's own reference asks (none when borrowed) and
        # its identity re-ask; the checks fill the rest of the budget.
        extra = (0 if reuse is not None else len(self.arms) * own_asks(params)) + len(self.identity_asks)
        # The canary cells are the canary checks' own: a re-ask goes to a cell no check asks (their rows, sent
        # with the references, are whole from the start and would otherwise be the first re-asks' likeliest pick).
        canary_cells: set[CellKey] = {("voice", c.registered_seed, c.prompt_id) for c in canaries
                                      if c.registered_seed is not None}
        for r in live:
            r.rng = random.Random(f"{nonce}:{r.index}")
            r.reasked |= canary_cells
            per_arm = checks_per_arm(params, len(self.arms), share, extra)
            r.budget = per_arm
            if mode.isolate:
                # Every turn (an arm switch) opens with a check and each arm's last wave holds one more: only the
                # rest are random. R rounds of A arms make R(A-1)+1 turns (`isolate_waves`), ~1/A of them each arm's.
                rounds = math.ceil(share / max(1, len(self.arms)) / wave_jobs(mode.wave_size))
                turns_per_arm = math.ceil((rounds * (len(self.arms) - 1) + 1) / max(1, len(self.arms)))
                checks = plan_checks(params, self.arms, max(0, per_arm - turns_per_arm - 1), canaries, r.rng,
                                     closing=False)
            else:
                checks = plan_checks(params, self.arms, per_arm, canaries, r.rng)
            r.seq = len(checks)
            r.checks = deque(positions(checks, share, params, r.rng))
            self.planned[r.url] = len(checks)

    def canary_record(self) -> dict[str, Any]:
        """The session's canaries as run.json records them: the nonce they were drawn from, them, the checks planned."""
        return {"nonce": self.nonce, "canaries": [c.as_dict() for c in self.canaries],
                "planned_per_replica": self.planned}

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
        """Every replica's references first (each arm alone), then the cross-check, then the cells.

        A session on an unchanged seat borrows an earlier session's references instead (`reuse`): no
        reference wave; each arm's re-ask of a recorded reference goes among the first requests (arms
        mixed) or as a wave of its own (isolated), and fails the session if it does not reproduce.
        """
        if self.reuse is not None:
            await self._borrow(self.reuse)
            self._calibrate()
            await together(self._replica(r, first=self._identity_round(r)) for r in self.replicas if r.alive)
            return
        await together(self._references(r) for r in self.replicas if r.alive)
        self._calibrate()
        await together(self._replica(r) for r in self.replicas if r.alive)

    async def _borrow(self, reuse: Reuse) -> None:
        """The earlier session's reference rows, copied into this session (the verdict holds copies to originals)."""
        copies = []
        for r in self.replicas:
            if not r.alive:
                continue
            for row in sorted(reuse.rows.get(r.url, []), key=lambda x: (str(x.get("canary")), str(x.get("arm")),
                                                                            int(x.get("ask") or 0))):
                r.references.setdefault(str(row["canary"]), {}).setdefault(str(row["arm"]), []).append(
                    str(row.get("text", "")))
                # a borrowed copy names the session that asked it (a lender may itself have borrowed it)
                copies.append({**row, "session": self.session, "reused_from": row.get("reused_from", reuse.session),
                               "time": now()})
                r.tally.references += 1
                self.result.canaries.references += 1
        for row in copies:
            await self._finished.put(("canary", row))

    def _identity_round(self, r: Replica) -> Coroutine[Any, Any, None]:
        async def send() -> None:
            asks = [a for _, a in sorted(self.identity_asks.items())]
            if self.mode.isolate:
                for ask in asks:
                    # Each arm's re-ask is a wave of that arm, filled with its own requests (as a reference wave is).
                    await self._drain(r, [ask, *self._own_jobs(r, ask.arm, self.conc - 1)])
            else:
                await together(self._identity(r, a) for a in asks)
        return send()

    async def _references(self, r: Replica) -> None:
        try:
            for arm, model in reference_order(self.arms, r.rng):
                # The canary cells' own rows of this arm are answers to the canaries (the very same request):
                # sent here, alone with the arm, they are references that cost no request of their own.
                real = self._canary_rows(r, arm)
                ask = self.identity_asks.get(arm)
                items: list[Any] = [*reference_asks(self.mode.params, arm, model, self.canaries, real),
                                    *real.values(), *([ask] if ask is not None else [])]
                # One arm on the seat is the invariant, not an empty seat: the wave's free slots take that
                # arm's own real requests (issue 35), arms mixed or isolated, so a replica's references cost
                # ~nothing extra. Isolated, the rest of those cells goes first in the replica's first turns.
                items += self._own_jobs(r, arm, self.conc - len(items))
                await self._drain(r, items)
            r.checks = deque(after_references(r.checks, r.sent, self.share))
        except SeatUnreachable as exc:
            await self._lost(r, exc)

    def _calibrate(self) -> None:
        """Each replica's threshold from its own references; a replica whose references differ is refused.

        The refusal comes before any warning: a run that is refused says so in its one line.
        """
        params = self.mode.params
        live = [r for r in self.replicas if r.alive]
        names = [a for a, _ in self.arms]
        for r in live:
            r.calibration = calibrate(r.references, names, params, dict(self.arms))
        if len(live) >= 2:
            first = live[0]
            cal = first.calibration or Calibration(None, None, None)
            for r in live[1:]:
                differs = replica_differs(first.references, r.references, cal, params)
                if differs is not None:
                    arm, sim = differs
                    model = dict(self.arms)[arm]
                    # The reference waves carry real rows (the canary cells' own, and under arms mixed the
                    # waves' free slots): no check has met them, so the next generate quarantines and redoes them.
                    sent = sum(x.rows for x in live)
                    kept = (f"no check was sent: the {sent} rows sent with the references carry none, and the next "
                            "generate moves them to quarantine and makes them again"
                            ) if sent else "no cell was generated"
                    raise VoicegateError(
                        f"refusing replica {r.url}: its answers for arm {arm} ({model!r}) do not reproduce those of "
                        f"{first.url} (canary similarity {sim:.3f}, threshold {cal.threshold or 1.0:.3f}): "
                        f"it serves other weights under the same name; {kept}")
        for r in live:
            cal = r.calibration or Calibration(None, None, None, "no references")
            problems = [cal.problem] if cal.problem is not None else []
            problems += [i.problem for i in self.identities.values() if i.problem and r is live[0]]
            where = f" (replica {r.url})" if len(self.replicas) > 1 else ""
            for ask, text in r.identity:
                self._judge_identity(r, ask, text, cal, where, problems)
            for problem in problems:
                r.tally.problems.append(problem)
                self.result.canaries.problems.append(problem)
                self.say(f"warning: seat integrity cannot hold for this session{where}: {problem}")
        # A session whose identity is not decided records nothing: its answers would stand for weights unproven.
        if (live and not live[0].tally.problems and not live[0].tally.undecided and self.identities
                and self.reuse is None):
            sampling = self.spec.sampling.as_dict()
            refs = live[0].references
            record_references(self.spec.run.identity, self.identities, self.spec.gate, self.session, self.run_id,
                              [(arm, c.prompt, c.seed, sampling, refs[c.id][arm][0])
                               for c in self.canaries for arm in refs.get(c.id, {})], now(), self.version)
        if len(live) < 2:
            self.result.canaries.calibration = live[0].calibration if live else None

    async def _replica(self, r: Replica, first: Coroutine[Any, Any, None] | None = None) -> None:
        try:
            if self.mode.isolate:
                if first is not None:
                    await first
                await self._isolated(r)
            else:
                await together([*(self._worker(r) for _ in range(self.conc)), *([first] if first else [])])
        except SeatUnreachable as exc:
            await self._lost(r, exc)

    async def _drain(self, r: Replica, items: list[Any]) -> None:
        queue: deque[Any] = deque(items)

        async def worker() -> None:
            while queue:
                self.stop.check()
                await self._send(r, queue.popleft())

        await together(worker() for _ in range(min(self.conc, len(queue))))

    async def _worker(self, r: Replica) -> None:
        while (item := await self._next(r)) is not None:
            await self._send(r, item)

    def _new_check(self, r: Replica, arm: str, model: str, role: str) -> CanaryCheck:
        check = CanaryCheck(r.seq, arm, model, r.rng.choice(self.canaries), role)
        r.seq += 1
        return check

    async def _isolated(self, r: Replica) -> None:
        """Batches of cells, each sent as waves of one arm on this replica; a turn of one arm is never drained.

        Consecutive waves of one arm (`isolate_waves` makes every round open with the arm that closed the
        round before) are one turn: its requests are sent as slots free, and when the turn's last wave is
        sent the next batch is claimed, its first wave continuing the turn. Only an arm switch waits for
        every request in flight to finish, and the turn after it opens with a check of its arm (the first
        request after the switch). The random checks due in a batch go to random places in their arm's
        waves; the batch that ends the replica's run holds, in each arm's last wave, one more check per arm and
        the checks its turns did not give it.
        """
        pending: deque[tuple[str, str, list[Any]]] = deque()   # waves not started: arm, model, requests
        rounds = [0, None]      # the next batch's round, and the arm whose wave closed the last one
        on_seat: str | None = None
        if r.local:
            # The other arms of the cells whose jobs filled the reference waves, first (with more cells, to a batch).
            cells = {cell_key(j) for j in r.local}
            jobs = [*r.local, *self._claim_now(r, max(0, wave_jobs(self.mode.wave_size) - len(cells)))]
            r.local.clear()
            self._plan_batch(r, jobs, pending, rounds)
        while pending or (jobs := await self._claim_batch(r, wave_jobs(self.mode.wave_size))):
            if not pending:
                self._plan_batch(r, jobs, pending, rounds)
            arm, model, items = pending.popleft()
            queue: deque[Any] = deque(items)
            if arm != on_seat:
                queue.appendleft(self._new_check(r, arm, model, "opening"))
            await self._turn(r, arm, queue, pending, rounds)
            on_seat = arm
        left = [c for _, c in r.checks]
        r.checks.clear()
        sent_arms = {a for by_arm in r.answered.values() for a in by_arm}
        # The arm on the seat first: its checks need no switch.
        for arm, model in sorted(self.arms, key=lambda am: am[0] != on_seat):
            mine = [c for c in left if c.arm == arm]
            if arm in sent_arms:
                # The plan counted on turns that did not come (a small run's jobs all went with the reference
                # waves, or a resume's few): the arm's budget is met at the end, one check closing its run.
                short = r.budget - r.checked.get(arm, 0) - len(mine)
                mine += [self._new_check(r, arm, model, "closing")
                         for _ in range(max(short, 0 if arm in r.closed else 1))]
            await self._drain(r, mine)

    def _plan_batch(self, r: Replica, jobs: list[Job], pending: deque[tuple[str, str, list[Any]]],
                    rounds: list[Any]) -> None:
        """`jobs` (a claimed batch) as the next round of waves, with the checks that fall in it, onto `pending`."""
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
        on_seat = rounds[1]
        waves = isolate_waves(jobs, wave_jobs(self.mode.wave_size), self.spec.order_seed, first_round=rounds[0],
                              after=on_seat)
        rounds[0] += 1
        rounds[1] = waves[-1][0].arm
        mine: dict[str, list[int]] = {}
        for i, wave in enumerate(waves):
            mine.setdefault(wave[0].arm, []).append(i)
        extra: dict[int, list[CanaryCheck]] = {}
        for arm, cs in due.items():
            for c in cs:
                extra.setdefault(r.rng.choice(mine[arm]), []).append(c)
        if last:
            # Each arm's last wave holds its closing check and whatever its budget still lacks (the plan counted
            # on turns, each opened by a check, that a run's own order may not give it): sent at the run's end
            # instead, alone, they would cost an arm switch and a lone request.
            arms_now = [w[0].arm for w in waves]
            openers = Counter(a for i, a in enumerate(arms_now) if a != (arms_now[i - 1] if i else on_seat))
            for arm, slots in mine.items():
                r.closed.add(arm)
                short = r.budget - r.checked.get(arm, 0) - len(due.get(arm, [])) - openers[arm] - 1
                extra.setdefault(slots[-1], []).extend(
                    self._new_check(r, arm, waves[slots[-1]][0].model, "closing") for _ in range(1 + max(0, short)))
        for i, wave in enumerate(waves):
            pending.append((wave[0].arm, wave[0].model, place_in_wave(wave, None, extra.get(i, []), r.rng)))

    async def _turn(self, r: Replica, arm: str, queue: deque[Any], pending: deque[tuple[str, str, list[Any]]],
                    rounds: list[Any]) -> None:
        """`arm`'s turn: `queue` kept at the concurrency, refilled with `arm`'s next waves; drained at its end.

        When the queue runs out, the next pending wave joins it if it is `arm`'s; with none pending, the
        next batch is claimed (without waiting: a replica that must wait ends its turn first).
        """
        ended = False

        def refill() -> bool:
            nonlocal ended
            while not queue and not ended:
                if not pending and (jobs := self._claim_now(r, wave_jobs(self.mode.wave_size))):
                    self._plan_batch(r, jobs, pending, rounds)
                if pending and pending[0][0] == arm:
                    queue.extend(pending.popleft()[2])
                else:
                    ended = True
            return bool(queue)

        async def worker() -> None:
            while queue or refill():
                self.stop.check()
                await self._send(r, queue.popleft())

        await together(worker() for _ in range(self.conc))

    # -- who sends what -------------------------------------------------------------

    def _claim(self, r: Replica) -> Cell | None:
        """`r`'s next cell: its pinned ones first, then the free ones."""
        cell = r.pinned.popleft() if r.pinned else (self.free.popleft() if self.free else None)
        if cell is not None:
            r.claimed[cell.key] = {j.key for j in cell.jobs}
        return cell

    def _canary_rows(self, r: Replica, arm: str) -> dict[str, Job]:
        """Per canary, `arm`'s job of the canary's own cell, taken out of `r`'s queue to be a reference ask.

        The cell is claimed for `r` (from its pinned cells or the free ones); a cell another replica
        holds, or whose row of `arm` is stored already, gives none (the canary is then asked on its own).
        """
        out: dict[str, Job] = {}
        params = self.mode.params
        for i, c in enumerate(self.canaries):
            if c.registered_seed is None:
                continue
            key: CellKey = ("voice", c.registered_seed, c.prompt_id)
            if key not in r.claimed and not self._claim_key(r, key, c):
                continue
            job = next((j for j in r.local if cell_key(j) == key and j.arm == arm), None)
            if job is None or job.request_seed != c.seed or job.prompt != c.prompt:
                continue
            r.local.remove(job)
            r.sent += 1
            r.doubling[job.key] = (c, params.asks_of(i) - 1)
            out[c.id] = job
        return out

    def _claim_key(self, r: Replica, key: CellKey, c: Canary) -> bool:
        """Claim the cell `key` for `r` (its pinned one, else a free one) when its jobs are canary `c`'s request."""
        for pool in (r.pinned, self.free):
            cell = next((x for x in pool if x.key == key), None)
            if cell is None:
                continue
            if not all(j.request_seed == c.seed and j.prompt == c.prompt for j in cell.jobs):
                return False
            pool.remove(cell)
            r.claimed[cell.key] = {j.key for j in cell.jobs}
            r.local.extend(cell.jobs)
            return True
        return False

    def _own_jobs(self, r: Replica, arm: str, k: int) -> list[Job]:
        """Up to `k` of `arm`'s jobs from `r`'s cells (claiming cells as needed), taken out of its queue."""
        out: list[Job] = []
        claims = 0      # at most `k` cells: a replica must not hoard cells the others could take
        while len(out) < k:
            mine = [j for j in r.local if j.arm == arm]
            if not mine:
                cell = self._claim(r) if claims < k else None
                if cell is None:
                    break
                claims += 1
                r.local.extend(cell.jobs)
                continue
            for j in mine[:k - len(out)]:
                r.local.remove(j)
                out.append(j)
        r.sent += len(out)
        return out

    def _others_busy(self) -> bool:
        return any(x.alive and (x.claimed or x.pinned) for x in self.replicas)

    async def _next(self, r: Replica) -> Job | CanaryCheck | None:
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

    async def _claim_batch(self, r: Replica, size: int) -> list[Job]:
        """The jobs of up to `size` more cells for `r`, in schedule order; empty when none is left for it.

        While a replica still holds cells an empty claim waits instead (as `_next` does).
        """
        while True:
            if (jobs := self._claim_now(r, size)) or not self._others_busy():
                return jobs
            await self._wait()

    def _claim_now(self, r: Replica, size: int) -> list[Job]:
        """The jobs of up to `size` more cells for `r` that can be claimed now; empty when none can."""
        self.stop.check()
        batch: list[Cell] = []
        while len(batch) < size and (cell := self._claim(r)) is not None:
            batch.append(cell)
        return [j for c in batch for j in c.jobs]

    async def _wait(self) -> None:
        """Until a cell finishes or comes back, or `POLL_S` passed (the callers loop, and look at the stop mark)."""
        async with self._changed:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL_S):
                    await self._changed.wait()

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _lost(self, r: Replica, exc: SeatUnreachable) -> None:
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

    async def _send(self, r: Replica, item: Job | CanaryReference | CanaryCheck | IdentityAsk) -> None:
        if isinstance(item, CanaryCheck):
            r.checked[item.arm] = r.checked.get(item.arm, 0) + 1
        if isinstance(item, Job):
            await self._generation(r, item)
        elif isinstance(item, IdentityAsk):
            await self._identity(r, item)
        else:
            await self._canary(r, item)

    async def _generation(self, r: Replica, job: Job) -> None:
        started = time.monotonic()
        completion = await self._chat(r, job.model, job.arm, job.prompt, job.request_seed, self.spec.sampling)
        row = {
            "kind": job.kind, "arm": job.arm, "model": job.model, "seed": job.seed,
            "request_seed": job.request_seed, "prompt_id": job.prompt_id,
            "prompt_sha256": sha256_text(job.prompt), "sampling": self.spec.sampling.as_dict(),
            "text": completion.text, "finish_reason": completion.finish_reason, "usage": completion.usage,
            "latency_s": round(completion.latency_s, 4), "seat_url": r.url, "replica": r.url, "time": now(),
            "order": job.order, "session": self.session, "isolated": self.mode.isolate,
        }
        await self._finished.put(("generation", row))
        if (double := r.doubling.pop(job.key, None)) is not None:
            await self._real_reference(r, job, row, *double)
        r.answered.setdefault(cell_key(job), {})[job.arm] = (job, completion.text)
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

    async def _canary(self, r: Replica, item: CanaryReference | CanaryCheck) -> None:
        """A canary is the gate's own prompt under the gate's own sampling, with the canary's fixed seed.

        A check is sent as one of two kinds (issue 35), so that a seat answering right only what it was
        asked before (a response cache in front of a mixing seat) meets a first ask: a check re-asks, with
        probability `reask_share`, a stored row of this session of a cell not re-asked yet (exactly its
        request: the seat's first answer to it is what is checked); any other check asks its canary under a
        shorter max_tokens drawn per check (no cache has that request; seeded sampling makes the answer its
        reference's prefix).
        """
        if isinstance(item, CanaryCheck):
            target = self._reask_target(r, item.arm)
            if target is not None:
                await self._reask(r, item, *target)
                return
        params = self.mode.params
        c = item.canary
        sampling = self.spec.sampling
        if isinstance(item, CanaryCheck) and sampling.max_tokens > 1:
            shorter = r.rng.randint(math.ceil(sampling.max_tokens / 2), sampling.max_tokens - 1)
            sampling = dataclasses.replace(sampling, max_tokens=shorter)
        completion = await self._chat(r, item.model, item.arm, c.prompt, c.seed, sampling)
        row: dict[str, Any] = {
            "session": self.session, "phase": "reference" if isinstance(item, CanaryReference) else "check",
            "arm": item.arm, "model": item.model, "canary": c.id, "prompt_id": c.prompt_id,
            "prompt_sha256": sha256_text(c.prompt), "seed": c.seed, "sampling": sampling.as_dict(),
            "text": completion.text, "finish_reason": completion.finish_reason, "usage": completion.usage,
            "latency_s": round(completion.latency_s, 4), "isolated": self.mode.isolate, "replica": r.url,
            "time": now(),
        }
        if isinstance(item, CanaryReference):
            row["ask"] = item.ask
            r.references.setdefault(c.id, {}).setdefault(item.arm, []).append(completion.text)
            self.result.canaries.references += 1
            r.tally.references += 1
        else:
            cal = r.calibration or Calibration(None, None, None, "no references")
            prefix = is_prefix(sampling.max_tokens, self.spec.sampling.max_tokens, completion.finish_reason)
            found = attribute(completion.text, item.arm, r.references.get(c.id, {}), cal, params, prefix=prefix)
            cell = canary_cell(c.registered_seed, c.prompt_id)
            row.update(seq=item.seq, role=item.role, check="canary", cell=list(cell), status=found.status,
                       answered_as=found.answered_as, similarities=found.similarities, threshold=cal.threshold)
            self.result.canaries.add(item.arm, found, cell)
            r.tally.add(item.arm, found, cell)
        await self._finished.put(("canary", row))

    async def _real_reference(self, r: Replica, job: Job, row: dict[str, Any], c: Canary, ask: int) -> None:
        """A canary cell's real row, the very request of the canary: one of its arm's reference asks.

        Its copy in canaries.jsonl names the row (`real_row`, `cell`); `score` holds the copy to the stored row.
        """
        r.references.setdefault(c.id, {}).setdefault(job.arm, []).append(row["text"])
        self.result.canaries.references += 1
        r.tally.references += 1
        copy = {"session": self.session, "phase": "reference", "arm": job.arm, "model": job.model, "canary": c.id,
                "prompt_id": c.prompt_id, "prompt_sha256": row["prompt_sha256"], "seed": c.seed,
                "sampling": row["sampling"], "text": row["text"], "finish_reason": row["finish_reason"],
                "usage": row["usage"], "latency_s": row["latency_s"], "isolated": self.mode.isolate,
                "replica": r.url, "time": row["time"], "ask": ask, "real_row": True, "cell": list(cell_key(job))}
        await self._finished.put(("canary", copy))

    async def _identity(self, r: Replica, ask: IdentityAsk) -> None:
        """An earlier session's reference of the same weights, asked again alone (judged once calibrated)."""
        completion = await self._chat(r, ask.model, ask.arm, ask.prompt, ask.seed, ask.sampling)
        if r.calibration is None:
            r.identity.append((ask, completion.text))     # judged once the session is calibrated
        else:
            problems: list[str] = []
            self._judge_identity(r, ask, completion.text, r.calibration, "", problems)
            for problem in problems:
                r.tally.problems.append(problem)
                self.result.canaries.problems.append(problem)
                self.say(f"warning: seat integrity cannot hold for this session: {problem}")
        row: dict[str, Any] = {
            "session": self.session, "phase": "identity", "arm": ask.arm, "model": ask.model,
            "prompt_sha256": sha256_text(ask.prompt), "seed": ask.seed, "sampling": dict(ask.sampling),
            "text": completion.text, "finish_reason": completion.finish_reason, "usage": completion.usage,
            "latency_s": round(completion.latency_s, 4), "replica": r.url, "time": now(),
            "against": dict(ask.against), **({"version": self.version} if "version" in ask.against else {}),
        }
        await self._finished.put(("canary", row))

    def _judge_identity(self, r: Replica, ask: IdentityAsk, text: str, cal: Calibration, where: str,
                        problems: list[str]) -> None:
        """An earlier answer of the same weights asked again: a problem into `problems`, or not decided (said)."""
        problem, undecided = identity_outcome(ask.arm, text, ask.against, cal, self.mode.params, self.version)
        if problem is not None:
            problems.append(problem)
        if undecided is not None and ask.arm not in self.decided_by_files:
            r.tally.undecided.append(undecided)
            self.result.canaries.undecided.append(undecided)
            aside = self.spec.run.identity.with_name(f"identity.before-{self.version}.jsonl")
            self.say(f"warning: seat integrity not decided for this session{where}: {undecided}; if the seat was "
                     f"upgraded on purpose, `mv {self.spec.run.identity} {aside}` starts the earlier answers afresh "
                     "and the next generate makes this session's rows again")

    def _reask_target(self, r: Replica, arm: str) -> tuple[Job, str, dict[str, str]] | None:
        """A stored row of `arm` in a cell no check asked yet (a whole cell first), drawn at random; None if none."""
        if r.rng.random() >= self.mode.params.reask_share:
            return None
        fresh = [k for k, by_arm in r.answered.items() if arm in by_arm and k not in r.reasked]
        if not fresh:
            return None
        whole = [k for k in fresh if len(r.answered[k]) == len(self.arms)]
        key = r.rng.choice(sorted(whole or fresh))
        r.reasked.add(key)
        job, text = r.answered[key][arm]
        return job, text, {a: t for a, (_, t) in sorted(r.answered[key].items())}

    async def _reask(self, r: Replica, item: CanaryCheck, job: Job, text: str, against: dict[str, str]) -> None:
        """`job` asked again exactly as it was: right only when the answer reproduces its stored row."""
        params = self.mode.params
        completion = await self._chat(r, job.model, job.arm, job.prompt, job.request_seed, self.spec.sampling)
        cal = r.calibration or Calibration(None, None, None, "no references")
        found = attribute(completion.text, job.arm, {a: [t] for a, t in against.items()}, cal, params)
        cell = cell_key(job)
        row: dict[str, Any] = {
            "session": self.session, "phase": "check", "check": "reask", "arm": job.arm, "model": job.model,
            "cell": list(cell), "prompt_id": job.prompt_id, "prompt_sha256": sha256_text(job.prompt),
            "seed": job.request_seed, "sampling": self.spec.sampling.as_dict(), "text": completion.text,
            "finish_reason": completion.finish_reason, "usage": completion.usage,
            "latency_s": round(completion.latency_s, 4), "isolated": self.mode.isolate, "replica": r.url,
            "time": now(), "seq": item.seq, "role": item.role, "against": against, "status": found.status,
            "answered_as": found.answered_as, "similarities": found.similarities, "threshold": cal.threshold,
        }
        self.result.canaries.add(job.arm, found, cell)
        r.tally.add(job.arm, found, cell)
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
        moved = quarantine_orphans(self.spec, self.manifest, rows, f"replica {url} became unreachable")
        self.result.stored -= moved
        self.result.quarantined += moved

    async def _chat(self, r: Replica, model: str, arm: str, prompt: str, seed: int, sampling: Any) -> Completion:
        while True:
            epoch = r.adapters.epoch(model)
            try:
                return await r.client.chat(model, prompt, seed=seed, sampling=sampling)
            except ModelNotFound:
                held = model in r.adapters.shared and model in r.adapters.adapter_paths
                if model not in r.adapters.ours and not held:
                    raise SeatError(f"the seat{'' if len(self.replicas) == 1 else ' replica ' + r.url} stopped "
                                    f"serving {model!r} (arm {arm}) mid-run; it was served when the run started "
                                    "and voicegate did not load it") from None
                await r.adapters.reload(model, arm, epoch)
