"""`voicegate seat up` as a second terminal runs it, for the tests that start the real seat that way.

The tutorial test and the seat-up test start the command in the background (its own session),
wait for its ready line, send the reader's Ctrl-C or a service manager's SIGTERM, and whatever
happens kill what is left of it and of the vLLM it started, by process group and by id.
"""

from __future__ import annotations

import os
import queue
import shlex
import signal
import subprocess
import threading
import time
from pathlib import Path

from helpers.shared import CORPUS, VOICES
from helpers.vllm_seat import trained_voices_skip_reason

REPO = Path(__file__).resolve().parents[2]
SEAT_TIMEOUT = 500.0
READY = "stops it."


def skip_reason() -> str | None:
    return trained_voices_skip_reason(VOICES, CORPUS)


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:   # a zombie (exited, not yet reaped) is not running
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class Seat:
    """The tutorial's `voicegate seat up` block, run in the background as the second terminal."""

    def __init__(self, cmd: str, cwd: Path, env: dict[str, str], port: int) -> None:
        # No --port: `seat up` serves on the port of $VOICEGATE_SEAT_URL (seat_env's), as a reader's does.
        line = next(ln for ln in cmd.splitlines() if ln.strip().startswith("voicegate seat up"))
        self.port = port
        self.proc = subprocess.Popen(["bash", "-c", f"cd {shlex.quote(str(cwd))} && exec {line}"],
                                     env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self.lines: list[str] = []
        self._q: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.vllm: list[int] = []

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._q.put(line)
        self._q.put(None)

    def _drain(self, until: str | None, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._q.get(timeout=1.0)
            except queue.Empty:
                continue
            if line is None:
                return False
            self.lines.append(line)
            if until is not None and until in line:
                return True
        return False

    def wait_ready(self) -> str:
        ready = self._drain(READY, SEAT_TIMEOUT)
        self.vllm = _children(self.proc.pid)
        out = "".join(self.lines)
        assert ready, f"the seat did not come up within {SEAT_TIMEOUT:.0f}s (exit {self.proc.poll()}):\n{out}"
        return out

    def interrupt(self) -> tuple[int | None, str]:
        """The reader's Ctrl-C: SIGINT to `voicegate seat up` only (vLLM runs in its own session)."""
        return self.stop(signal.SIGINT)

    def stop(self, sig: int) -> tuple[int | None, str]:
        """`sig` to `voicegate seat up`; its exit code (None: still running after 90 s) and what it printed."""
        before = len(self.lines)
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            code = None
        self._drain(None, 5.0)
        return code, "".join(self.lines[before:])

    def kill(self) -> None:
        """Teardown: whatever is left of the seat and its vLLM, by process group."""
        self.vllm += [p for p in _children(self.proc.pid) if p not in self.vllm]
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
        kill_group(self.proc.pid)
        for pid in self.vllm:
            if alive(pid) and b"vllm" in _cmdline(pid):   # only the vLLM this seat started, by its id
                kill_group(pid)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def seat_env(bin_dir: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("VOICEGATE_") and k not in ("VOICEGATE_VLLM_VENV",))
           and k not in ("VOICES_API_KEY", "PYTHONPATH")}
    env.update({
        "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        "PYTHONPATH": str(REPO),
        "PYTHONUNBUFFERED": "1",   # stdout and stderr interleave as in a terminal
        "COLUMNS": "130", "NO_COLOR": "1", "TERM": "dumb",
        "VOICEGATE_SEAT_URL": f"http://127.0.0.1:{port}/v1",
        "XDG_CACHE_HOME": str(bin_dir.parent / "cache"),   # `seat up` keeps vLLM's log there, not in ~/.cache
        "GIT_AUTHOR_NAME": "You", "GIT_AUTHOR_EMAIL": "you@example.org",
        "GIT_COMMITTER_NAME": "You", "GIT_COMMITTER_EMAIL": "you@example.org",
    })
    return env
