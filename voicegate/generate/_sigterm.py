"""SIGTERM during `generate` (a `docker stop`, a CI timeout): exit 143 within seconds, adapters unloaded.

Three layers, so no signal is lost wherever it lands (two of two
mid-run signals once hung at 369/375 rows, adapters left on the seat):

1. **Outside the event loop** (reading the spec and rows, the lock, the summary) a
   plain handler raises `Terminated`: nothing is loaded yet, or it is unloaded already.
2. **Inside the run** the loop's handler marks the run stopped and cancels its main
   task; its `finally` unloads what the run loaded (each unload bounded by `UNLOAD_S`)
   and saves the manifest — a signal that lands once that cleanup began only marks the
   run, so the unload is never itself cancelled. The run's own loops also look at the mark (`Stop.check`) and
   wake at least every `POLL_S`, so a cancellation that some await swallowed still ends
   them (the cause of the hang: `asyncio.wait_for` on Python 3.11 returns an answer that
   lands in the same loop turn as the cancel; the seat client no longer uses it).
3. **A last resort**: a run still alive `GRACE_S` after the signal exits 143 at once,
   saying so. Its adapters are still named in `adapters.json`, so the next run of the
   gate unloads them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from voicegate._errors import VoicegateError

TERMINATED = 143  # 128 + SIGTERM, the shell's convention
GRACE_S = 20.0    # a run not ended this long after SIGTERM exits at once
UNLOAD_S = 5.0    # the longest one unload may take once SIGTERM came
POLL_S = 0.5      # a worker waiting for work looks at the stop mark at least this often


class Terminated(VoicegateError):
    """SIGTERM (a `docker stop`, a CI timeout): the run stopped cleanly, adapters unloaded."""

    exit_code = TERMINATED


class Stop:
    """One generate's SIGTERM state: marked by the signal, seen by the run, armed with the last resort."""

    def __init__(self, grace_s: float = GRACE_S) -> None:
        self.signalled = False
        self.cleaning = False  # the run's `finally` (unload, manifest) has begun: a signal no longer cancels it
        self.grace_s = grace_s
        self._timer: threading.Timer | None = None

    # -- outside the loop ---------------------------------------------------------

    @contextmanager
    def guarding(self) -> Iterator[None]:
        """While generate runs in the main thread, SIGTERM outside the loop raises `Terminated`."""
        if threading.current_thread() is not threading.main_thread():
            yield  # a library caller's worker thread: signals are the main thread's business
            return
        previous = signal.getsignal(signal.SIGTERM)
        self.rearm()
        try:
            yield
        finally:
            self.disarm()
            signal.signal(signal.SIGTERM, previous)

    def rearm(self) -> None:
        """(Re)install the outside-the-loop handler: a closed event loop leaves SIGTERM at its default."""
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._outside)

    def _outside(self, signum: int, frame: FrameType | None) -> None:
        self._mark()
        raise Terminated("terminated (SIGTERM) before or after the run's requests; every finished generation "
                         "is kept and nothing voicegate loaded is left loaded")

    # -- inside the loop ----------------------------------------------------------

    def attach(self) -> None:
        """Inside the run's event loop: SIGTERM marks the run stopped and cancels its main task."""
        task = asyncio.current_task()
        if task is None:
            return

        def on_signal() -> None:
            self._mark()
            if not self.cleaning:  # cancelling the unload itself would leave the adapters loaded
                task.cancel()

        try:
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, on_signal)
        except (NotImplementedError, RuntimeError, ValueError):
            pass  # not the main thread (a library caller's worker) or no signals here: the default applies

    def check(self) -> None:
        """Raise CancelledError once SIGTERM came: the run's loops call this before every step."""
        if self.signalled:
            raise asyncio.CancelledError()

    # -- the last resort ----------------------------------------------------------

    def _mark(self) -> None:
        self.signalled = True
        if self._timer is None and threading.current_thread() is threading.main_thread():
            self._timer = threading.Timer(self.grace_s, self._hard_exit)
            self._timer.daemon = True
            self._timer.start()

    def _hard_exit(self) -> None:
        sys.stderr.write(f"voicegate: terminated (SIGTERM); the run did not stop within {self.grace_s:g}s, exiting "
                         "now; finished generations are kept, and adapters it loaded are named in adapters.json "
                         "(the next generate of this gate unloads them)\n")
        sys.stderr.flush()
        os._exit(TERMINATED)

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
