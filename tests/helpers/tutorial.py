"""A tutorial page, executed block by block, prints what it says (docs/tutorial.md on a real vLLM seat,
docs/tutorial-standin.md on the stand-in seat).

The tutorial is a sequence of ```bash blocks, each followed by a ```text block holding what it
prints (stdout and stderr together, as a terminal shows them); a bash block with no text block
must print nothing. This test parses them and runs every block, in order, as bash in a fresh
folder that holds a `shared` symlink to the real ../shared (the layout the tutorial asks for),
with `voicegate` on PATH running this tree's code. A `cd` in one block carries over to the next.

The `voicegate seat up ...` block is what the reader runs in a second terminal: it is started in
the background (so a real seat is started through `seat._vllm.start_vllm`, as the command does; `--standin`
serves from this process), its output up to "stops it." is its printed output, and at the end it gets SIGINT
(the reader's Ctrl-C) and must exit 0 with "stopped in N s", any vLLM process of its gone. Whatever happens, the seat
and vLLM are stopped in the `finally`: SIGINT, then SIGKILL of their process groups by id.

What is normalised (on both sides, before comparing), and why it must vary:

- the folder the tutorial runs in: shown as /home/you/work (a temp folder here);
- the seat's port: shown as 8027; here it is a free port (8027 may be taken on a shared
  machine). The tutorial says it once, in `export VOICEGATE_SEAT_URL=http://127.0.0.1:8027/v1`
  lines: there (and only there) the port becomes P, and what a block exports carries over to the
  blocks after it, as in the reader's shell; `seat up` serves on that variable's port, and every
  command reaches the seat there, whatever the spec's seat.url says;
- where `seat up` keeps vLLM's log: shown as /home/you/.cache/voicegate/seat-8027.log
  (`$XDG_CACHE_HOME` is a folder of the test's own here);
- timings: `N s`, `Ns`, `N min`, `N tok/s`, progress clocks (h:mm:ss), UTC timestamps (they are
  written into the records too);
- git commit hashes (40 hex digits): a commit hashes its time;
- the generations' sha256 in the score's signature (`gens:...`): each stored row carries its
  latency, time and the seat's URL.

Nothing else: spec sha256s, the numbers, verdicts and tables are compared exactly (COLUMNS=130
for stable tables; trailing spaces at line ends are ignored). vLLM answers the same seed with the
same text one request at a time and in waves of one arm (measured), so the scores repeat (the stand-in's
text is a function of model, seed and prompt).

`VOICEGATE_UPDATE_TUTORIAL=1` re-records every printed output into the page (then read
the diff and check the prose still says what the outputs show).

Every subprocess has a timeout (STEP_TIMEOUT; the seat SEAT_TIMEOUT to come up) and is killed by
process group on expiry, so a stuck step fails the test instead of hanging it.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from helpers.seat_up import Seat, alive, kill_group, seat_env
from helpers.shared import SHARED
from voicegate.seat._vllm import free_port

UPDATE = os.environ.get("VOICEGATE_UPDATE_TUTORIAL") == "1"

SHOWN_BASE = "/home/you/work"
SHOWN_PORT = 8027
SHOWN_CACHE = "/home/you/.cache"
STEP_TIMEOUT = 600.0

BLOCK = re.compile(r"```bash\n(?P<cmd>.*?)```\n(?:\n```text\n(?P<out>.*?)```\n)?", re.DOTALL)


@dataclass
class Step:
    cmd: str
    expected: str | None        # None: no ```text block follows
    out_span: tuple[int, int] | None
    end: int                    # where the bash block ends (to insert an output block)

    @property
    def is_seat(self) -> bool:
        lines = [ln for ln in self.cmd.splitlines() if ln.strip() and not ln.lstrip().startswith(("#", "export "))]
        return len(lines) == 1 and lines[0].startswith("voicegate seat up")


EXPORT = re.compile(r"^export (VOICEGATE_SEAT_URL)=(\S+)", re.MULTILINE)


def on_port(cmd: str, port: int) -> str:
    """`cmd` with the seat's port of its `export VOICEGATE_SEAT_URL=...` lines made this run's (nothing else)."""
    return EXPORT.sub(lambda m: m[0].replace(f"127.0.0.1:{SHOWN_PORT}", f"127.0.0.1:{port}"), cmd)


def exported(cmd: str) -> dict[str, str]:
    """What a block exports, for the blocks after it (each runs in a bash of its own)."""
    return {m[1]: m[2] for m in EXPORT.finditer(cmd)}


def parse(text: str) -> list[Step]:
    return [Step(m["cmd"], m["out"], m.span("out") if m["out"] is not None else None, m.end("cmd") + 4)
            for m in BLOCK.finditer(text)]


_TIMES = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"), "<utc>"),
    (re.compile(r"\b[0-9a-f]{40}\b"), "<commit>"),
    (re.compile(r"\bgens:[0-9a-f]{12}\b"), "gens:<sha256>"),
    (re.compile(r"\b\d+(?:,\d{3})*(?:\.\d+)? ?tok/s"), "<n> tok/s"),   # 6,021 tok/s on the stand-in
    (re.compile(r"\b\d+(?:\.\d+)? ?s\b"), "<t> s"),
    (re.compile(r"\b\d+(?:\.\d+)? min\b"), "<t> min"),   # verify's "N commit(s) / 1.6 min after the numbers"
    (re.compile(r"\b\d+:\d\d:\d\d\b"), "<h:mm:ss>"),
]


def shown(actual: str, base: Path, port: int, cache: Path) -> str:
    """Output as the tutorial shows it: the folder, the port and the log's folder as a reader's would be."""
    text = actual.replace(str(base), SHOWN_BASE).replace(f"127.0.0.1:{port}", f"127.0.0.1:{SHOWN_PORT}")
    text = text.replace(f"port {port}", f"port {SHOWN_PORT}").replace(str(cache), SHOWN_CACHE)
    text = text.replace(f"seat-{port}.log", f"seat-{SHOWN_PORT}.log")
    lines = [ln.rstrip() for ln in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + ("\n" if lines else "")


def normalised(text: str) -> str:
    for pattern, repl in _TIMES:
        text = pattern.sub(repl, text)
    # A progress bar's columns are as wide as its widest rate: the padding moves with the speed.
    lines = [re.sub(r" {2,}", " ", ln) if "━" in ln else ln for ln in text.splitlines()]
    return "\n".join(ln.rstrip() for ln in lines).strip("\n")


def run_step(script: str, cwd: Path, env: dict[str, str], cwd_file: Path) -> tuple[int, str]:
    full = f"set -e\ncd {shlex.quote(str(cwd))}\n{script}\npwd > {shlex.quote(str(cwd_file))}\n"
    proc = subprocess.Popen(["bash", "-c", full], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=STEP_TIMEOUT)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        out, _ = proc.communicate(timeout=30)
        raise AssertionError(f"step timed out after {STEP_TIMEOUT:.0f}s:\n{script}\n--- output so far ---\n{out}")
    finally:
        kill_group(proc.pid)   # nothing a step started outlives it
    return proc.returncode, out


def check_tutorial(tutorial: Path, tmp_path: Path) -> None:
    """Run every block of `tutorial` in order, as the module docstring says, and compare what each printed."""
    text = tutorial.read_text(encoding="utf-8")
    steps = parse(text)
    assert sum(s.is_seat for s in steps) == 1, "the tutorial starts exactly one seat (`voicegate seat up`)"
    assert EXPORT.search(steps[0].cmd), "the first step says where the seat is (VOICEGATE_SEAT_URL)"
    assert any("voicegate amend" in s.cmd for s in steps) and any("git commit" in s.cmd for s in steps)

    base = tmp_path / "work"
    base.mkdir()
    (base / "shared").symlink_to(SHARED.resolve())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "voicegate"
    shim.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m voicegate \"$@\"\n", encoding="utf-8")
    shim.chmod(0o755)
    port = free_port()
    env = seat_env(bin_dir, port)
    env.pop("VOICEGATE_SEAT_URL")   # the tutorial's own `export` says it
    cache = Path(env["XDG_CACHE_HOME"])
    cwd, cwd_file = base, tmp_path / "cwd"

    actual: list[str] = []
    timings: list[tuple[str, float]] = []
    seat: Seat | None = None
    started = time.monotonic()
    try:
        for step in steps:
            t0 = time.monotonic()
            cmd = on_port(step.cmd, port)
            env.update(exported(cmd))
            if step.is_seat:
                seat = Seat(cmd, cwd, env, port)
                out = seat.wait_ready()
            else:
                code, out = run_step(cmd, cwd, env, cwd_file)
                assert code == 0, f"step failed (exit {code}):\n{step.cmd}\n--- output ---\n{out}"
                cwd = Path(cwd_file.read_text().strip())
            actual.append(shown(out, base, port, cache))
            timings.append((step.cmd.strip().splitlines()[-1][:60], round(time.monotonic() - t0, 1)))
        assert seat is not None
        code, tail = seat.interrupt()
        assert code == 0, f"`voicegate seat up` did not exit 0 on Ctrl-C (exit {code}):\n{tail}"
        assert re.fullmatch(r"stopped in \d+\.\d s\n", tail), tail
        assert not [p for p in seat.vllm if alive(p)], "vLLM outlived `voicegate seat up`"
    finally:
        if seat is not None:
            seat.kill()
        sys.stderr.write(f"\ntutorial steps (s): {timings}; total {time.monotonic() - started:.0f} s\n")

    if UPDATE:
        _rewrite(tutorial, text, steps, actual)
        return
    problems = []
    for step, got in zip(steps, actual, strict=True):
        want = step.expected if step.expected is not None else ""
        if normalised(want) != normalised(got):
            problems.append(f"--- `{step.cmd.strip()[:80]}` printed:\n{got}--- the tutorial shows:\n{want}")
    assert not problems, ("the tutorial's printed outputs differ (VOICEGATE_UPDATE_TUTORIAL=1 re-records them):\n"
                          + "\n".join(problems))


def _rewrite(tutorial: Path, text: str, steps: list[Step], actual: list[str]) -> None:
    out, pos = [], 0
    for step, got in zip(steps, actual, strict=True):
        if step.out_span is not None:
            start, end = step.out_span
            out += [text[pos:start], got]
            pos = end
        elif got:
            out += [text[pos:step.end], f"\n```text\n{got}```\n"]
            pos = step.end
    out.append(text[pos:])
    tutorial.write_text("".join(out), encoding="utf-8")
