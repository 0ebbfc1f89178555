"""A registered sequential design at `score`: which look the stored seeds are, and what that look decides.

The look is the number of seeds stored per arm; it must be a registered look, and the seeds the first that many
of `seeds` in the spec's order (a look chosen among more seeds would be a choice made after seeing them). Each
candidate's one-sided p-value of the deciding t rule (delta_cb against ε, Welch's SE and df) is held to that
look's boundaries as the registration recorded them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from voicegate._errors import VoicegateError
from voicegate.scoring import GateResult
from voicegate.spec import GateSpec, LookDecision, Registration, decide_look, get_rule, smallest_in_units, welch


def check_look(spec: GateSpec, registration: Registration, rows: Sequence[Mapping[str, Any]]) -> int | None:
    """The seeds per arm of the look the stored rows are (None: a fixed design); refused where they are not one."""
    design = registration.design
    if design is None:
        return None
    seeds: dict[str, set[int]] = {}
    for row in rows:
        if row.get("kind", "voice") == "voice":
            seeds.setdefault(str(row["arm"]), set()).add(int(row["seed"]))
    counts = {len(s) for s in seeds.values()}
    looks = ", ".join(str(look.seeds) for look in design)
    if len(counts) != 1:
        raise VoicegateError(f"refusing to score {spec.gate}: its arms hold different numbers of seeds "
                             f"({', '.join(f'{a} {len(s)}' for a, s in sorted(seeds.items()))}); a sequential "
                             f"design decides at its registered looks only ({looks} seeds per arm)")
    n = counts.pop()
    if n not in {look.seeds for look in design}:
        raise VoicegateError(f"refusing to score {spec.gate}: {n} seeds per arm is not a registered look "
                             f"({looks} seeds per arm); generate to the next look")
    first = set(spec.seeds[:n])
    if any(s != first for s in seeds.values()):
        raise VoicegateError(f"refusing to score {spec.gate}: a look is the first {n} seeds of `seeds` "
                             f"({', '.join(map(str, spec.seeds[:n]))}), in the registered order")
    return n


def p_value(distances: Mapping[str, Mapping[int, float]], base: str, candidate: str, smallest_sds: float,
            reads_effect: bool) -> float:
    """The one-sided p-value of the t rules' test that delta_cb exceeds ε (Welch's SE and df)."""
    from scipy.special import stdtr

    se, df = welch(distances, base, candidate)
    b, c = distances[base].values(), distances[candidate].values()
    delta = sum(b) / len(b) - sum(c) / len(c)
    eps = smallest_in_units(smallest_sds, b) if reads_effect else 0.0
    if se in (0.0, math.inf) or not math.isfinite(eps):
        return 1.0  # seeds that gave one value, or one seed: nothing to test against, nothing passes
    return float(stdtr(df, -(delta - eps) / se))


def look_decisions(spec: GateSpec, registration: Registration, result: GateResult,
                   seeds: int) -> dict[str, LookDecision]:
    """Each candidate's decision at the look of `seeds` seeds per arm."""
    design = registration.design
    assert design is not None
    arms = {a.name: a for a in result.arms}
    distances = {name: {int(s): float(v) for s, v in a.distances.items() if v is not None}
                 for name, a in arms.items()}
    base = next(a.name for a in result.arms if a.is_base)
    rule = get_rule(spec.floor_rule)
    return {a.name: decide_look(p_value(distances, base, a.name, spec.smallest_effect, rule.smallest_effect),
                                design, seeds)
            for a in result.arms if a.role == "candidate"}


def look_lines(decisions: Mapping[str, LookDecision]) -> list[str]:
    """One line a candidate, naming the look: what the record's entry and the terminal say."""
    return [f"{name}: {d.line}" for name, d in decisions.items()]


def ship_warning(spec: GateSpec, registration: Registration, arm: str) -> list[str]:
    """A warning when `arm` is shipped without a PASS at the look last scored: `ship` records a person's decision
    beside the verdicts, and the fixed rule's verdicts beside a sequential design's are not its decision."""
    from voicegate.artifacts import load_state

    state = load_state(spec) if registration.design is not None else None
    if not state or "current" not in state:
        return []
    result = GateResult.from_json(state["current"])
    base = next(a for a in result.arms if a.is_base)
    try:
        decision = look_decisions(spec, registration, result, len(base.distances)).get(arm)
    except ValueError:
        return []
    if decision is None or decision.verdict == "PASS":
        return []
    return [(f"warning: {arm} has no PASS under the registered sequential design ({decision.line}); the decision "
             "is recorded beside it")]
