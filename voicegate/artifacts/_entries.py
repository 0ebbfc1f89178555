"""The three kinds of entry — score, ship, amend — and how each reaches all three artifacts.

One event (a score, a person's shipping decision, an amendment) becomes one
entry in the gate record (every arm, every number), one in the adapter README
and one comment block in compose.yaml (short: the candidates' verdict lines,
the shipped or recommended one first). All three are appended under one gate
lock, so a `ship` and an `amend` run at the same moment produce their entries
one after the other in every artifact.

What was last recorded lives in `<run_dir>/recorded.json`: the current result
(the last score or amendment), and the sha256 of the result recorded under
each rule. Re-scoring the same generations under the same rule gives the same
result bytes (scoring is pure), so `record_score` sees the same sha256 and
appends nothing: the record is current. Decisions and amendments are also kept
structurally (`decisions.jsonl`, `amendments.jsonl`) for the report.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from voicegate._clock import now_utc
from voicegate._errors import VoicegateError
from voicegate._hashing import sha256_json
from voicegate.artifacts import _chain, _compose
from voicegate.artifacts._format import candidates, one_line, render, stamp
from voicegate.run._store import append_rows, generations_hash, read_rows
from voicegate.spec._rules import get_rule
from voicegate.spec._workspace import shown_path

# -- state ---------------------------------------------------------------------------


def _display(spec: Any, path: Path) -> str:
    return shown_path(spec.root, path)


def load_state(spec: Any) -> dict[str, Any] | None:
    path = spec.run.recorded
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise VoicegateError(f"{path}: unreadable ({exc})") from None


def _save_state(spec: Any, state: dict[str, Any]) -> None:
    _chain.atomic_write(spec.run.recorded,
                        (json.dumps(state, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8"))


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return read_rows(path)


def decisions(spec: Any) -> list[dict[str, Any]]:
    return _jsonl(spec.run.decisions)


def amendments(spec: Any) -> list[dict[str, Any]]:
    return _jsonl(spec.run.amendments)


def result_sha256(result: dict[str, Any]) -> str:
    return sha256_json(result)


def _gate_lock(spec: Any):
    return _chain.locked(spec.run.recorded)


# -- writing all three ---------------------------------------------------------------


def _featured(spec: Any, result: dict[str, Any]) -> tuple[str | None, str]:
    shipped = decisions(spec)
    if shipped:
        return shipped[-1]["arm"], "shipped"
    return result.get("ships"), "recommended"


def _preflight(spec: Any, compose_lines: list[str], *, compose_required: bool) -> str | None:
    """Refuse before any byte is written; returns why compose gets no entry (None: it does)."""
    readme = spec.artifacts.readme
    if readme is not None and not readme.parent.is_dir():
        raise VoicegateError(f"{readme.parent}: the adapter directory does not exist; README not writable")
    # An atomic write needs a temp file beside its target: a read-only mount (adapters are
    # often mounted :ro) must be refused here, before the record gets an entry the README lacks.
    for path in (spec.artifacts.record, readme, spec.artifacts.compose):
        if path is None:
            continue
        where = path.parent
        while not where.exists():
            where = where.parent
        if not os.access(where, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            raise VoicegateError(f"{path}: not writable (a read-only mount?); nothing written")
    compose = spec.artifacts.compose
    if compose is None:
        return None
    try:
        if not compose.is_file():
            raise VoicegateError(f"{compose}: compose file not found")
        _compose.plan(compose, compose.read_bytes(), spec.gate, compose_lines)  # the full check, no write
    except VoicegateError as exc:
        # A gate is scored before its adapter is listed for deploy; shipping it is not.
        if compose_required:
            raise
        return str(exc)
    return None


def _append_all(spec: Any, kind: str, ctx: dict[str, Any], *, compose_required: bool) -> list[str]:
    # Everything is rendered and checked before the first byte goes anywhere: a refusal
    # (or a template bug) must not leave the record with an entry the README lacks.
    header = render("record_header.md.j2", **ctx)
    record_text = render(f"record_{kind}.md.j2", **ctx)
    readme_text = render(f"readme_{kind}.md.j2", **ctx)
    lines = render(f"compose_{kind}.j2", **ctx).rstrip("\n").split("\n")
    no_compose = _preflight(spec, lines, compose_required=compose_required)
    said: list[str] = []
    record = spec.artifacts.record
    with _chain.locked(record):
        n = _chain.md_append(record, record_text, header=header)
    said.append(f"{_display(spec, record)}: appended entry {n} ({kind})")
    if spec.artifacts.readme is not None:
        readme = spec.artifacts.readme
        with _chain.locked(readme):
            n = _chain.md_append(readme, readme_text)
        said.append(f"{_display(spec, readme)}: appended entry {n} ({kind})")
    if spec.artifacts.compose is not None:
        if no_compose is None:
            said.append(_compose.annotate(spec.artifacts.compose, spec.gate, lines).replace(
                str(spec.artifacts.compose), _display(spec, spec.artifacts.compose), 1))
        else:
            said.append(f"{_display(spec, spec.artifacts.compose)}: compose comment not written — "
                        f"{no_compose.replace(str(spec.artifacts.compose) + ': ', '')} "
                        "(the record and README carry the entry)")
    return said


def _base_ctx(spec: Any, result: dict[str, Any], when: _dt.datetime) -> dict[str, Any]:
    featured, featured_as = _featured(spec, result)
    return {
        "gate": spec.gate, "author": spec.author, "spec_path": _display(spec, spec.path),
        "when": stamp(when), "date": when.date().isoformat(),
        "record": _display(spec, spec.artifacts.record),
        "result": result, "result_sha256": result_sha256(result),
        "candidates": candidates(result, featured), "featured": featured, "featured_as": featured_as,
        "rules": _rules(result),
    }


def _rules(result: dict[str, Any]) -> list[str]:
    from voicegate.artifacts._format import rule_ids

    return rule_ids(result)


def _run_ctx(spec: Any, run: dict[str, Any] | None) -> dict[str, Any]:
    """What the record says about the run, whichever command wrote run.json."""
    run = dict(run or {})
    rows = read_rows(spec.generations_path)
    seat = run.get("seat_url") or run.get("seat")
    version = run.get("vllm_version") or run.get("version")
    if isinstance(seat, dict):  # generate's manifest: {"url", "version" (the seat's /version), "models"}
        version = version or seat.get("version")
        seat = seat.get("url")
    if isinstance(version, dict):
        version = version.get("version")
    return {
        "source": run.get("source", "generated"),
        "file": run.get("file", "?"), "file_sha256": run.get("file_sha256", "?"),
        "seat": seat or spec.seat.url, "vllm_version": version or "unknown",
        "rows": len(rows), "voice_rows": sum(1 for r in rows if r.get("kind", "voice") == "voice"),
        "probe_rows": sum(1 for r in rows if r.get("kind") == "probe"),
        "arms": len(spec.arms), "seeds": len(spec.seeds), "prompts": len(spec.prompts),
    }


def _spans(result: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for arm in result["arms"]:
        for span in (arm.get("spans") or [])[:3]:
            text = " ".join(str(span.get("text", "")).split())
            out.append({"arm": arm["name"], "tokens": span.get("tokens", "?"),
                        "text": text if len(text) <= 120 else text[:117] + "..."})
    return out


# -- score ---------------------------------------------------------------------------


def record_score(spec: Any, registration: Any, result: dict[str, Any], run: dict[str, Any] | None,
                 *, now: _dt.datetime | None = None) -> list[str]:
    """Append a score's verdicts to all three artifacts, unless this very result is already recorded."""
    when = now or now_utc()
    digest = result_sha256(result)
    with _gate_lock(spec):
        state = load_state(spec) or {"results": {}}
        if state["results"].get(result["rule"]) == digest:
            return [f"{_display(spec, spec.artifacts.record)}: the record is current (same generations, "
                    f"same rule {result['rule']}); nothing appended"]
        ctx = _base_ctx(spec, result, when)
        reg = getattr(registration, "data", registration) or {}
        ctx["reg"] = {"spec_path": reg.get("spec_path", ctx["spec_path"]), "spec_sha256": reg.get("spec_sha256", "?"),
                      "registered_at": reg.get("registered_at", "?"),
                      "commit": getattr(registration, "commit", None) or reg.get("commit")}
        ctx["run"] = _run_ctx(spec, run)
        ctx["generations_sha256"] = result.get("signature", {}).get("generations_sha256", "?")
        ctx["spans"] = _spans(result)
        said = _append_all(spec, "score", ctx, compose_required=False)
        state["results"][result["rule"]] = digest
        state.update(current=result, current_kind="score", time=stamp(when))
        _save_state(spec, state)
    return said


# -- ship ----------------------------------------------------------------------------


def _require_state(spec: Any, what: str) -> dict[str, Any]:
    state = load_state(spec)
    if not state or "current" not in state:
        raise VoicegateError(f"nothing to {what}: no score is recorded for {spec.gate} "
                             f"(run `voicegate score {spec.gate}` first)")
    return state


def record_ship(spec: Any, arm: str, reason: str, *, now: _dt.datetime | None = None) -> list[str]:
    """A person's decision, appended beside the verdicts; never changes one."""
    reason = one_line(reason or "")
    if not reason:
        raise VoicegateError("a shipping decision needs --reason: say why, in a sentence")
    chosen = spec.arm(arm)
    if chosen.is_base:
        raise VoicegateError(f"{arm} is the base carrier, not an adapter: only a candidate can ship as {spec.gate}")
    when = now or now_utc()
    with _gate_lock(spec):
        state = _require_state(spec, "ship")
        result = state["current"]
        entry = next(a for a in result["arms"] if a["name"] == arm)
        decision = {"time": stamp(when), "arm": arm, "model": chosen.model, "reason": reason,
                    "rule": result["rule"], "recommendation": result.get("ships"),
                    "verdicts": {"voice": entry["voice"], "copying": entry["copying"], "damage": entry["damage"]},
                    "result_sha256": result_sha256(result)}
        ctx = _base_ctx(spec, result, when)
        ctx.update(arm={**entry, "model": chosen.model}, reason=reason, featured=arm, featured_as="shipped",
                   candidates=candidates(result, arm))
        said = _append_all(spec, "ship", ctx, compose_required=True)
        append_rows(spec.run.decisions, [decision])
    return said


# -- amend ---------------------------------------------------------------------------

Scorer = Callable[..., dict[str, Any]]


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=0.0, abs_tol=1e-9)


def record_amendment(spec: Any, rule_id: str, reason: str, *, score: Scorer, cache_dir: Path | None = None,
                     now: _dt.datetime | None = None) -> list[str]:
    """Re-score the SAME stored generations under rule_id and append the correction everywhere."""
    reason = one_line(reason or "")
    if not reason:
        raise VoicegateError("an amendment needs --reason: say why the rule changes, in a sentence")
    when = now or now_utc()
    rule = get_rule(rule_id)
    if not rule.registered < when.date():
        raise VoicegateError(f"rule {rule.signature} was registered {rule.registered.isoformat()}, which does not "
                             f"precede this amendment ({when.date().isoformat()}): a rule must exist before it is applied")
    with _gate_lock(spec):
        state = _require_state(spec, "amend")
        old = state["current"]
        if old["rule"] == rule_id:
            raise VoicegateError(f"nothing to amend: {spec.gate}'s recorded verdicts are already under {rule.signature}")
        rows = read_rows(spec.generations_path)
        recorded = old.get("signature", {}).get("generations_sha256")
        now_hash = generations_hash(rows)
        if recorded != now_hash:
            raise VoicegateError(f"the stored generations changed since they were scored (sha256 {now_hash[:12]}..., "
                                 f"recorded {str(recorded)[:12]}...): an amendment re-scores the SAME generations")
        new = score(spec, rows, cache_dir=cache_dir, rule=rule_id)
        if new.get("signature", {}).get("generations_sha256") not in (None, recorded):
            raise VoicegateError("the re-score did not read the recorded generations; amendment refused")
        old_arms = {a["name"]: a for a in old["arms"]}
        changes = []
        for arm in new["arms"]:
            if arm.get("role") != "candidate":
                continue
            before = old_arms.get(arm["name"])
            if before is None or not _same(before["delta_cb"], arm["delta_cb"]):
                raise VoicegateError(f"delta_cb of {arm['name']} changed on re-scoring the same generations "
                                     f"({before and before['delta_cb']} -> {arm['delta_cb']}); amendment refused")
            changes.append({
                "arm": arm["name"], "delta_cb": arm["delta_cb"], "floors": arm["floors"],
                "before": old_arms[arm["name"]]["voice"][old["rule"]], "after": arm["voice"][rule_id],
                "before_ratio": _ratio(before, old["rule"]), "after_ratio": _ratio(arm, rule_id),
                "disagree": arm.get("disagree", False),
                "copying": arm["copying"], "damage": arm["damage"],
                "copying_before": before["copying"], "damage_before": before["damage"],
            })
        for c in changes:
            if (c["copying"], c["damage"]) != (c["copying_before"], c["damage_before"]):
                raise VoicegateError(f"COPYING/DAMAGE of {c['arm']} changed on re-scoring the same generations; "
                                     "amendment refused")
        shipped = decisions(spec)
        ctx = _base_ctx(spec, new, when)
        ctx.update(rule_from=old["rule"], rule_to=rule_id, rule_to_registered=rule.registered.isoformat(),
                   reason=reason, changes=sorted(changes, key=lambda c: c["arm"] != ctx["featured"]),
                   decision=shipped[-1] if shipped else None, ships_before=old.get("ships"),
                   ships_after=new.get("ships"), generations_sha256=now_hash,
                   rules=[old["rule"], rule_id] + [r for r in ctx["rules"] if r not in (old["rule"], rule_id)])
        said = _append_all(spec, "amend", ctx, compose_required=False)
        append_rows(spec.run.amendments, [{
            "time": stamp(when), "rule_from": old["rule"], "rule_to": rule_id, "reason": reason,
            "result": new, "changes": [{k: c[k] for k in ("arm", "delta_cb", "before", "after", "floors",
                                                          "copying", "damage")} for c in changes],
        }])
        state["results"][rule_id] = result_sha256(new)
        state.update(current=new, current_kind="amend", time=stamp(when))
        _save_state(spec, state)
    return said


def _ratio(arm: dict[str, Any], rule_id: str) -> float | None:
    from voicegate.artifacts._format import ratio_of

    return ratio_of(arm, rule_id)
