"""prompt-paired: a sign-flip test over prompts, each prompt's base and candidate compared on the same prompt.

Every seed answers the same prompts, so with few seeds welch-t (seeds as the only noise) has two degrees of freedom
an arm and little power; pairing by prompt gives it forty units. The test is exact where its sign patterns can be
enumerated, and it rests on an assumption it checks: no seed moves several prompts together. Where the check fails,
welch-t-min-effect's floor decides, and the score says so.
"""

from __future__ import annotations

import itertools
import json
import statistics
from pathlib import Path

from helpers.workspace import GATE, SEEDS, arm, author_like, carrier_like, run_cli, scoring_workspace, write_rows

from voicegate.scoring import decide
from voicegate.spec import Effect, fallback_note, seed_check, sign_flip

PAIRED, MIN = "prompt-paired", "welch-t-min-effect"
OK = {"copying": {"cand": "NOT-COPIED"}, "damage": {"cand": "NO-DAMAGE"}}

# Two constructed differences over 10 prompts (1,024 sign patterns): the first's p-value is 6/1024, under α 0.01;
# the second's one prompt more negative puts it at 12/1024, over it.
UNDER = [0.3, 0.5, -0.1, 0.4, 0.2, 0.6, 0.1, 0.35, -0.05, 0.45]
OVER = [0.3, 0.5, -0.1, 0.4, 0.2, 0.6, 0.1, 0.35, -0.25, 0.45]


def _by_hand(x: list[float]) -> float:
    """The exact one-sided p-value: the share of all 2^P sign patterns whose mean is at least the observed one."""
    observed = sum(x) / len(x)
    means = [sum(s * v for s, v in zip(signs, x, strict=True)) / len(x)
             for signs in itertools.product((1, -1), repeat=len(x))]
    return sum(m >= observed - 1e-12 for m in means) / len(means)


def _paired_case(x: list[float], *, seed_effect: tuple[float, ...] = (0.0, 0.0)):
    """Per-seed distances (each seed's mean over prompts) and each prompt's own, for a base and a candidate whose
    per-prompt difference (mean over the base's seeds minus mean over the candidate's) is exactly `x`;
    `seed_effect` shifts every prompt of each base seed by the same amount (an effect a seed has on all its
    prompts)."""
    noise = [0.02 * ((p * 7) % 5 - 1.8) for p in range(len(x))]  # within-seed noise, cancelling over the two seeds
    base = {s: tuple(1.0 + shift + sign * n for n in noise)
            for s, sign, shift in zip((1, 2), (1, -1), seed_effect, strict=True)}
    cand = {s: tuple(1.0 - v - sign * n for v, n in zip(x, noise, strict=True)) for s, sign in ((1, 1), (2, -1))}
    parts = {"base": base, "cand": cand}
    distances = {a: {s: statistics.mean(v) for s, v in per.items()} for a, per in parts.items()}
    return distances, parts


def test_the_exact_null_distribution_is_every_sign_pattern_and_the_verdict_is_p_at_most_alpha():
    for x, passes in ((UNDER, True), (OVER, False)):
        flip = sign_flip(x, 0.01, seed=0)
        assert flip.exact and flip.flips == 2 ** len(x)
        assert flip.p == _by_hand(x)
        assert flip.p == (6 / 1024 if passes else 12 / 1024)
        distances, parts = _paired_case(x)
        assert seed_check(list(parts["base"].values()), list(parts["cand"].values())).ok
        c = decide(distances, "base", ["cand"], rule=PAIRED, rules=(PAIRED, MIN), smallest_effect=0.0,
                   prompts=parts, **OK).candidates[0]
        assert c.voice[PAIRED] == ("PASS" if passes else "FAIL")
        # as a floor on delta_cb: the test's critical value (delta_cb is the mean difference here)
        assert c.floors[PAIRED] == round(flip.critical, 6)
        assert c.delta_cb == round(statistics.mean(x), 6)
    # the smallest effect that matters shifts the test: the same differences minus ε, flipped
    distances, parts = _paired_case(UNDER)
    c = decide(distances, "base", ["cand"], rule=PAIRED, smallest_effect=0.5, prompts=parts, **OK).candidates[0]
    eps = 0.5 * statistics.stdev(distances["base"].values())
    assert c.floors[PAIRED] == round(eps + sign_flip([v - eps for v in UNDER], 0.01, seed=0).critical, 6)


def test_random_flips_are_seeded_from_the_spec_and_count_the_observed_pattern_once():
    x = [0.05 * ((p * 11) % 9 - 3) for p in range(40)]
    first, again, other = sign_flip(x, 0.01, seed=7), sign_flip(x, 0.01, seed=7), sign_flip(x, 0.01, seed=8)
    assert not first.exact and first.flips == 1999
    assert first == again and first.critical != other.critical
    assert first.p * 2000 == round(first.p * 2000) and first.p >= 1 / 2000


def test_a_seed_that_moves_every_prompt_fails_the_check_and_welch_t_min_effect_decides():
    # the base against itself, in effect: no prompt differs, but the base's two seeds sit 0.3 and 0.5 above the
    # candidate's on every prompt, so every per-prompt difference is +0.4 and the sign flips would call it certain
    x = [0.0] * 12
    distances, parts = _paired_case(x, seed_effect=(0.3, 0.5))
    check = seed_check(list(parts["base"].values()), list(parts["cand"].values()))
    assert not check.ok and check.p < 0.05
    c = decide(distances, "base", ["cand"], rule=PAIRED, rules=(PAIRED, MIN), prompts=parts, **OK).candidates[0]
    assert c.floors[PAIRED] == c.floors[MIN] and c.voice[PAIRED] == c.voice[MIN] == "FAIL"
    note = fallback_note(PAIRED, distances, "base", "cand", Effect(prompts=parts))
    assert note is not None and "seed × prompt-group" in note and "welch-t-min-effect's floor decides" in note
    # the same +0.4 on every prompt without the seed effect (each seed's own prompt noise only): the paired test
    # is the judge, and it is sure
    distances, parts = _paired_case([0.4] * 12)
    c = decide(distances, "base", ["cand"], rule=PAIRED, rules=(PAIRED, MIN), prompts=parts, **OK).candidates[0]
    assert c.voice[PAIRED] == "PASS" and c.floors[PAIRED] != c.floors[MIN]
    assert fallback_note(PAIRED, distances, "base", "cand", Effect(prompts=parts)) is None


PROMPTS = 12


def _rows(texts: dict) -> list[dict]:
    return [{"kind": "voice", "arm": name, "model": name, "seed": seed, "prompt_id": str(p), "text": make(seed, p),
             "finish_reason": "stop"} for name, make in texts.items() for seed in SEEDS for p in range(PROMPTS)]


def test_register_and_score_a_gate_that_chooses_the_prompt_paired_rule(tmp_path: Path) -> None:
    root = scoring_workspace(tmp_path / "ws", extra={"floor": {"rule": PAIRED},
                                                     "prompts": [f"prompt {i}" for i in range(PROMPTS)]})
    write_rows(root, _rows({"base": carrier_like("b"), "cand": author_like("c"), "other": carrier_like("o")}))
    dry = run_cli("score", GATE, "-C", root, "--json", "--dry-run")
    assert dry.code == 0, dry.stderr
    assert run_cli("score", GATE, "-C", root, "--json", "--dry-run").stdout == dry.stdout  # the same flips
    result = json.loads(dry.stdout)
    assert result["rule"] == PAIRED
    assert result["signature"]["rule"] == "prompt-paired@1" and "prompt-paired@1" in result["signature_text"]
    cand, other = arm(result, "cand"), arm(result, "other")
    # computed beside every rule in force today, and deciding
    assert set(cand["floors"]) == {"global-max-spread", "pairwise-max-spread", "welch-t", MIN, PAIRED}
    assert cand["voice"][PAIRED] == "PASS" and other["voice"][PAIRED] == "FAIL"
    assert result["ships"] == "cand"
    done = run_cli("score", GATE, "-C", root)
    assert done.code == 0, done.stderr
    record = (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    assert "prompt-paired@1" in record and "prompt-paired" in done.stdout


def test_a_gate_that_does_not_choose_it_never_computes_it(tmp_path: Path) -> None:
    root = scoring_workspace(tmp_path / "ws", extra={"floor": {"rule": MIN}})
    rows = _rows({"base": carrier_like("b"), "cand": author_like("c"), "other": carrier_like("o")})
    write_rows(root, [r for r in rows if int(r["prompt_id"]) < 6])  # the constructed spec's six prompts
    done = run_cli("score", GATE, "-C", root, "--json", "--dry-run")
    assert done.code == 0, done.stderr
    result = json.loads(done.stdout)
    assert PAIRED not in arm(result, "cand")["floors"] and "prompt-paired" not in result["signature_text"]


def test_a_base_seed_that_moves_every_prompt_is_decided_by_welch_and_said_on_the_record(tmp_path: Path) -> None:
    root = scoring_workspace(tmp_path / "ws", extra={"floor": {"rule": PAIRED},
                                                     "prompts": [f"prompt {i}" for i in range(PROMPTS)]})

    def shifted(seed: int, p: int) -> str:  # the base's second seed writes like the author on every prompt
        return (author_like("b") if seed == SEEDS[1] else carrier_like("b"))(seed, p)

    write_rows(root, _rows({"base": shifted, "cand": author_like("c"), "other": carrier_like("o")}))
    done = run_cli("score", GATE, "-C", root, "--json")
    assert done.code == 0, done.stderr
    result = json.loads(done.stdout)
    for name in ("cand", "other"):
        a = arm(result, name)
        assert a["floors"][PAIRED] == a["floors"][MIN] and a["voice"][PAIRED] == a["voice"][MIN]
        said = [w for w in result["warnings"] if w.startswith(f"{name}, delta_cb, under prompt-paired: ")]
        assert len(said) == 1 and "seed × prompt-group check found seeds moving prompts together" in said[0]
        assert said[0].endswith("so welch-t-min-effect's floor decides")
    record = " ".join((root / "gates" / f"{GATE}.md").read_text(encoding="utf-8").split())
    assert "- cand, delta\\_cb, under prompt-paired: the seed × prompt-group check found seeds moving" in record


def test_an_amendment_can_switch_a_scored_gate_to_it_citing_a_prospective_registration(tmp_path: Path,
                                                                                        monkeypatch) -> None:
    from helpers.workspace import BACK, register_prospective

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1796601600")  # 2026-12-07, the rule's registration day
    root = scoring_workspace(tmp_path / "ws", extra={"floor": {"rule": MIN},
                                                     "prompts": [f"prompt {i}" for i in range(PROMPTS)]})
    (root / "corpora" / "back").mkdir()
    (root / "corpora" / "back" / "back.txt").write_text(BACK, encoding="utf-8")  # what the other gate's spec names
    register_prospective(root, "lv-other", PAIRED)
    write_rows(root, _rows({"base": carrier_like("b"), "cand": author_like("c"), "other": carrier_like("o")}))
    scored = run_cli("score", GATE, "-C", root, "--json")
    assert scored.code == 0, scored.stderr
    assert PAIRED not in arm(json.loads(scored.stdout), "cand")["floors"]
    early = run_cli("amend", GATE, "-C", root, "--rule", PAIRED, "--reason", "prompts are the units")
    assert early.code == 2 and "registered 2026-12-07" in early.stderr  # not before the amendment: refused
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1796688000")  # 2026-12-08
    amended = run_cli("amend", GATE, "-C", root, "--rule", PAIRED, "--reason", "prompts are the units")
    assert amended.code == 0, amended.stderr
    assert "cites: prompt-paired was registered prospectively for lv-other" in amended.stdout
    record = (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    assert "floor rule welch-t-min-effect@1 → prompt-paired@1" in record and "| floor prompt-paired |" in record
    assert "rule:prompt-paired@1|rules:global-max-spread@1,pairwise-max-spread@1,prompt-paired@1," in record
    done = run_cli("score", GATE, "-C", root, "--json", "--dry-run")
    assert done.code == 0, done.stderr
    assert json.loads(done.stdout)["rule"] == PAIRED


def test_calibrate_decides_a_pilot_that_chose_it_under_it_and_the_rules_every_gate_computes(tmp_path: Path) -> None:
    from voicegate.gate import calibrate

    seeds = [1, 2, 3, 4]
    root = scoring_workspace(tmp_path / "ws", extra={"floor": {"rule": PAIRED}, "seeds": seeds,
                                                     "prompts": [f"prompt {i}" for i in range(PROMPTS)]})
    texts = {"base": carrier_like("b"), "cand": author_like("c"), "other": carrier_like("o")}
    write_rows(root, [{"kind": "voice", "arm": name, "model": name, "seed": seed, "prompt_id": str(p),
                       "text": make(seed, p), "finish_reason": "stop"}
                      for name, make in texts.items() for seed in seeds for p in range(PROMPTS)])
    result = calibrate(root, GATE, seeds=3, draws=20, write=False)
    assert result.rules == ("global-max-spread", "pairwise-max-spread", "welch-t", MIN, PAIRED)
    cand = next(c for c in result.candidates if c.name == "cand")
    # the draws come from resamples of the pilot, so a draw may hold one seed twice (two identical replicates: its
    # seed check cannot run and the fallback decides): nearly every draw, not every one, passes
    assert cand.all_seeds[PAIRED]["voice"] == "PASS" and cand.voice_pass[PAIRED].count >= 18
