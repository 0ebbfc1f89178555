"""The `--json` documents of register, generate, amend, ship, note, verify and report (docs/reference.md).

Shaped here, in the command-line layer, from what each use case already returns or records
(the registration, `GenerateResult`, the run's amendments.jsonl, decisions.jsonl and notes.jsonl, verify's
`FileCheck`s), so the library keeps one shape of its own and these documents can grow keys
without touching it. Every path is shown as the text output shows it (workspace-relative).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

# The artifact lines amend and ship print ("gates/lv-x.md: appended entry 2 (ship)"); the rest are messages.
_APPENDED = ": appended entry "


def _split(lines: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """(artifact lines, warnings, other messages)."""
    artifacts = [ln for ln in lines if _APPENDED in ln or " comment lines above " in ln]
    warnings = [ln for ln in lines if ln.startswith("warning:")]
    rest = [ln for ln in lines if ln not in artifacts and ln not in warnings]
    return artifacts, warnings, rest


def _spec(workspace: Path | None, gate: str) -> Any:
    from voicegate.spec import load_spec, workspace_root

    return load_spec(workspace_root(workspace), gate)


def register_document(done: Any) -> dict[str, Any]:
    from voicegate.gate import design_lines
    from voicegate.spec import shown_path

    spec, reg = done.spec, done.registration
    notes = [*(n for n in (done.warning, done.cache_note) if n), *(f"note: {n}" for n in done.notes),
             *done.pin_warnings()]
    design = design_lines(spec)
    return {
        "gate": spec.gate, "spec": shown_path(spec.root, spec.path), "spec_sha256": reg.spec_sha256,
        "spec_file_sha256": reg.spec_file_sha256, "record": shown_path(spec.root, reg.path),
        "commit": reg.commit, "files": len(reg.data["files"]), "deciding_rule": spec.floor_rule,
        "supersedes": (reg.data.get("supersedes") or {}).get("registered_at"),
        "design": [ln for ln in design if not ln.startswith("warning:")],
        "warnings": notes + [ln for ln in design if ln.startswith("warning:")],
    }


def generate_document(result: Any) -> dict[str, Any]:
    t = result.canaries
    return {
        "gate": result.gate, "total": result.total, "stored": result.stored, "generated": result.generated,
        "generations": result.where, "wall_s": round(result.wall_s, 3), "completion_tokens": result.completion_tokens,
        "tokens_per_s": round(result.completion_tokens / result.wall_s, 3) if result.wall_s > 0 else None,
        "requests": result.requests, "isolate_arms": result.isolate_arms, "loaded": list(result.loaded),
        "unloaded": list(result.unloaded), "reloads": result.reloads, "quarantined": result.quarantined,
        "replicas": [dict(r) for r in result.replicas],
        "integrity": {"status": "failed" if t.failed else "holds", "references": t.references, "sent": t.sent,
                      "right": t.right, "wrong": t.wrong, "foreign": t.foreign, "unclear": t.unclear,
                      "problems": list(dict.fromkeys(t.problems))},
        "resume": result.resume or None,
        "look": None if result.look is None else result.look.to_json(),
    }


def amend_document(workspace: Path | None, gate: str, rule: str, lines: Sequence[str]) -> dict[str, Any]:
    """The amendment now in force for `rule` (appended by this call, or already recorded: `appended` says)."""
    from voicegate.artifacts import amendments

    artifacts, warnings, messages = _split(lines)
    entry = next((a for a in reversed(amendments(_spec(workspace, gate))) if a.get("rule_to") == rule), None)
    amendment = None
    if entry is not None:
        from voicegate.scoring import GateResult

        amended = GateResult.from_json(entry["result"])
        amendment = {"rule_from": entry.get("rule_from"), "rule_to": entry.get("rule_to"),
                     "reason": entry.get("reason"), "time": entry.get("time"), "citation": entry.get("citation"),
                     "ships": amended.ships, "changes": entry.get("changes", [])}
    return {"gate": gate, "rule": rule, "appended": bool(artifacts), "artifacts": artifacts,
            "amendment": amendment, "messages": messages, "warnings": warnings}


def ship_document(workspace: Path | None, gate: str, arm: str, lines: Sequence[str]) -> dict[str, Any]:
    from voicegate.artifacts import decisions

    artifacts, warnings, messages = _split(lines)
    decision = next((d for d in reversed(decisions(_spec(workspace, gate))) if d.get("arm") == arm), None)
    return {"gate": gate, "arm": arm, "appended": bool(artifacts), "artifacts": artifacts, "decision": decision,
            "messages": messages, "warnings": warnings}


def note_document(workspace: Path | None, gate: str, lines: Sequence[str]) -> dict[str, Any]:
    """The newest note on the record (appended by this call, or already recorded: `appended` says)."""
    from voicegate.artifacts import notes

    artifacts, warnings, messages = _split(lines)
    note = next(reversed(notes(_spec(workspace, gate))), None)
    return {"gate": gate, "appended": bool(artifacts), "artifacts": artifacts, "note": note,
            "messages": messages, "warnings": warnings}


def verify_document(root: Path, gate: str | None, checks: Sequence[Any], ok: bool) -> dict[str, Any]:
    from voicegate.artifacts import describe
    from voicegate.spec import shown_path

    files = []
    for fc in checks:
        lines, _ = describe(root, [fc])  # the same lines the text output prints for this file
        files.append({
            "path": shown_path(root, fc.path), "kind": fc.kind, "gates": list(fc.gates), "exists": fc.exists,
            "ok": fc.ok, "problem": fc.problem,
            "entries": (len(fc.expected) if fc.kind == "ledger"
                        else fc.report.entries if fc.report is not None else 0),
            "git": {"commits": fc.git_commits, "problems": list(fc.git_problems), "skipped": fc.git_skipped},
            "citations": list(fc.citations), "citation_problems": list(fc.citation_problems),
            "notes": list(fc.notes), "lines": [ln.strip() for ln in lines[1:]] if len(lines) > 1 else lines,
        })
    return {"workspace": str(root), "gate": gate, "ok": ok, "files": files}


def report_document(gate: str, path: Path) -> dict[str, Any]:
    import hashlib

    data = path.read_bytes()
    return {"gate": gate, "path": str(path), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
