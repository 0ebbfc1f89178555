"""Read what the report is drawn from: stored scores, amendments, decisions, the run and the generations.

Nothing here contacts the seat or re-scores anything: the report shows what was
recorded. It also says, loudly, when what is on disk no longer matches what was
recorded (a spec edited after registration, generations changed after scoring).
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from voicegate import _json as strict_json
from voicegate._clock import now_utc
from voicegate._errors import VoicegateError
from voicegate._hashing import sha256_json
from voicegate.report._copied import verbatim_runs
from voicegate.report._data import DEFAULT_SAMPLES, Amendment, Decision, Note, ReportData, _text
from voicegate.run import generations_hash, load_manifest, read_generations, read_rows
from voicegate.scoring import GateResult, is_result
from voicegate.spec import GateSpec, check_registered, load_registration, registered, shown_path


def _json(path: Path) -> Any:
    try:
        return strict_json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise VoicegateError(f"{path}: unreadable ({exc})") from None


def _jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        return read_rows(path)
    except VoicegateError:
        raise
    except (OSError, ValueError) as exc:
        raise VoicegateError(f"{path}: unreadable ({exc})") from None


_RESULT_LINE = re.compile(r"^Result sha256: `([0-9a-f]{64})`", re.MULTILINE)


def _check_recorded(spec: GateSpec, score: GateResult) -> None:
    """Refuse a scores.json whose result is not one the gate record holds (an edited delta_cb showed).

    The record is the chained, committed witness: every score and amendment entry names its result's
    sha256. A record with no entry yet (or none at all) has nothing to hold the file against.
    """
    try:
        held = set(_RESULT_LINE.findall(spec.artifacts.record.read_text(encoding="utf-8", errors="replace")))
    except OSError:
        return
    digest = sha256_json(score.to_json())
    if held and digest not in held:
        raise VoicegateError(
            f"{spec.run.scores}: its result (sha256 {digest[:16]}) is not one the gate record "
            f"{shown_path(spec.root, spec.artifacts.record)} holds: scores.json was edited or replaced after "
            f"scoring, so the report would show numbers no verdict was given on; run `voicegate score {spec.gate}` "
            "to write it again from the stored generations")


def _check_record_kept(spec: GateSpec) -> None:
    """Refuse a gate record that does not verify: an entry edited by hand, or one the run's ledger lists gone.

    The page's header says what is in force, and how it came to decide, from the record's newest verdict entry;
    with that entry gone it would say "as registered" of the rule an amendment put in force, and with it edited,
    whatever the edit says: where `score` said otherwise, two surfaces, two verdicts.
    """
    from voicegate.artifacts import record_problem

    problem = record_problem(spec)
    if problem is not None:
        raise VoicegateError(f"{shown_path(spec.root, spec.artifacts.record)}: {problem} (`voicegate verify` says "
                             "BROKEN), so no page is drawn: what is in force is read from the record; restore it "
                             "(from git, or a backup) and run the command again")


def _no_scores(spec: GateSpec) -> str:
    """Why there is no page: never scored, or scored where the record says so and the run data is elsewhere."""
    from voicegate.artifacts import entry_count

    record = spec.artifacts.record
    entries = entry_count(record)
    if entries and spec.generations_path.is_file():  # scores.json alone lost: the run's generations are here
        return (f"{spec.gate} was scored ({entries} entr{'y' if entries == 1 else 'ies'} in "
                f"{shown_path(spec.root, record)}), but {shown_path(spec.root, spec.run.scores)} is missing beside "
                f"its stored generations: run `voicegate score {spec.gate}` to write it again from them")
    if entries:
        return (f"{spec.gate} was scored ({entries} entr{'y' if entries == 1 else 'ies'} in "
                f"{shown_path(spec.root, record)}, the committed account), but its run data is not in this checkout "
                f"({shown_path(spec.root, spec.run.scores)} missing: run directories are not committed); the page is "
                "drawn from the run data: copy the run directory here, or read the record")
    return (f"{spec.gate} has not been scored ({shown_path(spec.root, spec.run.scores)} missing, no entry in "
            f"{shown_path(spec.root, record)}): run `voicegate score {spec.gate}` first")


def _as_recorded(spec: GateSpec, cached: tuple[Amendment, ...]) -> tuple[tuple[Amendment, ...], tuple[Note, ...], str]:
    """The notes, and each amendment's post-hoc status and cited commit, as the record's chained entries say them
    (the run directory's copies are caches a user can edit); a notice when the copies say otherwise."""
    from voicegate.artifacts import recorded_entries

    entries = recorded_entries(spec.artifacts.record)
    if not entries:  # no record to hold the copies against (as `_check_recorded`): the run's copies are all there is
        return cached, tuple(Note.from_json(n) for n in _jsonl(spec.run.notes)), ""
    said = [e for e in entries if e.kind == "amend"]
    notes = tuple(Note(time=e.time, text=e.text) for e in entries if e.kind == "note")
    out = []
    for i, a in enumerate(cached):
        e = said[i] if i < len(said) else None
        if e is None or e.post_hoc is None:
            out.append(a)
            continue
        cited = {**(a.citation or {}), "post_hoc": str(e.post_hoc)}
        if e.cited_commit:
            cited["commit"] = e.cited_commit
        out.append(replace(a, citation=cited))
    differs = "" if len(said) == len(cached) else (
        f"DEVIATION: the run's copy of the amendments holds {len(cached)}, the record {len(said)}: the page follows "
        "the run's copy where the record has no entry; `voicegate verify` names the difference")
    return tuple(out), notes, differs


def load_report_data(spec: GateSpec, *, samples: int = DEFAULT_SAMPLES, now: _dt.datetime | None = None
                     ) -> ReportData:
    """Everything `render_report` needs, typed. Refuses when the gate has no scores yet."""
    run_dir = spec.run_dir
    scores_path = spec.run.scores
    if not scores_path.is_file():
        raise VoicegateError(_no_scores(spec))
    stored = _json(scores_path)
    if not is_result(stored):
        raise VoicegateError(f"{scores_path}: not a voicegate score result (no 'arms' list)")
    score = GateResult.from_json(stored)
    _check_recorded(spec, score)
    _check_record_kept(spec)
    amendments = tuple(Amendment.from_json(a) for a in _jsonl(spec.run.amendments))
    decisions = tuple(Decision.from_json(d) for d in _jsonl(spec.run.decisions))
    amendments, notes, differs = _as_recorded(spec, amendments)
    run = load_manifest(run_dir)
    rows = read_generations(spec.generations_path)
    events = tuple((str(e.get("kind")), _text(e.get("time"))) for e in _jsonl(spec.run.ledger)
                   if e.get("kind") in ("score", "ship", "note", "amend"))

    notices: list[str] = [differs] if differs else []
    # The registration the page shows is the one git holds: a record edited in the working tree is refused, not drawn.
    reg = None if load_registration(spec) is None else registered(spec)
    registration = None
    if reg is None:
        notices.append(f"{spec.gate} is not registered: these results have no pre-registration behind them.")
    else:
        registration = {
            "spec_path": reg.data.get("spec_path"), "spec_sha256": reg.spec_sha256,
            "spec_file_sha256": reg.spec_file_sha256, "commit": reg.commit,
            "registered_at": reg.registered_at, "deciding_rule": reg.data.get("deciding_rule"),
            "voicegate_version": reg.data.get("voicegate_version"),
        }
        try:
            check_registered(spec)
        except VoicegateError as exc:
            notices.append(f"DEVIATION: {exc}")
    data = ReportData(
        score=score, amendments=amendments, decisions=decisions, notes=notes, gate=spec.gate, author=spec.author,
        run=run, registration=registration, seeds=tuple(str(s) for s in spec.seeds),
        prompts={p.id: p.text for p in spec.prompts}, copying=spec.copying, damage=spec.damage,
        generations=rows, max_samples=samples, rendered_at=(now or now_utc()).strftime("%Y-%m-%dT%H:%M:%SZ"),
        copied=verbatim_runs(rows, spec.corpora.training, spec.copying.n, spec.run.cache), events=events,
    )
    current = data.current
    if reg is not None and current.spec_sha256 and current.spec_sha256 != reg.spec_sha256:
        notices.append(f"DEVIATION: the scores were computed under spec sha256 {current.spec_sha256[:12]}, "
                       f"not the registered {reg.spec_sha256[:12]}.")
    if current.generations_sha256 and rows and generations_hash(rows) != current.generations_sha256:
        notices.append("The stored generations have changed since they were scored: "
                       "the numbers below describe the generations as they were then.")
    return replace(data, notices=tuple(notices), standing=_standing(spec))


def _standing(spec: GateSpec) -> Any:
    """What is in force by the recorded state, as `gate` states it for every surface (None: nothing recorded)."""
    from voicegate.artifacts import load_state
    from voicegate.gate import recorded_standing

    state = load_state(spec)
    if not state or not is_result(state.get("current")):
        return None
    return recorded_standing(spec, state, GateResult.from_json(state["current"]))


def default_out(spec: GateSpec) -> Path:
    """Beside the data it is drawn from: a report is derived and re-renderable, not a record."""
    return spec.run.report
