"""The one writer of a generate session: every finished row stored, in order, before it is counted.

Whatever sends a request hands its row here (`put`); `run` appends them (fsync'd) off the event
loop, so slow disks never idle the seat. A lost replica's stored arms of its unfinished cells
go to the quarantine file in their turn, after every row that came before.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

from voicegate.generate._cells import CellKey, cell_key, replica_of
from voicegate.generate._progress import ProgressBars
from voicegate.generate._result import GenerateResult
from voicegate.generate._runlog import RunLog
from voicegate.run import append_rows, read_rows
from voicegate.spec import GateSpec


class Writer:
    """Generations, canary rows and orphaned cells, written in the order they came."""

    def __init__(self, spec: GateSpec, result: GenerateResult, progress: ProgressBars, log: RunLog) -> None:
        self.spec = spec
        self.result = result
        self.progress = progress
        self.log = log
        self._finished: asyncio.Queue[tuple[Any, ...] | None] = asyncio.Queue()

    async def generation(self, row: dict[str, Any]) -> None:
        await self._finished.put(("generation", row))

    async def canary(self, row: dict[str, Any]) -> None:
        await self._finished.put(("canary", row))

    async def orphans(self, url: str, keys: frozenset[CellKey]) -> None:
        """`url`'s stored arms of the cells `keys`, to quarantine once every row before them is written."""
        await self._finished.put(("orphan", url, keys))

    async def close(self) -> None:
        """The last item: `run` returns once everything before it is written."""
        await self._finished.put(None)

    async def run(self, on_failure: Callable[[], None]) -> None:
        """Write until `close`. Rows that finished while the previous write was syncing go out together;
        a row counts as generated only once append_rows has returned for it. `on_failure` runs when a
        write fails (nothing more would be kept)."""
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
            on_failure()
            raise

    def _orphan(self, url: str, keys: frozenset[CellKey]) -> None:
        rows = [x for x in read_rows(self.spec.generations_path) if cell_key(x) in keys and replica_of(x) == url]
        moved = self.log.quarantine_orphans(rows, f"replica {url} became unreachable")
        self.result.stored -= moved
        self.result.quarantined += moved
