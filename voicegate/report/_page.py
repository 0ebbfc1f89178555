"""Render the report: typed data in, one self-contained HTML page out.

`render_report(data)` is pure: it reads nothing and calls nothing but jinja2
and the plot functions. It draws from a `ReportData` (results as `GateResult`,
read by attribute); plain JSON-like data is turned into one first. The template
and the plots get typed objects too: the results' own arms, and the small view
dataclasses below for what the page derives (an amendment's before and after,
a decision beside the verdicts that stood, samples and spans).

The template is rendered with autoescaping ON, so every string from a result
file or a generation is escaped; the only markup that reaches the page
unescaped is the SVG this package builds itself (through `_svg.el`, which
escapes every value it is given).

The page loads nothing: no script, no external style, font or image. A
Content-Security-Policy in the page says so to the browser as well
(`default-src 'none'`, the one inline stylesheet allowed by its hash), so even
a rendering bug could not fetch or run anything.

Over 400 lines because the page's view (every table, card and note the template reads) is built in
one pass from the typed data; split, the parts would hand a half-built view between modules.
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from markupsafe import Markup, escape

from voicegate.report import _svg
from voicegate.report._data import Amendment, Decision, ReportData
from voicegate.report._samples import pick_samples
from voicegate.report._spans import SHOWN_CHARS, Segment, segments, shown, word_count
from voicegate.report._timeline import timeline
from voicegate.run import RunManifest, row_key
from voicegate.scoring import CandidateResult, Copying, Damage, GateResult, Span, Specific, Voice, detectable_rules
from voicegate.spec import in_registry_order

if TYPE_CHECKING:
    from voicegate.gate import Standing

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"
TEMPLATE = "report.html.j2"


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


def ratio(v: Any) -> str:
    """A jinja filter: the VOICE ratio as the table and the record write it (`_figures.ratio_text`)."""
    from voicegate._figures import ratio_text

    f = _finite(v)
    return ratio_text(math.inf if f is None and _is_inf(v) else f)


def _is_inf(v: Any) -> bool:
    try:
        return not isinstance(v, bool) and math.isinf(float(v))
    except (TypeError, ValueError):
        return False


def integer(v: Any) -> str:
    f = _finite(v)
    return "—" if f is None else f"{int(f):d}"


def wbr(name: Any) -> Markup:
    """A long rule id that may break after its hyphens in a narrow table header (escaped first)."""
    return Markup("-<wbr>").join(escape(part) for part in str(name).split("-"))


def plain(v: Any) -> str:
    """A signature value as a reader reads it: None is a dash, booleans are yes/no, never Python's spelling."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


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
    env.filters.update(f3=f3, f4=f4, wbr=wbr, signed=signed, ratio=ratio, integer=integer, csp_hash=csp_hash,
                       plain=plain)
    return env


# -- the view: what the template draws, computed from the typed data ------------------------


def rule_order(*results: GateResult) -> list[str]:
    """Every rule the results carry, in the registry's order, ids this voicegate does not know last.

    Never the code's list: a result stored before a rule existed gets no column for it, and one written
    by a newer voicegate keeps the columns it has (`GateResult.rules`, merged over the page's results).
    """
    ids: set[str] = set()
    for res in results:
        ids.update(r for r in res.rules if r)
    return in_registry_order(ids)


def _seeds(result: GateResult, registered: Sequence[str]) -> list[str]:
    if registered:
        return list(registered)
    seen: list[str] = []
    for arm in result.arms:
        for s in arm.distances:
            if s not in seen:
                seen.append(s)
    return seen


def _ratios(arm: CandidateResult, rules: Sequence[str]) -> dict[str, float | None]:
    """Ratio under every rule: the result's own when given, else delta_cb / floor."""
    out: dict[str, float | None] = {}
    for rule in rules:
        if rule in arm.ratios:
            out[rule] = _finite(arm.ratios[rule])
            continue
        d, f = _finite(arm.delta_cb), _finite(arm.floor_under(rule))
        out[rule] = d / f if d is not None and f else None
    return out


def _shown(result: GateResult, rules: Sequence[str]) -> list[CandidateResult]:
    """The candidates as the page shows them: each with its ratio under every rule on the page."""
    return [replace(arm, ratios=_ratios(arm, rules)) for arm in result.candidates]


def _state(data: ReportData, amendments: Sequence[AmendmentView]) -> Standing:
    """The state in force the cards render: the one `gate` computed and handed over with the data; for data handed
    in without one (made by hand), the one `gate` computes from the result in force, post-hoc as its amendment
    says. Either way the page decides no candidate's standing itself."""
    if data.standing is not None:
        return data.standing
    from voicegate.gate import Standing

    last = data.amendments[-1] if data.amendments else None
    return Standing.of(data.current, amended_from=None if last is None else last.rule_from,
                       post_hoc=bool(amendments) and amendments[-1].post_hoc)


@dataclass(frozen=True, kw_only=True)
class SpecificityView:
    """One candidate's specificity as the page shows it: what decided, per impostor and rule."""

    name: str
    decides: bool
    verdict: Mapping[str, Specific | str]              # rule id -> the candidate's verdict (every impostor)
    ratios: Mapping[str, float | None]                 # rule id -> the binding impostor's margin / floor
    binding: Mapping[str, str]                         # rule id -> the impostor that decides under it
    disagree: bool
    rows: list[_svg.MarginRow]                         # one per impostor, in the spec's order
    note: str                                          # the card's line: why this verdict, in words


def _margin_rows(arm: CandidateResult, impostors: Sequence[str], rules: Sequence[str],
                 deciding: str) -> list[_svg.MarginRow]:
    axis = arm.specificity
    if axis is None:
        return []
    names = list(impostors) + [n for n in axis.margins if n not in impostors]
    rows = []
    for k, name in enumerate(names):
        floors = {r: _finite(axis.floor_against(name, r)) for r in rules}
        margin = _finite(axis.margins.get(name))
        outcomes = {r: None if (o := axis.outcome_against(name, r)) is None else str(o) for r in rules}
        rows.append(_svg.MarginRow(
            candidate=arm.name, impostor=name, first=k == 0, delta=_finite(axis.deltas.get(name)), margin=margin,
            floors=floors, outcomes=outcomes,
            binding=tuple(r for r in rules if axis.binding.get(r) == name), verdict=axis.under(deciding)))
    return rows


def specificity_note(arm: CandidateResult, rule: str) -> str:
    """The card's specificity line under `rule`: "nearer X" only where the voice is shown nearer X
    (`Specificity.nearer`); INCONCLUSIVE names the binding impostor, its margin and floor, and what to do."""
    axis = arm.specificity
    if axis is None:
        return "not checked (no impostors registered)"
    verdict = axis.under(rule)
    who = axis.binding.get(rule) or axis.nearest
    margin = axis.margins.get(who) if who is not None else axis.margin
    floor = axis.floor_against(who, rule) if who is not None else None
    against = f"margin {signed(margin)} over {who or '—'} vs floor {f3(floor)}"
    nearer = axis.nearer(rule)
    if nearer:
        shown = ", ".join(f"{n} (margin {signed(axis.margins.get(n))} vs floor "
                          f"{f3(axis.nearer_floor_against(n, rule))})" for n in nearer)
        text = f"nearer {shown}: below minus its floor"
    elif verdict == Specific.INCONCLUSIVE:
        text = (f"{against}: within noise (more seeds or longer pools are a new registration, recorded as a "
                "follow-up design)")
    elif verdict == Specific.SPECIFIC:
        text = f"smallest {against} ({ratio(axis.ratios.get(rule))})"
    else:
        text = against
    return f"{text}; {'deciding' if axis.decides else 'reported'}"


def specificity_views(result: GateResult, candidates: Sequence[CandidateResult],
                      rules: Sequence[str]) -> list[SpecificityView]:
    impostors = list(result.impostors.authors) if result.impostors is not None else []
    out = []
    for c in candidates:
        axis = c.specificity
        if axis is None:
            continue
        out.append(SpecificityView(
            name=c.name, decides=axis.decides, verdict=axis.verdict,
            ratios={r: _finite(axis.ratios.get(r)) for r in rules}, binding=axis.binding, disagree=axis.disagree,
            rows=_margin_rows(c, impostors, rules, result.rule), note=specificity_note(c, result.rule)))
    return out


def specificity_rules(rules: Sequence[str], views: Sequence[SpecificityView]) -> list[str]:
    """The rules the specificity axes carry, in the page's order (an axis may carry fewer than the voice)."""
    seen = {r for v in views for r in v.verdict}
    return [r for r in rules if r in seen] + sorted(seen - set(rules))


# An amendment or decision row without a result of its own: nothing was in force.
_NO_RESULT = GateResult.from_json({})


@dataclass(frozen=True, kw_only=True)
class AmendmentRow:
    """One candidate in an amendment's table: the verdict under the old and the new rule, the axes before."""

    name: str
    delta_cb: float | None
    delta_before: float | None
    floor_from: float | None
    floor_to: float | None
    voice_from: Voice | str | None
    voice_to: Voice | str | None
    ratio_from: float | None
    ratio_to: float | None
    disagree: bool
    copying: Copying | str | None
    copying_before: Copying | str | None
    damage: Damage | str | None
    damage_before: Damage | str | None


@dataclass(frozen=True, kw_only=True)
class AmendmentView:
    time: str | None
    rule_from: str | None
    rule_to: str | None
    reason: str | None
    rows: list[AmendmentRow]
    summary: list[str]
    ships_before: str | None
    ships_after: str | None
    changes_list: list[Any] | None
    changes_map: Mapping[str, Any] | None
    changes_text: str | None
    # The cited registration came after this gate's numbers: a correction, not a pre-registered rule.
    post_hoc: bool = False
    # What it cites and when, in one sentence (None: no citation stored).
    cites: str | None = None


def _cites(amendment: Amendment) -> tuple[bool, str | None]:
    """(post-hoc?, the sentence that says what the amendment cites and how it stands to the numbers)."""
    cited = amendment.citation
    if not cited:
        return False, None
    to, gate = amendment.rule_to or "?", cited.get("gate", "?")
    where = f"{to} registered for {gate} (commit {str(cited.get('commit', '?'))[:12]})"
    if str(cited.get("post_hoc")).lower() == "true":
        return True, (f"a POST-HOC correction: {where}, {cited.get('after_numbers', '?')} commit(s) after this "
                      f"gate's numbers; the verdicts under {amendment.rule_from or '?'} are not withdrawn, they "
                      f"stay the pre-registered ones")
    return False, f"prospective: {where}, before this gate's numbers"


def _amendment_view(amendment: Amendment, before: GateResult, rules: Sequence[str]) -> AmendmentView:
    """What one amendment changed, per candidate, from its own re-scored result.

    The result carries every rule's floor and verdict, so old-rule and new-rule
    columns come from the same numbers; delta_cb is compared with the result
    before the amendment, so a reader sees it did not move.
    """
    result = amendment.result or _NO_RESULT
    rule_from, rule_to = amendment.rule_from, amendment.rule_to
    prev = {a.name: a for a in before.candidates}
    rows = []
    for arm in _shown(result, rules):
        old = prev.get(arm.name)
        rows.append(AmendmentRow(
            name=arm.name, delta_cb=arm.delta_cb, delta_before=old.delta_cb if old else None,
            floor_from=arm.floors.get(rule_from) if rule_from is not None else None,
            floor_to=arm.floors.get(rule_to) if rule_to is not None else None,
            voice_from=arm.voice.get(rule_from) if rule_from is not None else None,
            voice_to=arm.voice.get(rule_to) if rule_to is not None else None,
            ratio_from=arm.ratios.get(rule_from) if rule_from is not None else None,
            ratio_to=arm.ratios.get(rule_to) if rule_to is not None else None,
            disagree=arm.disagree, copying=arm.copying, copying_before=old.copying if old else None,
            damage=arm.damage, damage_before=old.damage if old else None,
        ))
    summary = []
    for r in rows:
        before_d, after_d = _finite(r.delta_before), _finite(r.delta_cb)
        moved = before_d is not None and after_d is not None and abs(before_d - after_d) > 1e-9
        floors = f"floor {f3(r.floor_from)} → {f3(r.floor_to)}"
        if r.voice_from != r.voice_to:
            line = (f"{r.name}: VOICE {r.voice_from} → {r.voice_to} ({floors}, "
                    f"ratio {ratio(r.ratio_from)} → {ratio(r.ratio_to)})")
        else:
            line = f"{r.name}: still {r.voice_to} ({floors})"
        line += (f"; delta_cb MOVED {signed(before_d)} → {signed(after_d)}" if moved
                 else f"; delta_cb {signed(after_d)} unchanged")
        summary.append(line)
    same_axes = all((r.copying_before in (None, r.copying)) and (r.damage_before in (None, r.damage)) for r in rows)
    if rows and same_axes:
        summary.append("COPYING and DAMAGE unchanged for every candidate")
    if before.ships != result.ships:
        summary.append(f"rule's recommendation: {before.ships or 'none'} → {result.ships or 'none'}")
    else:
        summary.append(f"rule's recommendation unchanged: {result.ships or 'none'}")
    post_hoc, cites = _cites(amendment)
    if cites is not None:
        summary.append(cites)
    changes = amendment.changes
    # Structured per-arm changes (what `amend` stores) are the table above; only prose is listed.
    if isinstance(changes, list):
        changes = [c for c in changes if isinstance(c, str)] or None
    elif isinstance(changes, Mapping) and not all(isinstance(v, str) for v in changes.values()):
        changes = None
    return AmendmentView(
        time=amendment.time, rule_from=rule_from, rule_to=rule_to, reason=amendment.reason, rows=rows,
        summary=summary, ships_before=before.ships, ships_after=result.ships,
        changes_list=changes if isinstance(changes, list) else None,
        changes_map=changes if isinstance(changes, Mapping) else None,
        changes_text=changes if isinstance(changes, str) else None, post_hoc=post_hoc, cites=cites,
    )


@dataclass(frozen=True, kw_only=True)
class DecisionView:
    """A decision beside the verdicts that stood when it was taken."""

    time: str | None
    arm: str | None
    reason: str | None
    rule: str | None
    voice: Voice | str | None
    copying: Copying | str | None
    damage: Damage | str | None
    recommended: str | None


def _decision_view(decision: Decision, results_at: GateResult) -> DecisionView:
    """`ship` records those verdicts in the decision itself (rule, recommendation,
    verdicts); older or hand-made rows fall back to the result in force at its time.
    """
    rule = decision.rule or results_at.rule
    own = decision.verdicts
    if own is not None:
        voice, copying, damage = own.voice_under(rule), own.copying, own.damage
    else:
        arm = next((a for a in results_at.arms if a.name == decision.arm), None)
        cand = arm if isinstance(arm, CandidateResult) else None
        voice = cand.voice_under(rule) if cand is not None else None
        copying = cand.copying if cand is not None else None
        damage = cand.damage if cand is not None else None
    recommended = decision.recommendation if decision.recorded else results_at.ships
    return DecisionView(time=decision.time, arm=decision.arm, reason=decision.reason, rule=rule, voice=voice,
                        copying=copying, damage=damage, recommended=recommended)


def _result_in_force(score: GateResult, amendments: Sequence[Amendment], time: str | None) -> GateResult:
    """The result that stood when a decision was taken: the last amendment before it, else the score."""
    current = score
    for a in amendments:
        if time is not None and a.time is not None and a.time > time:
            break
        current = a.result or current
    return current


@dataclass(frozen=True, kw_only=True)
class CellView:
    """One arm's generation in a sample, cut into plain and copied pieces."""

    arm: str
    arm_index: int
    segments: list[Segment]
    finish_reason: Any
    tokens: Any
    words: int
    cut: int = 0  # characters of the generation past what the page shows (`SHOWN_CHARS`)


@dataclass(frozen=True, kw_only=True)
class SampleView:
    index: int
    prompt_id: str
    seed: str
    prompt: str | None
    cells: list[CellView]


@dataclass(frozen=True, kw_only=True)
class SpanView:
    """A copied span in the spans table: the result's span, its anchor, and the samples that show it."""

    arm: str
    arm_index: int
    i: int
    span: Span
    samples: list[int]


@dataclass(frozen=True, kw_only=True)
class MatrixRow:
    """One candidate's delta toward each author: the gate author's first; `top` is the author it moved toward most."""

    name: str
    deltas: list[float | None]
    top: str | None
    specific: Specific | str | None


@dataclass(frozen=True, kw_only=True)
class Matrix:
    authors: list[str]          # the gate author first, then the impostors
    rows: list[MatrixRow]


def author_matrix(result: GateResult, candidates: Sequence[CandidateResult]) -> Matrix | None:
    """The candidate x author matrix of deltas (None when no impostors were registered)."""
    imp = result.impostors
    if imp is None:
        return None
    authors = [imp.author, *imp.authors]
    rows = []
    for c in candidates:
        if c.specificity is None:
            continue
        deltas = [c.specificity.deltas.get(a) for a in authors]
        known = [(d, a) for d, a in zip(deltas, authors, strict=True) if d is not None]
        rows.append(MatrixRow(name=c.name, deltas=deltas, top=max(known)[1] if known else None,
                              specific=c.specificity.under(result.rule)))
    return Matrix(authors=authors, rows=rows)


def build_view(data: ReportData | Mapping[str, Any]) -> dict[str, Any]:
    """The template's context. `data` is a `ReportData`, or the same as plain JSON-like data."""
    if not isinstance(data, ReportData):
        data = ReportData.from_plain(data)
    score, amendments = data.score, data.amendments
    current = data.current
    rules = rule_order(score, *(a.result for a in amendments if a.result is not None))
    seeds = _seeds(current, data.seeds)
    arms = list(current.arms)
    base_arm = current.base
    base = base_arm.name if base_arm is not None else current.control.arm
    control = current.control
    copying, damage = data.copying, data.damage
    candidates = _shown(current, rules)

    # Copied spans: an anchor per span, listed per arm; samples link to them.
    spans_by_arm = {a.name: list(a.spans) for a in arms}
    arm_index = {a.name: i for i, a in enumerate(arms)}
    arm_names = [a.name for a in arms]
    samples = pick_samples(data.generations, arm_names, seeds, spans_by_arm, data.max_samples)
    span_seen: dict[tuple[str, int], list[int]] = {}
    sample_views = []
    for k, s in enumerate(samples):
        cells = []
        for row in s.rows:
            arm = str(row.get("arm"))
            runs = data.copied.get(row_key(row), ()) if data.copied is not None else ()
            text = str(row.get("text", ""))
            segs = segments(shown(text), spans_by_arm.get(arm, []), runs)
            for seg in segs:
                if seg.span is not None:
                    span_seen.setdefault((arm, seg.span), [])
                    if k not in span_seen[(arm, seg.span)]:
                        span_seen[(arm, seg.span)].append(k)
            usage = row.get("usage") or {}
            cells.append(CellView(arm=arm, arm_index=arm_index.get(arm, 0), segments=segs,
                                  finish_reason=row.get("finish_reason"), tokens=usage.get("completion_tokens"),
                                  words=word_count(text), cut=len(text) - len(shown(text))))
        sample_views.append(SampleView(index=k, prompt_id=s.prompt_id, seed=s.seed,
                                       prompt=data.prompts.get(s.prompt_id), cells=cells))
    span_views = [SpanView(arm=a.name, arm_index=arm_index[a.name], i=i, span=sp,
                           samples=span_seen.get((a.name, i), []))
                  for a in arms for i, sp in enumerate(spans_by_arm[a.name])]

    amendment_views = []
    before = score
    for a in amendments:
        amendment_views.append(_amendment_view(a, before, rules))
        before = a.result or before
    decisions = [_decision_view(d, _result_in_force(score, amendments, d.time)) for d in data.decisions]

    state = _state(data, amendment_views)
    spec_views = specificity_views(current, candidates, rules)
    spec_rules = specificity_rules(rules, spec_views)
    spec_rows = [row for v in spec_views for row in v.rows]
    plots = {
        "distances": _svg.distances_plot(arms, seeds),
        "delta": _svg.delta_plot(candidates, rules, current.rule),
        "specificity": _svg.specificity_plot(spec_rows, spec_rules, current.rule) if spec_rows else None,
        "overlap": _svg.overlap_plot(arms, str(control.arm), float(_finite(control.overlap) or 0.0),
                                     float(copying.tolerance), int(copying.n)),
        "damage": _svg.damage_plot(arms, str(base), float(damage.tolerance)),
        "defs": _svg.defs(),
    }
    return {
        "run_view": [*_run_view(data.run), ("seat integrity", _integrity_text(data.run, current))],
        "any_excerpt": any(v.span.excerpt for v in span_views),
        "floor_legend": _svg.floor_legend(rules),
        "spec_floor_legend": _svg.floor_legend(spec_rules),
        "spec_views": spec_views, "spec_rules": spec_rules,
        "spec_notes": {c.name: specificity_note(c, current.rule) for c in candidates},
        "detect_rules": detectable_rules(candidates, rules),
        "unseen": {c.name: [r for r in rules if c.unseen(r)] for c in candidates},
        "gate": data.gate or current.gate,
        "author": data.author,
        "rendered_at": data.rendered_at,
        "notices": [*data.notices, *(f"Warning (not deciding): {w}" for w in current.warnings)],
        "registration": data.registration,
        "run": data.run,
        "score": score, "current": current, "amended": bool(amendments), "standing": data.standing,
        # The rule in force is a post-hoc correction: said in the header and on the pick's card.
        "post_hoc": state.post_hoc,
        "standings": {c.name: state.candidate(c.name) for c in candidates},
        "runs_known": data.copied is not None, "copying_n": int(copying.n), "shown_chars": SHOWN_CHARS,
        "rules": rules, "two_rules": len(rules) == 2, "deciding": current.rule, "original_rule": score.rule,
        "seeds": seeds, "arms": arms, "base": base, "control": control, "candidates": candidates,
        "copying": copying, "damage": damage,
        "samples": sample_views, "spans": span_views,
        "amendments": amendment_views, "decisions": decisions,
        "signature": {} if current.signature is None else current.signature.to_json(),
        "signature_text": current.signature_text,
        "plots": plots,
        "counts": _counts(data.generations),
        "impostors": current.impostors,
        "matrix": author_matrix(current, candidates),
        "timeline": timeline(data),
    }


def _run_view(run: RunManifest | None) -> list[tuple[str, str]]:
    """The run manifest as (label, value) lines, whichever command wrote it (generate or import)."""
    if run is None or not run.data:
        return []
    out = [("source", run.source or "—")]
    if run.seat_url:
        out.append(("seat", run.seat_url))
    if run.seat_models:
        out.append(("seat models", ", ".join(run.seat_models)))
    if run.seat_version:
        out.append(("seat version", run.seat_version))
    for label, value in (("imported from", run.file), ("file sha256", run.file_sha256),
                         ("order seed", run.order_seed), ("registration commit", run.registration_commit)):
        if value is not None:
            out.append((label, value))
    if run.runtime_loaded:
        out.append(("runtime-loaded", ", ".join(run.runtime_loaded)))
    if isinstance(run.data.get("sessions"), list):
        out.append(("sessions", str(len(run.sessions))))
    return out


def _integrity_text(run: RunManifest | None, current: GateResult) -> str:
    """Did the seat serve every arm its own weights? Imported generations carry no canaries."""
    integrity = current.integrity
    if integrity is not None:
        return (f"{integrity.line()}; method {integrity.method}" +
                (f" ({integrity.params.get('similarity')}, calibrated threshold {integrity.threshold})"
                 if integrity.params and integrity.threshold is not None else ""))
    if run is not None and run.imported:
        return "not checked (imported)"
    return "not checked (no canaries in this run)"


def _counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    voice = sum(1 for r in rows if r.get("kind", "voice") == "voice")
    return {"rows": len(rows), "voice": voice, "probe": len(rows) - voice,
            "imported": sum(1 for r in rows if r.get("imported"))}


def render_report(data: ReportData | Mapping[str, Any]) -> str:
    """The whole page as one string, from a `ReportData` (`load_report_data`) or the same as plain data."""
    view = build_view(data)
    return _environment().get_template(TEMPLATE).render(**view, Markup=Markup)
