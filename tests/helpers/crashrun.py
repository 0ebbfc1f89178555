"""Run `voicegate ARGS...` and SIGKILL it at one chosen file-replacing step (for the crash tests).

`VOICEGATE_TEST_CRASH=K:before` kills the process just before its K-th
`os.replace` (the temp file is fsync'd, the target untouched); `K:after` just
after it (the target replaced, nothing after it done). Every whole-file write
voicegate makes — the intent, each artifact, each state file — is one
`os.replace`, so K walks the kill through every point between two writes.
`VOICEGATE_TEST_COUNT=FILE` writes how many replaces a whole run made.

`_crashrun.py --serve` is the same, many times: it imports voicegate once, then for each JSON
request on stdin (`{"cwd", "args", "crash", "count", "out"}`) forks a child that runs the command
in `cwd` (stdout and stderr to the file `out`) and is SIGKILLed at its crash point, and answers one
JSON line (`{"returncode"}`: minus the signal's number when killed, as subprocess says). Each
trial is still its own process killed by a real SIGKILL; only the interpreter start is shared.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # tests/: the helpers package

from helpers.bronte import patch_scoring


def run(argv: list[str], crash: str, count_file: str | None) -> int:
    at, _, phase = crash.partition(":")
    real = os.replace
    count = 0

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        nonlocal count
        count += 1
        if crash and count == int(at) and phase == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        real(src, dst)
        if crash and count == int(at) and phase == "after":
            os.kill(os.getpid(), signal.SIGKILL)

    os.replace = replace  # type: ignore[assignment]
    from voicegate.cli import main as cli

    try:
        code = cli(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.replace = real  # type: ignore[assignment]
    if count_file:
        Path(count_file).write_text(str(count))
    return code or 0


def main() -> int:
    patch_scoring()
    return run(sys.argv[1:], os.environ.get("VOICEGATE_TEST_CRASH", ""), os.environ.get("VOICEGATE_TEST_COUNT"))


def serve() -> None:
    patch_scoring()
    import importlib

    for name in ("voicegate.cli", "voicegate.gate", "voicegate.scoring"):   # imported once, before any fork
        importlib.import_module(name)

    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:   # the child: one command, killed at its point or exiting with its code
            code = 1
            try:
                fd = os.open(req["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                os.chdir(req["cwd"])
                code = run(req["args"], req.get("crash") or "", req.get("count"))
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        sys.stdout.write(json.dumps({"returncode": code}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        sys.exit(main())
