"""Adapters voicegate loads on a seat for one run: written down before the load, unloaded after.

A candidate the seat does not serve is loaded at run time (`/v1/load_lora_adapter`)
and must be unloaded when the run ends — and nothing else may be: an adapter the
fleet serves is not voicegate's to drop. What makes that safe across kills is the
order of events: the model is added to the run's tracking file (`adapters.json`
in the run directory) and fsync'd *before* the load request is sent, and removed
only after the seat confirms the unload. A run killed anywhere in between leaves
the name on disk, so the next run knows the adapter is its own (and unloads it)
instead of taking it for one the fleet serves.

A runtime-loaded adapter answering 404 mid-run means the seat restarted and
dropped it; `reload` loads it again, once per restart however many requests saw
the 404 (an epoch per model tells a fresh 404 from a stale one).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from pathlib import Path

from voicegate._atomic import write_atomic
from voicegate._errors import SeatUnreachable, VoicegateError
from voicegate.seat._client import RetryPolicy, SeatClient
from voicegate.seat._errors import AdapterAlreadyLoaded, AdapterNotLoaded, SeatError

MAX_RELOADS = 5

Say = Callable[[str], None]


def tracked(path: Path) -> set[str]:
    """The adapters a run of this gate loaded and has not unloaded yet (empty when none)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return set()
    except (OSError, ValueError) as exc:
        raise VoicegateError(f"{path}: unreadable list of runtime-loaded adapters ({exc})") from None
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        raise VoicegateError(f"{path}: not a list of runtime-loaded adapters; inspect it and remove it by hand")
    return set(models)


class RuntimeAdapters:
    """The adapters one run loaded (or adopted from a killed run), and their unloading."""

    def __init__(self, client: SeatClient, track: Path, adapter_paths: dict[str, str], *,
                 say: Say, info: Say) -> None:
        self.client = client
        self.track = track
        self.adapter_paths = adapter_paths
        self.say = say
        self.info = info
        self.ours: set[str] = set()
        self.loaded: list[str] = []
        self.unloaded: list[str] = []
        self.reloads = 0
        self._locks: dict[str, asyncio.Lock] = {}
        self._epoch: dict[str, int] = {}
        self._said_restart = False

    def _write(self) -> None:
        if self.ours:
            write_atomic(self.track, json.dumps({"models": sorted(self.ours)}, indent=1) + "\n")
        else:
            self.track.unlink(missing_ok=True)

    def adopt(self, models: Iterable[str]) -> None:
        """Models an earlier, interrupted part of this run loaded: ours to unload."""
        self.ours |= set(models)

    async def load(self, model: str, adapter_path: str) -> None:
        self.ours.add(model)
        self._write()  # on disk before the request: a kill during the load still knows it is ours
        try:
            seconds = await self.client.load_adapter(model, adapter_path)
        except AdapterAlreadyLoaded:
            self.ours.discard(model)  # someone else loaded it a moment ago: not ours to unload
            self._write()
            return
        except SeatError:
            self.ours.discard(model)  # the seat answered no: nothing was loaded
            self._write()
            raise
        # A timeout or a kill keeps the name: the load may have landed, and the unload sorts it out.
        self.loaded.append(model)
        self.info(f"loaded {model} from {adapter_path} in {seconds:.2f}s")

    def epoch(self, model: str) -> int:
        return self._epoch.get(model, 0)

    async def reload(self, model: str, arm: str, epoch: int) -> None:
        """`model` answered 404: the seat restarted. Load it again, once per restart."""
        async with self._locks.setdefault(model, asyncio.Lock()):
            if self._epoch.get(model, 0) != epoch:
                return  # another request already reloaded it since this one was sent
            if self.reloads >= MAX_RELOADS * max(1, len(self.ours)):
                raise SeatError(f"{model!r} keeps disappearing from the seat ({self.reloads} reloads); "
                                "is something unloading it or restarting the seat?")
            if not self._said_restart:
                self.say(f"note: {model} answered 404 — the seat restarted and dropped its runtime-loaded "
                         "adapters; reloading and continuing")
                self._said_restart = True
            try:
                await self.client.load_adapter(model, self.adapter_paths[model])
            except AdapterAlreadyLoaded:
                pass
            self.reloads += 1
            self._epoch[model] = epoch + 1
            self.info(f"reloaded {model} (arm {arm})")

    async def unload_all(self, *, complete: bool) -> None:
        """Unload what this run loaded and nothing else; after a failure, try once and move on."""
        quick = RetryPolicy(attempts=1 if not complete else 4, base_s=0.2, budget_s=5.0 if not complete else 30.0)
        for model in sorted(self.ours):
            try:
                await self.client.unload_adapter(model, retry=quick)
            except AdapterNotLoaded:
                pass  # already gone (the seat restarted, or the load never landed): nothing left to undo
            except (SeatError, SeatUnreachable) as exc:
                self.say(f"warning: could not unload {model}: {exc}")
                continue
            else:
                self.info(f"unloaded {model}")
            self.unloaded.append(model)
        self.ours -= set(self.unloaded)
        self._write()
