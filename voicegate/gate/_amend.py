"""`amend`: re-score the SAME stored generations under another registered rule.

The amendment policy lives here, not in the artifact writer, because it is what
makes an amendment honest (docs/design.md §3, §6b):

- the rule must have been registered before the amendment (a rule invented
  after seeing the numbers is not a correction);
- it must differ from the rule the recorded verdicts are under, and from every
  rule the gate was ever decided under (no flipping back until a verdict suits);
- it must have been registered prospectively: another gate's registration in the
  workspace's git history declared it as its deciding rule, committed before the
  amendment and before any of that gate's results (`spec._prospective`); the
  amendment cites that gate, its commit and its spec sha256 in every artifact;
- the stored generations must be the very ones that were scored (same sha256),
  and re-scoring them must reproduce every delta_cb, COPYING and DAMAGE:
  only the floor may change.

Every check runs under the gate lock and before the first byte is written; the
re-score keeps the cache read-only, so a refused amendment leaves nothing behind.
`voicegate.artifacts` then only renders and appends.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from voicegate._clock import now_utc
from voicegate._errors import VoicegateError
from voicegate.gate._error_rates import error_rates
from voicegate.gate._looks import check_amendable
from voicegate.gate._state import Standing
from voicegate.scoring import CandidateResult, GateResult, Provenance
from voicegate.spec import GateSpec

if TYPE_CHECKING:
    from voicegate.artifacts import AmendmentChange


class Scorer(Protocol):
    """How the stored rows are re-scored under a rule (tests pass a constructed result)."""

    def __call__(self, spec: GateSpec, rows: Sequence[dict[str, Any]], *, rule: str, rules: Sequence[str],
                 provenance: Provenance) -> GateResult: ...


def rescore(spec: GateSpec, rows: Sequence[dict[str, Any]], *, rule: str, rules: Sequence[str],
            provenance: Provenance) -> GateResult:
    """The real re-score: the cache `voicegate score` filled, read-only."""
    from voicegate.scoring import score_gate
    from voicegate.spec import load_registration

    registration = load_registration(spec)  # the checks in force when it was registered, as `score` used
    return score_gate(spec, rows, cache_dir=spec.run.cache, rule=rule, rules=rules, write_cache=False,
                      provenance=provenance, checks=registration.checks if registration is not None else ())


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=0.0, abs_tol=1e-9)


def _ratio(arm: CandidateResult, rule_id: str) -> float | None:
    from voicegate.artifacts import ratio_of

    return ratio_of(arm, rule_id)


def amend(root: Path | str | None, gate: str, rule: str, reason: str, *, now: _dt.datetime | None = None,
          scorer: Scorer = rescore, registered_in: str | None = None, post_hoc: bool = False) -> list[str]:
    """Load the registered gate and amend it; returns one line per artifact touched.

    `root` None means $VOICEGATE_WORKSPACE or the current directory, as on the command line.
    """
    from voicegate.spec import check_registered, get_rule, load_spec, workspace_root

    get_rule(rule)  # an unknown rule is refused before anything is read
    spec = load_spec(workspace_root(root), gate)
    check_registered(spec)
    return amend_spec(spec, rule, reason, now=now, scorer=scorer, registered_in=registered_in, post_hoc=post_hoc)


def decided_under(spec: GateSpec, state: dict[str, Any], past: Sequence[dict[str, Any]]) -> list[str]:
    """Every rule this gate's verdicts were ever decided under: its registered rule, each score, each amendment."""
    from voicegate.artifacts import recorded_entries

    rules = [spec.floor_rule, *state.get("results", {})]
    for row in past:
        rules += [str(r) for r in (row.get("rule_from"), row.get("rule_to")) if r]
    # The record's chained entries too: the run directory's copies can be edited or deleted, the record cannot.
    for entry in recorded_entries(spec.artifacts.record):
        rules += [r for r in (entry.rule_from, entry.rule_to) if r]
    return list(dict.fromkeys(rules))


def amend_spec(spec: GateSpec, rule_id: str, reason: str, *, now: _dt.datetime | None = None,
               scorer: Scorer = rescore, registered_in: str | None = None, post_hoc: bool = False) -> list[str]:
    """Check the amendment policy, re-score, and append the amendment to every artifact the spec names.

    Order is the repository's history: a cited registration that is not an ancestor of the commit at which
    this gate's numbers were first recorded came after them, and the amendment is then a post-hoc
    correction — refused unless `post_hoc`, and said as such in every artifact.
    """
    from voicegate.artifacts import amendments, current_state, decisions, one_line, record_amendment, verdict_lock
    from voicegate.run import generations_hash, read_generations
    from voicegate.spec import RULES, find_citation, get_rule, recorded_numbers_at

    reason = one_line(reason or "")
    if not reason:
        raise VoicegateError("an amendment needs --reason: say why the rule changes, in a sentence")
    when = now or now_utc()
    rule = get_rule(rule_id)
    check_amendable(spec)  # a sequential design's rule is fixed with its looks' boundaries
    if not rule.registered < when.date():
        raise VoicegateError(f"rule {rule.signature} was registered {rule.registered.isoformat()}, which does not "
                             f"precede this amendment ({when.date().isoformat()}): a rule must exist before it is "
                             "applied")
    with verdict_lock(spec, "amend") as completed:
        state, old = current_state(spec, "amend")
        if old.rule == rule_id:
            newest = next(reversed(amendments(spec)), None)
            if newest and (newest.get("rule_to"), newest.get("reason")) == (rule_id, reason):
                # A re-run after a kill: this very amendment is already in every artifact.
                return completed + [(f"{spec.gate}: this amendment (to {rule.signature}, same reason) is already "
                                    f"recorded at {newest.get('time')}; nothing appended")]
            raise VoicegateError(f"nothing to amend: {spec.gate}'s recorded verdicts are already under "
                                 f"{rule.signature}")
        past = amendments(spec)
        if rule_id in decided_under(spec, state, past):
            raise VoicegateError(f"{spec.gate} was already decided under {rule.signature} (now {old.rule}): an "
                                 "amendment never returns a gate to a rule it was decided under")
        decisions(spec)  # read now: a damaged decisions file is named before anything else is asked
        rows = read_generations(spec.generations_path)
        recorded = old.generations_sha256
        now_hash = generations_hash(rows)
        if recorded != now_hash:
            raise VoicegateError(f"the stored generations changed since they were scored (sha256 {now_hash[:12]}..., "
                                 f"recorded {str(recorded)[:12]}...): an amendment re-scores the SAME generations")
        anchor = recorded_numbers_at(spec.artifacts.record)
        citation = find_citation(spec.root, rule_id, when, this_gate=spec.gate, registered_in=registered_in,
                                 anchor=anchor)
        if citation.post_hoc and not post_hoc:
            raise VoicegateError(
                f"{citation.gate}'s registration of {rule_id} (commit {citation.commit[:12]}) came "
                f"{citation.after_numbers} commit(s) after {spec.gate}'s numbers were first recorded (commit "
                f"{str(citation.numbers_at)[:12]}): a rule chosen after the numbers is a post-hoc correction; "
                "pass --post-hoc to record it as one, with a --reason that stands without these numbers")
        # The same generations: the same seat verdict and replicas, bound to the same evidence.
        # The rules the recorded result computed, and the new one: a table never loses a column it had.
        known = [r for r in old.rule_ids() if r in RULES]
        new = scorer(spec, rows, rule=rule_id, rules=[*known, rule_id], provenance=old.provenance)
        if new.generations_sha256 not in (None, recorded):
            raise VoicegateError("the re-score did not read the recorded generations; amendment refused")
        changes = _changes(old, new)
        return completed + _summary(old, new, changes) + [f"cites: {citation.sentence}"] + record_amendment(
            spec, old, new, changes, reason=reason, rule_registered=rule.registered.isoformat(),
            generations_sha256=now_hash, state=state, when=when, citation=citation,
            standing=Standing.of(new, amended_from=old.rule, post_hoc=citation.post_hoc,
                                 error_rates=error_rates(spec, new)))


def _summary(old: GateResult, new: GateResult, changes: list[AmendmentChange]) -> list[str]:
    """What the amendment decides, before where it was written: every candidate's verdict, then ships."""
    from voicegate._figures import ratio_text

    lines = []
    for c in changes:
        floor = c.floors.get(new.rule)
        numbers = "" if c.delta_cb is None or floor is None else f" ({c.delta_cb:+.3f} vs floor {floor:.3f})"
        ratio = f" {ratio_text(c.after_ratio)}" if c.after == "PASS" else ""
        moved = (f"VOICE {c.before} -> {c.after}{ratio}" if c.before != c.after
                 else f"VOICE {c.after}{ratio} (unchanged)")
        specific = "" if c.specific_after is None else (
            f" · {c.specific_after}" if c.specific_before == c.specific_after
            else f" · {c.specific_before} -> {c.specific_after}")
        lines.append(f"{c.arm}: {moved}{numbers} · {c.copying} · {c.damage}{specific}")
    lines.append(f"ships under {new.rule}: {new.ships or 'none'} (under {old.rule}: {old.ships or 'none'})")
    return lines


def _changes(old: GateResult, new: GateResult) -> list[AmendmentChange]:
    """Per candidate: the verdict before and after; refuses if anything but the floor moved."""
    from voicegate.artifacts import AmendmentChange

    pairs: list[tuple[CandidateResult, CandidateResult]] = []
    for arm in new.candidates:
        before = old.candidate(arm.name)
        if before is None or not _same(before.delta_cb, arm.delta_cb):
            raise VoicegateError(f"delta_cb of {arm.name} changed on re-scoring the same generations "
                                 f"({before and before.delta_cb} -> {arm.delta_cb}); amendment refused")
        pairs.append((before, arm))
    for before, arm in pairs:  # every delta_cb first: the number an amendment must never move
        if (arm.copying, arm.damage) != (before.copying, before.damage):
            raise VoicegateError(f"COPYING/DAMAGE of {arm.name} changed on re-scoring the same generations; "
                                 "amendment refused")
        then = before.specificity.margins if before.specificity else None
        now = arm.specificity.margins if arm.specificity else {}
        if then is not None and (then.keys() != now.keys() or not all(_same(m, now[k]) for k, m in then.items())):
            raise VoicegateError(f"the specificity margins of {arm.name} changed on re-scoring the same "
                                 "generations; amendment refused")
    changes: list[AmendmentChange] = []
    for before, arm in pairs:
        changes.append(AmendmentChange(
            arm=arm.name, delta_cb=arm.delta_cb, floors=arm.floors,
            before=str(before.voice[old.rule]), after=str(arm.voice[new.rule]),
            before_ratio=_ratio(before, old.rule), after_ratio=_ratio(arm, new.rule), disagree=arm.disagree,
            copying=None if arm.copying is None else str(arm.copying),
            damage=None if arm.damage is None else str(arm.damage),
            specific_before=None if before.specificity is None else str(before.specificity.under(old.rule)),
            specific_after=None if arm.specificity is None else str(arm.specificity.under(new.rule))))
    return changes
