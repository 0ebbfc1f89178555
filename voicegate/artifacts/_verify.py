"""`verify`: walk every artifact's chain, then ask git whether any commit deleted a line.

The chain check needs nothing but the files (see `_chain`). The git check adds
what a chain cannot see — an entry removed together with everything after it —
by reading `git log --numstat` for each artifact inside a git work tree: every
commit that touched it must show zero deleted lines, and so must the
uncommitted change against HEAD — from the commit that brought in the
first entry on (earlier history, such as a compose.yaml's years of edits, is
the file's own business, and the chain covers every byte before each entry).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from voicegate._errors import VoicegateError
from voicegate.artifacts import _chain
from voicegate.spec._spec import _resolve, check_gate_name
from voicegate.spec._workspace import shown_path


@dataclass
class FileCheck:
    path: Path
    kind: str
    gates: list[str]
    exists: bool = True
    report: _chain.Report | None = None
    git_problems: list[str] = field(default_factory=list)
    git_commits: int = 0

    @property
    def ok(self) -> bool:
        return not self.exists or (self.report is not None and self.report.problem is None and not self.git_problems)


def artifact_paths(root: Path, gate: str) -> dict[str, Path]:
    """The artifact paths a spec names, read without validating corpora (verify needs only these)."""
    check_gate_name(gate)
    path = root / "preregistrations" / f"{gate}.yaml"
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise VoicegateError(f"{path}: no such spec") from None
    except (OSError, yaml.YAMLError) as exc:
        raise VoicegateError(f"{path}: unreadable ({str(exc).splitlines()[0]})") from None
    arts = raw.get("artifacts") if isinstance(raw, dict) else None
    if not isinstance(arts, dict) or not arts.get("record"):
        raise VoicegateError(f"{path}: artifacts.record is required")
    return {k: _resolve(root, str(v)) for k, v in arts.items() if k in ("record", "readme", "compose") and v}


def all_gates(root: Path) -> list[str]:
    """Every spec whose name is a gate name (an example or a stray file is not a gate)."""
    out = []
    for p in sorted((root / "preregistrations").glob("*.yaml")):
        try:
            out.append(check_gate_name(p.stem))
        except VoicegateError:
            continue
    return out


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def git_only_added(path: Path) -> tuple[int, list[str]]:
    """(commits checked, problems): every commit touching path, and the work tree, deleted no line."""
    cwd = path.parent
    try:
        top = _git(cwd, "rev-parse", "--show-toplevel")
    except FileNotFoundError:
        return 0, []
    if top.returncode != 0:
        return 0, []
    # History before voicegate's first entry is the file's own business (a compose.yaml has
    # years of edits): the check starts at the commit that brought in the first marker.
    first = _git(cwd, "log", "--reverse", "--format=%H", "-S", "voicegate:entry", "--", path.name)
    if first.returncode != 0 or not first.stdout.strip():
        return 0, []
    first_commit = first.stdout.split()[0]
    log = _git(cwd, "log", "--reverse", "--format=commit %H", "--numstat", "--no-renames", "--", path.name)
    if log.returncode != 0:
        return 0, []
    problems: list[str] = []
    commits = 0
    commit = ""  # set by the "commit" line that precedes every numstat line
    started = False
    for line in log.stdout.splitlines():
        if line.startswith("commit "):
            commit = line.split()[1]
            started = started or commit == first_commit
            commits += started
        elif line.strip() and started:
            _, deleted, _ = line.split("\t", 2)
            if deleted == "-":
                problems.append(f"commit {commit[:12]} changed {path.name} as binary")
            elif int(deleted):
                problems.append(f"commit {commit[:12]} deleted {deleted} line(s) from {path.name}")
    if commits:
        diff = _git(cwd, "diff", "--numstat", "HEAD", "--", path.name)
        for line in diff.stdout.splitlines():
            _, deleted, _ = line.split("\t", 2)
            if deleted not in ("0", "-"):
                problems.append(f"uncommitted change deletes {deleted} line(s) from {path.name}")
    return commits, problems  # oldest first: the first place it went wrong


def verify_gates(root: Path, gate: str | None = None) -> list[FileCheck]:
    gates = [gate] if gate else all_gates(root)
    checks: dict[Path, FileCheck] = {}
    for g in gates:
        for kind, path in artifact_paths(root, g).items():
            key = path.resolve()
            if key in checks:
                checks[key].gates.append(g)  # one compose.yaml, many gates: check it once
                continue
            checks[key] = FileCheck(path, kind, [g])
    for fc in checks.values():
        if not fc.path.is_file():
            fc.exists = False
            continue
        fc.report = _chain.verify(fc.path, fc.kind)
        fc.git_commits, fc.git_problems = git_only_added(fc.path)
    return list(checks.values())


def describe(root: Path, checks: list[FileCheck]) -> tuple[list[str], bool]:
    """Lines to print and whether everything holds."""
    lines: list[str] = []
    ok = True
    for fc in checks:
        name = shown_path(root, fc.path)
        if not fc.exists:
            lines.append(f"{name}: not written yet")
            continue
        rep = fc.report
        assert rep is not None
        lines.append(f"{name} ({fc.kind}, {', '.join(fc.gates)}):")
        for e in rep.ok:
            lines.append(f"  {e} OK")
        if rep.problem:
            ok = False
            lines.append(f"  BROKEN: {rep.problem}")
        elif not rep.ok:
            lines.append("  no entries yet")
        if fc.git_commits:
            if fc.git_problems:
                ok = False
                lines += [f"  git: {p}" for p in fc.git_problems]
            else:
                lines.append(f"  git: {fc.git_commits} commit(s), every one only added lines")
    return lines, ok
