"""`voicegate init`: lay out a workspace in a git repository."""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from voicegate._errors import VoicegateError
from voicegate.spec import git, is_git_worktree

EXAMPLE_NAME = "lv-example.yaml.example"
_EXAMPLE_URL = "  url: http://127.0.0.1:8027/v1   # --seat or VOICEGATE_SEAT_URL override it at run time"


def example_spec(environ: Mapping[str, str] | None = None) -> str:
    """The example spec, its seat.url from `$VOICEGATE_SEAT_URL` when set: the port is said in one place (a
    shared machine's seat is rarely on 8027), and the spec written from the example starts out agreeing."""
    from voicegate._seat_url import check_seat_url

    env = os.environ if environ is None else environ
    text = resources.files("voicegate").joinpath("templates/example-spec.yaml").read_text("utf-8")
    url = env.get("VOICEGATE_SEAT_URL")
    if not url:
        return text
    url = check_seat_url(url, "$VOICEGATE_SEAT_URL")
    return text.replace(_EXAMPLE_URL, f"  url: {url}   # $VOICEGATE_SEAT_URL at `voicegate init`; --seat or "
                                      "VOICEGATE_SEAT_URL override it at run time")


def enclosing_repository(root: Path) -> Path | None:
    """The top of another git repository `root` would sit inside (None: it is its own, or in none)."""
    existing = next((p for p in (root, *root.parents) if p.is_dir()), None)
    if existing is None or not is_git_worktree(existing):
        return None
    top = Path(git(existing, "rev-parse", "--show-toplevel", check=False) or existing).resolve()
    return None if top == root else top


def init_workspace(directory: Path, *, data_dir: str = "runs", track_data: bool = False,
                   inside: bool = False) -> list[str]:
    """Lay out a workspace at `directory`. Inside another repository only with `inside`: registration commits
    there, so a newcomer standing in a clone of voicegate itself would commit gates into the tool's history."""
    root = directory.resolve()
    if root.exists() and not root.is_dir():
        raise VoicegateError(f"{root} exists and is not a directory")
    if Path(data_dir).is_absolute() or ".." in Path(data_dir).parts:
        raise VoicegateError(f"--data-dir {data_dir!r} must be a relative path inside the workspace")
    example_text = example_spec()   # a bad $VOICEGATE_SEAT_URL is refused before anything is made
    outer = enclosing_repository(root)
    if outer is not None and not inside:
        raise VoicegateError(f"{root} is inside the git repository {outer}: every registration would be committed "
                             "into that repository's history; choose a directory outside it, or pass --inside to "
                             "keep gates there on purpose")
    root.mkdir(parents=True, exist_ok=True)
    said: list[str] = []
    if outer is not None:
        said.append(f"a workspace inside the git repository {outer} (--inside): registrations commit there")
    elif not is_git_worktree(root):
        git(root, "init", "-q")
        said.append(f"initialised a git repository in {root}")
    for name in ("preregistrations", "gates", data_dir):
        (root / name).mkdir(parents=True, exist_ok=True)
        said.append(f"  {name}/")
    example = root / "preregistrations" / EXAMPLE_NAME
    if not example.exists():
        example.write_text(example_text, encoding="utf-8")
        from_env = "; its seat.url is $VOICEGATE_SEAT_URL" if os.environ.get("VOICEGATE_SEAT_URL") else ""
        said.append(f"  preregistrations/{EXAMPLE_NAME} (copy to <gate>.yaml and edit{from_env})")
    ignore = root / ".gitignore"
    entry = f"/{data_dir.strip('/')}/"
    text = ignore.read_text(encoding="utf-8") if ignore.exists() else ""
    lines = text.splitlines()
    if not track_data and entry not in lines:
        with open(ignore, "a", encoding="utf-8") as fh:
            if text and not text.endswith("\n"):
                fh.write("\n")  # a user's last line, unterminated: end it before ours
            fh.write(f"# generations can be large; voicegate records their sha256 instead\n{entry}\n")
        said.append(f"  .gitignore: {entry} (use --track-data to keep generations in git)")
    said.append("next: write preregistrations/<gate>.yaml, then `voicegate register <gate>`")
    return said
