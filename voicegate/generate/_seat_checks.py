"""The seat's integrity checks as a session sends them: references, canary checks, re-asks, identity.

Before any check, every arm answers the integrity canaries alone on the lead replica (the first
twice, the others once: its references and the session's calibration, `scoring._similarity`),
the canary cells' own real rows being answers; every other replica answers each arm the first
canary once, which must reproduce the lead's, or the run is refused before any check
(`calibrate`), and its checks are judged against the lead's references and threshold. A
session on an unchanged seat borrows an earlier session's references instead (`borrow`). Each
arm's earlier answers of the same weights are asked again (`identity`) and judged once the
session is calibrated. Where the checks go among the requests
is the scheduler's (`generate._runner`); which canaries and how many checks, `generate._canaries`.
"""

from __future__ import annotations

import dataclasses
import random
from collections import deque
from typing import Any

from voicegate._errors import VoicegateError
from voicegate._hashing import sha256_text
from voicegate.generate._canaries import (
    Canary,
    CanaryCheck,
    CanaryReference,
    checks_per_arm,
    own_asks,
    plan_checks,
    positions,
    random_checks_isolated,
    reference_asks,
    shorter_max_tokens,
)
from voicegate.generate._cells import CellKey, cell_key
from voicegate.generate._identity import ArmIdentity, IdentityAsk, Reuse, record_references
from voicegate.generate._progress import Say
from voicegate.generate._replica import Mode, Replica, wave_jobs
from voicegate.generate._result import GenerateResult
from voicegate.generate._runlog import now
from voicegate.generate._schedule import Job
from voicegate.generate._writer import Writer
from voicegate.scoring import (
    Calibration,
    attribute,
    calibrate,
    canary_cell,
    complete,
    identity_outcome,
    is_prefix,
    replica_differs,
)
from voicegate.spec import GateSpec


class SeatChecks:
    """One session's checks of the seat: planned per replica, sent, judged, tallied, handed to the writer."""

    def __init__(self, spec: GateSpec, mode: Mode, result: GenerateResult, writer: Writer, say: Say, session: int,
                 canaries: list[Canary], nonce: str, identities: dict[str, ArmIdentity],
                 identity_asks: dict[str, IdentityAsk], run_id: str, reuse: Reuse | None, version: str | None,
                 decided_by_files: set[str]) -> None:
        self.spec = spec
        self.mode = mode
        self.result = result
        self.writer = writer
        self.say = say
        self.session = session
        self.arms = [(a.name, a.model) for a in spec.arms]
        self.canaries = canaries
        self.nonce = nonce
        self.identities = identities
        self.identity_asks = identity_asks
        self.run_id = run_id
        self.reuse = reuse
        self.version = version
        self.decided_by_files = decided_by_files   # arms whose own files reproduced the seat's answers
        self.planned: dict[str, int] = {}

    def plan(self, live: list[Replica], share: int) -> None:
        """Each replica's checks, placed among the `share` of the requests it is expected to send."""
        params = self.mode.params
        # What a replica sends besides its checks: each arm's own reference asks (none when borrowed) and
        # its identity re-ask; the checks fill the rest of the budget.
        extra = (0 if self.reuse is not None else len(self.arms) * own_asks(params)) + len(self.identity_asks)
        # The canary cells are the canary checks' own: a re-ask goes to a cell no check asks (their rows, sent
        # with the references, are whole from the start and would otherwise be the first re-asks' likeliest pick).
        canary_cells: set[CellKey] = {("voice", c.registered_seed, c.prompt_id) for c in self.canaries
                                      if c.registered_seed is not None}
        for r in live:
            r.rng = random.Random(f"{self.nonce}:{r.index}")
            r.reasked |= canary_cells
            per_arm = checks_per_arm(params, len(self.arms), share, extra)
            r.budget = per_arm
            if self.mode.isolate:
                random_checks = random_checks_isolated(per_arm, len(self.arms), share, wave_jobs(self.mode.wave_size))
                checks = plan_checks(params, self.arms, random_checks, self.canaries, r.rng, closing=False)
            else:
                checks = plan_checks(params, self.arms, per_arm, self.canaries, r.rng)
            r.seq = len(checks)
            r.checks = deque(positions(checks, share, params, r.rng))
            self.planned[r.url] = len(checks)

    def record(self) -> dict[str, Any]:
        """The session's canaries as run.json records them: the nonce they were drawn from, them, the checks planned."""
        return {"nonce": self.nonce, "canaries": [c.as_dict() for c in self.canaries],
                "planned_per_replica": self.planned}

    def new_check(self, r: Replica, arm: str, model: str, role: str) -> CanaryCheck:
        check = CanaryCheck(r.seq, arm, model, r.rng.choice(self.canaries), role)
        r.seq += 1
        return check

    def reference_items(self, r: Replica, arm: str, model: str, real: dict[str, Job], lead: bool,
                        again: bool = False) -> list[Any]:
        """`arm`'s reference wave on `r`: its own reference asks, the canary cells' real rows, its re-ask.

        The lead asks what its references still lack (`again`: a replica completing its own into a lead's after
        the lead was lost, with one ask of the first canary already); any other replica asks the first canary once.
        """
        ask = None if again else self.identity_asks.get(arm)     # `again`: asked in its first waves
        have = {c.id: len(r.references.get(c.id, {}).get(arm, ())) for c in self.canaries}
        mine = (reference_asks(self.mode.params, arm, model, self.canaries, real) if lead
                else [CanaryReference(arm, model, self.canaries[0], 0)])
        return [*(x for x in mine if x.ask >= have[x.canary.id]), *real.values(), *([ask] if ask is not None else [])]

    def whole(self, r: Replica) -> bool:
        """Whether `r`'s references are a lead's: every canary's asks for every arm."""
        return complete(r.references, [a for a, _ in self.arms], self.mode.params)

    async def send(self, r: Replica, item: CanaryReference | CanaryCheck | IdentityAsk) -> None:
        if isinstance(item, CanaryCheck):
            r.checked[item.arm] = r.checked.get(item.arm, 0) + 1
        if isinstance(item, IdentityAsk):
            await self.identity(r, item)
        else:
            await self._canary(r, item)

    # -- references and calibration ---------------------------------------------------------

    async def borrow(self, replicas: list[Replica], reuse: Reuse) -> None:
        """The earlier session's reference rows, copied into this session (the verdict holds copies to originals)."""
        copies = []
        for r in replicas:
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
            await self.writer.canary(row)

    def calibrate(self, replicas: list[Replica]) -> None:
        """The lead's threshold from its references, every replica's; a replica whose references differ is refused.

        The refusal comes before any warning: a run that is refused says so in its one line.
        """
        params = self.mode.params
        live = [r for r in replicas if r.alive]
        names = [a for a, _ in self.arms]
        # The lead: the first replica whose references are whole (`score` picks it by the same rule); it may have
        # been lost since, its references are on record all the same.
        first = next((r for r in replicas if self.whole(r)), live[0] if live else None)
        if first is not None:
            first.calibration = calibrate(first.references, names, params, dict(self.arms))
            cal = first.calibration or Calibration(None, None, None)
            for r in live:
                if r is first:
                    continue
                r.calibration, r.lead = first.calibration, first.references
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
            where = f" (replica {r.url})" if len(replicas) > 1 else ""
            for ask, text in r.identity:
                self._judge_identity(r, ask, text, cal, where, problems)
            for problem in problems:
                r.tally.problems.append(problem)
                self.result.canaries.problems.append(problem)
                self.say(f"warning: seat integrity cannot hold for this session{where}: {problem}")
        # A session whose identity is not decided records nothing: its answers would stand for weights unproven.
        if (live and first is not None and not live[0].tally.problems and not live[0].tally.undecided
                and self.identities and self.reuse is None):
            sampling = self.spec.sampling.as_dict()
            refs = first.references
            record_references(self.spec.run.identity, self.identities, self.spec.gate, self.session, self.run_id,
                              [(arm, c.prompt, c.seed, sampling, refs[c.id][arm][0])
                               for c in self.canaries for arm in refs.get(c.id, {})], now(), self.version)
        if len(live) < 2:
            self.result.canaries.calibration = live[0].calibration if live else None

    # -- one check --------------------------------------------------------------------------

    async def _canary(self, r: Replica, item: CanaryReference | CanaryCheck) -> None:
        """A canary is the gate's own prompt under the gate's own sampling, with the canary's fixed seed.

        A check is sent as one of two kinds, so that a seat answering right only what it was
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
            shorter = r.rng.randint(*shorter_max_tokens(sampling.max_tokens))
            sampling = dataclasses.replace(sampling, max_tokens=shorter)
        completion = await r.chat(item.model, item.arm, c.prompt, c.seed, sampling)
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
            refs = r.references if r.lead is None else r.lead
            found = attribute(completion.text, item.arm, refs.get(c.id, {}), cal, params, prefix=prefix)
            cell = canary_cell(c.registered_seed, c.prompt_id)
            row.update(seq=item.seq, role=item.role, check="canary", cell=list(cell), status=found.status,
                       answered_as=found.answered_as, similarities=found.similarities, threshold=cal.threshold)
            self.result.canaries.add(item.arm, found, cell)
            r.tally.add(item.arm, found, cell)
        await self.writer.canary(row)

    async def real_reference(self, r: Replica, job: Job, row: dict[str, Any], c: Canary, ask: int) -> None:
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
        await self.writer.canary(copy)

    async def identity(self, r: Replica, ask: IdentityAsk) -> None:
        """An earlier session's reference of the same weights, asked again alone (judged once calibrated)."""
        completion = await r.chat(ask.model, ask.arm, ask.prompt, ask.seed, ask.sampling)
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
        await self.writer.canary(row)

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
        completion = await r.chat(job.model, job.arm, job.prompt, job.request_seed, self.spec.sampling)
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
        await self.writer.canary(row)
