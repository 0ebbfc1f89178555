"""`voicegate calibrate`: K-seed draws of a pilot re-decided through `decide`/`specificity`.

A constructed pilot (`_workspace.impostor_spec`, 8 seeds): "cand" writes like the gate author, "mimic"
like the impostor, "aa" is the A-vs-A arm (the base's model under fresh seeds: `role: a-vs-a`). Then the
refusals (exit 2, one line, nothing written), the JSON, determinism, a proof that the shares come from
the one code path of a verdict, and (marked `corpus`) the tiny voices' sweep.
"""

from __future__ import annotations

import json
import lzma
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import SHARED
from helpers.workspace import GATE, N_PROMPTS, impostor_spec, impostor_workspace, run_cli, text, tree_snapshot

from voicegate.spec import _rules

SEEDS = list(range(1, 9))
STYLE = {"base": None, "cand": 0, "mimic": 1, "aa": None}
RULES = tuple(r for r, f in _rules.RULES.items() if not f.by_choice)  # every rule a gate computes unasked


def _pilot_spec(**arm: Any) -> dict[str, Any]:
    spec = impostor_spec({"Impostor One": ["corpora/imp/*.txt"]})
    spec["seeds"] = SEEDS
    spec["arms"].append({"name": "aa", "model": "base", "role": "a-vs-a", **arm})
    return spec


def _rows() -> list[dict[str, Any]]:
    return [{"arm": a, "seed": s, "prompt_id": str(p), "text": text(160, f"{a}/{s}/{p}", st)}
            for a, st in STYLE.items() for s in SEEDS for p in range(N_PROMPTS)]


@pytest.fixture(scope="module")
def pilot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = impostor_workspace(tmp_path_factory.mktemp("pilot") / "ws", _pilot_spec())
    source = root.parent / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in _rows()), encoding="utf-8")
    for args in (("register", GATE), ("import", GATE, str(source))):
        code, _, err = run_cli(*args, "-C", root)
        assert code == 0, err
    return root


def _refused(root: Path, *args: str) -> str:
    before = tree_snapshot(root)
    code, out, err = run_cli(*args, "-C", root)
    assert code == 2, (out, err)
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert tree_snapshot(root) == before  # nothing written, not even the cache
    return err


# -- refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    (("--seeds", "8"), "--seeds 8: a pilot must hold more seeds than each draw takes"),
    (("--seeds", "9"), "has 8 stored (use --seeds below 8"),
    (("--seeds", "1"), "a draw needs at least 2 seeds per arm"),
    (("--seeds", "3", "--draws", "0"), "--draws 0: at least 1 draw"),
])
def test_bad_requests_are_refused_with_one_line_and_nothing_written(pilot: Path, args: tuple[str, ...],
                                                                     message: str):
    assert message in _refused(pilot, "calibrate", GATE, *args)


@pytest.mark.parametrize("arms, message", [
    ([{"name": "aa", "model": "lv-test-cand", "role": "a-vs-a"}],
     "A-vs-A arm aa must use the base's model base"),
    ([{"name": "aa", "model": "base", "role": None}], "did you mean a-vs-a?"),
    ([{"name": "aa", "model": "base", "role": "a-vs-a"}], "needs at least one candidate arm"),
])
def test_a_bad_a_vs_a_arm_or_no_candidate_is_refused_at_validation(tmp_path: Path, arms: list[dict[str, Any]],
                                                                    message: str):
    spec = _pilot_spec()
    spec["arms"] = [spec["arms"][0], *(arms if "candidate" in message else [*spec["arms"][1:3], *arms])]
    root = impostor_workspace(tmp_path / "ws", spec)
    assert message in _refused(root, "calibrate", GATE, "--seeds", "3")
    assert message in _refused(root, "register", GATE)


def test_an_a_vs_a_arm_may_share_the_base_model_and_role_null_is_not_read_as_it(tmp_path: Path):
    from voicegate.spec import load_spec

    root = impostor_workspace(tmp_path / "ws", _pilot_spec())
    spec = load_spec(root, GATE)
    assert [a.name for a in spec.candidates] == ["cand", "mimic"]
    assert [a.name for a in spec.a_vs_a] == ["aa"] and spec.arm("aa").model == spec.base.model
    raw = (root / "preregistrations" / f"{GATE}.yaml").read_text(encoding="utf-8")
    assert "role: a-vs-a" in raw


# -- the result ------------------------------------------------------------------------------


def test_json_shape_distances_per_arm_and_target_and_the_file_it_writes(pilot: Path):
    code, out, err = run_cli("calibrate", GATE, "--seeds", "3", "--draws", "50", "--json", "-C", pilot)
    assert code == 0, err
    data = json.loads(out)
    written = pilot / "runs" / GATE / "calibration-K3.json"
    assert f"wrote {written}" in err
    assert json.loads(written.read_text(encoding="utf-8")) == data
    assert (data["gate"], data["seeds_per_arm"], data["draws"], data["rng_seed"]) == (GATE, 3, 50, 0)
    assert data["rules"] == list(RULES) and data["confidence"] == 0.95 and data["resamples"] == 50
    assert data["interval"].startswith("wilson at the effective number of independent draws: the draws' own binomial "
                                       "variance plus the pilot's sampling variance")
    assert data["stored_seeds"] == {"base": 8, "cand": 8, "mimic": 8, "aa": 8}
    # 8 seeds drawn 3 at a time: the draws overlap too much to stand for independent gates, and it says so
    assert data["warnings"] == [("the pilot holds 8 seeds per arm, fewer than 4 x 3: draws of 3 share most of their "
                                "seeds, so the shares say little more than the pilot's own seeds do, and its resamples "
                                "repeat them: the intervals understate how far another pilot would have come out")]
    assert data["impostors"] == ["Impostor One"] and data["specificity"] == "decides"
    assert "voice_of" not in data["candidates"]["cand"]  # the spec does not say whose voice it is
    assert data["candidates"]["cand"]["would_ship_is"] == "power or false-pass rate"
    assert set(data["candidates"]) == {"cand", "mimic"}  # the A-vs-A arm is never a candidate
    for cand in data["candidates"].values():
        assert (cand["copying"], cand["damage"]) == ("NOT-COPIED", "NO-DAMAGE")
        assert set(cand["rules"]) == set(RULES)
        for rates in cand["rules"].values():
            assert set(rates) == {"voice_pass", "specific", "not_specific", "inconclusive", "would_ship", "all_seeds"}
            assert sum(rates[w]["count"] for w in ("specific", "not_specific", "inconclusive")) == 50
            for what in ("voice_pass", "specific", "not_specific", "inconclusive", "would_ship"):
                r = rates[what]
                assert set(r) == {"share", "count", "low", "high", "effective_draws"}
                assert 8 // 3 <= r["effective_draws"] <= 50
                assert r["low"] <= r["share"] <= r["high"] and r["share"] == r["count"] / 50
            assert rates["would_ship"]["count"] <= min(rates["voice_pass"]["count"], rates["specific"]["count"])
    assert set(data["a_vs_a"]) == {"aa"} and set(data["a_vs_a"]["aa"]) == set(RULES)
    assert set(data["a_vs_a"]["aa"]["welch-t"]["false_pass"]) == {"share", "count", "low", "high", "effective_draws"}
    # per arm, per target (the gate author and each impostor): the per-seed distances used
    assert set(data["distances"]) == {"base", "cand", "mimic", "aa"}
    for per_target in data["distances"].values():
        assert set(per_target) == {"Test Author", "Impostor One"}
        assert all(list(d) == [str(s) for s in SEEDS] for d in per_target.values())
    # the voices behave: the author's voice ships, the impostor's does not, the base does not pass against itself
    cand, mimic = data["candidates"]["cand"]["rules"], data["candidates"]["mimic"]["rules"]
    assert cand["welch-t"]["would_ship"]["share"] >= 0.9 and mimic["welch-t"]["would_ship"]["share"] == 0.0
    assert cand["welch-t"]["all_seeds"] == {"voice": "PASS", "specific": "SPECIFIC"}
    assert data["a_vs_a"]["aa"]["welch-t"]["false_pass"]["share"] <= 0.1


def test_calibrate_appends_only_its_calibration_to_the_record(pilot: Path):
    run_cli("calibrate", GATE, "--seeds", "5", "--draws", "10", "-C", pilot)  # the numbers first shown: anchored
    before = {p: b for p, b in tree_snapshot(pilot).items() if not p.startswith("runs/")}
    code, out, err = run_cli("calibrate", GATE, "--seeds", "4", "--draws", "20", "-C", pilot)
    assert code == 0, err
    assert "A-vs-A arm aa, false-pass rate (VOICE PASS)" in out and "would ship" in out
    assert "would ship = the power for a real voice of Test Author, the false-pass rate for any other voice" in out
    assert "drawn per arm independently from 20 resamples of the pilot; shares of draws with 95% intervals that " \
        "include the pilot's own sampling" in out
    assert "  cand: would ship is the power or false-pass rate\n" in out
    heads = ("VOICE PASS", "SPECIFIC", "NOT-SPECIFIC", "INCONCLUSIVE")
    assert " ".join(f"{h:22s}" for h in heads) + " would ship" in out
    assert "  warning: the pilot holds 8 seeds per arm, fewer than 4 x 4" in out
    after = {p: b for p, b in tree_snapshot(pilot).items() if not p.startswith("runs/")}
    record = f"gates/{GATE}.md"
    assert {p for p in after if after[p] != before.get(p)} == {record}  # no README, no compose comment
    added = after[record][len(before[record]):].decode("utf-8")
    assert added.startswith("\n## Calibration — ") and "— 4 seeds per arm\n" in added
    assert f"{record}: appended entry " in out and "(calibration)" in out
    # the same draws again: the record already says so
    code, again, _ = run_cli("calibrate", GATE, "--seeds", "4", "--draws", "20", "-C", pilot)
    assert code == 0 and "this calibration (4 seeds per arm, same rates) is already recorded" in again
    assert {p: b for p, b in tree_snapshot(pilot).items() if not p.startswith("runs/")} == after
    assert not (pilot / "runs" / GATE / "scores.json").exists()


def test_the_same_seed_draws_the_same_and_another_seed_other_draws(pilot: Path):
    def once(seed: str) -> str:
        code, out, err = run_cli("calibrate", GATE, "--seeds", "3", "--draws", "30", "--seed", seed, "--json",
                                 "-C", pilot)
        assert code == 0, err
        return out

    assert once("7") == once("7")
    # Another seed draws other subsets: shown on distances where a draw's verdict depends on the subset.
    from voicegate.gate._calibrate import decide_draws
    from voicegate.spec import load_spec

    spec = load_spec(pilot, GATE)
    rng = random.Random(5)
    noisy = {arm: {s: rng.gauss(0.5 - (0.04 if arm == "cand" else 0.0), 0.03) for s in SEEDS} for arm in STYLE}
    ok = {"cand": "NOT-COPIED", "mimic": "NOT-COPIED"}, {"cand": "NO-DAMAGE", "mimic": "NO-DAMAGE"}

    def count(seed: int) -> int:
        cal = decide_draws(spec, noisy, {}, copying=ok[0], damage=ok[1], seeds=3, draws=200, rng_seed=seed)
        return cal.candidates[0].voice_pass["welch-t"].count

    first, second = count(1), count(2)
    assert count(1) == first and 0 < first < 200 and second != first


# -- one code path ------------------------------------------------------------------------------


def test_a_rule_is_decided_only_through_the_registered_rule_and_decide(pilot: Path, monkeypatch: pytest.MonkeyPatch):
    """Fails if calibrate decides a rule anywhere but `RULES[...]`'s floor inside `decide`/`specificity`."""
    from voicegate import scoring
    from voicegate.scoring import Voice
    from voicegate.spec import _rules

    def run() -> dict[str, Any]:
        code, out, err = run_cli("calibrate", GATE, "--seeds", "3", "--draws", "40", "--json", "-C", pilot)
        assert code == 0, err
        return json.loads(out)

    honest = run()
    assert honest["candidates"]["mimic"]["rules"]["pairwise-max-spread"]["voice_pass"]["share"] < 0.5

    # 1. The pairwise rule's floor replaced by -1 in the registry: every voice PASSes under it (and is
    #    SPECIFIC, since a margin's floor is the same rule's), the other rules are untouched.
    calls = {"floor": 0}

    def floor(dist: Any, base: str, cand: str, effect: Any) -> float:
        calls["floor"] += 1
        return -1.0

    monkeypatch.setitem(_rules.RULES, "pairwise-max-spread", replace(_rules.PAIRWISE_MAX_SPREAD, _floor=floor))
    lowered = run()
    assert calls["floor"] >= 40 * 2 * 2  # every draw: each candidate's voice floor and its margin's floor
    mimic = lowered["candidates"]["mimic"]["rules"]
    assert mimic["pairwise-max-spread"]["voice_pass"]["share"] == 1.0
    assert mimic["pairwise-max-spread"]["specific"]["share"] == 1.0
    assert mimic["pairwise-max-spread"]["would_ship"]["share"] == 1.0
    assert lowered["a_vs_a"]["aa"]["pairwise-max-spread"]["false_pass"]["share"] == 1.0
    for rid in ("global-max-spread", "welch-t"):
        assert mimic[rid] == honest["candidates"]["mimic"]["rules"][rid]
    monkeypatch.undo()

    # 2. `decide` wrapped: counted, and its every VOICE verdict turned to FAIL: the shares follow it.
    seen = {"decide": 0, "specificity": 0}
    real_decide, real_specificity = scoring.decide, scoring.specificity

    def failing_decide(*args: Any, **kw: Any) -> Any:
        seen["decide"] += 1
        d = real_decide(*args, **kw)
        return replace(d, candidates=tuple(replace(c, voice_decides=Voice.FAIL) for c in d.candidates))

    def counted_specificity(*args: Any, **kw: Any) -> Any:
        seen["specificity"] += 1
        return real_specificity(*args, **kw)

    monkeypatch.setattr(scoring, "decide", failing_decide)
    monkeypatch.setattr(scoring, "specificity", counted_specificity)
    failed = run()
    # per draw and rule: one decide for the candidates, one for the A-vs-A arm; plus one per rule on every seed
    assert seen["decide"] == 40 * len(RULES) * 2 + len(RULES)
    # per draw (and once on every seed) and candidate: one call gives every rule's verdict, each decide reads its own
    assert seen["specificity"] == (40 + 1) * 2
    for cand in failed["candidates"].values():
        for rates in cand["rules"].values():
            assert rates["voice_pass"]["share"] == 0.0 and rates["would_ship"]["share"] == 0.0
    assert all(r["false_pass"]["share"] == 0.0 for r in failed["a_vs_a"]["aa"].values())


# -- score and generate with an A-vs-A arm ------------------------------------------------------


def test_score_keeps_the_a_vs_a_arm_out_of_the_decision_and_warns(pilot: Path):
    code, out, err = run_cli("score", GATE, "--json", "--dry-run", "-C", pilot)
    assert code == 0, err
    result = json.loads(out)
    assert [a["name"] for a in result["arms"]] == ["base", "cand", "mimic"]
    assert result["ships"] == "cand"
    assert any(w.startswith("A-vs-A arm aa: VOICE") for w in result["warnings"]), result["warnings"]


def test_the_schedule_gives_the_a_vs_a_arm_fresh_request_seeds(tmp_path: Path):
    from voicegate.generate import build_schedule, request_seed
    from voicegate.spec import load_spec

    root = impostor_workspace(tmp_path / "ws", _pilot_spec())
    jobs = build_schedule(load_spec(root, GATE))
    by = {(j.arm, j.seed, j.prompt_id): j for j in jobs if j.kind == "voice"}
    for seed in SEEDS:
        for p in range(N_PROMPTS):
            base, aa, cand = (by[(arm, seed, str(p))] for arm in ("base", "aa", "cand"))
            assert base.request_seed == cand.request_seed == request_seed(seed, "voice", str(p))
            assert aa.request_seed == request_seed(seed, "voice", str(p), a_vs_a=True) != base.request_seed
            assert aa.model == base.model and aa.seed == seed  # the registered seed stays the row's seed
    fresh = {j.request_seed for j in jobs if j.arm == "aa"}
    assert not fresh & {j.request_seed for j in jobs if j.arm == "base"}


# -- the tiny voices' sweep (corpus) -------------------------------------------------------------

SWEEP = SHARED / "fixtures" / "tiny-voices" / "sweep" / "sweep48.json.xz"
# benchmarks/bench_operating.py --draws 1000 --seed 0 --per-gate, Austen's gate (lv-austen's would-ship share):
# pairwise-max-spread 0.626 / 0.212 and welch-t 0.182 / 1.000 at K = 3 / 8. The gate here is Austen's with the
# base and lv-austen only (the benchmark's has every voice and the A-vs-A arm): both are drawn first from the
# same rng, so their draws are the benchmark's, and neither rule looks at any other arm.
BENCH_AUSTEN = {("pairwise-max-spread", 3): 0.626, ("pairwise-max-spread", 8): 0.212,
                ("welch-t", 3): 0.182, ("welch-t", 8): 1.000}
FIVE = ("Jane Austen", "Charles Dickens", "George Eliot", "William Makepeace Thackeray", "Anthony Trollope")


@pytest.mark.corpus
def test_the_sweep_reproduces_the_benchmarks_austen_gate(tmp_path: Path):
    if not (SHARED / "corpora" / "british-fiction").is_dir() or not SWEEP.is_file():
        pytest.skip(f"needs {SHARED / 'corpora' / 'british-fiction'} and {SWEEP}")
    from helpers.authors import VOICES, author_spec
    from helpers.workspace import git

    root = tmp_path / "ws"
    seeds = tuple(range(1, 49))
    spec = author_spec("Jane Austen", ("lv-austen",), impostors=FIVE[1:], seeds=seeds)
    for rel, body in (("prompts/tiny-voices.txt", (VOICES / "prompts.txt").read_text(encoding="utf-8")),
                      (".gitignore", "runs/\n"), ("preregistrations/lv-austen.yaml", yaml.safe_dump(spec))):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body, encoding="utf-8")
    (root / "gates").mkdir()
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Austen's pilot")
    with lzma.open(SWEEP, "rt", encoding="utf-8") as f:
        sweep = json.load(f)
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps({"arm": arm, "seed": s, "prompt_id": str(i), "text": t}) + "\n"
                              for arm in ("base", "lv-austen") for s in seeds
                              for i, t in enumerate(sweep[arm][str(s)])), encoding="utf-8")
    del sweep
    for args in (("register", "lv-austen"), ("import", "lv-austen", str(source))):
        code, _, err = run_cli(*args, "-C", root)
        assert code == 0, err
    power = {}
    for k in (3, 8):
        code, out, err = run_cli("calibrate", "lv-austen", "--seeds", str(k), "--draws", "1000", "--json", "-C", root)
        assert code == 0, err
        rates = json.loads(out)["candidates"]["lv-austen"]["rules"]
        for rid in ("pairwise-max-spread", "welch-t"):
            assert abs(rates[rid]["would_ship"]["share"] - BENCH_AUSTEN[(rid, k)]) <= 0.05, (rid, k, rates[rid])
        # the max-spread row for this gate: a range floor sees the voice LESS often with more seeds
        power[k] = {rid: r["would_ship"]["share"] for rid, r in rates.items()}
    assert power[8]["welch-t"] > power[3]["welch-t"] + 0.5
    assert power[8]["pairwise-max-spread"] < power[3]["pairwise-max-spread"]


# -- the design check at registration ------------------------------------


def _pilot_result(root: Path, k: int, share: float, *, carrier: str = "base", author: str = "Test Author",
                  gate: str = "lv-pilot", voice_of: dict[str, str] | None = None, other: float = 0.0) -> None:
    """A calibration of pilot `gate` chained into its record: its voice "right" ships in `share` of the draws and
    passes on every stored seed, "wrong" ships in `other` (`voice_of`: whose voice each arm is, if said)."""
    from voicegate.artifacts import record_calibration
    from voicegate.gate._calibrate import Calibration, CandidateRates, Share
    from voicegate.spec import load_spec

    spec_path = root / "preregistrations" / f"{gate}.yaml"
    if not spec_path.exists():
        raw = yaml.safe_load((root / "preregistrations" / f"{GATE}.yaml").read_text(encoding="utf-8"))
        raw.update(gate=gate, artifacts={"record": f"gates/{gate}.md"})
        spec_path.write_text(yaml.safe_dump(raw), encoding="utf-8")

    def rates(name: str, x: float, seeds: str) -> CandidateRates:
        s = Share(round(x * 1000), 1000, max(0.0, x - 0.1), min(1.0, x + 0.1), 30.0)
        return CandidateRates(name=name, voice_pass={"welch-t": s}, specific={"welch-t": s}, would_ship={"welch-t": s},
                              copying="NOT-COPIED", damage="NO-DAMAGE", author=author,
                              voice_of=(voice_of or {}).get(name),
                              all_seeds={"welch-t": {"voice": seeds, "specific": "SPECIFIC"}})

    cal = Calibration(gate=gate, author=author, carrier=carrier, seeds=k, draws=1000, rng_seed=0, rules=("welch-t",),
                      stored_seeds={"base": 48}, impostors=(), specificity_decides=True,
                      candidates=(rates("right", share, "PASS"), rates("wrong", other, "PASS" if other else "FAIL")),
                      a_vs_a={}, distances={})
    assert record_calibration(load_spec(root, gate), cal, "0" * 64)


def test_a_pilot_that_says_whose_voice_each_arm_is_counts_only_the_gate_authors(tmp_path: Path):
    from voicegate.gate import design_lines
    from voicegate.spec import load_spec

    spec = _pilot_spec()
    spec["seeds"], spec["floor"] = [1, 2, 3], {"rule": "welch-t"}
    spec["arms"][1]["voice_of"] = "Test Author"  # the spec key reaches the calibrate result
    root = impostor_workspace(tmp_path / "ws", spec)
    assert load_spec(root, GATE).arm("cand").voice_of == "Test Author"
    # another author's voice that shipped on every stored seed of the pilot (0.02 of draws) beside the author's
    # (1.00): counted as real it made the quote 0.51; named, it is left out
    _pilot_result(root, 3, 1.0, other=0.02, voice_of={"right": "Test Author", "wrong": "Rudyard Kipling"})
    assert design_lines(load_spec(root, GATE))[1] == (
        "design: welch-t ships a real voice of Test Author on carrier base in 3 seeds 1.00 [0.90, 1.00] of draws (95% "
        "intervals include the pilot's sampling; calibration recorded in lv-pilot, entry 1 of gates/lv-pilot.md)")


def test_register_states_the_design_and_a_pilots_power_for_the_same_carrier(tmp_path: Path):
    spec = _pilot_spec()
    spec["seeds"], spec["floor"] = [1, 2, 3], {"rule": "welch-t"}
    root = impostor_workspace(tmp_path / "ws", spec)
    (root / ".gitignore").write_text("runs/\n", encoding="utf-8")
    code, out, err = run_cli("register", GATE, "-C", root)
    assert code == 0, err
    assert "design: 3 seeds per arm, ~720 words per (arm, seed) pool (6 prompts x ~120 words), deciding rule welch-t" \
        in out
    assert "design: power unknown: no calibrate result on file for Test Author on carrier base" in out

    from voicegate.gate import design_lines
    from voicegate.spec import load_spec

    _pilot_result(root, 3, 0.22)
    _pilot_result(root, 8, 0.89)
    _pilot_result(root, 6, 0.99, carrier="another-carrier")  # another carrier's pilot says nothing here
    # another author's pilot on the same carrier, the newest entry of its K, is never quoted
    _pilot_result(root, 3, 0.48, author="Anne Bronte", gate="lv-anne-pilot")
    lines = design_lines(load_spec(root, GATE))
    assert lines[1] == ("design: welch-t ships a real voice of Test Author on carrier base in 3 seeds 0.22 [0.12, "
                        "0.32]; 8 seeds 0.89 [0.79, 0.99] of draws (95% intervals include the pilot's sampling; "
                        "calibration recorded in lv-pilot, entries 1, 2 of gates/lv-pilot.md)")
    assert lines[2] == "design: expected power at the registered 3 seeds: 0.22 [0.12, 0.32]"
    assert lines[3] == ("warning: 3 seeds are fewer than welch-t needs for power 0.8 on this carrier "
                        "(8 seeds reach 0.89)")
