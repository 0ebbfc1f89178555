"""welch-t-min-effect: significance is not enough, the effect must matter.

A margin can be real and far too small to mean "writes like this author": under welch-t, the more seeds a gate
gets, the more surely a tiny positive margin over every impostor reads SPECIFIC (on held-back authors a wrong
author's voice shipped 2% -> 6% -> 15% of the time at 5 -> 8 -> 16 seeds). welch-t-min-effect tests against
`floor.smallest_effect` (in base-seed SDs) instead of 0, and corrects "nearer X" for the impostors it is one of.

The synthetic distances below have exactly the means and SDs they are built with, so each verdict is the
rule's arithmetic, not a draw's luck: the gate distance's base SD is 1 (the unit), while the per-seed
difference toward the gate author minus toward the impostor varies by 0.1 only, as it does when an impostor's
text and the gate author's move together from seed to seed.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from helpers.workspace import (
    GATE,
    arm,
    author_like,
    carrier_like,
    run_cli,
    scoring_workspace,
    vg_in,
    voice_rows,
    write_rows,
)

from voicegate.artifacts._format import verdict_line
from voicegate.scoring import CandidateResult, decide, specificity
from voicegate.spec import Role

MIN, WELCH = "welch-t-min-effect", "welch-t"
OK = {"copying": {"cand": "NOT-COPIED"}, "damage": {"cand": "NO-DAMAGE"}}


def _exact(k: int, mean: float, sd: float, flip: bool = False) -> dict[int, float]:
    """k per-seed values whose sample mean and SD are exactly `mean` and `sd`."""
    z = [i - (k - 1) / 2 for i in range(k)]
    s = statistics.stdev(z)
    values = [mean + sd * x / s for x in (reversed(z) if flip else z)]
    return dict(enumerate(values))


def _gate(k: int, delta: float = 2.5) -> dict[str, dict[int, float]]:
    return {"base": _exact(k, 1.0, 1.0), "cand": _exact(k, 1.0 - delta, 1.0, flip=True)}


def _impostor(gate: dict[str, dict[int, float]], k: int, margin: float) -> dict[str, dict[int, float]]:
    """Distances toward an impostor that make the candidate's margin over her exactly `margin`."""
    r = {"base": _exact(k, 0.0, 0.1), "cand": _exact(k, -margin, 0.1, flip=True)}
    return {a: {s: gate[a][s] - r[a][s] for s in gate[a]} for a in gate}


def _decide(k: int, margins: dict[str, float], *, delta: float = 2.5, **kw: float):
    gate = _gate(k, delta)
    impostors = {name: _impostor(gate, k, m) for name, m in margins.items()}
    axis = specificity(gate, impostors, "base", "cand", author="Gate", decides=True, rule=MIN, **kw)
    both = {rid: decide(gate, "base", ["cand"], rule=rid, specificity={"cand": axis}, **OK, **kw)
            for rid in (MIN, WELCH)}
    return axis, both


def test_a_real_margin_below_the_smallest_effect_stays_inconclusive_as_seeds_grow_while_one_above_ships():
    for k in (5, 8, 16, 32, 64):
        below, decided = _decide(k, {"Other": 0.1})  # real (exactly +0.1 SD) but half the smallest effect
        assert below.verdict[MIN] == "INCONCLUSIVE" and decided[MIN].ships is None, k
        assert decided[MIN].candidates[0].voice[MIN] == "PASS"  # the voice is real: only its author is in doubt
        # welch-t, on the same margin: SPECIFIC (and shipped) as soon as 16 seeds shrink its SE enough
        assert (below.verdict[WELCH], decided[WELCH].ships) == (("SPECIFIC", "cand") if k >= 16
                                                                else ("INCONCLUSIVE", None)), k
        above, decided = _decide(k, {"Other": 0.5})  # 2.5 times the smallest effect: ships at every K
        assert above.verdict[MIN] == "SPECIFIC" and decided[MIN].ships == "cand", k


def test_a_voice_delta_below_the_smallest_effect_never_passes():
    for k in (5, 64, 1024):
        small = decide(_gate(k, delta=0.15), "base", ["cand"], rule=MIN, **OK).candidates[0]
        assert small.voice[MIN] == "FAIL", k
        # the floor is the smallest effect (0.2 SD of the base) plus the test's margin of error
        assert small.floors[MIN] == round(small.floors[WELCH] + 0.2, 6), k
    # welch-t passes the same 0.15 SD delta once 1,024 seeds make it significant
    assert small.voice[WELCH] == "PASS" and small.ratios[MIN] < 1 < small.ratios[WELCH]
    assert decide(_gate(5), "base", ["cand"], rule=MIN, **OK).ships == "cand"  # 2.5 SD: shipped at 5 seeds


def test_not_specific_needs_the_margin_significantly_below_minus_the_smallest_effect():
    for k in (5, 16, 64):
        near, _ = _decide(k, {"Other": -0.1})
        assert near.verdict[MIN] == "INCONCLUSIVE" and near.nearer(MIN) == [], k
        assert near.verdict[WELCH] == ("NOT-SPECIFIC" if k >= 16 else "INCONCLUSIVE"), k
        far, _ = _decide(k, {"Other": -0.5})
        assert far.verdict[MIN] == "NOT-SPECIFIC" and far.nearer(MIN) == ["Other"], k


def test_nearer_x_is_corrected_for_the_impostors_it_is_one_of():
    # 16 seeds, SE of a margin 0.1·√(2/16): t(0.99, 30)·SE = 0.087 < 0.095 < 0.107 = t(1 − 0.01/4, 30)·SE
    four = {"Near": -0.095, "A": 1.0, "B": 1.0, "C": 1.0}
    axis, _ = _decide(16, four, smallest_effect=0.0)
    assert axis.verdict[WELCH] == "NOT-SPECIFIC" and axis.nearer(WELCH) == ["Near"]  # at α, one of four
    assert axis.verdict[MIN] == "INCONCLUSIVE" and axis.nearer(MIN) == []            # at α/4: not shown
    assert axis.nearer_floors["Near"][MIN] > axis.impostor_floors["Near"][MIN] == axis.impostor_floors["Near"][WELCH]
    alone, _ = _decide(16, {"Near": -0.095}, smallest_effect=0.0)
    assert alone.verdict[MIN] == "NOT-SPECIFIC" and alone.nearer(MIN) == ["Near"]  # a family of one: at α
    # the family is stated wherever "nearer" is written
    shown, _ = _decide(16, {"Near": -0.2, "A": 1.0, "B": 1.0, "C": 1.0}, smallest_effect=0.0)
    line = verdict_line(CandidateResult(name="cand", role=Role.CANDIDATE, specificity=shown, delta_cb=2.5,
                                        floors={MIN: 1.0}, voice={MIN: "PASS"}, ratios={MIN: 2.5}), MIN)
    assert "nearer Near (-0.200; each of the 4 impostors at α 0.01/4 (Bonferroni; the verdict is Holm's))" in line


def test_the_smallest_effect_is_registered_in_the_spec(tmp_path: Path) -> None:
    root = scoring_workspace(tmp_path / "ws", extra={"floor": {"rule": MIN, "smallest_effect": 0.5}})
    write_rows(root, voice_rows({"base": carrier_like("b"), "cand": author_like("c"), "other": carrier_like("o")}))
    done = vg_in(root, "score", GATE, "--json", "--dry-run")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    base = list(arm(result, "base")["distances"].values())
    cand = arm(result, "cand")
    assert result["rule"] == MIN
    # on the record: the signature names the smallest effect the rule was given
    assert result["signature"]["smallest_effect"] == 0.5 and "|effect:0.5sd|" in result["signature_text"]
    assert abs(cand["floors"][MIN] - cand["floors"][WELCH] - 0.5 * statistics.stdev(base)) < 1e-9
    # a negative smallest effect is refused like any bad value: exit 2, one line
    spec = root / "preregistrations" / f"{GATE}.yaml"
    spec.write_text(spec.read_text(encoding="utf-8").replace("smallest_effect: 0.5", "smallest_effect: -0.1"),
                    encoding="utf-8")
    done = run_cli("score", GATE, "-C", root)
    assert done.code == 2 and done.stderr.count("\n") == 1 and "floor.smallest_effect" in done.stderr
