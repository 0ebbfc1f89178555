"""Pre-registration: freeze a spec and every file it names, commit them, enforce it later.

The record `preregistrations/<gate>.registration.json` holds the canonical spec
itself (so a later mismatch can name the key that changed) and the sha256 of
every referenced file (so a changed corpus names the file). The spec has two
hashes: `spec_sha256`, of its canonical JSON (what registration enforces: a comment
or a re-indent changes nothing), and `spec_file_sha256`, of the file's raw bytes
as registered (what `sha256sum preregistrations/<gate>.yaml` prints).

Over 400 lines because registering and enforcing a registration read the same record and the same
commits; apart, each would say again what the registration in force is.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voicegate import _json as strict_json
from voicegate._atomic import write_atomic
from voicegate._clock import now_utc
from voicegate._errors import VoicegateError
from voicegate._hashing import canonical_json, sha256_file, sha256_json
from voicegate._version import __version__
from voicegate.spec._artifact_paths import check_artifact_paths
from voicegate.spec._checks import checks_in_force
from voicegate.spec._prospective import REGISTRATIONS, SUFFIX, numbers_at, record_at, written_by_register
from voicegate.spec._resolve import check_corpus_words, check_impostors
from voicegate.spec._rules import RULES, WELCH_ALPHA, get_rule, rules_in_force
from voicegate.spec._sequential import FUTILITY_FIRST, RUNS, SHAPE, SIM_SEED, Look, Operating, boundaries, operating
from voicegate.spec._spec import GateSpec
from voicegate.spec._weights import adapter_weights
from voicegate.spec._workspace import (
    as_named,
    git,
    is_git_worktree,
    last_commit_touching,
    shown_path,
)


def _display(spec: GateSpec, path: Path) -> str:
    """Workspace-relative where possible, so a record reads the same on every clone."""
    return shown_path(spec.root, path)


def file_hashes(spec: GateSpec) -> dict[str, str]:
    """Every file the spec names -> its sha256, keyed as the spec names it relative to the workspace.

    A file outside the workspace that the spec reaches by a relative path (`../shared/...`) is keyed by that
    path, not this machine's absolute one: a clone or a moved workspace with the same bytes beside it
    re-checks the registration.
    """
    return {as_named(spec.root, p): sha256_file(p) for p in spec.referenced_files()}


def _same_files(then: dict[str, str], now: dict[str, str]) -> dict[str, str]:
    """`then` with its legacy keys (absolute paths of files outside the workspace, as registrations kept them
    before `file_hashes` keyed them spec-relative) renamed to the one key of `now` naming a file of the same
    name and the same bytes: an old registration still reads in its first workspace and in any clone."""
    unmatched = [k for k in now if k not in then]
    out: dict[str, str] = {}
    for key, digest in then.items():
        if key not in now and Path(key).is_absolute():
            same = [k for k in unmatched if Path(k).name == Path(key).name and now[k] == digest]
            if len(same) == 1:
                key = same[0]
                unmatched.remove(key)
        out[key] = digest
    return out


def spec_sha256(spec: GateSpec) -> str:
    return sha256_json(spec.raw)


@dataclass(frozen=True)
class Registration:
    path: Path
    data: dict[str, Any]
    commit: str | None

    @property
    def spec_sha256(self) -> str:
        return str(self.data["spec_sha256"])

    @property
    def spec_file_sha256(self) -> str | None:
        """The spec file's raw-bytes sha256 at registration (None in records written before it was kept)."""
        value = self.data.get("spec_file_sha256")
        return value if isinstance(value, str) and value else None

    @property
    def rules(self) -> tuple[str, ...]:
        """The rules this gate computes: those in force when it was registered, and its deciding one.

        A rule registered later is not shown on this gate's scores unless an amendment brings it in: the
        gate's own record then never changes shape under a newer voicegate.
        """
        listed = self.data.get("rules_in_force")
        known = [r for r in RULES if isinstance(listed, dict) and r in listed] or [
            r for r in RULES if not get_rule(r).by_choice]
        deciding = str(self.data.get("deciding_rule") or "")
        return tuple(r for r in RULES if r in known or r == deciding)

    @property
    def design(self) -> tuple[Look, ...] | None:
        """The registered sequential design's looks and boundaries, as recorded (None: the fixed design)."""
        sequential = self.data.get("sequential")
        return None if not isinstance(sequential, dict) else tuple(map(Look.from_json, sequential["looks"]))

    @property
    def operating(self) -> Operating | None:
        """The registered design's false pass and expected seeds as simulated at `register` (None: a fixed design,
        or one registered before they were recorded)."""
        sequential = self.data.get("sequential")
        simulated = sequential.get("simulated") if isinstance(sequential, dict) else None
        return None if not isinstance(simulated, dict) else Operating.from_json(simulated)

    @property
    def registered_at(self) -> str:
        return str(self.data["registered_at"])

    @property
    def checks(self) -> tuple[str, ...]:
        """The dated checks (`_checks`) this gate is scored under: those in force on its registration day."""
        try:
            day = _dt.date.fromisoformat(self.registered_at[:10])
        except ValueError:
            return ()  # a date this version cannot read holds the gate to nothing newer than its rules
        return checks_in_force(day)


def existing_results(spec: GateSpec) -> list[Path]:
    """Generations or scores already on disk: once any exist, the rule is frozen for good."""
    found = []
    for p in spec.run.results:
        if p.exists() and p.stat().st_size > 0:
            found.append(p)
    return found


# The score entry's Registration paragraph (artifacts' record_score.md.j2 writes it; the registration a gate's
# numbers were recorded under is read back from the chained record, never from the run directory).
_SCORED_UNDER = re.compile(r"^\*\*Registration\.\*\* Spec `[^`\n]*`, sha256 `([0-9a-f]{64})` \(canonical\)[^\n]*?"
                           r"commit `([0-9a-f]{40})`", re.MULTILINE)


@dataclass(frozen=True)
class ScoredUnder:
    """A score entry's registration: the spec sha256 and the registration commit it names."""

    spec_sha256: str
    commit: str


def scored_under(record_text: str) -> list[ScoredUnder]:
    """Every score entry's registration, oldest first (the first is the one a gate's numbers were recorded under)."""
    return [ScoredUnder(m.group(1), m.group(2)) for m in _SCORED_UNDER.finditer(record_text)]


def _record_text(spec: GateSpec) -> str:
    path = spec.artifacts.record
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def _register_commits(root: Path, gate: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(commit, record) of every registration `register` committed for `gate`, newest first, in HEAD's history.

    Lazy: each commit costs several git calls to check, and most callers need only the newest.
    """
    for commit in git(root, "log", "--format=%H", "--no-renames", "--", f"{REGISTRATIONS}/{gate}{SUFFIX}",
                      check=False).split():
        record = record_at(root, commit, gate)
        if record is not None and written_by_register(root, commit, gate, record) is None:
            yield commit, record


def _chain_of(registrations: Iterable[tuple[str, dict[str, Any]]], start: str) -> list[str]:
    """The registration commits reached from `start` by each record's `supersedes`, newest first."""
    by_commit = dict(registrations)
    chain: list[str] = []
    commit: str | None = start
    while commit in by_commit and commit not in chain:
        chain.append(commit)
        earlier = by_commit[commit].get("supersedes")
        commit = earlier.get("commit") if isinstance(earlier, dict) else None
    return chain


def registered(spec: GateSpec) -> Registration:
    """The registration in force, as git holds it: the newest commit `register` made for this gate.

    The working tree's record must be that commit's (a record edited, or committed by hand, is refused, naming the
    file), and when the gate record already holds numbers, that registration must be the one they were recorded
    under or a chained re-registration of it (`supersedes`): a design changed after its numbers is only ever a new
    registration, which every later score entry then names as a follow-up.
    """
    reg = committed_registration(spec)
    if reg is None:
        rel = _display(spec, spec.registration_path)
        raise VoicegateError(f"{rel}: no commit made by `voicegate register {spec.gate}` holds it; a registration is "
                             f"only what register commits (run `voicegate register {spec.gate}`)")
    return reg


def committed_registration(spec: GateSpec) -> Registration | None:
    """`registered`, but None where HEAD's history holds no commit `register` made of this gate's record (a copy,
    or a clone without that history), which `verify` says rather than refuses."""
    root = spec.root
    if not is_git_worktree(root):
        why = "git is not on PATH" if shutil.which("git") is None else f"{root} is not a git work tree"
        raise VoicegateError(f"{spec.gate}: {why}; a gate's registered spec is the one git holds at its registration "
                             "commit, and its verdicts are ordered by git's history (run it in the workspace's clone)")
    working = load_registration(spec)
    if working is None:
        raise VoicegateError(f"{spec.gate} is not registered: run `voicegate register {spec.gate}` first")
    rel, spec_rel = _display(spec, working.path), _display(spec, spec.path)
    committed = _register_commits(root, spec.gate)
    newest = next(committed, None)
    if newest is None:
        return None
    commit, record = newest
    if record != working.data:
        raise VoicegateError(
            f"{rel} is not the record `voicegate register` committed at {commit[:12]}: the registered design is the "
            f"one git holds there (restore it: `git checkout {commit[:12]} -- {rel} {spec_rel}`), and a changed "
            f"design is a new registration (`voicegate register {spec.gate} --supersede`)")
    first = next(iter(scored_under(_record_text(spec))), None)
    if first is not None and first.commit != commit and first.commit not in _chain_of([newest, *committed], commit):
        raise VoicegateError(
            f"{spec.gate}'s numbers were recorded under its registration at commit {first.commit[:12]} (the gate "
            f"record's first score entry), and the registration at {commit[:12]} does not supersede it: a design "
            f"changed after its numbers is only a follow-up registration (`voicegate register {spec.gate} "
            "--supersede`, which names the earlier one)")
    return Registration(working.path, working.data, commit)


def check_scored_under(root: Path, gate: str, record_text: str) -> tuple[list[str], list[str]]:
    """(problems, lines that hold): each score entry's registration, asked of git again.

    The commit a score entry names must hold `register`'s record of this gate with the spec sha256 the entry
    names; an entry under another spec than the first must name a registration that supersedes the first's
    (a follow-up design, said in the entry), never a spec edited in place.
    """
    entries = scored_under(record_text)
    if not entries or not is_git_worktree(root):
        return [], []
    problems: list[str] = []
    history = list(_register_commits(root, gate))
    checked = dict(history)  # register's commits in HEAD's history, each checked once already
    records: dict[str, dict[str, Any]] = {}
    for n, e in enumerate(entries, 1):
        record = checked.get(e.commit) or record_at(root, e.commit, gate)
        why = (f"commit {e.commit[:12]} holds no registration record of {gate}" if record is None
               else None if e.commit in checked else written_by_register(root, e.commit, gate, record))
        if why is None and record is not None and record["spec_sha256"] != e.spec_sha256:
            why = (f"the registration at commit {e.commit[:12]} has spec sha256 {record['spec_sha256'][:12]}..., "
                   f"not the entry's {e.spec_sha256[:12]}...")
        if why is not None:
            problems.append(f"score entry {n} names a registration git does not hold as register wrote it: {why}")
            continue
        assert record is not None
        records[e.commit] = record
    first = entries[0]
    for n, e in enumerate(entries, 1):
        if e.commit == first.commit or e.commit not in records or first.commit not in records:
            continue
        chain = _chain_of(history, e.commit)
        if first.commit not in chain or not records[e.commit].get("follows"):
            problems.append(f"score entry {n} is under spec sha256 {e.spec_sha256[:12]}... (registration commit "
                            f"{e.commit[:12]}), not the first entry's {first.spec_sha256[:12]}..., and that "
                            "registration is no re-registration of the first (no chained `supersedes` and "
                            "`follows`): the design was changed after its numbers")
    designs = len(dict.fromkeys(e.commit for e in entries))
    if problems or designs == 1:  # one design, as registered: nothing beyond the chain's OK to say
        return problems, []
    held = (f"{len(entries)} score entries under {designs} designs: each spec sha256 is the one git holds at its "
            "registration commit, each later design a follow-up that supersedes the one before")
    return [], [held]


def load_registration(spec: GateSpec) -> Registration | None:
    path = spec.registration_path
    if not path.exists():
        return None
    try:
        data = strict_json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise VoicegateError(f"{path}: unreadable registration record ({exc})") from None
    problem = _record_problem(data)
    if problem is not None:
        raise VoicegateError(f"{path}: not a registration record ({problem}); restore it from git, "
                             "where registration committed it")
    return Registration(path, data, last_commit_touching(spec.root, path))


def _record_problem(data: Any) -> str | None:
    """What is wrong with the shape of a registration record, or None (what `register` writes)."""
    if not isinstance(data, dict):
        return "not a JSON object"
    for key in ("spec_sha256", "registered_at"):
        if not isinstance(data.get(key), str) or not data[key]:
            return f"{key!r} must be a non-empty string"
    if "spec_file_sha256" in data and (not isinstance(data["spec_file_sha256"], str) or not data["spec_file_sha256"]):
        return "'spec_file_sha256' must be a non-empty string"
    files = data.get("files")
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        return "'files' must map file names to sha256s"
    if "spec" in data and not isinstance(data["spec"], dict):
        return "'spec' must be the registered spec, a mapping"
    return None


def sequential_record(looks: tuple[int, ...]) -> dict[str, Any]:
    """The design `register` fixes: every look's boundaries, computed once from the seeded simulation."""
    design = boundaries(looks, WELCH_ALPHA)
    return {"alpha": WELCH_ALPHA, "looks": [look.to_json() for look in design],
            "simulated": operating(design).to_json(),
            "method": f"Wang-Tsiatis efficacy (shape {SHAPE}) calibrated by simulation ({RUNS} runs, seed {SIM_SEED}) "
                      f"to false pass alpha at the null's boundary; binding futility {FUTILITY_FIRST} x n_1/n_k"}


def register(spec: GateSpec, *, supersede: bool = False, now: _dt.datetime | None = None) -> Registration:
    root = spec.root
    if not is_git_worktree(root):
        raise VoicegateError(f"{root} is not a git work tree: registration is a commit "
                             "(run `git init` or `voicegate init`)")
    check_artifact_paths(spec)  # appending to an input, or through a symlink out of the workspace, breaks the gate
    unavailable = spec.view.unavailable()  # a module the view needs: found now, not after a whole `generate`
    if unavailable is not None:
        raise VoicegateError(unavailable)
    check_corpus_words(spec)  # an empty corpus would decide; once registered, the hashes keep it as it is
    check_impostors(spec)     # an impostor that is the author, or that an arm saw, would test nothing
    results = existing_results(spec)
    if results:
        raise VoicegateError(
            f"refusing to register {spec.gate}: results already exist ({_display(spec, results[0])}); "
            "a rule chosen after seeing numbers is what pre-registration prevents")
    previous = load_registration(spec)
    if previous is not None and not supersede:
        raise VoicegateError(f"{spec.gate} is already registered ({_display(spec, previous.path)}); "
                             "use --supersede to replace it while no results exist")
    if previous is not None and is_git_worktree(root):
        # The registration superseded is the one git holds (a record edited in the working tree speaks for nothing).
        held = next(_register_commits(root, spec.gate), None)
        if held is not None:
            previous = Registration(previous.path, held[1], held[0])
    follows = follow_ups(spec, previous)
    now = now or now_utc()
    deciding = get_rule(spec.floor_rule)
    if deciding.registered > now.date():
        raise VoicegateError(f"refusing to register {spec.gate}: its deciding rule {deciding.signature} was registered "
                             f"{deciding.registered.isoformat()}, after this registration's date "
                             f"({now.date().isoformat()})")
    view_day = spec.view.registered
    if view_day is not None and view_day > now.date():
        raise VoicegateError(f"refusing to register {spec.gate}: its view {spec.view.name} was registered "
                             f"{view_day.isoformat()}, after this registration's date ({now.date().isoformat()})")
    data: dict[str, Any] = {
        "gate": spec.gate,
        "spec_path": _display(spec, spec.path),
        "spec_sha256": spec_sha256(spec),
        "spec_file_sha256": sha256_file(spec.path),
        "files": file_hashes(spec),
        "registered_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "voicegate_version": __version__,
        "deciding_rule": spec.floor_rule,
        "rules_in_force": {r.id: {"version": r.version, "registered": r.registered.isoformat()}
                           for r in map(get_rule, rules_in_force(now.date()))},
        "supersedes": None if previous is None else {
            "spec_sha256": previous.spec_sha256,
            "registered_at": previous.registered_at,
            "commit": previous.commit,
        },
        "spec": spec.raw,
    }
    # the adapters' files, where reachable (records without keep their bytes)
    weights = adapter_weights(spec)
    if weights:
        data["adapter_weights"] = weights
    if spec.looks is not None:  # only a sequential design carries its looks: other records keep their bytes
        data["sequential"] = sequential_record(spec.looks)
    if follows:  # only a design that comes after numbers carries it: other records keep their bytes
        data["follows"] = follows
    path = spec.registration_path
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    paths = [str(spec.path), str(path)]
    ident = [] if git(root, "config", "user.email", check=False) else \
        ["-c", "user.name=voicegate", "-c", "user.email=voicegate@localhost"]
    git(root, "add", "--", *paths)
    files = "\n".join(f"{h}  {name}" for name, h in data["files"].items())
    message = (f"voicegate: register {spec.gate}\n\nspec sha256 {data['spec_sha256']} (canonical)\n"
               f"spec file sha256 {data['spec_file_sha256']}  {data['spec_path']}\n"
               f"deciding rule {spec.floor_rule}\n\n{files}\n")
    # The commit carries the registration's own time (the one clock, pinned by SOURCE_DATE_EPOCH): an
    # amendment that cites this registration compares that date with its own (spec._prospective).
    dated = {"GIT_AUTHOR_DATE": data["registered_at"], "GIT_COMMITTER_DATE": data["registered_at"]}
    git(root, *ident, "commit", "-q", "-m", message, "--", *paths, env=dated)
    return Registration(path, data, git(root, "rev-parse", "HEAD"))


def recorded_verdict(record_text: str) -> str:
    """The newest verdict a gate record states, in a phrase ("ships none under global-max-spread@1")."""
    scores = list(_SCORE_HEADING.finditer(record_text))
    if not scores:
        return "no verdict recorded"
    last = scores[-1]
    ships = _SHIPS.search(record_text, last.end())
    shipped = "?" if ships is None else ships.group(1).split(" — ")[0]
    amended = len(_AMEND_HEADING.findall(record_text, last.end()))
    then = f"; {amended} amendment(s) since" if amended else ""
    return f"ships {shipped} under {last.group(1)}{then}"


_SCORE_HEADING = re.compile(r"^## Score — \S+ — rule (\S+)$", re.MULTILINE)
_AMEND_HEADING = re.compile(r"^## Amendment — ", re.MULTILINE)
_SHIPS = re.compile(r"^\*\*Ships \(the rule's recommendation\):\*\* (.*?)\.?$", re.MULTILINE)


def follow_ups(spec: GateSpec, previous: Registration | None) -> list[dict[str, Any]]:
    """The earlier designs this registration follows, each with its numbers' commit and verdict (empty: none).

    A design is a follow-up when numbers already exist for the same thing: this gate's record holds score entries
    (its run data was deleted before `--supersede`: more seeds after a FAIL is such a design), or another gate's
    record does and its registration pinned the same weights as one of this gate's candidates (a new name for the
    same arms). Both are read from chained records and git, never from a run directory.
    """
    out: list[dict[str, Any]] = []
    text = _record_text(spec)
    own = scored_under(text)
    if own:
        out.append({"gate": spec.gate, "why": "re-registered after its numbers were recorded",
                    "registration_commit": previous.commit if previous else None,
                    "spec_sha256": previous.spec_sha256 if previous else own[-1].spec_sha256,
                    "numbers_at": numbers_at(text), "verdict": recorded_verdict(text)})
    mine = {w["sha256"]: arm for arm, w in adapter_weights(spec).items()}
    if not mine:
        return out
    for path in sorted((spec.root / "preregistrations").glob(f"*{SUFFIX}")):
        gate = path.name[:-len(SUFFIX)]
        if gate == spec.gate:
            continue
        try:
            other = strict_json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        pinned = other.get("adapter_weights") if isinstance(other, dict) else None
        same = sorted({mine[w["sha256"]] for w in (pinned or {}).values()
                       if isinstance(w, dict) and w.get("sha256") in mine})
        record = _other_record(spec.root, other, gate)
        theirs = scored_under(record) if same else []
        if not theirs:
            continue
        out.append({"gate": gate, "why": f"{', '.join(same)}'s weights were gated there (same sha256)",
                    "registration_commit": theirs[-1].commit, "spec_sha256": theirs[-1].spec_sha256,
                    "numbers_at": numbers_at(record), "verdict": recorded_verdict(record)})
    return out


def _other_record(root: Path, registration: dict[str, Any], gate: str) -> str:
    raw = registration.get("spec")
    arts = raw.get("artifacts") if isinstance(raw, dict) else None
    rel = arts.get("record") if isinstance(arts, dict) else None
    path = Path(rel) if isinstance(rel, str) and rel else Path("gates") / f"{gate}.md"
    path = path if path.is_absolute() else root / path
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def _diff(old: Any, new: Any, key: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for k in sorted(set(old) | set(new), key=str):
            sub = f"{key}.{k}" if key else str(k)
            if k not in old:
                out.append(f"{sub} (added)")
            elif k not in new:
                out.append(f"{sub} (removed)")
            else:
                out += _diff(old[k], new[k], sub)
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for i, (a, b) in enumerate(zip(old, new, strict=True)) for d in _diff(a, b, f"{key}[{i}]")]
    if canonical_json(old) != canonical_json(new):
        return [f"{key} (registered {canonical_json(old)}, now {canonical_json(new)})"]
    return []


def check_registered(spec: GateSpec) -> Registration:
    """Refuse to go on when the spec or any file it names differs from what was registered (as git holds it)."""
    reg = registered(spec)
    check_against(spec, reg)
    return reg


def check_against(spec: GateSpec, reg: Registration) -> None:
    """Refuse when the spec or any file it names differs from what `reg` records (git aside)."""
    if spec_sha256(spec) != reg.spec_sha256:
        changed = _diff(reg.data.get("spec", {}), spec.raw) or ["(content)"]
        raise VoicegateError(f"{_display(spec, spec.path)} differs from its registration: {'; '.join(changed)}")
    now = file_hashes(spec)
    then = _same_files(reg.data.get("files", {}), now)
    for name in sorted(set(then) | set(now)):
        if name not in now:
            raise VoicegateError(f"registered file no longer matched by the spec: {name}")
        if name not in then:
            raise VoicegateError(f"file not in the registration: {name}")
        if now[name] != then[name]:
            new_gate = (f"register a new gate for the new file (results of {spec.gate} exist, so it cannot be "
                        "re-registered)" if existing_results(spec) else
                        f"re-register with the new file (`voicegate register {spec.gate} --supersede`: no "
                        "results exist yet)")
            raise VoicegateError(f"registered file changed since registration: {name}; restore the file that has "
                                 f"the recorded sha256 {then[name]} (now {now[name]}), or {new_gate}")


def uncommitted_pins(spec: GateSpec) -> tuple[list[str], list[str]]:
    """(untracked, changed): pinned files inside the workspace's repository that git does not
    track, and tracked ones whose bytes differ from the last commit. A clone then cannot check
    the hash the registration pins. Files outside the repository (shared corpora) are not git's."""
    root = spec.root
    top = git(root, "rev-parse", "--show-toplevel", check=False)
    if not top:
        return [], []
    top_path = Path(top).resolve()
    names: dict[str, str] = {}  # path relative to root (what git prints) -> how the record names it
    for p in spec.referenced_files():
        try:
            Path(p).resolve().relative_to(top_path)
        except ValueError:
            continue
        names[Path(os.path.relpath(Path(p).resolve(), root)).as_posix()] = _display(spec, p)
    if not names:
        return [], []
    tracked = set(git(root, "ls-files", "-z", "--", *names, check=False).split("\0"))
    changed = set(git(root, "diff", "--name-only", "--relative", "-z", "HEAD", "--", *names,
                      check=False).split("\0"))
    untracked = [shown for rel, shown in names.items() if rel not in tracked]
    modified = [shown for rel, shown in names.items() if rel in tracked and rel in changed]
    return sorted(untracked), sorted(modified)


def words_warning(spec: GateSpec) -> str | None:
    words = spec.words_per_arm_seed()
    need = spec.view.reliable_words  # the view's descriptor, never its name
    if need is not None and words < need:
        return (f"warning: {len(spec.prompts)} prompts x ~{spec.expected_words} words = ~{words:,} words "
                f"per (arm, seed); {spec.view.title} needs ~{need:,} to be reliable")
    return None


