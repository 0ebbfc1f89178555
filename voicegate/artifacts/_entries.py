"""The three kinds of entry — score, ship, amend — and how each reaches every artifact.

One event (a score, a person's shipping decision, an amendment) becomes one
entry in the gate record (every arm, every number), one in the adapter README
and one comment block in compose.yaml (short: the candidates' verdict lines,
the shipped or recommended one first): one entry for each artifact kind in
`spec.ARTIFACT_KINDS` the spec names, rendered from the kind's template for
the event and written by its chain format's `_Writer`. All of them, with the run's own state,
are written as one `_transaction` under the gate lock and every artifact's
lock, taken before the first byte is written: a `ship` and an `amend` run at
the same moment produce their entries one after the other in every artifact,
and a kill leaves every file with all of the entry or none of it.

The policy of an amendment (which rule, which generations) is `voicegate.gate`'s;
this module only renders entries and appends them.

What was last recorded lives in `<run_dir>/recorded.json`: the current result
(the last score or amendment), and the sha256 of the result recorded under
each rule. Re-scoring the same generations under the same rule gives the same
result bytes (scoring is pure), so `record_score` sees the same sha256 and
appends nothing: the record is current. Decisions and amendments are also kept
structurally (`decisions.jsonl`, `amendments.jsonl`) for the report.

Over 400 lines because every event (score, ship, note, amendment, anchor) goes through one
transaction (preflight, render, commit) whose steps are private to it.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from voicegate import _json as strict_json
from voicegate._atomic import sweep_fixed_tmp, write_atomic
from voicegate._clip import clip
from voicegate._clock import now_utc
from voicegate._errors import VoicegateError
from voicegate._hashing import sha256_json
from voicegate._locks import gate_lock as _gate_lock
from voicegate.artifacts import _chain, _compose, _ledger, _transaction
from voicegate.artifacts._format import candidates, floors_shown, one_line, others_shown, render, stamp
from voicegate.artifacts._recorded import Entry
from voicegate.artifacts._transaction import Write, read_or_none
from voicegate.run import RunManifest, read_generations, read_rows
from voicegate.scoring import GateResult, is_result
from voicegate.spec import ArtifactKind, Event, GateSpec, Registration, artifact_kind, check_artifact_paths, shown_path

if TYPE_CHECKING:
    # The state in force is computed in `gate` (one layer up) and handed down: an entry renders it, never decides it.
    from voicegate.gate import Standing

# Given the recorded state (recorded.json, read under the verdict lock) and its result: what is in force.
StandingOf = Callable[[dict[str, Any], GateResult], "Standing"]

# -- state ---------------------------------------------------------------------------


def _display(spec: GateSpec, path: Path) -> str:
    return shown_path(spec.root, path)


def load_state(spec: GateSpec) -> dict[str, Any] | None:
    """recorded.json, checked to be what `_current` writes; a damaged one is refused, naming it."""
    path = spec.run.recorded
    if not path.exists():
        return None

    def damaged(why: str) -> VoicegateError:
        return VoicegateError(f"{path}: {why}; the record of what the artifacts were told is damaged "
                              "(restore it; it is not meant to be edited)")

    try:
        state = strict_json.loads(path.read_bytes())
    except ValueError as exc:
        raise damaged(f"not valid JSON ({exc})") from None
    if not isinstance(state, dict):
        raise damaged("not a JSON object")
    results = state.get("results")
    if not isinstance(results, dict) or not all(isinstance(v, str) for v in results.values()):
        raise damaged("'results' must map rule ids to result sha256s")
    if "current" in state:
        current = state["current"]
        if not is_result(current):
            raise damaged("'current' is not a score result")
        if results.get(current.get("rule")) != sha256_json(current):
            raise damaged("'current' is not the result 'results' records for its rule")
    return state


def _state_write(spec: GateSpec, state: dict[str, Any]) -> Write:
    path = spec.run.recorded
    data = (json.dumps(state, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    return Write(path, read_or_none(path), data)


def _row_appended(path: Path, row: dict[str, Any]) -> Write:
    """A JSON-lines file with one more row, as a transaction's write."""
    before = read_or_none(path)
    head = before or b""
    if head and not head.endswith(b"\n"):
        head += b"\n"
    return Write(path, before, head + (json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return read_rows(path)


def decisions(spec: GateSpec) -> list[dict[str, Any]]:
    return _jsonl(spec.run.decisions)


def amendments(spec: GateSpec) -> list[dict[str, Any]]:
    return _jsonl(spec.run.amendments)


def notes(spec: GateSpec) -> list[dict[str, Any]]:
    return _jsonl(spec.run.notes)


def result_sha256(result: GateResult) -> str:
    return sha256_json(result.to_json())


def _artifact_paths(spec: GateSpec) -> list[Path]:
    return list(spec.artifacts.named().values())


def _kinds(spec: GateSpec) -> list[tuple[ArtifactKind, Path]]:
    """The artifacts the spec names, with their kinds, in `ARTIFACT_KINDS`'s order (the record first)."""
    return [(artifact_kind(name), path) for name, path in spec.artifacts.named().items()]


@contextmanager
def verdict_lock(spec: GateSpec, command: str) -> Iterator[list[str]]:
    """The gate's lock and every artifact's, all taken before anything is read or written.

    An unfinished entry left by a killed command is completed first; the lines
    yielded say so (empty when there was none).
    """
    with _gate_lock(spec.run_dir, spec.gate, command), ExitStack() as stack:
        # One order for everyone (real paths, sorted): two gates sharing compose.yaml cannot deadlock.
        for path in sorted({os.path.realpath(p) for p in _artifact_paths(spec)}):
            stack.enter_context(_chain.locked(Path(path)))
        # Again, under the locks: since register, an artifact may have been swapped for a symlink.
        check_artifact_paths(spec)
        # A writer killed mid-write left its temp beside the file (beside the weights, for a README).
        sweep_fixed_tmp([*_artifact_paths(spec), *spec.run.state_files])
        note = _transaction.complete(spec.run)
        _check_ledger_kept(spec)
        _check_entries_kept(spec)
        yield [note] if note else []


def _check_ledger_kept(spec: GateSpec) -> None:
    """Refuses when the run's ledger is gone but recorded.json (written only beside a ledger line) is here.

    An entry appended now would start a new ledger after the lost one, and `verify` would read every earlier entry
    as predating it: the deletion `verify` calls BROKEN would be laundered into a note.
    """
    if spec.run.recorded.is_file() and not spec.run.ledger.exists():
        raise VoicegateError(f"{_display(spec, spec.run.ledger)}: {spec.gate}'s ledger is gone while its run data is "
                             f"here ({_display(spec, spec.run.recorded)}), so no entry is appended (`voicegate verify` "
                             "says BROKEN): restore the ledger from a backup")


def _check_entries_kept(spec: GateSpec) -> None:
    """Refuses when the gate record does not verify (an entry edited by hand), or an artifact no longer holds an
    entry the run's ledger lists for it (the file deleted, emptied, cut back, or an entry replaced by hand).

    An entry appended then would begin the file again, or follow a gap, with words (what is in force, how it came
    to decide) read from a record that lost the entries that said so: `verify`'s BROKEN stays, but the new entry
    would state something no other surface says.
    """
    from voicegate.artifacts._verify import ledger_problems, record_problem

    # The record's own chain too: what is in force, and what the gate was ever decided under, are read from it.
    edited = record_problem(spec)
    found = [(spec.artifacts.record, edited)] if edited is not None else ledger_problems(spec)
    for path, problem in found[:1]:
        raise VoicegateError(f"{_display(spec, path)}: {problem} (`voicegate verify` says BROKEN), so no entry is "
                             "appended: restore the file (from git, or a backup) and run the command again")


# -- writing all three ---------------------------------------------------------------


def _featured(spec: GateSpec, recommended: str | None) -> tuple[str | None, str]:
    shipped = decisions(spec)
    if shipped:
        return shipped[-1]["arm"], "shipped"
    return recommended, "recommended"


def _preflight(spec: GateSpec, event: str, bodies: dict[str, str]) -> dict[str, str]:
    """Refuse before any byte is written; returns why an artifact gets no entry, by kind (none: all do)."""
    for kind, path in _kinds(spec):
        if kind.folder and not path.parent.is_dir():
            raise VoicegateError(f"{path.parent}: {kind.folder} does not exist; {kind.noun} not writable")
    # An atomic write needs a temp file beside its target: a read-only mount (adapters are
    # often mounted :ro) must be refused here, before the record gets an entry the README lacks.
    for _, path in _kinds(spec):
        where = path.parent
        while not where.exists():
            where = where.parent
        if not os.access(where, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            raise VoicegateError(f"{path}: not writable (a read-only mount?); nothing written")
    skipped: dict[str, str] = {}
    for kind, path in _kinds(spec):
        try:
            _WRITERS[kind.chain].check(spec, path, bodies[kind.name])  # the full check, no write
        except VoicegateError as exc:
            # A gate is scored before its adapter is listed for deploy; shipping it is not.
            if event in kind.required_for:
                raise
            skipped[kind.name] = str(exc)
    return skipped


@dataclass
class _Entry:
    """One verdict's writes, and what to tell the user about them."""

    writes: list[Write]
    ledger: list[dict[str, Any]]
    said: list[str]


def _md_check(spec: GateSpec, path: Path, body: str) -> None:
    """Nothing to check before a markdown append beyond what `_md_write` refuses itself."""


def _md_write(spec: GateSpec, artifact: str, path: Path, body: str, kind: str, entry: _Entry, header: str = "") -> None:
    before = read_or_none(path)
    if before and (tail := _chain.md_tail(before)):
        # Sealing them into the next entry's hash would make `verify` vouch for bytes voicegate never wrote.
        newest = _chain.md_markers(before)[-1].number
        raise VoicegateError(f"{_display(spec, path)}: {_chain.tail_problem(tail, newest)}; nothing written")
    new, number, digest = _chain.md_appended(before or b"", body, header=header)
    entry.writes.append(Write(path, before, new))
    entry.ledger.append({"artifact": artifact, "path": _display(spec, path), "number": number, "sha256": digest})
    entry.said.append(f"{_display(spec, path)}: appended entry {number} ({kind})")


def _compose_check(spec: GateSpec, path: Path, body: str) -> None:
    if not path.is_file():
        raise VoicegateError(f"{path}: compose file not found")
    _compose.plan(path, path.read_bytes(), spec.gate, _lines(body))


def _compose_write(spec: GateSpec, artifact: str, path: Path, body: str, kind: str, entry: _Entry,
                   header: str = "") -> None:
    lines = _lines(body)
    before = path.read_bytes()
    new, item = _compose.plan(path, before, spec.gate, lines)
    newest = max(_chain.compose_markers(new.splitlines(keepends=True)), key=lambda m: m.number)
    entry.writes.append(Write(path, before, new))
    entry.ledger.append({"artifact": artifact, "path": _display(spec, path), "number": newest.number,
                         "sha256": newest.sha256, "body": newest.body})
    entry.said.append(_compose.entry_message(Path(_display(spec, path)), lines, item))


def _lines(body: str) -> list[str]:
    """A compose entry's comment lines, as its template renders them."""
    return body.rstrip("\n").split("\n")


@dataclass(frozen=True)
class _Writer:
    """How an entry reaches a file of one chain format (`_chain.CHAINS` verifies what it wrote)."""

    check: Callable[[Any, Path, str], None]  # refuses (VoicegateError) before any byte is written
    write: Callable[..., None]               # the entry's Write, ledger line and message, into `_Entry`


_WRITERS = {"markdown": _Writer(_md_check, _md_write), "compose": _Writer(_compose_check, _compose_write)}


def _render_all(spec: GateSpec, event: Event, ctx: dict[str, Any]) -> _Entry:
    """Every artifact's new bytes, rendered and checked in memory (the caller holds `verdict_lock`)."""
    kinds = _kinds(spec)
    bodies = {kind.name: render(kind.template_for(event), **ctx) for kind, _ in kinds}
    skipped = _preflight(spec, event, bodies)
    entry = _Entry([], [], [])
    carried = [kind.noun for kind, _ in kinds if kind.name not in skipped]
    for kind, path in kinds:
        if kind.name in skipped:
            entry.said.append(f"{_display(spec, path)}: {kind.noun} not written — "
                              f"{skipped[kind.name].replace(str(path) + ': ', '')} "
                              f"(the {' and '.join(carried)} {'carries' if len(carried) == 1 else 'carry'} the entry)")
            continue
        header = render(kind.header, **ctx) if kind.header else ""
        _WRITERS[kind.chain].write(spec, kind.name, path, bodies[kind.name], event, entry, header)
    return entry


def _commit(spec: GateSpec, kind: str, when: _dt.datetime, entry: _Entry, state_writes: list[Write],
            result: GateResult | str) -> list[str]:
    """The artifacts, the run's state and the ledger line, as one transaction (`result`: the entry's result, or
    the sha256 of what it states when it states no result)."""
    before = read_or_none(spec.run.ledger)
    digest = result if isinstance(result, str) else result_sha256(result)
    ledger = Write(spec.run.ledger, before, _ledger.appended(before, {
        "kind": kind, "time": stamp(when), "gate": spec.gate, "result_sha256": digest,
        "entries": entry.ledger}))  # chained: verify sees a ledger line deleted, swapped or dropped
    _transaction.commit(spec.run, kind, stamp(when), entry.writes + state_writes + [ledger])
    return entry.said


def _base_ctx(spec: GateSpec, result: GateResult, when: _dt.datetime, standing: Standing | None = None
              ) -> dict[str, Any]:
    look = None if standing is None else standing.look
    # what ships: a registered sequential design's look decides it, the fixed rule's pick otherwise
    recommended = result.ships if standing is None or look is None else standing.ships
    featured, featured_as = _featured(spec, recommended)
    rules = result.rule_ids()
    return {
        "look_state": look, "recommended": recommended,
        "standing": standing, "floors_shown": floors_shown(len(rules)), "others_shown": others_shown(len(rules)),
        "gate": spec.gate, "author": spec.author, "spec_path": _display(spec, spec.path),
        "when": stamp(when), "date": when.date().isoformat(),
        "record": _display(spec, spec.artifacts.record),
        "result": result, "result_sha256": result_sha256(result),
        "candidates": candidates(result, featured), "featured": featured, "featured_as": featured_as,
        "rules": rules,
    }


def _run_ctx(spec: GateSpec, run: RunManifest | None) -> dict[str, Any]:
    """What the record says about the run, whichever command wrote run.json."""
    rows = read_generations(spec.generations_path)
    run = run or RunManifest.from_json({})
    return {
        "source": run.source or "generated",
        "file": run.file or "?", "file_sha256": run.file_sha256 or "?",
        "seat": run.seat_url or spec.seat.url,
        "vllm_version": run.seat_version or "unknown",
        "rows": len(rows), "voice_rows": sum(1 for r in rows if r.get("kind", "voice") == "voice"),
        "probe_rows": sum(1 for r in rows if r.get("kind") == "probe"),
        "arms": len(spec.arms), "seeds": len(spec.seeds), "prompts": len(spec.prompts),
    }


SPANS_FORMAT = 2
"""The record's span list: 1 listed every span as found (a span copied under three seeds came
three times); 2 lists identical spans once, with "× N seeds". The list's heading says 2."""


def _spans(result: GateResult) -> list[dict[str, Any]]:
    from voicegate._figures import once_each

    out = []
    for arm in result.arms:
        for span, times in once_each(arm.spans[:3]):
            text = " ".join(span.text.split())
            out.append({"arm": arm.name, "tokens": "?" if span.tokens is None else span.tokens,
                        "text": clip(text, 120, ellipsis="..."), "times": times})
    return out


# -- score ---------------------------------------------------------------------------


def record_score(spec: GateSpec, registration: Registration, result: GateResult, run: RunManifest | None,
                 *, now: _dt.datetime | None = None, scores: str | None = None,
                 error_rates: list[str] | None = None, standing: Standing | None = None,
                 look: list[str] | None = None, in_force: GateResult | None = None) -> list[str]:
    """Append a score's verdicts to all three artifacts, unless this very result is already recorded.

    `scores` (the result's JSON text) goes to `scores.json` first, under the same gate lock. `error_rates`: the
    statement's lines (`gate._error_rates`), on the record's entry (None: not stated, an older gate). `look`: a
    sequential design's decision at the look scored, a line a candidate (None: the fixed design). `in_force`: the
    decision of the amendment in force on these generations, re-scored (None: none is), which rebuilds a missing
    recorded.json when the record's newest verdict is that amendment.
    """
    when = now or now_utc()
    digest = result_sha256(result)
    with verdict_lock(spec, "score") as said:
        if scores is not None:
            write_atomic(spec.run.scores, scores, fixed_tmp=True)
        loaded = load_state(spec)
        state = loaded or {"results": {}}
        if loaded is None:
            state, newest = _state_from_record(spec, result)
            if newest is not None:
                return said + _rebuild(spec, state, newest, result if newest.kind == "score" else in_force, when)
        if state["results"].get(result.rule) == digest:
            return said + [(f"{_display(spec, spec.artifacts.record)}: the record is current (same generations, "
                            f"same rule {result.rule}); nothing appended")]
        ctx = _base_ctx(spec, result, when, standing or _registered(result))
        reg = registration.data
        ctx["reg"] = {"spec_path": reg.get("spec_path", ctx["spec_path"]), "spec_sha256": reg.get("spec_sha256", "?"),
                      "spec_file_sha256": reg.get("spec_file_sha256"),
                      "registered_at": reg.get("registered_at", "?"),
                      "commit": registration.commit or reg.get("commit"),
                      "follows": reg.get("follows") or []}
        ctx["run"] = _run_ctx(spec, run)
        ctx["generations_sha256"] = result.generations_sha256 or "?"
        ctx.update(spans=_spans(result), spans_format=SPANS_FORMAT, numbers_at=_numbers_at(spec),
                   numbers_shown=_anchored_before_score(spec), error_rates=error_rates,
                   look=look)
        entry = _render_all(spec, "score", ctx)
        return said + _commit(spec, "score", when, entry, [_current(spec, state, result, "score", when)], result)


def _state_from_record(spec: GateSpec, result: GateResult) -> tuple[dict[str, Any], Entry | None]:
    """recorded.json's `results` as the record's score and amendment entries state them, and the newest of those
    entries when it decides these very generations (None: the record holds no verdict on them, so a score is news).

    recorded.json is the run directory's copy of what the artifacts were told; the record, not its absence, says
    what is news: a score appended over an amendment of these generations would put the registered rule back in force.
    """
    from voicegate.artifacts._recorded import recorded_entries

    verdicts = [e for e in recorded_entries(spec.artifacts.record) if e.kind in ("score", "amend")]
    state: dict[str, Any] = {"results": {e.rule_to: e.result_sha256 for e in verdicts
                                         if e.rule_to is not None and e.result_sha256 is not None}}
    newest = verdicts[-1] if verdicts else None
    if newest is None or result.generations_sha256 is None or newest.generations_sha256 != result.generations_sha256:
        return state, None
    return state, newest


def _rebuild(spec: GateSpec, state: dict[str, Any], newest: Entry, current: GateResult | None,
             when: _dt.datetime) -> list[str]:
    """recorded.json written again from the record's newest verdict entry, only when re-scoring the stored generations
    gives the very result that entry states (its sha256): a copy rebuilt from other numbers would be silently wrong.
    The ledger gets a line saying so (no artifact entry), which `verify` reports."""
    path, record = _display(spec, spec.run.recorded), _display(spec, spec.artifacts.record)
    what = f"entry {newest.number} of {record} (the {'score' if newest.kind == 'score' else 'amendment'} of " \
           f"{newest.time})"
    restore = f"restore runs/{spec.gate}/ from where it was kept"
    if not spec.run.ledger.exists():
        raise VoicegateError(f"{path} is missing and so is the run's ledger ({_display(spec, spec.run.ledger)}): the "
                             f"run's copy of what {what} decided is rebuilt only beside the ledger `verify` holds the "
                             f"artifacts to; {restore}")
    got = "" if current is None else result_sha256(current)
    if current is None or got != newest.result_sha256:
        said = "no result under its rule" if current is None else f"result sha256 {got[:12]}"
        stated = "states no result sha256" if newest.result_sha256 is None else f"states {newest.result_sha256[:12]}"
        raise VoicegateError(f"{path} is missing, and re-scoring the stored generations gives {said} where {what} "
                             f"{stated}: the run's copy of the result in force is not rebuilt from other numbers; "
                             f"{restore}")
    state.update(current=current.to_json(), current_kind=newest.kind, time=newest.time)
    _commit(spec, "rebuild", when, _Entry([], [], []), [_state_write(spec, state)], current)
    return [(f"{path}: rebuilt from {what}: re-scoring the stored generations gives the result it states (sha256 "
             f"{got[:12]}); nothing appended to the artifacts")]


def _registered(result: GateResult) -> Standing:
    """A score entry's state when no caller stated one: the result's own rule, as registered."""
    from voicegate.gate import Standing

    return Standing(rule=result.rule, ships=result.ships)


def record_anchor(spec: GateSpec, result: GateResult, command: str, registration_commit: str | None = None, *,
                  now: _dt.datetime | None = None) -> list[str]:
    """Numbers about to be shown before any verdict is recorded: anchor them at HEAD in the record's chain first.

    A `score --dry-run` or a `calibrate` shows every rule's verdict and records none; without this entry, a rule
    registered after seeing them would still precede the first score entry's commit and read as prospective.
    Only the record takes it (it decides nothing a README or compose reader needs); nothing is written when the
    record already anchors the gate's numbers.
    """
    from voicegate.spec import head, recorded_numbers_at

    when = now or now_utc()
    with verdict_lock(spec, "anchor") as said:
        record = spec.artifacts.record
        if recorded_numbers_at(record) is not None:
            return said
        commit = head(spec.root)
        if commit is None:
            raise VoicegateError(f"{spec.gate}: no git commit to anchor its numbers at; numbers are shown only once "
                                 "they are ordered in git's history (commit the workspace first)")
        kind = artifact_kind("record")
        ctx = _base_ctx(spec, result, when)
        ctx.update(command=f"voicegate {command}", numbers_at=commit, registration_commit=registration_commit,
                   generations_sha256=result.generations_sha256 or "?")
        entry = _Entry([], [], [])
        header = render(kind.header, **ctx) if kind.header else ""
        _md_write(spec, kind.name, record, render("record_anchor.md.j2", **ctx), "numbers first shown", entry, header)
        return said + _commit(spec, "anchor", when, entry, [], result)


def record_calibration(spec: GateSpec, calibration: Any, generations_sha256: str, *,
                       now: _dt.datetime | None = None) -> list[str]:
    """A pilot's error rates at K seeds, chained into its record: what a later gate's `register` quotes.

    A calibration file in the run directory is a cache anyone can edit or delete; the power a registration
    states must rest on bytes a chain and git vouch for. Only the record takes it (a README or compose reader
    deploys no pilot); nothing is appended when the newest calibration entry of this K says the same.
    """
    when = now or now_utc()
    summary = calibration.summary()  # `gate.Calibration`'s: what a later registration reads back
    digest = sha256_json(summary)
    with verdict_lock(spec, "calibrate") as said:
        record = spec.artifacts.record
        from voicegate.artifacts._recorded import recorded_entries

        same_k = [e for e in recorded_entries(record) if e.kind == "calibration"
                  and (e.summary or {}).get("seeds_per_arm") == summary.get("seeds_per_arm")]
        if same_k and same_k[-1].summary_sha256 == digest:
            return said + [(f"{_display(spec, record)}: this calibration ({summary.get('seeds_per_arm')} seeds per "
                            f"arm, same rates) is already recorded at {same_k[-1].time}; nothing appended")]
        kind = artifact_kind("record")
        ctx = {"gate": spec.gate, "author": spec.author, "spec_path": _display(spec, spec.path), "when": stamp(when),
               "cal": calibration, "generations_sha256": generations_sha256, "summary_sha256": digest,
               "summary": json.dumps(summary, sort_keys=True, ensure_ascii=False, separators=(",", ":"))}
        entry = _Entry([], [], [])
        header = render(kind.header, **ctx) if kind.header else ""
        _md_write(spec, kind.name, record, render("record_calibration.md.j2", **ctx), "calibration", entry, header)
        return said + _commit(spec, "calibration", when, entry, [], digest)


def _numbers_at(spec: GateSpec) -> str | None:
    """Where this gate's numbers sit in git's history: the first score entry's commit if the record has one,
    else HEAD now (this is the first). None outside git: the record then states no order."""
    from voicegate.spec import head, recorded_numbers_at

    return recorded_numbers_at(spec.artifacts.record) or head(spec.root)


def _anchored_before_score(spec: GateSpec) -> bool:
    """Whether the record anchors its numbers in an entry that came before any score (`record_anchor`)."""
    from voicegate.spec import scored_under

    path = spec.artifacts.record
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    return "## Numbers first shown — " in text and not scored_under(text)


def _current(spec: GateSpec, state: dict[str, Any], result: GateResult, kind: str, when: _dt.datetime) -> Write:
    """recorded.json with `result` as the one now in force."""
    state["results"][result.rule] = result_sha256(result)
    state.update(current=result.to_json(), current_kind=kind, time=stamp(when))
    return _state_write(spec, state)


# -- ship ----------------------------------------------------------------------------


def current_state(spec: GateSpec, what: str) -> tuple[dict[str, Any], GateResult]:
    """The recorded state and the result now in force; refuses when nothing was scored yet."""
    state = load_state(spec)
    if not state or "current" not in state:
        from voicegate.artifacts._recorded import recorded_entries

        if any(e.kind in ("score", "amend") for e in recorded_entries(spec.artifacts.record)):
            # `score` rebuilds it from the stored generations, checked against the record; without them (or
            # without the ledger) only the run directory kept elsewhere has it
            fix = (f"run `voicegate score {spec.gate}` to rebuild it from the record"
                   if spec.generations_path.is_file() and spec.run.ledger.exists()
                   else f"restore runs/{spec.gate}/ from where it was kept (its "
                        f"{'generations are' if not spec.generations_path.is_file() else 'ledger is'} gone too)")
            raise VoicegateError(
                f"nothing to {what}: the record holds {spec.gate}'s verdicts but the run's copy of the result in "
                f"force ({_display(spec, spec.run.recorded)}) is missing; {fix}")
        raise VoicegateError(f"nothing to {what}: no score is recorded for {spec.gate} "
                             f"(run `voicegate score {spec.gate}` first)")
    from voicegate.artifacts._recorded import recorded_copy_problem, recorded_entries

    problem = recorded_copy_problem(recorded_entries(spec.artifacts.record), spec.run)
    if problem is not None:
        raise VoicegateError(f"nothing to {what}: {_display(spec, spec.run.recorded)}"
                             f"{problem[len(spec.run.recorded.name):]}")
    return state, GateResult.from_json(state["current"])


def record_ship(spec: GateSpec, arm: str, reason: str, *, now: _dt.datetime | None = None,
                standing_of: StandingOf | None = None) -> list[str]:
    """A person's decision, appended beside the verdicts; never changes one."""
    reason = one_line(reason or "")
    if not reason or not re.search(r"[^\W\d_]{2,}", reason):
        # "...", "-" or "x" is a placeholder, not a reason a reviewer can weigh.
        raise VoicegateError("a shipping decision needs --reason: say why, in a sentence"
                             + (f" ({reason!r} is not one)" if reason else ""))
    chosen = spec.arm(arm)
    if chosen.is_base:
        raise VoicegateError(f"{arm} is the base carrier, not an adapter: only a candidate can ship as {spec.gate}")
    when = now or now_utc()
    with verdict_lock(spec, "ship") as said:
        recorded, result = current_state(spec, "ship")
        entry = result.candidate(arm)
        if entry is None:
            raise VoicegateError(f"{arm} has no verdicts in the recorded result for {spec.gate}")
        newest = next(reversed(decisions(spec)), None)
        if newest and (newest.get("arm"), newest.get("reason"), newest.get("result_sha256")) == (
                arm, reason, result_sha256(result)):
            # A re-run after a kill (or a double click): the very decision is already in every artifact.
            return said + [(f"{_display(spec, spec.artifacts.record)}: this decision (ship {arm}, same reason, "
                           f"same verdicts) is already recorded at {newest.get('time')}; nothing appended")]
        standing = _standing(standing_of, recorded, result)
        look = standing.look
        recommended = result.ships if look is None else standing.ships
        decision = {"time": stamp(when), "arm": arm, "model": chosen.model, "reason": reason,
                    "rule": result.rule, "recommendation": recommended,
                    "verdicts": {"voice": {r: str(v) for r, v in entry.voice.items()},
                                 "copying": None if entry.copying is None else str(entry.copying),
                                 "damage": None if entry.damage is None else str(entry.damage)},
                    "result_sha256": result_sha256(result)}
        ctx = _base_ctx(spec, result, when, standing)
        ctx.update(arm=replace(entry, model=chosen.model), reason=reason, featured=arm, featured_as="shipped",
                   candidates=candidates(result, arm))
        rendered = _render_all(spec, "ship", ctx)
        short = entry.short_of(result.rule)
        warned: list[str] = []
        if look is not None:  # under a sequential design the look, not the fixed rule's verdicts, says what ships
            warning = look.ship_warning(arm)
            warned = [] if warning is None else [warning]
        elif result.ships != arm or short:
            warned = [(f"warning: {arm} is not what the gate recommends under {result.rule} "
                       f"(short on {', '.join(short) if short else 'no axis, another candidate is preferred'}; "
                       f"ships: {result.ships or 'none'}); the decision is recorded beside those verdicts")]
        return said + warned + _commit(spec, "ship", when, rendered, [_row_appended(spec.run.decisions, decision)],
                                       result)


def _standing(standing_of: StandingOf | None, recorded: dict[str, Any], result: GateResult) -> Standing:
    return standing_of(recorded, result) if standing_of is not None else _registered(result)


def record_note(spec: GateSpec, text: str, *, now: _dt.datetime | None = None,
                standing_of: StandingOf | None = None) -> list[str]:
    """A person's note, appended to every artifact at this point of the history; it changes no verdict.

    Where a defect is found and deliberately left alone, the record says so before any correction: a later
    post-hoc amendment is then read against a note that predates it (docs/design.md §6b, lv-bronte's story).
    """
    text = one_line(text or "")
    if not text or not re.search(r"[^\W\d_]{2,}", text):
        raise VoicegateError("a note needs --text: say what is known, in a sentence"
                             + (f" ({text!r} is not one)" if text else ""))
    when = now or now_utc()
    with verdict_lock(spec, "note") as said:
        recorded, result = current_state(spec, "note")
        newest = next(reversed(notes(spec)), None)
        if newest and (newest.get("text"), newest.get("result_sha256")) == (text, result_sha256(result)):
            return said + [(f"{_display(spec, spec.artifacts.record)}: this note (same text, same verdicts) is "
                            f"already recorded at {newest.get('time')}; nothing appended")]
        ctx = _base_ctx(spec, result, when, _standing(standing_of, recorded, result))
        ctx.update(text=text)
        rendered = _render_all(spec, "note", ctx)
        row = {"time": stamp(when), "text": text, "rule": result.rule, "result_sha256": result_sha256(result)}
        return said + _commit(spec, "note", when, rendered, [_row_appended(spec.run.notes, row)], result)


# -- amend ---------------------------------------------------------------------------


def _recorded_notes(spec: GateSpec) -> list[dict[str, Any]]:
    """The notes the record's chained entries hold (notes.jsonl is a cache a user can edit or delete)."""
    from voicegate.artifacts._recorded import recorded_entries

    return [{"text": e.text, "time": e.time} for e in recorded_entries(spec.artifacts.record) if e.kind == "note"]


@dataclass(frozen=True, kw_only=True)
class AmendmentChange:
    """What an amendment did to one candidate's voice verdict (the policy that allows it is `gate._amend`)."""

    arm: str
    delta_cb: float | None
    floors: Mapping[str, float | None]
    before: str
    after: str
    before_ratio: float | None
    after_ratio: float | None
    disagree: bool
    copying: str | None
    damage: str | None
    # SPECIFIC / NOT-SPECIFIC under the old rule and the new one; None when no impostors are registered.
    specific_before: str | None = None
    specific_after: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"arm": self.arm, "delta_cb": self.delta_cb, "before": self.before, "after": self.after,
               "floors": dict(self.floors), "copying": self.copying, "damage": self.damage}
        if self.specific_after is not None:
            out.update(specific_before=self.specific_before, specific_after=self.specific_after)
        return out


def record_amendment(spec: GateSpec, old: GateResult, new: GateResult, changes: list[AmendmentChange], *,
                     reason: str, rule_registered: str, generations_sha256: str, state: dict[str, Any],
                     when: _dt.datetime, citation: Any, standing: Standing | None = None) -> list[str]:
    """Render an amendment already allowed by `gate._amend` and append it everywhere.

    The caller holds `verdict_lock(spec, "amend")` and passes the state it read under it.
    `citation` (a `spec._prospective.Citation`) is the prospective registration the amendment
    cites: every artifact names its gate, commit and spec sha256, and `verify` re-checks it in git.
    """
    shipped = decisions(spec)
    ctx = _base_ctx(spec, new, when, standing or _registered(new))
    ctx.update(rule_from=old.rule, rule_to=new.rule, rule_to_registered=rule_registered,
               reason=reason, changes=sorted(changes, key=lambda c: c.arm != ctx["featured"]),
               decision=shipped[-1] if shipped else None, ships_before=old.ships, notes=_recorded_notes(spec),
               ships_after=new.ships, generations_sha256=generations_sha256,
               citation={**citation.to_json(), "post_hoc": citation.post_hoc, "numbers_at": citation.numbers_at,
                         "after_numbers": citation.after_numbers},
               rules=[old.rule, new.rule] + [r for r in ctx["rules"] if r not in (old.rule, new.rule)])
    entry = _render_all(spec, "amend", ctx)
    amendment = _row_appended(spec.run.amendments, {
        "time": stamp(when), "rule_from": old.rule, "rule_to": new.rule, "reason": reason,
        "result": new.to_json(), "changes": [c.to_json() for c in changes], "citation": citation.to_json(),
    })
    return _commit(spec, "amend", when, entry, [amendment, _current(spec, state, new, "amend", when)], new)
