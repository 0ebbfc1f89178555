"""Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`).

No websocket library and no port: Chromium reads commands on fd 3 and writes answers on
fd 4, each a JSON message ended by a NUL byte. Enough of the protocol for the report
tests: open a page at a given viewport width, emulate print media, evaluate an
expression in the page (DevTools evaluation is not subject to the page's CSP, so the
report keeps `default-src 'none'` and still can be measured), take a screenshot, and
collect console messages and exceptions.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any


def _high(fd: int) -> int:
    """The same pipe end on a number >= 10 (close-on-exec), so fds 3 and 4 are free to be set."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new


class Browser:
    def __init__(self, chromium: str, profile: Path, *, timeout: float = 60.0):
        self.timeout = timeout
        to_r, to_w = (_high(fd) for fd in os.pipe())      # we write commands, Chromium reads fd 3
        from_r, from_w = (_high(fd) for fd in os.pipe())  # Chromium writes fd 4, we read

        def child_fds() -> None:
            os.dup2(to_r, 3)     # dup2 leaves the copy inheritable
            os.dup2(from_w, 4)

        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-extensions", "--hide-scrollbars", "--force-device-scale-factor=1",
               f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, close_fds=False,
                                     # Only fd numbering is done before exec; a test starts it before any thread.
                                     preexec_fn=child_fds)  # noqa: PLW1509
        os.close(to_r)
        os.close(from_w)
        self._w, self._r = to_w, from_r
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    # -- the wire ----------------------------------------------------------------------------

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: bool = True) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session is not None:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result") or {})
            self.events.append(reply)

    def wait_event(self, method: str) -> dict[str, Any]:
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        deadline = time.monotonic() + self.timeout
        while True:
            e = self._read_message(deadline)
            if e.get("method") == method:
                return e
            self.events.append(e)

    # -- what the tests use ---------------------------------------------------------------------

    def open(self, url: str, width: int, height: int = 1000, *, media: str = "screen") -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Log.enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        self.send("Emulation.setEmulatedMedia", {"media": media})
        self.send("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def media(self, media: str) -> None:
        self.send("Emulation.setEmulatedMedia", {"media": media})

    def evaluate(self, expression: str) -> Any:
        got = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in got:
            raise RuntimeError(f"page evaluation failed: {got['exceptionDetails']}")
        return got["result"].get("value")

    def screenshot(self, path: Path, *, clip: dict[str, float] | None = None) -> None:
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": True}
        if clip is not None:
            params["clip"] = {**clip, "scale": 1}
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", params)["data"]))

    def console(self) -> list[str]:
        """Console messages and uncaught exceptions seen so far (the report has no script: expect none)."""
        out = []
        for e in self.events:
            if e.get("method") == "Runtime.consoleAPICalled":
                out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in e["params"]["args"]))
            elif e.get("method") == "Log.entryAdded":
                out.append(str(e["params"]["entry"].get("text")))
            elif e.get("method") == "Runtime.exceptionThrown":
                out.append(str(e["params"]["exceptionDetails"].get("text")))
        return out

    def close(self) -> None:
        try:
            self.send("Browser.close", session=False)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)
