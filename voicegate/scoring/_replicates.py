"""Seeds that are not replicates: an arm whose seeds gave the same texts.

Every floor measures how far a distance moves when only the seed changes. Greedy sampling (temperature 0),
or a seat that ignores the request seed, gives each seed the same text: the spread is 0, so is every floor,
and any positive delta would pass. So each arm's generations of one prompt are compared seed after seed
(consecutive seeds in order): the share of the later generation's word 8-grams found in the earlier one.
Independent samples share almost none (the tiny voices' sweep at temperature 0.8: 0.000 on average over
eleven arms, 11 seed pairs and 40 prompts each, at most 0.008); a voice that recites its training text whatever
the seed shares almost all (the parrot: 0.92).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence

from voicegate.scoring._cells import Cells

NGRAM = 8
NEAR = 0.25
"""An arm whose generations repeat at least this share of the previous seed's 8-grams is said to have seeds
that are not replicates: far above independent samples (≈ 0), well below a greedy seat's (≈ 1)."""


def _grams(ids: Sequence[int]) -> set[tuple[int, ...]]:
    return set(zip(*(ids[k:] for k in range(NGRAM)), strict=False))


def repeated_shares(cells: Cells, arms: Iterable[str], seeds: Sequence[int]) -> dict[str, float]:
    """arm -> the mean share of a generation's word 8-grams that the same prompt's generation under the previous
    seed holds (arms with fewer than two seeds, or no generation of 8 words, are left out)."""
    order = sorted(seeds)
    out: dict[str, float] = {}
    for arm in arms:
        by_seed = [{str(cells.rows[i]["prompt_id"]): i for i in cells.by_cell.get((arm, s), [])} for s in order]
        shares = []
        for before, after in itertools.pairwise(by_seed):
            for prompt, i in after.items():
                j = before.get(prompt)
                later = _grams(cells.ids[i].tolist())
                if j is None or not later:
                    continue
                shares.append(len(later & _grams(cells.ids[j].tolist())) / len(later))
        if shares:
            out[arm] = sum(shares) / len(shares)
    return out


def replicate_warnings(shares: Mapping[str, float]) -> list[str]:
    """One line per arm whose seeds gave identical or near-identical pools."""
    return [f"{arm}: its seeds gave {'identical' if share >= 1 else 'near-identical'} pools ({share:.0%} of each "
            "generation's word 8-grams repeat the same prompt's generation under the previous seed; independent "
            "samples share almost none): the seeds are not replicates (temperature 0, or a seat that ignores the "
            "request seed), so its spread measures no noise and no floor built on it can be trusted; a floor of 0 "
            "never passes"
            for arm, share in shares.items() if share >= NEAR]
