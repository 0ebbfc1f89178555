"""One in-process runner for the real CLI, shared by the tests.

``run_cli("score", "lv-bronte", cwd=root)`` runs ``voicegate.cli.main`` in this process (so a
monkeypatched seam applies and no interpreter starts), with stdout and stderr captured and the
exit code taken from its ``SystemExit``. Tests that need a real process (a kill, a crash, a
signal, an import guard) keep their subprocess runners.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple


class Result(NamedTuple):
    code: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _environment(changes: Mapping[str, str | None]) -> Iterator[None]:
    """os.environ with changes applied (None unsets a variable), restored afterwards."""
    saved = {k: os.environ.get(k) for k in changes}
    try:
        for k, v in changes.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, old in saved.items():
            if old is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = old


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else 1  # sys.exit("message") exits 1


def run_cli(*args: object, cwd: str | os.PathLike[str] | None = None,
            env: Mapping[str, str | None] | None = None) -> Result:
    """`voicegate ARGS...` in this process: (exit code, stdout, stderr). Paths and numbers become strings."""
    from voicegate.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(contextlib.chdir(Path(cwd)))
        stack.enter_context(_environment(env or {}))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        try:
            main([os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args])
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc)
    return Result(code, out.getvalue(), err.getvalue())
