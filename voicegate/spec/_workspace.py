"""The workspace: a git work tree with preregistrations/, gates/ and a data directory."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from voicegate._errors import VoicegateError

WORKSPACE_ENV = "VOICEGATE_WORKSPACE"


def workspace_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The directory relative spec paths resolve against: -C DIR, $VOICEGATE_WORKSPACE, or cwd."""
    chosen = explicit or os.environ.get(WORKSPACE_ENV) or os.getcwd()
    root = Path(chosen).resolve()
    if not root.is_dir():
        raise VoicegateError(f"workspace {root} is not a directory")
    return root


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment every git call runs in: replace refs ignored, so `git replace` cannot fake an ancestry
    (or a registration) in this clone that a fresh clone would not see."""
    return {**os.environ, **(extra or {}), "GIT_NO_REPLACE_OBJECTS": "1"}


def git(root: Path, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    """Run git in the workspace; a failure is a refused action, not a traceback. `env` adds variables."""
    try:
        # A path git prints may hold bytes that are not UTF-8: kept as Python keeps them in a path, never a crash.
        done = subprocess.run(["git", *args], check=False, cwd=root, capture_output=True, text=True, encoding="utf-8",
                              errors="surrogateescape", env=git_env(env))
    except FileNotFoundError:
        raise VoicegateError("git is not installed; a workspace must be a git repository") from None
    if check and done.returncode != 0:
        msg = (done.stderr or done.stdout).strip().splitlines()
        raise VoicegateError(f"git {args[0]} failed: {msg[-1] if msg else 'exit ' + str(done.returncode)}")
    return done.stdout.strip()


def is_git_worktree(root: Path) -> bool:
    try:
        done = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], check=False, cwd=root,
                              capture_output=True, text=True, encoding="utf-8", errors="surrogateescape", env=git_env())
    except FileNotFoundError:
        return False
    return done.returncode == 0 and done.stdout.strip() == "true"


def is_shallow(root: Path) -> bool:
    """A shallow clone (CI's depth-1 default): history an order or a citation is asked of may be cut off."""
    return is_git_worktree(root) and git(root, "rev-parse", "--is-shallow-repository", check=False) == "true"


def last_commit_touching(root: Path, path: Path) -> str | None:
    if not is_git_worktree(root):
        return None
    out = git(root, "log", "-n", "1", "--format=%H", "--", str(path), check=False)
    return out or None


def shown_path(root: Path, path: Path) -> str:
    """Workspace-relative where possible, so records and messages read the same on every clone."""
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return str(path)


def as_named(root: Path, path: Path) -> str:
    """Like `shown_path`, but a path the spec gave relative to the workspace and outside it
    (`../shared/...`) reads as the spec gave it, normalised, not as this machine's absolute path.

    For messages only: registration records keep `shown_path`'s keys.
    """
    text, anchor = str(path), str(root).rstrip(os.sep) + os.sep
    inside = shown_path(root, path)
    if inside != text or not text.startswith(anchor):
        return inside
    return Path(os.path.relpath(os.path.normpath(text), os.path.normpath(str(root)))).as_posix()
