"""`verify`: walk every artifact's chain, hold it against what the run says it wrote, ask git.

Three witnesses, each covering what the one before cannot see:

1. **The chain** (`_chain`) needs nothing but the file: an earlier entry
   edited, removed or reordered breaks it. It cannot see the *newest* entry
   removed whole (with its marker), nor a file deleted, emptied or
   overwritten, because then no chain is left to break.
2. **The run's ledger** (`<data>/<gate>/entries.jsonl`, written in the same
   transaction as every entry, itself chained: `_ledger`) lists each entry ever
   written with its marker hash: each must still be in its file, so a missing,
   emptied or replaced artifact, or a newest entry cut off, is broken; and each
   entry a file holds past the first one the ledger lists must be listed, so an
   entry voicegate did not write is broken too. An unfinished transaction (a
   killed command) is reported with what it still lacks.
3. **git**, inside a work tree: every commit that touched an artifact, from
   the one that brought in its first entry on, and the uncommitted change
   against HEAD, must only add lines (earlier history, such as a compose.yaml's
   years of edits, is the file's own business); an artifact gone from the work
   tree whose history holds entries is broken, with or without run data.
4. **The citations** (`_citations`): every amendment in a gate record cites
   another gate's prospective registration; git must still hold it as cited.
5. **The registration**: each gate's record as register committed it, and the
   spec and every file it pins unchanged since: what generate and score refuse
   to run past, said here too (without git, held to the record alone).

A markdown artifact ends with its newest marker line: any byte after it was not
written by voicegate (a forged "Shipping decision", junk) and is broken, and the
next entry refuses to seal it in (`_entries`).

Over 400 lines because its three witnesses (the chains, the run's ledger, git) judge one set of
files together, each reading what the one before found.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from voicegate._errors import VoicegateError
from voicegate.artifacts import _chain, _transaction
from voicegate.artifacts import _ledger as ledger_file
from voicegate.run import RunDir, read_rows
from voicegate.spec import (
    ARTIFACT_KINDS,
    DATA_DIR_ENV,
    artifact_kind,
    check_gate_name,
    git_env,
    is_shallow,
    load_strict,
    name_pattern,
    shown_path,
)
from voicegate.spec import resolve_path as _resolve

if TYPE_CHECKING:
    from voicegate.spec import GateSpec


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
    tail_problem: str | None = None   # bytes after the newest marker
    notes: list[str] = field(default_factory=list)
    citation_problems: list[str] = field(default_factory=list)
    # Where the run directory's copies of notes, decisions and amendments disagree with the record's entries.
    cache_problems: list[str] = field(default_factory=list)
    citations: list[str] = field(default_factory=list)
    git_skipped: str | None = None  # why git was not asked, when the file has entries
    only: list[int] | None = None  # the compose entries of the one gate asked about (None: all gates)
    # Entries any gate's ledger lists for this file (number -> marker hash), or None: no ledger names it.
    listed: dict[int, str] | None = None

    @property
    def file_problem(self) -> str | None:
        """The first thing wrong with this file's own bytes, chain and ledger (git aside)."""
        if self.report is not None and self.report.problem:
            return self.report.problem
        return self.ledger_problem or self.tail_problem

    @property
    def problem(self) -> str | None:
        """The first thing wrong with this file, in the order the witnesses are asked."""
        if self.file_problem:
            return self.file_problem
        if self.git_problems:
            return self.git_problems[0]
        return next(iter(self.citation_problems + self.cache_problems), None)

    @property
    def ok(self) -> bool:
        return self.problem is None


def _raw_spec(root: Path, gate: str) -> dict[str, object]:
    check_gate_name(gate)
    path = root / "preregistrations" / f"{gate}.yaml"
    try:
        raw = load_strict(path.read_text(encoding="utf-8"))  # as load_spec reads it: no key twice, bounded
    except FileNotFoundError:
        from voicegate.spec import no_such_spec

        raise VoicegateError(no_such_spec(root, gate)) from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:  # bytes that are not UTF-8 are no spec either
        raise VoicegateError(f"{path}: unreadable ({str(exc).splitlines()[0]})") from None
    if not isinstance(raw, dict):
        raise VoicegateError(f"{path}: not a mapping of spec keys")
    return raw


def artifact_paths(root: Path, gate: str) -> dict[str, Path]:
    """The artifact paths a spec names, read without validating corpora (verify needs only these)."""
    arts = _raw_spec(root, gate).get("artifacts")
    for kind in ARTIFACT_KINDS:
        if kind.required and (not isinstance(arts, dict) or not arts.get(kind.name)):
            raise VoicegateError(f"{root / 'preregistrations' / (gate + '.yaml')}: artifacts.{kind.name} is required")
    assert isinstance(arts, dict)
    return {k.name: _resolve(root, str(arts[k.name])) for k in ARTIFACT_KINDS if arts.get(k.name)}


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
    """git's answer; git not on PATH answers like a failed command (exit 127): its witness is then skipped."""
    try:
        # A path git prints may hold bytes that are not UTF-8: kept as Python keeps them in a path, never a crash.
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, encoding="utf-8",
                              errors="surrogateescape", check=False, env=git_env())
    except FileNotFoundError:
        return subprocess.CompletedProcess(["git", *args], 127, "", "git: not on PATH")


def git_only_added(path: Path) -> tuple[int, list[str]]:
    """(commits checked, problems): every commit touching path, and the work tree, deleted no line."""
    cwd = path.parent
    top = _git(cwd, "rev-parse", "--show-toplevel")
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


def _ledger_rows(gate: str, run: RunDir) -> tuple[ledger_file.Ledger | None, list[dict[str, object]]]:
    """The gate's ledger with its chain checked, and its rows (a line that is not JSON is refused, exit 2)."""
    try:
        led = ledger_file.read(run.ledger)
    except OSError as exc:
        raise VoicegateError(f"{run.ledger}: unreadable ({exc.strerror or exc})") from None
    if led is not None and led.damaged:
        raise VoicegateError(f"{run.ledger}: a line is not valid JSON; the ledger of {gate} is damaged")
    return led, (led.rows if led is not None else [])


def _ledger(root: Path, gate: str, run: RunDir,
            rows: list[dict[str, Any]] | None = None) -> list[tuple[Path, int, str, str]]:
    """(artifact path, entry number, marker hash, "kind at time") for every entry the gate's ledger lists."""
    if rows is None:
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
            raise VoicegateError(f"{run.ledger}: a line is not a ledger entry; the ledger of {gate} is "
                                 "damaged") from None
    return out


def _markers(fc: FileCheck) -> dict[int, str]:
    return _chain.chain_of(fc.kind).markers(fc.path.read_bytes())


def _shared(fc: FileCheck) -> bool:
    """Several gates' entries in one file (compose.yaml): its newest entry need not be this gate's."""
    return artifact_kind(fc.kind).shared


def ledger_entries_lost(expected: list[tuple[str, int, str, str]], found: dict[int, str] | None) -> str | None:
    """What is missing from a file of the entries a ledger lists for it ((gate, number, marker hash, "kind at
    time") each), given the markers the file holds (`found`; None: the file is gone); None when every one is there.
    """
    if not expected:
        return None
    if found is None:
        newest = max(expected, key=lambda e: e[1])
        return (f"the file is gone, but the run's ledger lists {len(expected)} entr"
                f"{'y' if len(expected) == 1 else 'ies'} written to it (the newest, entry {newest[1]}, by {newest[3]})")
    for gate, number, digest, by in sorted(expected, key=lambda e: e[1]):
        if number not in found:
            return (f"entry {number} (written by {by} for {gate}, per the run's ledger) is gone: the file was "
                    "emptied, replaced or cut back")
        if found[number] != digest:
            return (f"entry {number} is not the one written by {by} for {gate}: its marker's hash differs from the "
                    "run's ledger (the entry was replaced)")
    return None


def ledger_problems(spec: GateSpec, kinds: tuple[str, ...] | None = None) -> list[tuple[Path, str]]:
    """Each of the gate's artifacts (of `kinds`; None: all) that no longer holds every entry the run's ledger lists
    for it, with what `verify` says of it: the writers refuse to append to such a file (a new entry would seal the
    loss in)."""
    if not spec.run.ledger.exists():
        return []
    listed = _ledger(spec.root, spec.gate, spec.run, _ledger_rows(spec.gate, spec.run)[1])
    out = []
    for kind, path in spec.artifacts.named().items():
        if kinds is not None and kind not in kinds:
            continue
        expected = [(spec.gate, number, digest, by) for p, number, digest, by in listed if _key(p) == _key(path)]
        found = _chain.chain_of(kind).markers(path.read_bytes()) if path.is_file() else None
        problem = ledger_entries_lost(expected, found)
        if problem is not None:
            out.append((path, problem))
    return out


def record_problem(spec: GateSpec) -> str | None:
    """What `verify` calls BROKEN in the gate record, where what is in force is read from: an entry edited,
    reordered or a marker damaged (its chain), or an entry the run's ledger lists gone. None: it holds."""
    record = spec.artifacts.record
    if record.is_file():
        problem = _chain.verify(record, "record").problem
        if problem is not None:
            return problem
    # the README and compose file are not read: what is in force is read from the record alone
    return next((problem for _, problem in ledger_problems(spec, ("record",))), None)


def _check_ledger(fc: FileCheck) -> None:
    if not fc.expected:
        if fc.exists and not _shared(fc) and fc.report is not None and fc.report.ok and not fc.ledger_problem:
            fc.notes.append(f"newest entry {len(fc.report.ok)}: no run ledger lists it (run data absent?), so only "
                            "git can show that no later entry was removed")
        return
    newest = max(fc.expected, key=lambda e: e[1])
    found = _markers(fc) if fc.exists else None
    fc.ledger_problem = ledger_entries_lost(fc.expected, found)
    if found and fc.ledger_problem is None and not _shared(fc) and max(found) == newest[1]:
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


def _text_after(fc: FileCheck) -> None:
    """Bytes after a sealed chain's newest marker (markdown) were not voicegate's: broken."""
    if not _chain.chain_of(fc.kind).sealed or fc.report is None or not fc.report.ok:
        return
    tail = _chain.md_tail(fc.path.read_bytes())
    if tail:
        fc.tail_problem = _chain.tail_problem(tail, len(fc.report.ok))


def _check_unlisted(fc: FileCheck) -> None:
    """Every entry past the first one a ledger lists for this file must be listed: voicegate wrote it."""
    if fc.listed is None or not fc.exists or fc.report is None or fc.ledger_problem:
        return
    first = min(fc.listed, default=None)
    older = []
    for number in sorted(_markers(fc)):
        if number in fc.listed:
            continue
        if first is not None and number < first:
            older.append(number)
            continue
        fc.ledger_problem = (f"entry {number} is not in the run's ledger: voicegate did not write it (an entry added "
                             "by hand or by a copy of the file), or the ledger lost its line")
        return
    if older:
        fc.notes.append(f"entr{'y' if len(older) == 1 else 'ies'} {', '.join(map(str, older))} predate the run's "
                        "ledger (run data recreated?); only the chain and git vouch for them")


def _history_entries(root: Path, path: Path, kind: str) -> tuple[int, str] | None:
    """(entries, where) for an artifact gone from the work tree that git still knows with entries.

    HEAD first (an uncommitted delete), then the last commit that touched the path (a committed
    `git rm` or move): the version before that commit is the last one history holds.
    """
    top = _git(root, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        return None
    try:
        rel = Path(os.path.abspath(path)).relative_to(Path(top.stdout.strip()).resolve()).as_posix()
    except ValueError:
        return None

    def entries(rev: str) -> int:
        shown = subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=root, capture_output=True, check=False,
                               env=git_env())
        if shown.returncode != 0:
            return 0
        return len(_chain.chain_of(kind).markers(shown.stdout))

    if n := entries("HEAD"):
        return n, "git's HEAD holds it"
    last = _git(root, "log", "-1", "--format=%H", "--", f":(top){rel}")  # rel is from the top, not from root
    commit = last.stdout.strip() if last.returncode == 0 else ""
    if commit and (n := entries(f"{commit}^")):
        return n, f"commit {commit[:12]} removed it, and the version before holds it"
    return None


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
    ledgers: list[FileCheck] = []
    lost: dict[str, RunDir] = {}  # gates whose run data is here but whose ledger is not
    for g, run in runs.items():
        led, rows = _ledger_rows(g, run)
        # (an unfinished first verdict carries its ledger line in its intent: not lost, completed next run)
        if led is None and (run.recorded.is_file() or run.scores.is_file()) and _transaction.pending(run) is None:
            lost[g] = run
        for path, number, digest, by in _ledger(root, g, run, rows):
            if _key(path) in checks:
                checks[_key(path)].expected.append((g, number, digest, by))
        if led is not None:
            ledgers.append(_ledger_check(g, led))
            ledgers[-1].notes += _recorded_copy(root, g, run, led)
    _gather_listed(root, runs, checks)
    registrations = [_registration_check(root, g) for g in gates]
    shallow = is_shallow(root)  # asked once: the same answer for every file
    for fc in checks.values():
        if not fc.path.is_file():
            fc.exists = False
            if not fc.expected and (found := _history_entries(root, fc.path, fc.kind)):
                n, where = found
                fc.ledger_problem = f"the file is gone, but {where} with {n} entr{'y' if n == 1 else 'ies'}"
        else:
            fc.report = _chain.verify(fc.path, fc.kind)
            fc.git_commits, fc.git_problems = git_only_added(fc.path)
            if fc.kind == "record" and fc.report.problem is None:
                from voicegate.artifacts._citations import check_record

                fc.citation_problems, fc.citations = check_record(root, fc.gates[0], fc.path)
                fc.cache_problems = _check_caches(fc, runs.get(fc.gates[0]))
            if not fc.git_commits and fc.report.ok:
                fc.git_skipped = _why_no_git(root, fc.path)
            elif fc.git_commits and shallow:
                fc.notes.append("shallow clone: only the commits this clone holds were checked for deleted lines "
                                "(git fetch --unshallow, then verify again)")
            if gate and _shared(fc):
                from voicegate.artifacts._compose import entries_for, has_module

                data = fc.path.read_bytes()
                try:
                    fc.only = entries_for(data, gate)
                    if not has_module(data, gate):
                        fc.notes.append(f"no --lora-modules entry for {gate} here, so its compose comments have "
                                        "nowhere to go")
                except VoicegateError as exc:
                    fc.notes.append(str(exc))
                except (UnicodeDecodeError, ValueError):
                    # Bytes that are not text are the chain's to report (BROKEN above); which gate's
                    # entries they were cannot be told, so every entry is listed.
                    fc.only = None
            _text_after(fc)
        _check_lost_ledger(root, fc, lost)
        _check_ledger(fc)
        _check_unlisted(fc)
    for g, run in runs.items():
        _check_pending(root, g, run, checks)
    return list(checks.values()) + ledgers + registrations


def _registration_check(root: Path, gate: str) -> FileCheck:
    """The gate's registration as `generate` and `score` hold it: the record as register committed it, and the spec
    and every file it pins unchanged since. Without git, the record against the spec and the files alone."""
    from voicegate.spec import check_against, committed_registration, is_git_worktree, load_registration, load_spec

    fc = FileCheck(root / "preregistrations" / f"{gate}.registration.json", "registration", [gate])
    try:
        spec = load_spec(root, gate)
        fc.path = spec.registration_path
        reg = load_registration(spec)
        if reg is None:
            fc.exists = False
            return fc
        check_against(spec, reg)
        if not is_git_worktree(root):
            why = "git is not on PATH" if shutil.which("git") is None else "the workspace is not a git work tree"
            fc.git_skipped = (f"not checked: {why}, so no commit shows this is the record register committed "
                              "(the spec and its files are held to the record alone)")
        elif (committed := committed_registration(spec)) is None:
            fc.git_skipped = ("not checked: no commit `voicegate register` made holds it in this history (a copy, or "
                              "a clone without it), so the spec and its files are held to the record alone")
        else:
            reg = committed   # the record as register committed it, and the one the numbers are under
    except VoicegateError as exc:
        fc.ledger_problem = str(exc).removeprefix(f"{fc.path}: ").removeprefix(f"{shown_path(root, fc.path)}: ")
        return fc
    pinned = len(reg.data.get("files") or {})
    fc.notes.append(f"the spec and its {pinned} pinned file{'' if pinned == 1 else 's'} as registered"
                    + (f" at commit {reg.commit}" if reg.commit else ""))
    return fc


def _check_caches(fc: FileCheck, run: RunDir | None) -> list[str]:
    """The run's copies of the record's notes, decisions and amendments, held to its chained entries."""
    if run is None or not run.ledger.is_file() or _transaction.pending(run) is not None:
        return []  # no run data here (a clone), or an unfinished verdict that the next command completes
    from voicegate.artifacts._recorded import cache_problems, record_entries

    return cache_problems(record_entries(fc.path.read_bytes()), run)


def _check_lost_ledger(root: Path, fc: FileCheck, lost: dict[str, RunDir]) -> None:
    """A gate whose run data is here (its scores) but whose ledger is gone: an entry written to this file can no
    longer be told from one added by hand, nor a newest one cut off. Absent run data (a clone) is only a note."""
    gates = [g for g in fc.gates if g in lost]
    if not gates or fc.ledger_problem or not fc.exists or fc.report is None or not fc.report.ok:
        return
    if _shared(fc) and fc.only is not None and not fc.only:
        return  # no entry of the gate asked about sits in the shared file
    g = gates[0]
    state = lost[g].recorded if lost[g].recorded.is_file() else lost[g].scores
    fc.ledger_problem = (f"{g}'s run data is here ({shown_path(root, state)}) but its ledger "
                         f"{shown_path(root, lost[g].ledger)} is gone: the entries this file holds can no longer be "
                         "matched to what voicegate wrote (restore the ledger from a backup)")


def _ledger_check(gate: str, led: ledger_file.Ledger) -> FileCheck:
    """The ledger's own chain, reported like an artifact's (kind "ledger")."""
    fc = FileCheck(led.path, "ledger", [gate])
    fc.report = _chain.Report(led.path, [], led.problem)
    if led.unchained and len(led.rows) == led.unchained:
        fc.notes.append("written before the ledger was chained: the next verdict's line will cover it")
    elif led.unchained:
        fc.notes.append(f"{led.unchained} line(s) were written before the ledger was chained; the chained lines "
                        "after them cover their bytes")
    fc.expected = [(gate, i, "", "") for i in range(1, len(led.rows) + 1)]  # the line count, for describe
    return fc


def _recorded_copy(root: Path, gate: str, run: RunDir, led: ledger_file.Ledger) -> list[str]:
    """What happened to recorded.json (the run's copy of the result in force), which `ship`, `note` and `amend`
    read: each rebuild `score` made of it, and whether it is missing now while the ledger lists verdicts."""
    shown = shown_path(root, run.recorded)
    out = [f"line {row.get('line')}: {shown} rebuilt at {row.get('time')} by `voicegate score` (it was missing): "
           f"re-scoring the stored generations gave the result the record's newest verdict states (sha256 "
           f"{str(row.get('result_sha256'))[:12]})" for row in led.rows if row.get("kind") == "rebuild"]
    verdicts = any(row.get("kind") in ("score", "amend") for row in led.rows)
    if verdicts and not run.recorded.is_file() and _transaction.pending(run) is None:
        out.append(f"{shown} (the run's copy of the result in force) is missing, so `ship`, `note` and `amend` "
                   f"refuse: `voicegate score {gate}` rebuilds it from the record")
    return out


def _gather_listed(root: Path, runs: dict[str, RunDir], checks: dict[Path, FileCheck]) -> None:
    """Each file's entries listed by ANY gate's ledger, or an unfinished verdict's (a shared compose.yaml
    holds other gates' entries: `verify GATE` still asks their ledgers)."""
    every = dict(runs)
    for g in all_gates(root):
        if g not in every:
            try:
                every[g] = run_dir(root, g)
            except VoicegateError:
                continue  # another gate's unreadable spec is its own `verify`'s business
    for g, run in every.items():
        try:
            names = {_key(p) for p in artifact_paths(root, g).values()}
            led = ledger_file.read(run.ledger)
            pending = _transaction.pending_after(run, run.ledger)
        except (VoicegateError, OSError):
            continue
        if not names & checks.keys():
            continue
        rows = list(led.rows) if led is not None and not led.damaged else []
        if pending is not None:
            later = ledger_file.read_bytes(pending)
            rows += later.rows[len(rows):]
        if led is None and pending is None:
            continue
        for key in names & checks.keys():
            if checks[key].listed is None:
                checks[key].listed = {}
        for row in rows:
            for e in row.get("entries", []) if isinstance(row.get("entries"), list) else []:
                try:
                    key = _key(_resolve(root, str(e["path"])))
                    if key in checks:
                        checks[key].listed.setdefault(int(e["number"]), str(e["sha256"]))  # type: ignore[union-attr]
                except (KeyError, TypeError, ValueError):
                    continue


def _why_no_git(root: Path, path: Path) -> str:
    """Why `git_only_added` checked no commit of a file that has entries."""
    if shutil.which("git") is None:
        return "not checked: git is not on PATH, so only the chain and the ledger witness it"
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
        if fc.kind == "registration":
            if not fc.exists and not fc.problem:
                lines.append(f"{name}: not registered yet")
                continue
            lines.append(f"{name} (registration, {', '.join(fc.gates)}):")
            if fc.problem:
                ok = False
                lines.append(f"  BROKEN: {fc.problem}")
            lines += [f"  {n}" for n in fc.notes]
            if fc.git_skipped:
                lines.append(f"  git: {fc.git_skipped}")
            continue
        if fc.kind == "ledger":
            lines.append(f"{name} (ledger, {', '.join(fc.gates)}):")
            if fc.file_problem:
                ok = False
                lines.append(f"  BROKEN: {fc.file_problem}")
            else:
                lines.append(f"  {len(fc.expected)} line(s), each chained to the lines before it")
            lines += [f"  note: {n}" for n in fc.notes]
            continue
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
        if fc.file_problem:
            ok = False
            lines.append(f"  BROKEN: {fc.file_problem}")
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
        if fc.cache_problems:
            ok = False
            lines += [f"  run data BROKEN: {p}" for p in fc.cache_problems]
    return lines, ok
