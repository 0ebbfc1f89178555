"""Informational interval for delta_cb: a paired, prompt-clustered bootstrap (never deciding).

Seeds answer the SAME prompts, so generations within a prompt are not
independent, and base and candidate answer the same prompts too: the
resampling unit is the prompt. One replicate draws P prompts with replacement
(P = prompts present for both arms under every seed) and recomputes, for both
arms and every seed, d(arm, seed) from the pool of the drawn prompts' generations,
then delta_cb = mean_s d(base, s) - mean_s d(cand, s). The interval is reported
with ``deciding: false``; the floors decide.

The interval is the replicates' 2.5-97.5 % percentile range recentred on the
reported delta_cb (shifted by the bootstrap bias, mean of the replicates minus
the estimate, which is reported too). Why recentred: a Cosine Delta of a pool
is biased toward 1 by the pool's noise, and a resample with repeated prompts
is a noisier pool than the original, so the raw replicates sit systematically
below the estimate (measured: a +0.43 delta_cb with a raw percentile interval
of [+0.29, +0.39]). The spread of the replicates is the information; their
offset is an artefact of resampling.

The replicates are ``scipy.stats.bootstrap``'s (method "percentile", one vectorised
batch): it draws the prompt indices, ``rng.integers(0, P, (B, P))`` from numpy's
generator seeded with BOOTSTRAP_SEED, exactly the draw this module made by hand
before, so the same generations give the same interval, bit for bit, as every
recorded one. The recentred interval's two percentiles are then np.quantile's
("linear", which the recorded numbers were computed with): scipy's own
``stats.quantile`` lerps differently and lands up to 2 ulp away, and its raw
interval is not the one reported anyway.

Importing ``scipy.stats`` costs ~0.7 s. It is imported here, inside the function
(never at `--help`): a gate registered since welch-t (2026-12-06) pays it for that
rule's t quantile already, so the bootstrap adds nothing there.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

BOOTSTRAP_SEED = 20260917
RESAMPLES = 1000
LEVEL = 0.95

PoolDistance = Callable[[np.ndarray], np.ndarray]
"""weights (replicates x P, multiplicity of each prompt) -> distances (replicates,)."""


def weights(idx: np.ndarray, n: int) -> np.ndarray:
    """Resampled prompt indices (rows) -> multiplicity of each prompt (rows x n)."""
    idx = np.asarray(idx, dtype=np.int64).reshape(-1, n)
    w = np.zeros((idx.shape[0], n))
    np.add.at(w, (np.arange(idx.shape[0])[:, None], idx), 1.0)
    return w


def paired_interval(base: Mapping[Any, PoolDistance], cand: Mapping[Any, PoolDistance], n_prompts: int, *,
                    resamples: int = RESAMPLES, level: float = LEVEL,
                    seed: int = BOOTSTRAP_SEED) -> dict[str, Any] | None:
    """Percentile interval of delta_cb, or None when fewer than 2 prompts are shared."""
    if n_prompts < 2:
        return None
    # ~0.7 s; imported here, not at module level: `--help` never pays it
    from scipy.stats import DegenerateDataWarning, bootstrap

    def delta_cb(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        # idx: resampled prompt indices, one replicate a row (the data are the indices 0..P-1)
        w = weights(idx, n_prompts)
        out: np.ndarray = (np.mean([f(w) for f in base.values()], axis=0)
                           - np.mean([f(w) for f in cand.values()], axis=0))
        return out

    with warnings.catch_warnings():
        # a NaN distance makes scipy's raw interval NaN and warn; the NaN is reported as it always was
        warnings.simplefilter("ignore", DegenerateDataWarning)
        done = bootstrap((np.arange(n_prompts),), delta_cb, n_resamples=resamples, vectorized=True,
                         confidence_level=level, method="percentile", rng=np.random.default_rng(seed))
    full = np.ones((1, n_prompts))
    estimate = float(np.mean([f(full) for f in base.values()]) - np.mean([f(full) for f in cand.values()]))
    replicates = np.asarray(done.bootstrap_distribution, dtype=float)
    bias = float(replicates.mean()) - estimate
    alpha = (1.0 - level) / 2.0
    low, high = (float(q) - bias for q in np.quantile(replicates, [alpha, 1.0 - alpha]))
    return {"low": float(low), "high": float(high), "level": level, "resamples": resamples,
            "bias": bias, "method": "percentile-recentred", "unit": "prompt", "deciding": False}
