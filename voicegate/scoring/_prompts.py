"""Each prompt's part of a pool's distance: what a paired rule pairs base and candidate by.

d(a, s) is a distance of a whole pool (every prompt's generation of that arm and seed), not a sum over prompts,
so a prompt's part of it is its jackknife pseudo-value: P·d(pool) − (P−1)·d(pool without that prompt). To first
order the P parts average to d(a, s), each in d's own units (the unit of delta_cb and of the smallest effect that
matters), and they are computed through the view's pool function (the bootstrap's), so any view has them. Only
prompts every (arm, seed) answered are used, in the order of the first cell's rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from voicegate.scoring._cells import Cells
from voicegate.scoring._views import PoolOf
from voicegate.spec import PromptParts


def prompt_parts(pool: PoolOf, cells: Cells, arms: Sequence[str], seeds: Sequence[int]) -> PromptParts:
    """arm -> seed -> each shared prompt's part of d(arm, seed); empty where fewer than two prompts are shared."""
    prompts = cells.aligned(list(arms), list(seeds))
    n = len(prompts)
    if n < 2:
        return {}
    without = np.ones((n, n)) - np.eye(n)
    whole = np.ones((1, n))
    out: dict[str, dict[int, tuple[float, ...]]] = {}
    for arm in arms:
        for seed in seeds:
            d = pool(arm, seed, prompts)
            out.setdefault(arm, {})[seed] = tuple((n * float(d(whole)[0]) - (n - 1) * d(without)).tolist())
    return out
