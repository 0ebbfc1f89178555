"""Adapters voicegate loads on a seat for one run: written down before the load, unloaded after.

A candidate the seat does not serve is loaded at run time (`/v1/load_lora_adapter`)
and must be unloaded when the run ends — and nothing else may be: an adapter the
fleet serves is not voicegate's to drop. What makes that safe across kills is the
order of events: the model is added to the run's tracking file (`adapters.json`
in the run directory) and fsync'd *before* the load request is sent, and removed
only after the seat confirms the unload. A run killed anywhere in between leaves
the name on disk, so the next run knows the adapter is its own (and unloads it)
instead of taking it for one the fleet serves.

Beside that file, each load is also leased in the seat's lease file on this machine
(`seat._leases`: written before the load, released once the unload is confirmed), the view every
run and `seat models` share: `RuntimeAdapters.sweep`, at the start of every `generate` of any gate,
unloads what a killed run of another gate or workspace left loaded on the seat.

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
from voicegate.seat._identity import SeatState
from voicegate.seat._leases import LEASE_WAIT, RELEASE_WAIT, Lease, LeaseError, RunLease, SeatLeases, read_leases

SWEEP_UNLOAD_S = 10.0   # the longest one unload of a killed run's adapter may take at the start of a run

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
        self._save()

    def add(self, replica: str, models: Iterable[str]) -> None:
        """Name `models` on `replica` too (an old file's names for any replica kept as they are)."""
        self.by_replica[replica] = self.by_replica.get(replica, set()) | set(models)
        self._save()

    def forget(self, replica: str, model: str) -> bool:
        """`model` is gone from `replica` (another run unloaded it): no longer this run's to unload there."""
        changed = False
        for key in (replica, ANY_REPLICA):
            names = self.by_replica.get(key)
            if names and model in names:
                names.discard(model)
                changed = True
                if not names:
                    del self.by_replica[key]
        if changed:
            self._save()
        return changed

    def _save(self) -> None:
        if self.by_replica:
            union = sorted(set().union(*self.by_replica.values()))
            body = {"models": union, "replicas": {k: sorted(v) for k, v in sorted(self.by_replica.items())}}
            write_atomic(self.path, json.dumps(body, indent=1) + "\n")
        else:
            self.path.unlink(missing_ok=True)


class RuntimeAdapters:
    """The adapters one run loaded (or adopted from a killed run), and their unloading."""

    def __init__(self, client: SeatClient, track: AdapterTrack, adapter_paths: dict[str, str], *,
                 say: Say, info: Say, replica: str = ANY_REPLICA, lease: RunLease | None = None) -> None:
        self.client = client
        self.track = track
        self.replica = replica
        self.adapter_paths = adapter_paths
        self.say = say
        self.info = info
        self.ours: set[str] = set()
        self.shared: set[str] = set()        # loaded by another live run, used by this one, leased by both
        self.loaded: list[str] = []
        self.unloaded: list[str] = []
        self.handed: list[str] = []          # left loaded at the end: another live run still held them
        self.reloads = 0
        self._locks: dict[str, asyncio.Lock] = {}
        self._epoch: dict[str, int] = {}
        self._said_restart = False
        # The seat-wide account (`seat._leases`); None: this run keeps only its tracking file.
        self.leases = SeatLeases(client.url, lease, replica, say=say) if lease is not None else None

    def _write(self) -> None:
        self.track.set(self.replica, self.ours | self.shared)

    def join(self, served: dict[str, str | None]) -> set[str]:
        """Of `served` (model -> the root the seat lists it from), those another live voicegate run leased:
        leased by this run too (the last holder unloads them), and named in the tracking file."""
        if self.leases is None:
            return set()
        joined = self.leases.join({m: r for m, r in served.items() if m not in self.ours}) - self.ours
        if joined:
            self.shared |= joined
            self._write()
        return joined

    def adopt(self, models: Iterable[str]) -> None:
        """Models an earlier, interrupted part of this run loaded: ours to unload (and their leases ours)."""
        new = set(models) - self.ours
        self.ours |= new
        if self.leases is not None:
            self.leases.take({m: self.adapter_paths.get(m, "") for m in new})

    async def load(self, model: str, adapter_path: str) -> None:
        self.ours.add(model)
        self._write()  # on disk before the request: a kill during the load still knows it is ours
        if self.leases is not None:
            self.leases.take({model: adapter_path})   # and in the seat's lease file, for every other run
        self.shared.discard(model)   # loaded by this run from now on (it went from the seat before it was used)
        try:
            seconds = await self.client.load_adapter(model, adapter_path)
        except AdapterAlreadyLoaded:
            self.ours.discard(model)  # someone else loaded it a moment ago: not ours to unload
            # Another live run's: held by this run too, as one found loaded. Anyone else's: left alone.
            if model not in self.join({model: adapter_path}):
                self._write()
                self._release([model])
            return
        except SeatError:
            self.ours.discard(model)  # the seat answered no: nothing was loaded
            self._write()
            self._release([model])
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
        for model in sorted(self.ours | self.shared):
            kept = await self._hand_over(model, within_s)
            if kept is not None:
                self.handed.append(model)
                self.info(f"left {model} loaded: {kept}")
                continue
            if model in self.shared and model not in self.ours and not await self._listed(model):
                self.unloaded.append(model)   # gone already (its last other holder unloaded it): nothing to undo
                continue
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
        self.ours -= set(self.unloaded) | set(self.handed)
        self.shared -= set(self.unloaded) | set(self.handed)
        self._write()
        self._release(self.unloaded)

    async def _hand_over(self, model: str, within_s: float | None) -> str | None:
        """Under the lease lock: when another live run holds `model`, this run's lease goes and the adapter stays
        (why, in words); None: this run is the last holder (or the lease file cannot tell), and unloads it."""
        leases = self.leases
        if leases is None:
            return None
        try:
            with leases.file.edit(wait=RELEASE_WAIT if within_s is not None else LEASE_WAIT) as held:
                others = leases.holders(held, model)
                if not others:
                    return None
                held[:] = [x for x in held if not (x.model == model and x.run_dir == leases.run_dir)]
        except LeaseError as exc:
            leases._warn(exc)
            return None
        runs = "; ".join(sorted({f"{x.gate}, pid {x.pid}" + (f" on {x.host}" if x.state() == "elsewhere" else "")
                                 for x in others}))
        return f"held by {len(others)} other running voicegate run(s) ({runs}); the last to end unloads it"

    async def _listed(self, model: str) -> bool:
        try:
            return any(c.id == model for c in await self.client.models())
        except (SeatError, SeatUnreachable):
            return True   # cannot tell: the unload tries, and says what came of it

    def _release(self, models: Iterable[str]) -> None:
        if self.leases is not None:
            self.leases.release(models)

    # -- what killed runs left on the seat ------------------------------------------------------

    async def sweep(self, state: SeatState) -> SeatState:
        """Unload what killed voicegate runs of other gates or workspaces left loaded on this seat.

        Under the seat's lease lock, each lease is judged against what the seat lists now: a lease
        of a running owner, or of another host, is left as it is; a killed owner's lease whose
        adapter the seat no longer lists (from the leased path) is dropped; one it still lists is
        unloaded — never one without a lease, so never the fleet's — and its run's tracking file
        told (when no run of that gate holds it). A killed run of *this* gate and workspace is
        left to the tracking file's adoption (`adopt`), its name restored there if the file lost
        it. Returns `state` without what was unloaded.
        """
        leases = self.leases
        if leases is None:
            return state
        try:
            if not read_leases(self.client.url):
                return state   # nothing leased on this seat: no lock taken, nothing created
        except LeaseError:
            pass   # unreadable: `edit` moves it aside and says so
        cards = {c.id: c for c in state.cards}
        done: list[Lease] = []
        failed: list[tuple[Lease, str]] = []
        elsewhere: list[Lease] = []
        restore: set[str] = set()
        quick = RetryPolicy(attempts=2, base_s=0.2, budget_s=SWEEP_UNLOAD_S)
        try:
            with leases.file.edit() as held:
                keep: list[Lease] = []
                for x in held:
                    card = cards.get(x.model)
                    listed = card is not None and card.parent is not None and card.root in (None, x.adapter_path)
                    who = x.state()
                    if who == "running" or (who == "elsewhere" and not listed):
                        keep.append(x)
                        continue
                    if who == "elsewhere":
                        keep.append(x)
                        elsewhere.append(x)
                        continue
                    if x.run_dir == leases.run_dir:   # this gate's own killed run: adopted, not unloaded here
                        if listed:
                            keep.append(x)
                            restore.add(x.model)
                        continue
                    if listed and leases.holders(held, x.model):
                        # A live run holds it: a dead or forged lease never makes it go, and is dropped.
                        continue
                    if not listed:
                        # Gone (a seat restart, a confirmed unload): the lease goes; the run's own tracking file
                        # keeps the name, in case a load sent just before the kill lands late. Served under
                        # the name from another root: not that run's adapter any more, its tracking file told.
                        if card is not None:
                            self._forget(x)
                        continue
                    try:
                        async with asyncio.timeout(SWEEP_UNLOAD_S):
                            await self.client.unload_adapter(x.model, retry=quick)
                    except AdapterNotLoaded:
                        pass
                    except TimeoutError:
                        failed.append((x, f"no answer within {SWEEP_UNLOAD_S:g}s"))
                        keep.append(x)
                        continue
                    except (SeatError, SeatUnreachable) as exc:
                        failed.append((x, str(exc)))
                        keep.append(x)
                        continue
                    done.append(x)
                    self._forget(x)
                held[:] = keep
        except LeaseError as exc:
            leases._warn(exc)
            return state
        if restore - tracked(self.track.path, self.replica):
            self.track.add(self.replica, restore)
        if done:
            runs = "; ".join(sorted({f"{x.gate} in {x.workspace}, pid {x.pid}" for x in done}))
            self.say(f"note: unloaded {', '.join(sorted({x.model for x in done}))} from {state.url}: left loaded by "
                     f"a killed voicegate run ({runs})")
        for x, why in failed:
            self.say(f"warning: could not unload {x.model}, left loaded by a killed voicegate run of {x.gate} "
                     f"({why}); the next run on this seat tries again")
        for x in elsewhere:
            self.info(f"note: {x.model} on {state.url} is leased by a voicegate run of {x.gate} on host {x.host} "
                      f"(pid {x.pid}); left loaded: this machine cannot tell whether that run is alive")
        gone = {x.model for x in done}
        return SeatState(state.url, state.version, tuple(c for c in state.cards if c.id not in gone))

    def _forget(self, x: Lease) -> None:
        """Tell the killed run's tracking file its adapter is gone, unless a run of that gate holds the gate
        (it adopts the name and finds it gone: `unload_all` takes "not loaded" as done)."""
        from voicegate._locks import gate_lock

        track = Path(x.track)
        if track.name != "adapters.json" or track.parent != Path(x.run_dir) or not track.is_file():
            return
        try:
            with gate_lock(Path(x.run_dir), x.gate, "generate"):
                AdapterTrack(track).forget(x.replica, x.model)
        except VoicegateError:
            pass   # held by a running command of that gate, or unreadable: its own run sorts it out
