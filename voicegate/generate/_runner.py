"""The scheduler of a generate session: every replica kept at its concurrency, one writer.

Each replica first sends its reference waves (each arm alone on it, its free slots taking that
arm's own real requests): the lead (the first replica still answering) every canary, each other one canary
per arm, held to the lead's; the session is calibrated on the lead's (`generate._seat_checks`); then up to N
requests per replica are kept in flight in schedule order, the canary checks at unpredictable
places among them; each finished generation is appended whole and fsync'd before the next is
counted (`generate._writer`). Under ``--isolate-arms`` the same requests go in waves of one arm;
consecutive waves of one arm are one turn, kept at the concurrency as slots free, and only an
arm switch waits for the seat to empty and opens with a check (one arm on the seat is the
invariant, not an empty seat).

**Replicas.** A cell — one (seed, prompt) with every arm — runs whole on one replica
(`generate._cells`), recorded on each row as ``replica``; a replica that stays unreachable has
its unfinished cells moved whole to the others and the run ends on the survivors (exit 3 only
when none is left).

A crash at any point loses at most the generations in flight; the next run skips every
stored key and cuts a torn last line.

Over 400 lines because its claiming of cells, its arms-mixed workers and its
isolated turns share one state (each replica's queue, its due checks and the free cells) and one
wake-up: split, each part would reach into the others' bookkeeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import Counter, deque
from collections.abc import Coroutine
from typing import Any

from voicegate._errors import SeatUnreachable
from voicegate._hashing import sha256_text
from voicegate.generate._canaries import (
    Canary,
    CanaryCheck,
    CanaryReference,
    after_references,
    place_in_wave,
    reference_order,
)
from voicegate.generate._cells import Cell, CellKey, cell_key
from voicegate.generate._identity import ArmIdentity, IdentityAsk, Reuse
from voicegate.generate._progress import ProgressBars, Say
from voicegate.generate._replica import Mode, Replica, together, wave_jobs
from voicegate.generate._result import GenerateResult
from voicegate.generate._runlog import RunLog, now
from voicegate.generate._schedule import Job, isolate_waves
from voicegate.generate._seat_checks import SeatChecks
from voicegate.generate._sigterm import POLL_S, Stop
from voicegate.generate._writer import Writer
from voicegate.spec import GateSpec


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
                 log: RunLog, canaries: list[Canary], nonce: str, stop: Stop | None = None,
                 identities: dict[str, ArmIdentity] | None = None, identity_asks: dict[str, IdentityAsk] | None = None,
                 run_id: str = "", reuse: Reuse | None = None, version: str | None = None,
                 decided_by_files: set[str] | None = None):
        self.spec = spec
        self.stop = stop or Stop()
        self.replicas = replicas
        self.whole = {c.key: c for c in all_cells}
        self.free: deque[Cell] = deque(free)
        self.result = result
        self.session = session
        self.mode = mode
        self.conc = conc
        self.say = say
        self.reuse = reuse
        self.arms = [(a.name, a.model) for a in spec.arms]
        self._changed = asyncio.Condition()
        self.writer = Writer(spec, result, progress, log)
        self.checks = SeatChecks(spec, mode, result, self.writer, say, session, canaries, nonce, identities or {},
                                 identity_asks or {}, run_id, reuse, version, decided_by_files or set())
        live = [r for r in replicas if r.alive]
        work = sum(len(c.jobs) for c in free) + sum(len(c.jobs) for r in live for c in r.pinned)
        self.share = max(1, math.ceil(work / max(1, len(live))))
        self.checks.plan(live, self.share)

    def canary_record(self) -> dict[str, Any]:
        return self.checks.record()

    def _writer_failed(self) -> None:
        for r in self.replicas:
            r.alive = False

    # -- the whole run ------------------------------------------------------------

    async def run(self) -> None:
        writer = asyncio.create_task(self.writer.run(self._writer_failed))
        work = asyncio.create_task(self._all())
        try:
            await asyncio.wait({writer, work}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if writer.done() or not work.done():
                work.cancel()  # a disk that cannot be written stops the run (nothing would be kept), as does a kill
            await asyncio.gather(work, return_exceptions=True)
            # Whatever happened, every finished generation is on disk before we return or raise.
            if not writer.done():
                await self.writer.close()
            await writer
        work.result()

    async def _all(self) -> None:
        """Every replica's references first (each arm alone), then the cross-check, then the cells.

        A session on an unchanged seat borrows an earlier session's references instead (`reuse`): no
        reference wave; each arm's re-ask of a recorded reference goes among the first requests (arms
        mixed) or as a wave of its own (isolated), and fails the session if it does not reproduce.
        """
        if self.reuse is not None:
            await self.checks.borrow(self.replicas, self.reuse)
            self.checks.calibrate(self.replicas)
            await together(self._replica(r, first=self._identity_round(r)) for r in self.replicas if r.alive)
            return
        lead = self._first_alive()
        await together(self._references(r, r is lead) for r in self.replicas if r.alive)
        if not any(self.checks.whole(r) for r in self.replicas) and (lead := self._first_alive()) is not None:
            # The lead was lost in its reference waves: the next replica completes its own into a lead's.
            await self._references(lead, True, again=True)
        for r in self.replicas:
            if r.alive:
                r.checks = deque(after_references(r.checks, r.sent, self.share))
        self.checks.calibrate(self.replicas)
        await together(self._replica(r) for r in self.replicas if r.alive)

    def _first_alive(self) -> Replica | None:
        return next((r for r in self.replicas if r.alive), None)

    def _identity_round(self, r: Replica) -> Coroutine[Any, Any, None]:
        async def send() -> None:
            asks = [a for _, a in sorted(self.checks.identity_asks.items())]
            if self.mode.isolate:
                for ask in asks:
                    # Each arm's re-ask is a wave of that arm, filled with its own requests (as a reference wave is).
                    await self._drain(r, [ask, *self._own_jobs(r, ask.arm, self.conc - 1)])
            else:
                await together(self.checks.identity(r, a) for a in asks)
        return send()

    async def _references(self, r: Replica, lead: bool, again: bool = False) -> None:
        """`r`'s reference waves, one per arm: the lead's every canary (it calibrates the session), any other
        replica's first canary once per arm (held to the lead's; its checks are judged against the lead's)."""
        try:
            for arm, model in reference_order(self.arms, r.rng):
                # The canary cells' own rows of this arm are answers to the canaries (the very same request):
                # sent here, alone with the arm, they are references that cost no request of their own.
                real = self._canary_rows(r, arm) if lead else {}
                items = self.checks.reference_items(r, arm, model, real, lead, again)
                # One arm on the seat is the invariant, not an empty seat: the wave's free slots take that
                # arm's own real requests, arms mixed or isolated, so a replica's references cost
                # ~nothing extra. Isolated, the rest of those cells goes first in the replica's first turns.
                items += self._own_jobs(r, arm, self.conc - len(items))
                await self._drain(r, items)
        except SeatUnreachable as exc:
            await self._lost(r, exc)

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
                queue.appendleft(self.checks.new_check(r, arm, model, "opening"))
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
                mine += [self.checks.new_check(r, arm, model, "closing")
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
                model = waves[slots[-1]][0].model
                extra.setdefault(slots[-1], []).extend(self.checks.new_check(r, arm, model, "closing")
                                                       for _ in range(1 + max(0, short)))
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
        for i, c in enumerate(self.checks.canaries):
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

        With no job to send or claim, the checks left (the plan assumed more jobs) go at once, beside the
        last requests in flight here and on the other replicas, not after every replica has finished. None
        when nothing is left for `r`. While any replica still holds cells it waits instead: a cell may yet
        come back from one that is lost, and one that does gets a closing check per arm after its jobs.
        """
        while r.alive:
            self.stop.check()
            if not r.local and (cell := self._claim(r)) is not None:
                r.local.extend(cell.jobs)
                if r.spent:
                    r.checks.extend((r.sent + len(cell.jobs), self.checks.new_check(r, j.arm, j.model, "closing"))
                                    for j in cell.jobs)
            if r.local:
                if r.checks and r.checks[0][0] <= r.sent:
                    return r.checks.popleft()[1]
                r.sent += 1
                return r.local.popleft()
            if r.checks:
                r.spent = True
                return r.checks.popleft()[1]
            if not self._others_busy():
                return None
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
            await self.writer.orphans(r.url, frozenset(c.key for c in back))
        self.free.extendleft(reversed(back))
        self.say(f"note: replica {r.url} is unreachable ({exc}); moving its {len(back)} unfinished cell(s), whole, "
                 f"to the other {len(survivors)} (their stored arms from it go to quarantine)")
        await self._notify()

    # -- one request ------------------------------------------------------------------

    async def _send(self, r: Replica, item: Job | CanaryReference | CanaryCheck | IdentityAsk) -> None:
        if isinstance(item, Job):
            await self._generation(r, item)
        else:
            await self.checks.send(r, item)

    async def _generation(self, r: Replica, job: Job) -> None:
        started = time.monotonic()
        completion = await r.chat(job.model, job.arm, job.prompt, job.request_seed, self.spec.sampling)
        row = {
            "kind": job.kind, "arm": job.arm, "model": job.model, "seed": job.seed,
            "request_seed": job.request_seed, "prompt_id": job.prompt_id,
            "prompt_sha256": sha256_text(job.prompt), "sampling": self.spec.sampling.as_dict(),
            "text": completion.text, "finish_reason": completion.finish_reason, "usage": completion.usage,
            "latency_s": round(completion.latency_s, 4), "seat_url": r.url, "replica": r.url, "time": now(),
            "order": job.order, "session": self.session, "isolated": self.mode.isolate,
        }
        await self.writer.generation(row)
        if (double := r.doubling.pop(job.key, None)) is not None:
            await self.checks.real_reference(r, job, row, *double)
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
