"""A score imports what it uses: the t quantile and the Wilson interval come from scipy.special, the bootstrap
is drawn with numpy, and each gives scipy.stats' numbers float for float, so no recorded number moves while
no command pays ~0.7 s for importing scipy.stats."""

from __future__ import annotations

import math
import statistics
import subprocess
import sys

import pytest


def test_the_t_quantile_is_scipy_stats_t_ppf_float_for_float():
    from scipy.stats import t as student

    from voicegate.spec._rules import WELCH_ALPHA, WELCH_POWER, _t

    dfs = [1.0, 1.0000001, 1.5, 1.7, 2.0, 2.5, 3.0, 3.9, 4.0, 5.7, 8.0, 11.3, 30.0, 99.5, 1e3, 1e6, 1e12, math.inf]
    dfs += [1 + k / 97 for k in range(400)]
    for q in (1 - WELCH_ALPHA, WELCH_POWER, 0.5, 0.975):
        for df in dfs:
            _t.cache_clear()
            assert _t(q, df) == float(student.ppf(q, df)), (q, df)
    _t.cache_clear()
    assert math.isnan(_t(0.99, math.nan)) and math.isnan(float(student.ppf(0.99, math.nan)))


def test_the_wilson_interval_is_binomtests_float_for_float():
    from scipy.stats import binomtest

    from voicegate.gate._calibrate import Share, wilson

    for n in (*range(1, 41), 99, 100, 999, 1000, 1001, 5000):
        for k in range(n + 1):
            ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
            assert wilson(k, n) == (float(ci.low), float(ci.high)), (k, n)
    s = Share.of(37, 1000)
    assert (s.low, s.high) == wilson(37, 1000) and type(s.low) is float


@pytest.mark.parametrize("rule", ["pairwise-max-spread", "welch-t"])
def test_scoring_imports_no_scipy_stats(rule):
    """A score's floors under every rule, its bootstrap and calibrate's shares, in one process: scipy.special
    where welch-t is computed, never scipy.stats."""
    code = f"""
import sys
import numpy as np
from voicegate.scoring._bootstrap import paired_interval
from voicegate.spec import get_rule
from voicegate.gate._calibrate import Share

d = {{"base": {{1: 0.91, 2: 0.95, 3: 0.97}}, "cand": {{1: 0.61, 2: 0.66, 3: 0.62}}}}
floor = get_rule({rule!r}).floor(d, "base", "cand")
v = np.random.default_rng(0).random(12)
pool = lambda w: (w @ v) / w.sum(axis=1)
interval = paired_interval({{1: pool}}, {{1: lambda w: pool(w) / 2}}, 12)
scored = "scipy.special" in sys.modules
share = Share.of(3, 40)
print(repr(floor), "scipy.stats" in sys.modules, scored, "scipy.special" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    floor, stats, scored, calibrated = done.stdout.split()
    assert stats == "False"
    assert scored == str(rule == "welch-t")  # scipy.special for the t quantile only where welch-t is computed
    assert calibrated == "True"  # calibrate's Wilson interval
    if rule == "welch-t":  # the floor from its definition, with scipy.stats' t here
        from scipy.stats import t as student

        va, vb = statistics.variance([0.61, 0.66, 0.62]) / 3, statistics.variance([0.91, 0.95, 0.97]) / 3
        df = (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 2)
        assert float(floor) == pytest.approx(student.ppf(0.99, df) * math.sqrt(va + vb), rel=1e-12)
    else:
        assert float(floor) == pytest.approx(0.06, abs=1e-12)
