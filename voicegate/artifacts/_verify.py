"""`verify`: walk every artifact's chain, hold it against what the run says it wrote, ask git.

Three witnesses, each covering what the one before cannot see:

1. **The chain** (`_chain`) needs nothing but the file: an earlier entry
   edited, removed or reordered breaks it. It cannot see the *newest* entry
   removed whole (with its marker), nor a file deleted, emptied or
   overwritten, because then no chain is left to break.
2. **The run's ledger** (`<data>/<gate>/entries.jsonl`, written in the same
   transaction as every entry) lists each entry ever written with its marker
   hash: each must still be in its file, so a missing, emptied or replaced
   artifact, or a newest entry cut off, is broken. An unfinished transaction
   (a killed command) is reported with what it still lacks.
3. **git**, inside a work tree: every commit that touched an artifact, from
   the one that brought in its first entry on, and the uncommitted change
   against HEAD, must only add lines (earlier history, such as a compose.yaml's
   years of edits, is the file's own business).
4. **The citations** (`_citations`): every amendment in a gate record cites
   another gate's prospective registration; git must still hold it as cited.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from voicegate._errors import VoicegateError
from voicegate.artifacts import _chain, _transaction
from voicegate.run._rundir import RunDir
from voicegate.run._store import read_rows
from voicegate.spec._resolve import DATA_DIR_ENV
from voicegate.spec._spec import _resolve, check_gate_name, name_pattern
from voicegate.spec._workspace import shown_path
from voicegate.spec._yamlfile import load_strict


@dataclass
class FileCheck:
    path: Path
    kind: str
    gates: list[str]
    exists: bool = True
    report: _chain.Report | None = None
    git_problems: list[str] = field(default_factory=list)
    git_commits: int = 0
    # Entries the gates' ledgers say were written here: (gate, number, marker hash, what wrote it).
    expected: list[tuple[str, int, str, str]] = field(default_factory=list)
    ledger_problem: str | None = None
    notes: list[str] = field(default_factory=list)
    citation_problems: list[str] = field(default_factory=list)
    citations: list[str] = field(default_factory=list)
    git_skipped: str | None = None  # why git was not asked, when the file has entries
    only: list[int] | None = None  # the compose entries of the one gate asked about (None: all gates)

    @property
    def problem(self) -> str | None:
        """The first thing wrong with this file, in the order the witnesses are asked."""
        if self.report is not None and self.report.problem:
            return self.report.problem
        if self.ledger_problem:
            return self.ledger_problem
        if self.git_problems:
            return self.git_problems[0]
        return self.citation_problems[0] if self.citation_problems else None

    @property
    def ok(self) -> bool:
        return self.problem is None


def _raw_spec(root: Path, gate: str) -> dict[str, object]:
    check_gate_name(gate)
    path = root / "preregistrations" / f"{gate}.yaml"
    try:
        raw = load_strict(path.read_text(encoding="utf-8"))  # as load_spec reads it: no key twice, bounded
    except FileNotFoundError:
        from voicegate.spec._spec import no_such_spec

        raise VoicegateError(no_such_spec(root, gate)) from None
    except (OSError, yaml.YAMLError) as exc:
        raise VoicegateError(f"{path}: unreadable ({str(exc).splitlines()[0]})") from None
    if not isinstance(raw, dict):
        raise VoicegateError(f"{path}: not a mapping of spec keys")
    return raw


def artifact_paths(root: Path, gate: str) -> dict[str, Path]:
    """The artifact paths a spec names, read without validating corpora (verify needs only these)."""
    arts = _raw_spec(root, gate).get("artifacts")
    if not isinstance(arts, dict) or not arts.get("record"):
        raise VoicegateError(f"{root / 'preregistrations' / (gate + '.yaml')}: artifacts.record is required")
    return {k: _resolve(root, str(v)) for k, v in arts.items() if k in ("record", "readme", "compose") and v}


def run_dir(root: Path, gate: str) -> RunDir:
    """The gate's run directory, found as `load_spec` finds it (`$VOICEGATE_DATA_DIR` first)."""
    data = os.environ.get(DATA_DIR_ENV) or _raw_spec(root, gate).get("data_dir") or "runs"
    data_dir = _resolve(root, str(data))
    return RunDir(data_dir / gate, data_dir)


def all_gates(root: Path) -> list[str]:
    """Every spec whose name is a gate name (an example or a stray file is not a gate)."""
    name_pattern()  # a broken $VOICEGATE_NAME_PATTERN is refused, not taken to match no gate
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


def _key(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _ledger(root: Path, gate: str, run: RunDir) -> list[tuple[Path, int, str, str]]:
    """(artifact path, entry number, marker hash, "kind at time") for every entry the gate's ledger lists."""
    try:
        rows = read_rows(run.ledger)
    except ValueError:
        raise VoicegateError(f"{run.ledger}: a line is not valid JSON; the ledger of {gate} is damaged") from None
    out = []
    for row in rows:
        try:
            for e in row["entries"]:
                out.append((_resolve(root, str(e["path"])), int(e["number"]), str(e["sha256"]),
                            f"`{row['kind']}` at {row['time']}"))
        except (KeyError, TypeError, ValueError):
            raise VoicegateError(f"{run.ledger}: a line is not a ledger entry; the ledger of {gate} is damaged") from None
    return out


def _markers(fc: FileCheck) -> dict[int, str]:
    data = fc.path.read_bytes()
    if fc.kind == "compose":
        return {m.number: m.sha256 for m in _chain.compose_markers(data.splitlines(keepends=True))}
    return {m.number: m.sha256 for m in _chain.md_markers(data)}


def _check_ledger(fc: FileCheck) -> None:
    if not fc.expected:
        if fc.exists and fc.kind != "compose" and fc.report is not None and fc.report.ok:
            fc.notes.append(f"newest entry {len(fc.report.ok)}: no run ledger lists it (run data absent?), so only "
                            "git can show that no later entry was removed")
        return
    newest = max(fc.expected, key=lambda e: e[1])
    if not fc.exists:
        fc.ledger_problem = (f"the file is gone, but the run's ledger lists {len(fc.expected)} entr"
                             f"{'y' if len(fc.expected) == 1 else 'ies'} written to it (the newest, entry "
                             f"{newest[1]}, by {newest[3]})")
        return
    found = _markers(fc)
    for gate, number, digest, by in sorted(fc.expected, key=lambda e: e[1]):
        if number not in found:
            fc.ledger_problem = (f"entry {number} (written by {by} for {gate}, per the run's ledger) is gone: "
                                 "the file was emptied, replaced or cut back")
            return
        if found[number] != digest:
            fc.ledger_problem = (f"entry {number} is not the one written by {by} for {gate}: its marker's hash "
                                 "differs from the run's ledger (the entry was replaced)")
            return
    if fc.kind != "compose" and max(found) == newest[1]:
        fc.notes.append(f"newest entry {newest[1]} matches the run's ledger")


def _check_pending(root: Path, gate: str, run: RunDir, checks: dict[Path, FileCheck]) -> None:
    found = _transaction.pending(run)
    if found is None:
        return
    arts = {p: fc for p, fc in checks.items() if gate in fc.gates}
    done = [p for p in found.done if _key(p) in arts]
    missing = [p for p in found.missing if _key(p) in arts]
    how = f"an unfinished {found.kind} entry of {gate} (from {found.time}, a killed command)"
    for p in found.changed:
        if _key(p) in arts:
            arts[_key(p)].ledger_problem = f"{how} cannot complete: this file changed since it began"
    if done and missing:
        for p in missing:
            arts[_key(p)].ledger_problem = (f"{how} reached {', '.join(shown_path(root, d) for d in done)} but not "
                                            f"this file; `voicegate score {gate}` completes it")
    elif arts:
        state = "is in every artifact" if done else "has not reached any artifact yet"
        next(iter(arts.values())).notes.append(f"{how} {state}; the next `voicegate score {gate}` completes it")


def _head_entries(root: Path, path: Path) -> int:
    """How many voicegate entries git's HEAD holds for a file that is gone from the work tree."""
    top = _git(root, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        return 0
    try:
        rel = Path(os.path.abspath(path)).relative_to(Path(top.stdout.strip()).resolve())
    except ValueError:
        return 0
    shown = _git(root, "show", f"HEAD:{rel.as_posix()}")
    return shown.stdout.count("voicegate:entry ") if shown.returncode == 0 else 0


def _text_after(fc: FileCheck) -> None:
    if fc.kind == "compose" or fc.report is None or not fc.report.ok:
        return
    data = fc.path.read_bytes()
    last = _chain.md_markers(data)[-1]
    tail = data[data.find(b"\n", last.start) + 1:] if b"\n" in data[last.start:] else b""
    lines = [ln for ln in tail.splitlines() if ln.strip()]
    if lines:
        fc.notes.append(f"{len(lines)} line(s) of text after entry {last.number}, not covered by any entry yet "
                        "(the next entry's hash will cover them)")


def verify_gates(root: Path, gate: str | None = None) -> list[FileCheck]:
    gates = [gate] if gate else all_gates(root)
    checks: dict[Path, FileCheck] = {}
    runs: dict[str, RunDir] = {}
    for g in gates:
        runs[g] = run_dir(root, g)
        for kind, path in artifact_paths(root, g).items():
            key = _key(path)
            if key in checks:
                checks[key].gates.append(g)  # one compose.yaml, many gates: check it once
                continue
            checks[key] = FileCheck(path, kind, [g])
    for g, run in runs.items():
        for path, number, digest, by in _ledger(root, g, run):
            if _key(path) in checks:
                checks[_key(path)].expected.append((g, number, digest, by))
    for fc in checks.values():
        if not fc.path.is_file():
            fc.exists = False
            if not fc.expected and (n := _head_entries(root, fc.path)):
                fc.ledger_problem = f"the file is gone, but git's HEAD holds it with {n} entr{'y' if n == 1 else 'ies'}"
        else:
            fc.report = _chain.verify(fc.path, fc.kind)
            fc.git_commits, fc.git_problems = git_only_added(fc.path)
            if fc.kind == "record" and fc.report.problem is None:
                from voicegate.artifacts._citations import check_record

                fc.citation_problems, fc.citations = check_record(root, fc.gates[0], fc.path)
            if not fc.git_commits and fc.report.ok:
                fc.git_skipped = _why_no_git(root, fc.path)
            if gate and fc.kind == "compose":
                from voicegate.artifacts._compose import entries_for, has_module

                data = fc.path.read_bytes()
                try:
                    fc.only = entries_for(data, gate)
                    if not has_module(data, gate):
                        fc.notes.append(f"no --lora-modules entry for {gate} here, so its compose comments have "
                                        "nowhere to go")
                except VoicegateError as exc:
                    fc.notes.append(str(exc))
            _text_after(fc)
        _check_ledger(fc)
    for g, run in runs.items():
        _check_pending(root, g, run, checks)
    return list(checks.values())


def _why_no_git(root: Path, path: Path) -> str:
    """Why `git_only_added` checked no commit of a file that has entries."""
    top = _git(path.parent, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        return "not checked: the file is not in a git work tree, so only the chain and the ledger witness it"
    name = shown_path(root, path)
    return (f"not checked: no commit holds an entry of this file yet (commit it: `git add {name} && git commit`), "
            "so nothing shows that earlier commits only added lines")


def describe(root: Path, checks: list[FileCheck]) -> tuple[list[str], bool]:
    """Lines to print and whether everything holds."""
    lines: list[str] = []
    ok = True
    for fc in checks:
        name = shown_path(root, fc.path)
        if not fc.exists:
            if fc.problem:
                ok = False
                lines += [f"{name} ({fc.kind}, {', '.join(fc.gates)}):", f"  BROKEN: {fc.problem}"]
            else:
                lines.append(f"{name}: not written yet")
            lines += [f"  note: {n}" for n in fc.notes]
            continue
        rep = fc.report
        assert rep is not None
        lines.append(f"{name} ({fc.kind}, {', '.join(fc.gates)}):")
        shown = rep.ok if fc.only is None else [e for e in rep.ok if int(e.split()[1]) in fc.only]
        for e in shown:
            lines.append(f"  {e} OK")
        if rep.problem or fc.ledger_problem:
            ok = False
            lines.append(f"  BROKEN: {rep.problem or fc.ledger_problem}")
        elif not shown:
            lines.append("  no entries yet" if fc.only is None else f"  no entries of {fc.gates[0]} yet")
        if fc.only is not None and len(shown) < len(rep.ok):
            lines.append(f"  note: {len(rep.ok) - len(shown)} entr{'y' if len(rep.ok) - len(shown) == 1 else 'ies'} "
                         f"of other gates not listed (an entry is {fc.gates[0]}'s when it sits above its "
                         "--lora-modules item); the chain check covers the whole file")
        lines += [f"  note: {n}" for n in fc.notes]
        if fc.git_commits:
            if fc.git_problems:
                ok = False
                lines += [f"  git: {p}" for p in fc.git_problems]
            else:
                lines.append(f"  git: {fc.git_commits} commit(s), every one only added lines")
        elif fc.git_skipped:
            lines.append(f"  git: {fc.git_skipped}")
        lines += [f"  citation: {c}" for c in fc.citations]
        if fc.citation_problems:
            ok = False
            lines += [f"  citation BROKEN: {p}" for p in fc.citation_problems]
    return lines, ok
