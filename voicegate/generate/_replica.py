"""One replica in a generate session: its client, its adapters, the cells it holds and what it has done.

Also what every part of the runner shares: how the session sends (`Mode`), an isolated wave's
real requests (`wave_jobs`), and `together` (tasks whose first failure cancels the rest).
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, cast

from voicegate.generate._canaries import Canary, CanaryCheck
from voicegate.generate._cells import Cell, CellKey
from voicegate.generate._identity import IdentityAsk
from voicegate.generate._schedule import Job
from voicegate.scoring import Calibration, CanaryParams, Tally
from voicegate.seat import Completion, ModelNotFound, RuntimeAdapters, SeatClient, SeatError


@dataclass(frozen=True)
class Mode:
    """How this session sends its requests, and how it checks the seat."""

    isolate: bool
    wave_size: int
    params: CanaryParams


def wave_jobs(wave_size: int) -> int:
    """An isolated wave's real requests: its size less the check that opens it. A wave of 4 x the
    concurrency then fills 4 rounds exactly; with the opening check on top it took a fifth, mostly idle."""
    return max(1, wave_size - 1)


class Replica:
    """One replica in this run: its client, its adapters, the cells it holds and what it has done."""

    def __init__(self, index: int, url: str, client: SeatClient, adapters: RuntimeAdapters, *,
                 alone: bool = True) -> None:
        self.index = index
        self.url = url
        self.client = client
        self.adapters = adapters
        self.alone = alone                    # the session's only replica: its errors name "the seat"
        self.alive = True
        self.status = "ok"
        self.pinned: deque[Cell] = deque()          # partly stored cells that must finish here
        self.local: deque[Job] = deque()            # the claimed cells' jobs, in schedule order
        self.claimed: dict[CellKey, set[tuple[str, str, int, str]]] = {}  # cell -> job keys not yet answered
        self.references: dict[str, dict[str, list[str]]] = {}   # canary -> arm -> its asks alone on this replica
        self.lead: dict[str, dict[str, list[str]]] | None = None   # the lead's references, when another replica leads
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
        self.spent = False                    # arms mixed: its planned checks all sent, with no job left to send
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

    async def chat(self, model: str, arm: str, prompt: str, seed: int, sampling: Any) -> Completion:
        """One chat request; an adapter voicegate loaded that the seat dropped mid-run is loaded again."""
        while True:
            epoch = self.adapters.epoch(model)
            try:
                return await self.client.chat(model, prompt, seed=seed, sampling=sampling)
            except ModelNotFound:
                held = model in self.adapters.shared and model in self.adapters.adapter_paths
                if model not in self.adapters.ours and not held:
                    raise SeatError(f"the seat{'' if self.alone else ' replica ' + self.url} stopped "
                                    f"serving {model!r} (arm {arm}) mid-run; it was served when the run started "
                                    "and voicegate did not load it") from None
                await self.adapters.reload(model, arm, epoch)


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
