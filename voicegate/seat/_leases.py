"""The seat-wide account of runtime-loaded adapters on this machine: one lease file per seat.

A run's own tracking file (`<run>/adapters.json`, `seat._adapters`) lets the next run of the
*same* gate in the *same* workspace unload what a killed run left loaded. Nothing else knows
of it: `seat models` cannot tell such a leftover from an adapter the fleet serves, and a run
of another gate never unloads it. The lease file is the seat-wide view, kept beside the
tracking file (which stays the crash-safe account of each gate):

- where: `$VOICEGATE_STATE_DIR`, else `$XDG_STATE_HOME/voicegate`, else
  `~/.local/state/voicegate`; under `seats/`, one JSON file per seat URL (`seat_key`: scheme,
  host, port and path, credentials dropped, every loopback name one host), rewritten atomically
  under a file lock beside it;
- what: per runtime-loaded adapter the model name, the adapter path, the gate, its workspace,
  run directory and tracking file, and the run's host, pid, boot id and process start time
  (`Owner`: a pid alone could be reused), and when;
- when: written before the load request (after the tracking file), removed once the unload is
  confirmed (or the seat says the adapter is already gone); a run that adopts a killed run's
  adapters of its own gate takes their leases over; a run that finds an adapter another live run
  leased, and uses it, leases it too (`SeatLeases.join`). A lease is a hold, counted: a run
  ending unloads an adapter only when no other live run holds it (checked under the lock, with
  each holder's pid on this host), and otherwise only drops its own lease — the last to end
  unloads it.

`owner_state` tells a running owner from a killed one (same host and boot; the pid gone, a
zombie, or now another process started at another time) and from one on another host (a home
directory shared between machines), whose state this machine cannot know. `Sweep` is what the
start of every `generate` does with a seat's leases: it unloads an adapter only when its owner
is dead on this host, the seat still lists it as an adapter and, where the seat gives a root,
from the leased path, and no live run (here or on another host) holds a lease of it — never one
the fleet serves, never one of a live run or of another host: a forged or stale lease naming a live
run's adapter is dropped, and the adapter stays.

Over 400 lines because the lease file's format, its lock, the sweep every run makes and the reading
`seat models` does are one file's discipline.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import socket
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from voicegate._atomic import write_atomic
from voicegate.seat._client import ModelCard, is_loopback_host, redact_url

STATE_ENV = "VOICEGATE_STATE_DIR"
LEASE_WAIT = 30.0   # seconds a writer waits for another voicegate process's hold on the seat's lease file
RELEASE_WAIT = 5.0  # ... when releasing: a run ending (after SIGTERM, within seconds) does not wait long

State = Literal["running", "killed", "elsewhere"]
Say = Callable[[str], None]


class LeaseError(Exception):
    """The lease file could not be read or written: the lease is skipped, the run goes on."""


def state_dir(environ: dict[str, str] | None = None) -> Path:
    """Where voicegate keeps machine-wide state (not created here)."""
    env = os.environ if environ is None else environ
    if env.get(STATE_ENV):
        return Path(env[STATE_ENV])
    xdg = env.get("XDG_STATE_HOME")
    return Path(xdg) / "voicegate" if xdg else Path.home() / ".local" / "state" / "voicegate"


def seat_key(url: str) -> str:
    """One seat, however its URL is spelled: no credentials, host lowercased, every loopback name
    one host, the default port filled in, no trailing slash."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if is_loopback_host(host):
        host = "loopback"
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        port = 0
    return f"{scheme}://{host}:{port}{parts.path.rstrip('/')}"


def lease_path(url: str, environ: dict[str, str] | None = None) -> Path:
    key = seat_key(url)
    parts = urlsplit(key)
    readable = re.sub(r"[^a-z0-9.-]+", "_", f"{parts.hostname or 'seat'}-{parts.port or 0}")
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    return state_dir(environ) / "seats" / f"{readable}-{digest}.json"


# -- the owner: which process, and is it still running ----------------------------------------


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _boot_id() -> str | None:
    return _read("/proc/sys/kernel/random/boot_id")


def _proc_stat(pid: int) -> tuple[str, str] | None:
    """(state, start time in clock ticks since boot) of `pid`, from /proc; None where there is no /proc."""
    raw = _read(f"/proc/{pid}/stat")
    if not raw or ")" not in raw:
        return None
    fields = raw.rsplit(")", 1)[1].split()   # after the command name, which may hold spaces
    return (fields[0], fields[19]) if len(fields) > 19 else None


@dataclass(frozen=True)
class Owner:
    host: str
    pid: int
    boot_id: str | None
    start: str | None      # the process's start time (ticks since boot): a reused pid has another

    @classmethod
    def this_process(cls) -> Owner:
        pid = os.getpid()
        stat = _proc_stat(pid)
        return cls(socket.gethostname(), pid, _boot_id(), stat[1] if stat else None)


def owner_state(host: str, pid: int, boot_id: str | None, start: str | None) -> State:
    """running, killed (gone from this host), or elsewhere (another host: not knowable here).

    Where /proc cannot say (not Linux), a pid that exists counts as running: a reused pid leaves
    the adapter loaded, never unloads a live run's.
    """
    if host != socket.gethostname():
        return "elsewhere"
    boot = _boot_id()
    if boot_id and boot and boot_id != boot:
        return "killed"   # the machine rebooted since: no process of then is alive
    if pid <= 0:
        return "killed"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "killed"
    except PermissionError:
        pass   # another user's process holds the pid: it exists
    except OSError:
        return "running"
    stat = _proc_stat(pid)
    if stat is not None:
        if stat[0] in ("Z", "X"):
            return "killed"   # exited (SIGKILLed) but not yet reaped by its parent
        if start and stat[1] != start:
            return "killed"   # the pid now belongs to a process started later
    return "running"


# -- leases -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lease:
    """One runtime-loaded adapter a voicegate run loaded on the seat and has not unloaded yet."""

    model: str
    adapter_path: str
    gate: str
    workspace: str
    run_dir: str
    track: str          # the run's own tracking file (adapters.json)
    replica: str        # the run's name for this seat in that file
    host: str
    pid: int
    boot_id: str | None
    start: str | None
    since: str

    @classmethod
    def from_dict(cls, d: Any) -> Lease | None:
        if not isinstance(d, dict):
            return None
        names = ("model", "adapter_path", "gate", "workspace", "run_dir", "track", "replica", "host", "since")
        text = [d.get(k) for k in names]
        pid = d.get("pid")
        if not all(isinstance(v, str) for v in text) or not isinstance(pid, int) or isinstance(pid, bool):
            return None
        model, adapter_path, gate, workspace, run_dir, track, replica, host, since = (str(v) for v in text)
        boot_id, start = (d.get(k) if isinstance(d.get(k), str) else None for k in ("boot_id", "start"))
        return cls(model, adapter_path, gate, workspace, run_dir, track, replica, host, pid, boot_id, start, since)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def state(self) -> State:
        return owner_state(self.host, self.pid, self.boot_id, self.start)

    def describe(self, state: State | None = None) -> str:
        """What `seat models` says of the adapter this lease names."""
        state = state or self.state()
        if state == "running":
            return f"loaded by a running voicegate run ({self.gate}, pid {self.pid})"
        if state == "killed":
            return (f"left loaded by a killed voicegate run of {self.gate} (workspace {self.workspace}, pid "
                    f"{self.pid}): the next voicegate run on this seat unloads it")
        return (f"loaded by a voicegate run of {self.gate} on host {self.host} (workspace {self.workspace}, pid "
                f"{self.pid}), which this machine cannot check: no run here unloads it; `voicegate seat drop "
                f"{self.model}` once that run is known to be gone")


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _parse(path: Path) -> list[Lease]:
    """The leases in `path` ([] when there is none). Raises LeaseError when it does not read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise LeaseError(f"{path}: unreadable ({exc})") from None
    items = data.get("leases") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise LeaseError(f"{path}: not a file of voicegate leases")
    return [lease for lease in map(Lease.from_dict, items) if lease is not None]


def read_leases(url: str) -> list[Lease]:
    """The seat's leases, read without the lock (every write is atomic). Raises LeaseError."""
    return _parse(lease_path(url))


def lease_marks(url: str, cards: Iterable[ModelCard]) -> dict[str, tuple[State, Lease]]:
    """For each adapter the seat lists that a voicegate run leased (loaded from the leased path): its
    owner's state and the lease. An adapter with no lease, or listed from another root, is the fleet's."""
    leases = read_leases(url)
    marks: dict[str, tuple[State, Lease]] = {}
    for card in cards:
        if card.parent is None:
            continue
        mine = [x for x in leases if x.model == card.id and card.root in (None, x.adapter_path)]
        if mine:
            states = [(x.state(), x) for x in mine]
            # a live run's lease says more than a dead one's on the same name
            order: dict[State, int] = {"running": 0, "elsewhere": 1, "killed": 2}
            marks[card.id] = min(states, key=lambda s: order[s[0]])
    return marks


class LeaseFile:
    """The seat's lease file, read and rewritten under its lock."""

    def __init__(self, url: str, say: Say | None = None) -> None:
        self.url = url
        self.path = lease_path(url)
        self.say = say

    @contextmanager
    def edit(self, *, wait: float = LEASE_WAIT) -> Iterator[list[Lease]]:
        """Hold the lock; yield the leases as a list to change in place; write them back (the file
        removed when none is left). An unreadable file is moved aside, not trusted and not lost."""
        from filelock import FileLock, Timeout

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LeaseError(f"{self.path.parent}: cannot create it ({exc.strerror or exc})") from None
        lock = FileLock(str(self.path) + ".lock", timeout=wait)
        try:
            lock.acquire()
        except Timeout:
            raise LeaseError(f"{self.path}: another voicegate process has held its lock for {wait:.0f} s") from None
        except OSError as exc:
            raise LeaseError(f"{self.path}.lock: cannot lock ({exc.strerror or exc})") from None
        try:
            aside = None
            try:
                leases = _parse(self.path)
            except LeaseError as why:
                aside = self.path.with_name(self.path.name + ".unreadable")
                try:
                    os.replace(self.path, aside)
                except OSError as exc:
                    raise LeaseError(f"{self.path}: unreadable, and cannot be moved aside ({exc})") from None
                if self.say is not None:
                    self.say(f"warning: {why}; moved to {aside} and started afresh (the leases it held are not "
                             "known: `voicegate seat models` shows their adapters as the fleet's)")
                leases = []
            before = list(leases)
            yield leases
            if leases != before or aside is not None:
                self._write(leases)
        finally:
            lock.release()

    def _write(self, leases: list[Lease]) -> None:
        from voicegate._errors import VoicegateError

        try:
            if leases:
                body = {"seat": redact_url(self.url), "leases": [x.as_dict() for x in leases]}
                write_atomic(self.path, json.dumps(body, indent=1) + "\n")
            else:
                self.path.unlink(missing_ok=True)
        except (OSError, VoicegateError) as exc:
            raise LeaseError(str(exc)) from None


@dataclass(frozen=True)
class RunLease:
    """Who a run is, for its leases: the gate, its workspace, run directory and tracking file."""

    gate: str
    workspace: Path
    run_dir: Path
    track: Path


class SeatLeases:
    """One run's leases on one seat (a replica): taken before each load, released after each unload.

    A lease that cannot be written is warned about once and skipped: the run's tracking file is
    what makes its own adapters safe; the lease only tells other runs and `seat models`.
    """

    def __init__(self, url: str, run: RunLease, replica: str, *, say: Say) -> None:
        self.file = LeaseFile(url, say)
        self.run = run
        self.run_dir = str(Path(run.run_dir).resolve())
        self.replica = replica
        self.say = say
        self.owner = Owner.this_process()
        self._warned = False

    def _warn(self, exc: LeaseError) -> None:
        if not self._warned:
            self.say(f"warning: cannot keep this seat's lease file ({exc}); the run goes on, but `seat models` and "
                     "other gates' runs will not know of the adapters it loads")
            self._warned = True

    def _lease(self, model: str, adapter_path: str) -> Lease:
        o = self.owner
        return Lease(model, adapter_path, self.run.gate, str(Path(self.run.workspace).resolve()), self.run_dir,
                     str(Path(self.run.track).resolve()), self.replica, o.host, o.pid, o.boot_id, o.start, _now())

    def take(self, models: dict[str, str]) -> None:
        """Lease `models` (name -> adapter path) to this run, replacing this run directory's own
        earlier leases of them (a killed run of this gate, adopted)."""
        if not models:
            return
        try:
            with self.file.edit() as leases:
                leases[:] = [x for x in leases if not (x.model in models and x.run_dir == self.run_dir)]
                leases.extend(self._lease(m, p) for m, p in sorted(models.items()))
        except LeaseError as exc:
            self._warn(exc)

    def holders(self, leases: Iterable[Lease], model: str) -> list[Lease]:
        """The leases of `model` held by other runs that may be alive (running here, or on another host)."""
        return [x for x in leases if x.model == model and x.run_dir != self.run_dir and x.state() != "killed"]

    def join(self, models: dict[str, str | None]) -> set[str]:
        """Lease `models` (name -> the root the seat lists them from) that another live voicegate run leased:
        loaded at run time, so the last run holding one unloads it, and none while this run uses it. A model
        without such a lease is the fleet's (or nobody's), and left alone."""
        if not models:
            return set()
        try:
            if not any(x.model in models for x in read_leases(self.file.url)):
                return set()    # nothing of these leased: no lock taken, nothing created
        except LeaseError:
            pass   # unreadable: `edit` moves it aside and says so
        joined: set[str] = set()
        try:
            with self.file.edit() as leases:
                for model, root in sorted(models.items()):
                    live = [x for x in self.holders(leases, model) if root in (None, x.adapter_path)]
                    if live:
                        leases[:] = [x for x in leases if not (x.model == model and x.run_dir == self.run_dir)]
                        leases.append(self._lease(model, live[0].adapter_path))
                        joined.add(model)
        except LeaseError as exc:
            self._warn(exc)
        return joined

    def release(self, models: Iterable[str]) -> None:
        """The seat confirmed these are unloaded (or gone): drop this run directory's leases of them."""
        gone = set(models)
        if not gone:
            return
        try:
            with self.file.edit(wait=RELEASE_WAIT) as leases:
                leases[:] = [x for x in leases if not (x.model in gone and x.run_dir == self.run_dir)]
        except LeaseError as exc:
            self._warn(exc)
