"""`voicegate init`: lay out a workspace in a git repository."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from voicegate._errors import VoicegateError
from voicegate.spec import git, is_git_worktree

EXAMPLE_NAME = "lv-example.yaml.example"


def init_workspace(directory: Path, *, data_dir: str = "runs", track_data: bool = False) -> list[str]:
    root = directory.resolve()
    if root.exists() and not root.is_dir():
        raise VoicegateError(f"{root} exists and is not a directory")
    if Path(data_dir).is_absolute() or ".." in Path(data_dir).parts:
        raise VoicegateError(f"--data-dir {data_dir!r} must be a relative path inside the workspace")
    root.mkdir(parents=True, exist_ok=True)
    said: list[str] = []
    if not is_git_worktree(root):
        git(root, "init", "-q")
        said.append(f"initialised a git repository in {root}")
    for name in ("preregistrations", "gates", data_dir):
        (root / name).mkdir(parents=True, exist_ok=True)
        said.append(f"  {name}/")
    example = root / "preregistrations" / EXAMPLE_NAME
    if not example.exists():
        example.write_text(resources.files("voicegate").joinpath("templates/example-spec.yaml").read_text("utf-8"),
                           encoding="utf-8")
        said.append(f"  preregistrations/{EXAMPLE_NAME} (copy to <gate>.yaml and edit)")
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
