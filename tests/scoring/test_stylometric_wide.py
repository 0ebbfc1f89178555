"""The `stylometric-wide` view (dated 2026-12-07): Cosine Delta over 5 x `voice.mfw` words without the personal
pronouns, the first `voice.mfw` weighted to count as much as the rest. Its exact numbers on a constructed text, the
plain view's numbers untouched by it, and a gate that registers it before its date refused."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pytest
from helpers.workspace import GATE, author_like, carrier_like, score, scoring_workspace, voice_rows

from voicegate._errors import VoicegateError
from voicegate.scoring._docs import doc_from_text
from voicegate.scoring._stylometric import (
    PERSONAL_PRONOUNS,
    build_reference,
    cosine_delta,
    pooled_delta,
    word_counts,
)

HELD = "i saw my dog and i sat on my mat by the door " * 20
BACKGROUND = ("she ran to the park and she sat by a tree with her dog " * 20,
              "the mat of the park is where they sat and we ate " * 20)
GENERATION = "i sat on a mat by the park and she saw my dog at the door"


def _docs() -> tuple[list, list]:
    return [doc_from_text(HELD)], [doc_from_text(t) for t in BACKGROUND]


def _delta(**kw: int) -> tuple[tuple[str, ...], np.ndarray | None, float]:
    held, background = _docs()
    ref = build_reference(held, background, chunk=40, **kw)
    gen = doc_from_text(GENERATION)
    return ref.words, ref.weights, float(cosine_delta(ref, word_counts(ref.index(), gen), len(gen)))


def test_the_wide_reference_drops_the_pronouns_and_weights_the_common_words_as_much_as_the_rest() -> None:
    words, weights, d = _delta(mfw=3, wide=9)
    assert words == ("the", "and", "sat", "by", "dog", "mat", "park", "a", "ate")  # no "i", "my", "she", "her"
    assert not set(words) & PERSONAL_PRONOUNS
    # three common words and six others: each of the first weighs sqrt(6 / 3), so both blocks weigh 6
    assert weights is not None and weights.tolist() == [2 ** 0.5] * 3 + [1.0] * 6
    assert d == pytest.approx(1.0731255609259545, abs=1e-12)


def test_the_bootstrap_pools_measure_the_wide_distance_exactly() -> None:
    held, background = _docs()
    ref = build_reference(held, background, mfw=3, chunk=40, wide=9)
    gen = doc_from_text(GENERATION)
    counts = word_counts(ref.index(), gen)
    pooled = pooled_delta(ref, counts[None, :], np.array([float(len(gen))]))(np.ones((1, 1)))
    assert float(pooled[0]) == pytest.approx(float(cosine_delta(ref, counts, len(gen))), abs=1e-12)


def test_the_plain_reference_keeps_its_words_and_numbers() -> None:
    words, weights, d = _delta(mfw=6)
    assert words == ("the", "and", "sat", "by", "dog", "i") and weights is None
    assert d == 0.877274831582405  # what the plain view measured before the wide one existed, to the last bit


def test_a_gate_scored_under_the_wide_view_says_so_in_its_signature(tmp_path: Path) -> None:
    root = scoring_workspace(tmp_path / "ws", voice={"view": "stylometric-wide", "mfw": 100, "chunk": 500})
    result = score(root, voice_rows({"base": carrier_like("b"), "cand": author_like("c"),
                                     "other": carrier_like("o")}))
    sig = result["signature"]
    assert sig["view"] == "stylometric-wide" and sig["mfw"] is None and sig["chunk"] is None
    assert (sig["wide_mfw"], sig["wide_chunk"], sig["wide_dropped"]) == ([100, 500], 500, "personal-pronouns@1")
    cand = next(a for a in result["arms"] if a["name"] == "cand")
    assert cand["delta_cb"] > 0


def test_a_view_dated_after_the_registration_day_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from voicegate.spec import _registration

    real = _registration.register

    def on_the_eve(spec, **kw):  # type: ignore[no-untyped-def]
        return real(spec, now=dt.datetime(2026, 12, 6, 23, 59, tzinfo=dt.UTC), **kw)

    monkeypatch.setattr(_registration, "register", on_the_eve)
    with pytest.raises(VoicegateError, match=r"its view stylometric-wide was registered 2026-12-07, after this "
                                             r"registration's date \(2026-12-06\)"):
        scoring_workspace(tmp_path / "ws", voice={"view": "stylometric-wide", "mfw": 100, "chunk": 500})
    assert not (tmp_path / "ws" / "preregistrations" / f"{GATE}.registration.json").exists()

