"""The suite runs ONE real vLLM seat (tests/helpers/vllm_seat.py); a module that starts its own fails.

conftest.py's watcher polls for vLLM servers below the test process that are not the session seat
(or the replica test's second server) and fails the module that started one, after it. Here a planted
process that looks like a vLLM server to it (its command line, not a server) shows that it is seen,
attributed to the test that ran and reported for its module; the stub `vllm` and the shared seat are not.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from helpers.vllm_seat import OWN_SEAT_ALLOWED, PLANTED, SHARED_PIDS, Watcher, stub_venv

from voicegate.seat._vllm import free_port

PLANT = "import time; time.sleep(30)"


def _planted(*argv: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", PLANT, *argv], start_new_session=True)
    PLANTED.add(proc.pid)  # the session's own watcher must not blame this module for it
    return proc


def test_a_vllm_started_by_a_module_is_seen_and_fails_that_module() -> None:
    watcher = Watcher()
    watcher.test = "tests/test_planted.py::test_it"
    proc = _planted("-m", "vllm.entrypoints.openai.api_server", "--model", "x")
    try:
        time.sleep(0.2)
        watcher.poll()
    finally:
        proc.kill()
        proc.wait()
    assert proc.pid in watcher.seen
    found = watcher.offenders("tests/test_planted.py")
    assert len(found) == 1 and "vllm.entrypoints.openai.api_server" in found[0]
    assert watcher.offenders("tests/test_other.py") == []


def test_the_stub_and_the_shared_seat_are_not_offenders(tmp_path: Path) -> None:
    watcher = Watcher()
    watcher.test = "tests/test_planted.py::test_it"
    stub = subprocess.Popen([str(stub_venv(tmp_path) / "bin" / "python"), "-m", "vllm.entrypoints.openai.api_server",
                             "--model", str(tmp_path), "--port", str(free_port())], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    shared = _planted("-m", "vllm.entrypoints.openai.api_server", "--model", "shared")
    SHARED_PIDS.add(shared.pid)
    try:
        time.sleep(0.5)
        assert stub.poll() is None   # the stub is up and running
        watcher.poll()
    finally:
        SHARED_PIDS.discard(shared.pid)
        for p in (stub, shared):
            p.kill()
            p.wait()
    assert watcher.seen == {}


def test_only_the_tutorial_starts_its_own_seat() -> None:
    assert set(OWN_SEAT_ALLOWED) == {"tests/real_seat/test_tutorial_vllm.py"}
