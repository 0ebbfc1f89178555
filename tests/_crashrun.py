"""Run `voicegate ARGS...` and SIGKILL it at one chosen file-replacing step (for the crash tests).

`VOICEGATE_TEST_CRASH=K:before` kills the process just before its K-th
`os.replace` (the temp file is fsync'd, the target untouched); `K:after` just
after it (the target replaced, nothing after it done). Every whole-file write
voicegate makes — the intent, each artifact, each state file — is one
`os.replace`, so K walks the kill through every point between two writes.
`VOICEGATE_TEST_COUNT=FILE` writes how many replaces a whole run made.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bronte import patch_scoring


def main() -> int:
    patch_scoring()
    crash = os.environ.get("VOICEGATE_TEST_CRASH", "")
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
        code = cli(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    if os.environ.get("VOICEGATE_TEST_COUNT"):
        Path(os.environ["VOICEGATE_TEST_COUNT"]).write_text(str(count))
    return code or 0


if __name__ == "__main__":
    sys.exit(main())
