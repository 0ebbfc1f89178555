"""The specificity axis: does a candidate move toward THIS author, or toward any writer of the kind?

docs/design.md §6b "Author specificity"; the impostors design of authorship verification (Koppel &
Winter 2014; Kestemont et al. 2016): an attribution counts only when the text is nearer the
candidate author than it is to each of a set of impostor authors.

Pure: per-seed distances in, verdicts out. For each impostor I the candidate's delta toward I
(delta_I, measured with I's own ruler) is set against its delta toward the gate author
(delta_cb). The margin against I is delta_cb − delta_I. Seed by seed it is a difference of
distances, r_I(a, s) = d_gate(a, s) − d_I(a, s), whose base-minus-candidate mean is exactly
that margin, so the registered floor rules apply to r_I unchanged: the margin against I must
exceed the floor of r_I under the rule, for EVERY impostor, for SPECIFIC. Every rule the result
computes is shown; `disagree` flags where they differ.

Three outcomes, because a margin within noise is no evidence either way: SPECIFIC (every margin
above its floor), NOT-SPECIFIC only where some margin lies below minus its "nearer" floor (the voice
is shown to be nearer that author than the gate's), INCONCLUSIVE otherwise (more seeds or longer pools: a new
registration).
The "nearer" floor is the floor, except under a rule that corrects that claim for the impostors it is
one of (welch-t-min-effect: each at α/m). Under a rule with a smallest effect, ε is counted in SDs of
the base's distances toward the gate author: a margin is relevant by the same measure as delta_cb.

Reported per candidate: the margin (delta_cb − the largest delta toward any impostor, the
issue's definition), the nearest impostor (the one it moved toward most), and per rule the
binding impostor (the lowest margin/floor ratio: the one that decides) with its floor and ratio.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from voicegate.scoring._result import Specific, Specificity, impostor_outcome
from voicegate.scoring._verdicts import DIGITS, mean, passes, rnd, rule_set
from voicegate.spec import SMALLEST_EFFECT, Effect, PromptParts, get_rule, smallest_in_units
from voicegate.spec import zero_floor_fails as zero_floor_fails_under

SeedDistances = Mapping[str, Mapping[int, float]]


def _delta(dist: SeedDistances, base: str, arm: str) -> float:
    return mean(list(dist[base].values())) - mean(list(dist[arm].values()))


def _relative_parts(prompts: Mapping[str, PromptParts], author: str, impostor: str, gate: SeedDistances,
                    base: str, candidate: str) -> PromptParts:
    """Each prompt's margin distance (its generation's distance toward the author minus toward the impostor, as a
    margin's per-seed distance is), for the two arms and the seeds a margin is decided on."""
    mine, theirs = prompts[author], prompts[impostor]
    return {arm: {s: tuple(g - i for g, i in zip(mine[arm][s], theirs[arm][s], strict=True)) for s in gate[arm]}
            for arm in (base, candidate)}


def _ratio(margin: float, floor: float) -> float:
    return margin / floor if floor > 0 else (float("inf") if passes(margin, floor) else float("-inf"))


def specificity(gate: SeedDistances, impostors: Mapping[str, SeedDistances], base: str, candidate: str, *,
                author: str, decides: bool, rule: str, rules: Iterable[str] | None = None,
                digits: int | None = DIGITS, weak: Sequence[str] = (), smallest_effect: float = SMALLEST_EFFECT,
                zero_floor_fails: bool | None = None, prompts: Mapping[str, PromptParts] | None = None,
                flip_seed: int = 0) -> Specificity:
    """The specificity of `candidate`: `gate` and each impostor's distances are arm -> seed -> d.

    rule: the deciding rule; rules: the others computed beside it (None: every registered rule). weak: the
    impostors the ruler cannot tell from the author (`_ruler.PoolNumbers.weak_impostors`): the verdict is then
    RULER-WEAK under every rule, naming them (a margin against a writer the ruler cannot tell apart is no
    evidence either way), with every margin still computed and shown.
    smallest_effect: in SDs of the base's per-seed distances toward the gate author — the unit of delta_cb,
    so a margin is relevant by the same measure as the delta it is taken from (a rule that states one reads it).
    zero_floor_fails: whether a floor of 0 says nothing (None: as the computed rules' dates say).
    prompts: target author (the gate's and each impostor's) -> each prompt's own distances, and flip_seed
    the seed of the sign flips: a paired rule reads them for each margin (toward the gate author minus toward
    the impostor, prompt by prompt).
    """
    if not impostors:
        raise ValueError("specificity needs at least one impostor")
    computed = rule_set(rule, rules)
    strict = zero_floor_fails_under(computed) if zero_floor_fails is None else zero_floor_fails
    smallest = smallest_in_units(smallest_effect, gate[base].values()) if any(
        get_rule(rid).smallest_effect for rid in computed) else 0.0
    delta_gate = _delta(gate, base, candidate)
    deltas = {name: _delta(d, base, candidate) for name, d in impostors.items()}
    margins = {name: delta_gate - d for name, d in deltas.items()}
    floors: dict[str, dict[str, float]] = {}
    nearer: dict[str, dict[str, float]] = {}   # only the rules whose "nearer" floor is not their floor
    for name, dist in impostors.items():
        relative = {arm: {s: gate[arm][s] - dist[arm][s] for s in gate[arm]} for arm in gate}
        effect = Effect(smallest=smallest, family=len(impostors), flip_seed=flip_seed,
                        prompts=None if prompts is None else _relative_parts(prompts, author, name, gate, base,
                                                                              candidate))
        floors[name] = {rid: get_rule(rid).floor(relative, base, candidate, effect) for rid in computed}
        nearer[name] = {rid: get_rule(rid).nearer_floor(relative, base, candidate, effect) for rid in computed
                        if get_rule(rid).corrects_nearer}
    verdict: dict[str, Specific] = {}
    binding: dict[str, str] = {}
    for rid in computed:
        outcomes = {impostor_outcome(margins[n], floors[n][rid], nearer[n].get(rid), zero_fails=strict)
                    for n in impostors}
        verdict[rid] = (Specific.RULER_WEAK if weak else Specific.SPECIFIC if outcomes == {Specific.SPECIFIC}
                        else Specific.NOT_SPECIFIC if Specific.NOT_SPECIFIC in outcomes else Specific.INCONCLUSIVE)
        binding[rid] = min(impostors, key=lambda n: (_ratio(margins[n], floors[n][rid]), margins[n], n))
    nearest = max(impostors, key=lambda n: (deltas[n], n))
    ratios = {rid: _ratio(margins[b], floors[b][rid]) for rid, b in binding.items()}
    return Specificity(
        decides=decides,
        verdict=verdict,
        disagree=len(set(verdict.values())) > 1,
        margin=rnd(margins[nearest], digits),
        nearest=nearest,
        binding=binding,
        floors={rid: rnd(floors[b][rid], digits) for rid, b in binding.items()},
        ratios={rid: rnd(r, digits) for rid, r in ratios.items()},
        deltas={author: rnd(delta_gate, digits), **{n: rnd(d, digits) for n, d in deltas.items()}},
        margins={n: rnd(m, digits) for n, m in margins.items()},
        impostor_floors={n: {rid: rnd(f, digits) for rid, f in fl.items()} for n, fl in floors.items()},
        weak=tuple(n for n in impostors if n in set(weak)),
        nearer_floors={n: {rid: rnd(f, digits) for rid, f in fl.items()} for n, fl in nearer.items() if fl},
    )
