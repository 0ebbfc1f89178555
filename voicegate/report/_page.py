"""Render the report: plain data in, one self-contained HTML page out.

`render_report(data)` is pure: it reads nothing and calls nothing but jinja2
and the plot functions. The template is rendered with autoescaping ON, so every
string from a result file or a generation is escaped; the only markup that
reaches the page unescaped is the SVG this package builds itself (through
`_svg.el`, which escapes every value it is given).

The page loads nothing: no script, no external style, font or image. A
Content-Security-Policy in the page says so to the browser as well
(`default-src 'none'`, the one inline stylesheet allowed by its hash), so even
a rendering bug could not fetch or run anything.
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from voicegate.report import _svg
from voicegate.report._samples import pick_samples
from voicegate.report._spans import segments
from voicegate.spec._rules import RULES
from voicegate.spec._schema import SPEC_SCHEMA

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"
TEMPLATE = "report.html.j2"
DEFAULT_SAMPLES = 4


# -- number formats: fixed decimals, so columns line up when right-aligned ------------


def _finite(v: Any) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _number(template: str) -> Any:
    """A jinja filter: the number in `template`, or an em dash for None, NaN and non-numbers."""

    def fmt(v: Any) -> str:
        f = _finite(v)
        return "—" if f is None else template.format(f)

    return fmt


f3 = _number("{:.3f}")
signed = _number("{:+.3f}")
# Overlaps: the default tolerance is half a percent, so a fourth decimal is where copying first shows.
f4 = _number("{:.4f}")
ratio = _number("{:.1f}x")


def integer(v: Any) -> str:
    f = _finite(v)
    return "—" if f is None else f"{int(f):d}"


def wbr(name: Any) -> Markup:
    """A long rule id that may break after its hyphens in a narrow table header (escaped first)."""
    return Markup("-<wbr>").join(escape(part) for part in str(name).split("-"))


def csp_hash(css: str) -> str:
    digest = hashlib.sha256(str(css).encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,  # every template, whatever its extension: generated text is data
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(f3=f3, f4=f4, wbr=wbr, signed=signed, ratio=ratio, integer=integer, csp_hash=csp_hash)
    return env


# -- the view: what the template draws, computed from the data --------------------------


def rule_order(*results: Mapping[str, Any]) -> list[str]:
    """Registered rules first (global, then pairwise), then any other rule a result names."""
    seen = list(RULES)
    for res in results:
        for arm in res.get("arms", []):
            for rule in (arm.get("floors") or {}):
                if rule not in seen:
                    seen.append(rule)
    return seen


def _candidates(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [a for a in result.get("arms", []) if a.get("role") != "base"]


def _seeds(result: Mapping[str, Any], registered: Sequence[Any] | None) -> list[str]:
    if registered:
        return [str(s) for s in registered]
    seen: list[str] = []
    for arm in result.get("arms", []):
        for s in (arm.get("distances") or {}):
            if str(s) not in seen:
                seen.append(str(s))
    return seen


def _ratios(arm: Mapping[str, Any], rules: Sequence[str]) -> dict[str, float | None]:
    """Ratio under every rule: the result's own when given, else delta_cb / floor."""
    given = dict(arm.get("ratios") or {})
    out: dict[str, float | None] = {}
    for rule in rules:
        if rule in given:
            out[rule] = _finite(given[rule])
            continue
        d, f = _finite(arm.get("delta_cb")), _finite((arm.get("floors") or {}).get(rule))
        out[rule] = d / f if d is not None and f else None
    return out


def _verdict_rows(result: Mapping[str, Any], rules: Sequence[str]) -> list[dict[str, Any]]:
    rows = []
    for arm in _candidates(result):
        rows.append({**arm, "ratios": _ratios(arm, rules), "floors": dict(arm.get("floors") or {}),
                     "voice": dict(arm.get("voice") or {})})
    return rows


def _amendment_view(amendment: Mapping[str, Any], before: Mapping[str, Any] | None,
                    rules: Sequence[str]) -> dict[str, Any]:
    """What one amendment changed, per candidate, from its own re-scored result.

    The result carries every rule's floor and verdict, so old-rule and new-rule
    columns come from the same numbers; delta_cb is compared with the result
    before the amendment, so a reader sees it did not move.
    """
    result = amendment.get("result") or {}
    rule_from, rule_to = amendment.get("rule_from"), amendment.get("rule_to")
    prev = {a.get("name"): a for a in (before or {}).get("arms", [])}
    rows = []
    for arm in _verdict_rows(result, rules):
        old = prev.get(arm.get("name"), {})
        rows.append({
            "name": arm.get("name"),
            "delta_cb": arm.get("delta_cb"),
            "delta_before": old.get("delta_cb"),
            "floor_from": arm["floors"].get(rule_from), "floor_to": arm["floors"].get(rule_to),
            "voice_from": arm["voice"].get(rule_from), "voice_to": arm["voice"].get(rule_to),
            "ratio_from": arm["ratios"].get(rule_from), "ratio_to": arm["ratios"].get(rule_to),
            "floors": arm["floors"], "voice": arm["voice"], "disagree": arm.get("disagree"),
            "copying": arm.get("copying"), "copying_before": old.get("copying"),
            "damage": arm.get("damage"), "damage_before": old.get("damage"),
        })
    summary = []
    for r in rows:
        before_d, after_d = _finite(r["delta_before"]), _finite(r["delta_cb"])
        moved = before_d is not None and after_d is not None and abs(before_d - after_d) > 1e-9
        floors = f"floor {f3(r['floor_from'])} → {f3(r['floor_to'])}"
        if r["voice_from"] != r["voice_to"]:
            line = (f"{r['name']}: VOICE {r['voice_from']} → {r['voice_to']} ({floors}, "
                    f"ratio {ratio(r['ratio_from'])} → {ratio(r['ratio_to'])})")
        else:
            line = f"{r['name']}: still {r['voice_to']} ({floors})"
        line += (f"; delta_cb MOVED {signed(before_d)} → {signed(after_d)}" if moved
                 else f"; delta_cb {signed(after_d)} unchanged")
        summary.append(line)
    same_axes = all((r["copying_before"] in (None, r["copying"])) and (r["damage_before"] in (None, r["damage"]))
                    for r in rows)
    if rows and same_axes:
        summary.append("COPYING and DAMAGE unchanged for every candidate")
    ships_before = (before or {}).get("ships")
    if ships_before != result.get("ships"):
        summary.append(f"rule's recommendation: {ships_before or 'none'} → {result.get('ships') or 'none'}")
    else:
        summary.append(f"rule's recommendation unchanged: {result.get('ships') or 'none'}")
    changes = amendment.get("changes")
    # Structured per-arm changes (what `amend` stores) are the table above; only prose is listed.
    if isinstance(changes, list):
        changes = [c for c in changes if isinstance(c, str)] or None
    elif isinstance(changes, Mapping) and not all(isinstance(v, str) for v in changes.values()):
        changes = None
    return {
        "summary": summary,
        "time": amendment.get("time"), "rule_from": rule_from, "rule_to": rule_to,
        "reason": amendment.get("reason"), "rows": rows,
        "ships_before": (before or {}).get("ships"), "ships_after": result.get("ships"),
        "changes_list": changes if isinstance(changes, list) else None,
        "changes_map": changes if isinstance(changes, Mapping) else None,
        "changes_text": changes if isinstance(changes, str) else None,
    }


def _decision_view(decision: Mapping[str, Any], results_at: Mapping[str, Any]) -> dict[str, Any]:
    """A decision beside the verdicts that stood when it was taken.

    `ship` records those verdicts in the decision itself (rule, recommendation,
    verdicts); older or hand-made rows fall back to the result in force at its time.
    """
    arm: Mapping[str, Any] = next((a for a in results_at.get("arms", []) if a.get("name") == decision.get("arm")), {})
    own = decision.get("verdicts") if isinstance(decision.get("verdicts"), Mapping) else None
    rule = decision.get("rule") or results_at.get("rule")
    if own is not None:
        voice = own.get("voice")
        voice = voice.get(rule) if isinstance(voice, Mapping) else voice
        copying, damage = own.get("copying"), own.get("damage")
    else:
        voice = (arm.get("voice") or {}).get(rule)
        copying, damage = arm.get("copying"), arm.get("damage")
    recommended = decision["recommendation"] if "recommendation" in decision else results_at.get("ships")
    return {**decision, "rule": rule, "voice": voice, "copying": copying, "damage": damage,
            "recommended": recommended}


def _result_in_force(score: Mapping[str, Any], amendments: Sequence[Mapping[str, Any]], time: str | None
                     ) -> Mapping[str, Any]:
    """The result that stood when a decision was taken: the last amendment before it, else the score."""
    current = score
    for a in amendments:
        if time is not None and a.get("time") is not None and str(a["time"]) > str(time):
            break
        current = a.get("result") or current
    return current


def build_view(data: Mapping[str, Any]) -> dict[str, Any]:
    score: Mapping[str, Any] = data["score"]
    amendments: list[Mapping[str, Any]] = list(data.get("amendments") or [])
    current = (amendments[-1].get("result") or score) if amendments else score
    rules = rule_order(score, *(a.get("result") or {} for a in amendments))
    seeds = _seeds(current, data.get("seeds"))
    arms = list(current.get("arms", []))
    base = next((a["name"] for a in arms if a.get("role") == "base"), (current.get("control") or {}).get("arm"))
    control = current.get("control") or {"arm": base, "overlap": None}
    # Hand-made report data may omit the settings: the schema's defaults fill in, never a restated number.
    copying = {k: SPEC_SCHEMA.default(f"copying.{k}") for k in ("n", "tolerance", "max_run")}
    copying.update(data.get("copying") or {})
    damage = {"tolerance": SPEC_SCHEMA.default("damage.tolerance"), **(data.get("damage") or {})}
    candidates = _verdict_rows(current, rules)

    # Copied spans: an anchor per span, listed per arm; samples link to them.
    spans_by_arm = {a["name"]: list(a.get("spans") or []) for a in arms}
    arm_index = {a["name"]: i for i, a in enumerate(arms)}
    arm_names = [a["name"] for a in arms]
    samples = pick_samples(data.get("generations") or [], arm_names, seeds, spans_by_arm,
                           int(data.get("max_samples", DEFAULT_SAMPLES)))
    prompts = {str(k): v for k, v in (data.get("prompts") or {}).items()}
    span_seen: dict[tuple[str, int], list[int]] = {}
    sample_views = []
    for k, s in enumerate(samples):
        cells = []
        for row in s["rows"]:
            arm = str(row.get("arm"))
            segs = segments(str(row.get("text", "")), spans_by_arm.get(arm, []))
            for seg in segs:
                if seg.span is not None:
                    span_seen.setdefault((arm, seg.span), [])
                    if k not in span_seen[(arm, seg.span)]:
                        span_seen[(arm, seg.span)].append(k)
            usage = row.get("usage") or {}
            cells.append({"arm": arm, "arm_index": arm_index.get(arm, 0), "segments": segs,
                          "finish_reason": row.get("finish_reason"),
                          "tokens": usage.get("completion_tokens"),
                          "words": len(str(row.get("text", "")).split())})
        sample_views.append({"index": k, "prompt_id": s["prompt_id"], "seed": s["seed"],
                             "prompt": prompts.get(s["prompt_id"]), "cells": cells})
    span_views = []
    for a in arms:
        for i, sp in enumerate(spans_by_arm[a["name"]]):
            span_views.append({"arm": a["name"], "arm_index": arm_index[a["name"]], "i": i,
                               "text": sp.get("text"), "tokens": sp.get("tokens"), "source": sp.get("source"),
                               "offset": sp.get("offset"),
                               "excerpt": sp.get("excerpt") or sp.get("context"),
                               "prompt_id": sp.get("prompt_id"), "seed": sp.get("seed"),
                               "samples": span_seen.get((a["name"], i), [])})

    amendment_views = []
    before: Mapping[str, Any] = score
    for a in amendments:
        amendment_views.append(_amendment_view(a, before, rules))
        before = a.get("result") or before
    decisions = [_decision_view(d, _result_in_force(score, amendments, d.get("time")))
                 for d in data.get("decisions") or []]

    damage_arms = [{"name": a["name"], "probe_pass_rate": a.get("probe_pass_rate"),
                    "degeneration_rate": (a.get("degeneration") or {}).get("rate")} for a in arms]
    plots = {
        "distances": _svg.distances_plot(arms, seeds),
        "delta": _svg.delta_plot(candidates, rules, current.get("rule", "")),
        "overlap": _svg.overlap_plot(arms, str(control.get("arm")), float(_finite(control.get("overlap")) or 0.0),
                                     float(copying["tolerance"]), int(copying["n"])),
        "damage": _svg.damage_plot(damage_arms, str(base), float(damage["tolerance"])),
        "defs": _svg.defs(),
    }
    signature = current.get("signature") or {}
    return {
        "run_view": _run_view(data.get("run") or {}),
        "any_excerpt": any(v["excerpt"] for v in span_views),
        "gate": data.get("gate") or current.get("gate"),
        "author": data.get("author"),
        "rendered_at": data.get("rendered_at"),
        "notices": [*(data.get("notices") or []),
                    *(f"Warning (not deciding): {w}" for w in current.get("warnings") or [])],
        "registration": data.get("registration"),
        "run": data.get("run"),
        "score": score, "current": current, "amended": bool(amendments),
        "rules": rules, "deciding": current.get("rule"), "original_rule": score.get("rule"),
        "seeds": seeds, "arms": arms, "base": base, "control": control, "candidates": candidates,
        "copying": copying, "damage": damage,
        "samples": sample_views, "spans": span_views,
        "amendments": amendment_views, "decisions": decisions,
        "signature": signature, "signature_text": current.get("signature_text"),
        "plots": plots,
        "counts": _counts(data.get("generations") or []),
    }


def _run_view(run: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The run manifest as (label, value) lines, whichever command wrote it (generate or import)."""
    out: list[tuple[str, str]] = []
    if not run:
        return out
    out.append(("source", str(run.get("source") or "—")))
    seat = run.get("seat_url") or run.get("seat")
    version = run.get("vllm_version") or run.get("version")
    if isinstance(seat, Mapping):
        version = version or seat.get("version")
        models = seat.get("models")
        seat = seat.get("url")
        if isinstance(models, list):
            out.append(("seat models", ", ".join(str(m.get("id", m) if isinstance(m, Mapping) else m)
                                                  for m in models)))
    if seat:
        out.insert(1, ("seat", str(seat)))
    if isinstance(version, Mapping):
        version = version.get("version")
    if version:
        out.append(("seat version", str(version)))
    for label, key in (("imported from", "file"), ("file sha256", "file_sha256"),
                       ("order seed", "order_seed"), ("registration commit", "registration_commit")):
        if run.get(key) not in (None, ""):
            out.append((label, str(run[key])))
    if isinstance(run.get("runtime_loaded"), list) and run["runtime_loaded"]:
        out.append(("runtime-loaded", ", ".join(map(str, run["runtime_loaded"]))))
    if isinstance(run.get("sessions"), list):
        out.append(("sessions", str(len(run["sessions"]))))
    return out


def _counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    voice = sum(1 for r in rows if r.get("kind", "voice") == "voice")
    return {"rows": len(rows), "voice": voice, "probe": len(rows) - voice,
            "imported": sum(1 for r in rows if r.get("imported"))}


def render_report(data: Mapping[str, Any]) -> str:
    """The whole page as one string. `data` is plain JSON-like data; see `voicegate.report.load`."""
    view = build_view(data)
    return _environment().get_template(TEMPLATE).render(**view, Markup=Markup)
