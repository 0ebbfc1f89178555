"""The ruler check: from the registered corpora alone, can the stylometric reference tell this author?

Held-out *Villette* against a background of ten other authors' novels: high on both AUCs.
A background made of Charlotte Brontë's own other novels (*Jane Eyre*, *The Professor*, which
are also the training text): the author AUC falls to about 0.5 and the check warns, while the
held-out-text AUC alone would still look perfect (the novel's own names and topics separate
it from anything) -- which is why the check carries both.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.shared import CORPUS

from voicegate.scoring import Cache
from voicegate.scoring._ruler import RULER_MIN_AUC, auc_closer

OTHERS = ("Austen_Pride", "Dickens_David", "Eliot_Middlemarch", "Fielding_Joseph", "Sterne_Tristram",
          "Thackeray_Vanity", "Trollope_Phineas", "Richardson_Pamela", "ABronte_Agnes", "EBronte_Wuthering")
OWN = ("CBronte_Jane", "CBronte_Professor")


def test_auc_counts_closer_pairs_and_half_ties() -> None:
    assert auc_closer(np.array([0.1, 0.2]), np.array([0.5, 0.6])) == 1.0
    assert auc_closer(np.array([0.5, 0.6]), np.array([0.1, 0.2])) == 0.0
    assert auc_closer(np.array([0.3, 0.3]), np.array([0.3, 0.3])) == 0.5
    assert auc_closer(np.array([0.1, 0.4]), np.array([0.2, 0.4])) == pytest.approx((1 + 1 + 0 + 0.5) / 4)
    assert auc_closer(np.zeros(0), np.array([0.2])) is None


def _paths(names: tuple[str, ...]) -> list[Path]:
    return [CORPUS / f"{n}.txt" for n in names]


@pytest.mark.corpus
def test_ruler_is_high_for_villette_against_other_authors_and_low_against_her_own_novels(tmp_path: Path) -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS}")
    cache = Cache(tmp_path / "cache")
    held = _paths(("CBronte_Villette",))
    good = cache.ruler(held, _paths(OTHERS), _paths(OWN), mfw=1000, chunk=2500)
    assert good.heldout_auc is not None and good.heldout_auc >= 0.95
    assert good.author_auc is not None and good.author_auc >= 0.95
    assert good.ok and good.background_chunks > 500 and good.heldout_chunks > 50 and good.training_chunks > 50

    own = cache.ruler(held, _paths(OWN), _paths(OWN), mfw=1000, chunk=2500)
    assert own.author_auc is not None and own.author_auc < RULER_MIN_AUC
    assert abs(own.author_auc - 0.5) < 0.05  # the author's text looks exactly like the background
    assert not own.ok
    # The held-out novel alone still separates from her other novels: a one-number check would pass it.
    assert own.heldout_auc is not None and own.heldout_auc > 0.9

    # A training text of the wrong author (an Austen voice in a Brontë gate) is not credited either.
    wrong = cache.ruler(held, _paths(OTHERS), _paths(("Austen_Emma", "Austen_Sense")), mfw=1000, chunk=2500)
    assert wrong.author_auc is not None and wrong.author_auc < RULER_MIN_AUC and not wrong.ok

    # Cached: the same corpora give the same numbers from disk.
    again = Cache(tmp_path / "cache").ruler(held, _paths(OTHERS), _paths(OWN), mfw=1000, chunk=2500)
    assert again == good
