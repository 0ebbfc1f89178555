"""Voice rows grouped by (arm, seed), tokenized once over one shared vocabulary: what every view measures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from voicegate.scoring._cache import Cache

Row = dict[str, Any]


class Cells:
    """Voice rows grouped by (arm, seed), with each generation's token ids over one shared vocabulary."""

    def __init__(self, rows: Sequence[Row], cache: Cache):
        self.rows = list(rows)
        self.vocab, self.ids = cache.generation_tokens([r["text"] for r in self.rows])
        self.lengths = np.asarray([len(i) for i in self.ids], dtype=float)
        self.by_cell: dict[tuple[str, int], list[int]] = {}
        for i, r in enumerate(self.rows):
            self.by_cell.setdefault((r["arm"], int(r["seed"])), []).append(i)

    def tokens(self, i: int, start: int = 0, stop: int | None = None) -> list[str]:
        return [self.vocab[t] for t in self.ids[i][start:stop].tolist()]

    def arm_rows(self, arm: str) -> list[int]:
        return [i for i, r in enumerate(self.rows) if r["arm"] == arm]

    def aligned(self, arms: Sequence[str], seeds: Sequence[int]) -> list[str]:
        """Prompt ids present in every (arm, seed) cell of these arms, in row order."""
        sets = [{str(self.rows[i]["prompt_id"]) for i in self.by_cell[(a, s)]} for a in arms for s in seeds]
        common = set.intersection(*sets)
        first = self.by_cell[(arms[0], seeds[0])]
        return [str(self.rows[i]["prompt_id"]) for i in first if str(self.rows[i]["prompt_id"]) in common]

    def cell_matrix(self, arm: str, seed: int, prompts: Sequence[str], per_row: np.ndarray) -> np.ndarray:
        at = {str(self.rows[i]["prompt_id"]): i for i in self.by_cell[(arm, seed)]}
        return per_row[[at[p] for p in prompts]]

    def pool_words(self) -> dict[str, dict[str, int]]:
        """Words in each (arm, seed) pool: arm -> seed (as a string) -> tokens."""
        out: dict[str, dict[str, int]] = {}
        for (arm, seed), rs in self.by_cell.items():
            out.setdefault(arm, {})[str(seed)] = int(self.lengths[rs].sum())
        return out
