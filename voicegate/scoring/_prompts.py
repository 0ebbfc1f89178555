"""Each prompt's own distance: what a paired rule pairs base and candidate by.

d(a, s) is the distance of a whole pool (every prompt's generation of that arm and seed). A paired rule needs a
number per prompt that no other prompt of the same seed moves: the view's distance of that one generation,
computed through the view's pool function (the bootstrap's, a pool of one prompt), so any view has it. A pool's
own parts (leave-one-prompt-out pseudo-values) were tried first: each shares its pool's overall noise, a
seed-level component the sign flips do not see, and the base passed against itself in 1.3–1.6% of the sweep's
draws at α 1% (docs/validity.md). Only prompts every (arm, seed) answered are used, in the first cell's row order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from voicegate.scoring._cells import Cells
from voicegate.scoring._views import PoolOf
from voicegate.spec import PromptParts


def prompt_parts(pool: PoolOf, cells: Cells, arms: Sequence[str], seeds: Sequence[int]) -> PromptParts:
    """arm -> seed -> each shared prompt's distance (its generation alone); empty where fewer than two are shared."""
    prompts = cells.aligned(list(arms), list(seeds))
    n = len(prompts)
    if n < 2:
        return {}
    alone = np.eye(n)
    return {arm: {seed: tuple(pool(arm, seed, prompts)(alone).tolist()) for seed in seeds} for arm in arms}
