"""Whole-file writes that a crash cannot tear: temp file beside the target, fsync, rename.

Every file voicegate replaces whole (artifacts, manifests, scores, reports) goes
through `write_atomic`, so a reader sees the old bytes or the new, never half.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from voicegate._errors import VoicegateError


def _mode_for(path: Path) -> int:
    """The existing file's mode, else what a plain create would give under the umask."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def fixed_tmp_path(path: Path) -> Path:
    """The one temp name a locked writer uses beside `path` (what a killed writer leaves behind)."""
    path = Path(os.path.realpath(path))
    return path.with_name(f".{path.name}.voicegate-tmp")


def sweep_fixed_tmp(paths: list[Path]) -> None:
    """Remove temps a killed writer left beside `paths` (the caller holds their locks: no writer is live)."""
    for path in paths:
        try:
            fixed_tmp_path(path).unlink()
        except FileNotFoundError:
            pass
        except OSError:
            pass  # a read-only directory: nothing we could have written there either


def write_atomic(path: Path, data: str | bytes, *, fixed_tmp: bool = False,
                 replace: Callable[[str, str], None] | None = None) -> None:
    """Replace `path` with `data`, all or nothing, keeping its mode; a symlink's target is updated.

    `fixed_tmp` (for callers that hold the file's lock) reuses one temp name, so a
    temp left by a killed writer is overwritten by the next instead of piling up.
    `replace` is the rename step, a seam for crash tests.
    """
    path = Path(os.path.realpath(path))
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = _mode_for(path)
        if fixed_tmp:
            tmp = str(fixed_tmp_path(path))
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        else:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise VoicegateError(f"{path}: cannot write ({exc.strerror}); the file is unchanged") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        # os.replace looked up at call time: the crash tests kill the process at this step.
        (replace or os.replace)(tmp, str(path))
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise VoicegateError(f"{path}: cannot write ({exc.strerror or exc}); the file is unchanged") from None
        raise
    _fsync_dir(path.parent)
