"""Prospective registrations: the evidence an amendment cites that its new rule was chosen blind.

An amendment may move a gate to another floor rule only by citing a registration
of ANOTHER gate, found in this workspace's git history, whose spec declared that
rule as its deciding rule, committed before the amendment and before any of that
other gate's results (docs/design.md §6b; lv-bronte's correction cites lv-hemingway's
commit 0bb4938 so). Without it, `amend` would let a user try rules until the
verdict they want appears: the failure pre-registration exists to prevent.

Everything here is read from git (`git log`, `git show COMMIT:path`), so `verify`
can ask the same questions again later: a cited commit rewritten out of history,
or whose record no longer says what the citation says, breaks the amendment.

What counts as the other gate's registration is what `register` wrote, as of its
newest commit in HEAD's history (a superseded registration no longer speaks for the
gate): a commit with voicegate's message touching only the record
`preregistrations/<gate>.registration.json` and its spec, the spec beside it at
that commit hashing (canonically) to the record's `spec_sha256`. A registration
record written by hand and committed, or a commit that carried other files in with
it, is not one (`written_by_register`). What counts as its results is what git
holds of its record: a voicegate entry in it at that commit, or numbers the record
says were first recorded before it. The run directory is not evidence: it is not
in git, and deleting it must change no citation.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from voicegate._errors import VoicegateError
from voicegate.spec._workspace import git, git_env, is_git_worktree

REGISTRATIONS = "preregistrations"
SUFFIX = ".registration.json"


@dataclass(frozen=True)
class Citation:
    """Another gate's registration that declared the amendment's new rule, as git holds it."""

    gate: str
    commit: str
    spec_sha256: str
    rule: str
    committed: str  # the commit's date, UTC, "%Y-%m-%dT%H:%M:%SZ" (information: order is the history's)
    # The order against the amended gate's numbers, from git's history: the commit at which that gate's
    # first score was recorded (None: its record predates the anchor line), and how many commits after
    # it the cited registration came (0: an ancestor of it, prospective).
    numbers_at: str | None = None
    after_numbers: int = 0

    @property
    def post_hoc(self) -> bool:
        """Registered after the amended gate's numbers existed: a correction, not a pre-registered rule."""
        return self.after_numbers > 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"gate": self.gate, "commit": self.commit, "spec_sha256": self.spec_sha256,
                               "rule": self.rule, "committed": self.committed}
        if self.numbers_at is not None:  # older citations keep their bytes
            out.update(numbers_at=self.numbers_at, after_numbers=self.after_numbers, post_hoc=self.post_hoc)
        return out

    @classmethod
    def from_json(cls, data: Any) -> Citation | None:
        if not isinstance(data, dict):
            return None
        try:
            fields = {k: str(data[k]) for k in ("gate", "commit", "spec_sha256", "rule", "committed")}
        except KeyError:
            return None
        at = data.get("numbers_at")
        after = data.get("after_numbers")
        return cls(**fields, numbers_at=str(at) if isinstance(at, str) else None,
                   after_numbers=after if isinstance(after, int) and not isinstance(after, bool) else 0)

    @property
    def sentence(self) -> str:
        if self.post_hoc:
            return (f"{self.rule} was registered for {self.gate} AFTER this gate's numbers: commit {self.commit} "
                    f"({self.committed}), {self.after_numbers} commit(s) after the first score's commit "
                    f"{self.numbers_at}: a post-hoc correction, not a pre-registered rule")
        return (f"{self.rule} was registered prospectively for {self.gate}: commit {self.commit} "
                f"({self.committed}), spec sha256 {self.spec_sha256[:12]}..., before this amendment and before "
                f"any of {self.gate}'s results")


# The score entry's line that anchors a gate's numbers in git's history (artifacts' record_score.md.j2
# writes it; amend and verify read it back): the workspace's HEAD when the first score was recorded.
NUMBERS_AT = re.compile(r"numbers first recorded at workspace commit `([0-9a-f]{40})`")


def numbers_at(record_text: str) -> str | None:
    """The commit a gate record's FIRST score entry names as its numbers' place in history (None: none named)."""
    m = NUMBERS_AT.search(record_text)
    return m.group(1) if m else None


def recorded_numbers_at(record: Path) -> str | None:
    """`numbers_at` of the gate record at `record` (None: no record yet, or none named in it)."""
    return numbers_at(record.read_text(encoding="utf-8", errors="replace")) if record.is_file() else None


def head(root: Path) -> str | None:
    """The workspace's HEAD commit (None: not a git work tree, or no commit yet)."""
    if not is_git_worktree(root):
        return None
    out = git(root, "rev-parse", "--verify", "-q", "HEAD", check=False)
    return out if re.fullmatch(r"[0-9a-f]{40}", out or "") else None


def is_ancestor(root: Path, older: str, newer: str) -> bool:
    """Whether `older` is `newer` or one of its ancestors, in the repository's history (not its clocks)."""
    import subprocess

    done = subprocess.run(["git", "merge-base", "--is-ancestor", older, newer], cwd=root, check=False,
                          capture_output=True, text=True, encoding="utf-8", errors="surrogateescape", env=git_env())
    return done.returncode == 0


def commits_after(root: Path, anchor: str, commit: str) -> int:
    """How many commits `commit` lies after `anchor` (0 when it is `anchor` or an ancestor of it)."""
    if is_ancestor(root, commit, anchor):
        return 0
    count = git(root, "rev-list", "--count", f"{anchor}..{commit}", check=False)
    return max(1, int(count)) if (count or "").isdigit() else 1


def _stamp(when: _dt.datetime) -> str:
    return when.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_time(text: Any) -> _dt.datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        when = _dt.datetime.fromisoformat(text)  # python >= 3.11 reads a trailing Z
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=_dt.UTC)


def commit_time(root: Path, commit: str) -> _dt.datetime | None:
    """The commit's own date (information beside the history's order, never the order itself)."""
    return _parse_time(git(root, "log", "-1", "--format=%cI", commit, "--", check=False))


def _in_history(root: Path, commit: str) -> bool:
    return git(root, "cat-file", "-t", commit, check=False) == "commit" and is_ancestor(root, commit, "HEAD")


def _show_json(root: Path, commit: str, rel: str) -> Any:
    text = git(root, "show", f"{commit}:./{rel}", check=False)  # ./: relative to the workspace, not the repo top
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def record_at(root: Path, commit: str, gate: str) -> dict[str, Any] | None:
    data = _show_json(root, commit, f"{REGISTRATIONS}/{gate}{SUFFIX}")
    if not isinstance(data, dict) or not isinstance(data.get("spec_sha256"), str):
        return None
    return data


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _spec_rel(record: dict[str, Any], gate: str) -> str:
    """The spec file beside the registration record, workspace-relative, as the record names it."""
    rel = record.get("spec_path")
    default = f"{REGISTRATIONS}/{gate}.yaml"
    return rel if isinstance(rel, str) and rel == default else default


def written_by_register(root: Path, commit: str, gate: str, record: dict[str, Any]) -> str | None:
    """What shows that `commit` is not the registration `register` wrote for `gate` (None: it is).

    `register` commits exactly the spec and its record, with the message "voicegate: register GATE", and
    the record's `spec_sha256` is the canonical hash of that very spec: a record written by hand (a zero
    hash, no spec beside it), or committed with other files, is not a registration an amendment may cite.
    """
    import yaml

    from voicegate._hashing import sha256_json
    from voicegate._yaml import load_strict

    short = commit[:12]
    subject = git(root, "log", "-1", "--format=%s", commit, "--", check=False)
    if subject != f"voicegate: register {gate}":
        return (f"commit {short} was not made by `voicegate register {gate}` (its message is "
                f"{subject[:60]!r}); a registration is only what register commits")
    spec_rel = _spec_rel(record, gate)
    reg_rel = f"{REGISTRATIONS}/{gate}{SUFFIX}"
    touched = set(git(root, "diff-tree", "--no-commit-id", "--name-only", "-r", "--root", "--relative",
                      "--no-renames", commit, check=False).splitlines())
    others = sorted(touched - {spec_rel, reg_rel})
    if reg_rel not in touched or others:
        what = f"also touches {others[0]}" if others else f"does not touch {reg_rel}"
        return f"commit {short} {what}: register commits only a spec and its registration record"
    recorded = record.get("spec_sha256")
    if not isinstance(recorded, str) or not _SHA256.fullmatch(recorded):
        return f"{gate}'s registration at commit {short} records no sha256 as its spec's hash ({str(recorded)[:20]!r})"
    text = git(root, "show", f"{commit}:./{spec_rel}", check=False)
    if not text:
        return f"commit {short} holds no spec {spec_rel} beside {gate}'s registration record"
    try:
        raw = load_strict(text)
    except yaml.YAMLError:
        return f"{spec_rel} at commit {short} is not a readable spec"
    if sha256_json(raw) != recorded:
        return (f"{spec_rel} at commit {short} hashes to {sha256_json(raw)[:12]}..., not the registration's "
                f"spec sha256 {recorded[:12]}...: the record was not written by register for that spec")
    from voicegate.spec._check import check_spec
    from voicegate.spec._spec import name_pattern

    try:  # a two-line spec hashed right is still not a design register would have accepted
        check_spec(raw, f"{spec_rel} at commit {short}", name_pattern=name_pattern())
    except VoicegateError as exc:
        return f"not a spec `voicegate register` accepts: {exc}"
    return None


def _deciding_rule(record: dict[str, Any]) -> str | None:
    spec = record.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("floor"), dict) and spec["floor"].get("rule"):
        return str(spec["floor"]["rule"])
    rule = record.get("deciding_rule")
    return str(rule) if rule else None


def registration_commits(root: Path) -> dict[str, str]:
    """gate -> the newest commit in HEAD's history that touched its registration record (oldest gate first)."""
    out = git(root, "log", "--format=commit %H", "--name-only", "--no-renames", "--relative", "--",
              f"{REGISTRATIONS}/*{SUFFIX}", check=False)
    newest: dict[str, str] = {}
    commit = ""
    for line in out.splitlines():
        if line.startswith("commit "):
            commit = line.split()[1]
        elif (line.startswith(f"{REGISTRATIONS}/") and line.endswith(SUFFIX)
              and "/" not in line[len(REGISTRATIONS) + 1:]):
            gate = line[len(REGISTRATIONS) + 1:-len(SUFFIX)]
            newest.setdefault(gate, commit)
    return dict(reversed(list(newest.items())))


def _record_path(record: dict[str, Any], gate: str) -> str:
    spec = record.get("spec")
    arts = spec.get("artifacts") if isinstance(spec, dict) else None
    rel = arts.get("record") if isinstance(arts, dict) else None
    return str(rel) if isinstance(rel, str) and rel and not Path(rel).is_absolute() else f"gates/{gate}.md"


def why_not(root: Path, gate: str, commit: str, rule: str, when: _dt.datetime, *,
            this_gate: str, spec_sha256: str | None = None) -> tuple[str | None, Citation | None]:
    """(what disqualifies `gate`'s registration at `commit`, None) or (None, the citation it makes)."""
    short = commit[:12]
    if gate == this_gate:
        return f"{gate} is the gate being amended; the rule must have been registered for another gate", None
    if not _in_history(root, commit):
        return (f"{gate}'s registration commit {short} is not in this workspace's git history "
                "(rewritten or removed)"), None
    record = record_at(root, commit, gate)
    if record is None:
        return f"commit {short} holds no registration record of {gate} ({REGISTRATIONS}/{gate}{SUFFIX})", None
    forged = written_by_register(root, commit, gate, record)
    if forged is not None:
        return forged, None
    declared = _deciding_rule(record)
    if declared != rule:
        return f"{gate}'s registration (commit {short}) declares {declared or 'no rule'}, not {rule}", None
    if spec_sha256 is not None and record["spec_sha256"] != spec_sha256:
        return (f"{gate}'s registration at commit {short} has spec sha256 {record['spec_sha256'][:12]}..., "
                f"not the cited {spec_sha256[:12]}..."), None
    committed = commit_time(root, commit)
    if committed is None:
        return f"commit {short} has no readable date", None
    # Order is the history's, never a clock: in HEAD's history (above) is "before this amendment"; the cited
    # gate's results are what git holds of its record (its run directory is not evidence: it is not in git).
    entries = git(root, "show", f"{commit}:./{_record_path(record, gate)}", check=False)
    if "voicegate:entry" in entries:
        return f"{gate}'s gate record already held results at its registration commit {short}", None
    now = git(root, "show", f"HEAD:./{_record_path(record, gate)}", check=False)
    first = numbers_at(now)
    if first is not None and not is_ancestor(root, commit, first):
        return (f"{gate}'s own numbers were first recorded at commit {first[:12]}, which its registration "
                f"commit {short} does not precede"), None
    return None, Citation(gate=gate, commit=commit, spec_sha256=str(record["spec_sha256"]), rule=rule,
                          committed=_stamp(committed))


def _ordered(root: Path, citation: Citation, anchor: str | None) -> Citation:
    """The citation with its order against the amended gate's numbers (anchor: their commit; None: unknown)."""
    if anchor is None:
        return citation
    return replace(citation, numbers_at=anchor, after_numbers=commits_after(root, anchor, citation.commit))


def find_citation(root: Path, rule: str, when: _dt.datetime, *, this_gate: str,
                  registered_in: str | None = None, anchor: str | None = None) -> Citation:
    """The registration an amendment to `rule` cites; refused (one line) when there is none.

    `anchor`: the commit at which the amended gate's numbers were first recorded. A registration that is
    an ancestor of it is prospective; one after it is cited as a post-hoc correction (`Citation.post_hoc`),
    and a prospective one is preferred when both exist.
    """
    if not is_git_worktree(root):
        raise VoicegateError(f"{root} is not a git work tree: an amendment must cite another gate's registration "
                             f"of {rule} from the workspace's git history")
    from voicegate.spec._spec import check_gate_name

    commits = registration_commits(root)
    if registered_in is not None:
        check_gate_name(registered_in)
        if registered_in not in commits:
            raise VoicegateError(f"--registered-in {registered_in}: no registration of {registered_in} in this "
                                 f"workspace's git history ({REGISTRATIONS}/{registered_in}{SUFFIX} was never "
                                 "committed)")
        problem, citation = why_not(root, registered_in, commits[registered_in], rule, when, this_gate=this_gate)
        if citation is None:
            raise VoicegateError(f"--registered-in {registered_in} cannot be cited: {problem}")
        return _ordered(root, citation, anchor)
    problems = []
    found: list[Citation] = []
    for gate, commit in commits.items():
        try:
            check_gate_name(gate)  # a stray file is not a gate, and its name never reaches an artifact
        except VoicegateError:
            continue
        if gate == this_gate:
            continue
        problem, citation = why_not(root, gate, commit, rule, when, this_gate=this_gate)
        if citation is not None:
            found.append(_ordered(root, citation, anchor))
            if not found[-1].post_hoc:
                return found[-1]
        else:
            problems.append(problem)
    if found:
        return found[0]  # only registrations after the numbers: the caller decides whether a correction may cite one
    seen = f" (looked at {len(problems)}: {problems[0]}{'; ...' if len(problems) > 1 else ''})" if problems else ""
    raise VoicegateError(
        f"no prospective registration of {rule}: an amendment to it must cite another gate's registration, "
        f"committed in this workspace's git history before the amendment and before any of that gate's results, "
        f"whose spec declares floor: {{rule: {rule}}}{seen}; register such a gate first (or name it with "
        "--registered-in GATE)")


def check_citation(root: Path, citation: Citation, when: _dt.datetime | None, *, this_gate: str) -> str | None:
    """What is wrong with a recorded citation now (None: git still holds it as cited)."""
    problem, _ = why_not(root, citation.gate, citation.commit, citation.rule,
                         when or _dt.datetime.max.replace(tzinfo=_dt.UTC), this_gate=this_gate,
                         spec_sha256=citation.spec_sha256)
    return problem
