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


ANY_REPLICA = "*"   # a tracking file written before replicas: its names are this run's on whichever replica


def _read_track(path: Path) -> dict[str, set[str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise VoicegateError(f"{path}: unreadable list of runtime-loaded adapters ({exc})") from None
    bad = VoicegateError(f"{path}: not a list of runtime-loaded adapters; inspect it and remove it by hand")
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        raise bad
    replicas = data.get("replicas")
    if replicas is None:
        return {ANY_REPLICA: set(models)} if models else {}
    if not isinstance(replicas, dict) or not all(
            isinstance(v, list) and all(isinstance(m, str) for m in v) for v in replicas.values()):
        raise bad
    return {str(k): set(v) for k, v in replicas.items() if v}


def tracked(path: Path, replica: str | None = None) -> set[str]:
    """The adapters a run of this gate loaded (on `replica`, or anywhere) and has not unloaded yet."""
    track = _read_track(path)
    if replica is None:
        return set().union(*track.values()) if track else set()
    return track.get(replica, set()) | track.get(ANY_REPLICA, set())


class AdapterTrack:
    """The run's tracking file, shared by the replicas: which adapters voicegate loaded where.

    ``{"models": [every name], "replicas": {url: [names]}}``; one writer (the run's event
    loop), rewritten atomically on every change.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.by_replica = _read_track(path)

    def set(self, replica: str, models: set[str]) -> None:
        self.by_replica.pop(ANY_REPLICA, None)  # an old file's names are adopted by each replica's own entry
        if models:
            self.by_replica[replica] = set(models)
        else:
            self.by_replica.pop(replica, None)
        if self.by_replica:
            union = sorted(set().union(*self.by_replica.values()))
            body = {"models": union, "replicas": {k: sorted(v) for k, v in sorted(self.by_replica.items())}}
            write_atomic(self.path, json.dumps(body, indent=1) + "\n")
        else:
            self.path.unlink(missing_ok=True)


class RuntimeAdapters:
    """The adapters one run loaded (or adopted from a killed run), and their unloading."""

    def __init__(self, client: SeatClient, track: AdapterTrack, adapter_paths: dict[str, str], *,
                 say: Say, info: Say, replica: str = ANY_REPLICA) -> None:
        self.client = client
        self.track = track
        self.replica = replica
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
        self.track.set(self.replica, self.ours)

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

    async def unload_all(self, *, complete: bool, within_s: float | None = None) -> None:
        """Unload what this run loaded and nothing else; after a failure, try once and move on.

        `within_s` bounds each unload (after a SIGTERM: the run must end within seconds); one
        that takes longer is left loaded, still named in the tracking file for the next run.
        """
        quick = RetryPolicy(attempts=1 if not complete else 4, base_s=0.2, budget_s=5.0 if not complete else 30.0)
        for model in sorted(self.ours):
            try:
                async with asyncio.timeout(within_s):
                    await self.client.unload_adapter(model, retry=quick)
            except TimeoutError:
                self.say(f"warning: could not unload {model} within {within_s:g}s; it stays named in "
                         f"{self.track.path} for the next run to unload")
                continue
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
