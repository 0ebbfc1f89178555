"""`calibrate`'s intervals include the pilot's own sampling: on pilots simulated from a known generating model,
the 95% interval holds the true rate in at least 90% of them; the draws' own Wilson interval did not.

A pilot is one sample of each voice's seeds: its K-seed draws all come from that sample, so however many draws
it takes, its shares are only as sure as the sample is. The generating model here is normal per-seed distances
(base and A-vs-A arm at 1.0, the candidate 1.2 base-seed SDs nearer the author, SD 0.1), so the true rate of a
K-seed gate is known to the precision of an 800-seed pilot decided 3,000 times. A bigger check (more pilots,
other K and pilot sizes) is `benchmarks/bench_calibrate_coverage.py`.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers.workspace import constructed_spec, make_workspace

from voicegate.gate._calibrate import Share, decide_draws
from voicegate.spec import load_spec

MODEL = {"base": (1.0, 0.1), "cand": (0.88, 0.1), "aa": (1.0, 0.1)}
OK = {"copying": {"cand": "NOT-COPIED"}, "damage": {"cand": "NO-DAMAGE"}}
K, PILOT_SEEDS, PILOTS, DRAWS = 5, 24, 30, 200


def _pilot(seed: int, n: int) -> dict[str, dict[int, float]]:
    rng = np.random.default_rng(seed)
    return {arm: {s: float(rng.normal(m, sd)) for s in range(1, n + 1)} for arm, (m, sd) in MODEL.items()}


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("model") / "ws"
    raw = constructed_spec(arms=("cand",))
    raw["arms"].append({"name": "aa", "model": "base", "role": "a-vs-a"})
    make_workspace(root, raw, corpora={"corpora/held/h.txt": "a b c " * 50, "corpora/train/t.txt": "a b " * 50,
                                       "corpora/bg/b.txt": "c d " * 50})
    return load_spec(root, raw["gate"])


def test_the_95_percent_interval_holds_the_true_rate_in_at_least_90_percent_of_simulated_pilots(spec) -> None:
    truth = decide_draws(spec, _pilot(10_000, 800), {}, **OK, seeds=K, draws=3000)
    rates = {("power", rid): truth.candidates[0].would_ship[rid].share for rid in ("pairwise-max-spread", "welch-t",
                                                                                   "welch-t-min-effect")}
    rates[("false pass", "welch-t")] = truth.a_vs_a["aa"]["welch-t"].share
    assert 0.03 < rates[("power", "pairwise-max-spread")] < 0.1 and 0.1 < rates[("power", "welch-t")] < 0.3
    assert 0.002 < rates[("false pass", "welch-t")] < 0.02
    held = {key: 0 for key in rates}
    draws_only = {key: 0 for key in rates}
    for p in range(PILOTS):
        cal = decide_draws(spec, _pilot(p, PILOT_SEEDS), {}, **OK, seeds=K, draws=DRAWS, rng_seed=p)
        assert cal.warnings == [] and cal.resamples == 50
        for (what, rid), true in rates.items():
            share = cal.a_vs_a["aa"][rid] if what == "false pass" else cal.candidates[0].would_ship[rid]
            held[(what, rid)] += share.low <= true <= share.high
            wilson = Share.of(share.count, share.draws)  # what the interval covered before: the draws alone
            draws_only[(what, rid)] += wilson.low <= true <= wilson.high
    for key, n in held.items():
        assert n >= 0.9 * PILOTS, (key, n, rates[key])
    # the draws' own interval misses the pilot's sampling: it holds the truth in far fewer pilots
    assert draws_only[("power", "welch-t")] < 0.6 * PILOTS, draws_only


def test_where_too_few_draws_pass_the_interval_is_the_pilots_disjoint_gates(spec) -> None:
    cal = decide_draws(spec, _pilot(3, PILOT_SEEDS), {}, **OK, seeds=K, draws=DRAWS, rng_seed=3)
    aa = cal.a_vs_a["aa"]["global-max-spread"]
    assert aa.count == 0 and aa.effective == PILOT_SEEDS // K  # 4 disjoint 5-seed gates in 24 seeds
    assert (aa.low, round(aa.high, 3)) == (0.0, 0.49)
    assert aa.to_json() == {"share": 0.0, "count": 0, "low": 0.0, "high": round(aa.high, 6), "effective_draws": 4.0}
