"""Seeds that are not replicates: `register` refuses a greedy design with several seeds, `score` says which arms'
seeds gave identical or near-identical pools, and since 2026-12-07 a floor of 0 never passes (VOICE or SPECIFIC).

Identical pools (greedy sampling, or a seat that ignores the request seed) make every spread 0, so every floor
0: any positive delta passed, however voiceless the arm.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _workspace import (
    GATE,
    arm,
    base_spec,
    git,
    make_workspace,
    run_cli,
    scoring_workspace,
    tree_snapshot,
    vg_in,
    voice_rows,
    words,
    write_rows,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from voicegate.scoring import decide, specificity
from voicegate.spec import RULES

BEFORE = "1796169600"  # 2026-12-02: a gate registered then keeps the verdicts it had


def _same_every_seed(tag: str, style: int):
    """One text per prompt whatever the seed: what greedy sampling, or a seat that ignores seeds, returns."""
    return lambda seed, p: " ".join(words(160, f"{tag}/{p}", style))


# base and cand write the same (background) style: cand has no voice, but its fixed texts differ from the
# base's and happen to sit nearer the author's (delta_cb +0.035); `other` writes another background style
VOICELESS = {"base": _same_every_seed("base", 1), "cand": _same_every_seed("v2", 1),
             "other": _same_every_seed("v2o", 2)}


def _scored(root: Path) -> tuple[dict, str]:
    write_rows(root, voice_rows(VOICELESS))
    done = vg_in(root, "score", GATE, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8")


def test_identical_pools_never_pass_a_voiceless_arm(tmp_path: Path) -> None:
    result, record = _scored(scoring_workspace(tmp_path / "ws"))
    cand = arm(result, "cand")
    assert cand["delta_cb"] > 0 and cand["spread"] == 0.0  # a zero floor would have passed it
    for name in ("cand", "other"):
        a = arm(result, name)
        assert a["voice"] == {rid: "FAIL" for rid, r in RULES.items() if not r.by_choice}
        assert a["floors"] == {"global-max-spread": 0.0, "pairwise-max-spread": 0.0, "welch-t": 0.0,
                               "welch-t-min-effect": None}  # infinite: no noise to test an effect against
        assert a["ratio"] is None
    assert result["ships"] is None
    said = [w for w in result["warnings"] if "not replicates" in w]
    assert [w.split(":")[0] for w in said] == ["base", "cand", "other"]
    assert said[1].startswith("cand: its seeds gave identical pools (100% of each generation's word 8-grams")
    for warning in said:
        assert f"- {warning}" in record  # on the record, under its warnings


def test_before_the_provision_a_zero_floor_passed_and_nothing_was_said(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", BEFORE)
    result, _ = _scored(scoring_workspace(tmp_path / "ws"))
    # the rules in force on 2026-12-02, decided as they were: the voiceless arm passed on floors of 0
    assert arm(result, "cand")["voice"] == {"global-max-spread": "PASS", "pairwise-max-spread": "PASS"}
    assert result["ships"] == "cand"
    assert not [w for w in result["warnings"] if "not replicates" in w]


def test_near_identical_pools_are_said_and_independent_ones_are_not(tmp_path: Path) -> None:
    root = scoring_workspace(tmp_path / "ws")

    def one_word_apart(seed: int, p: int) -> str:  # a greedy seat whose batches part at one token
        text = words(160, f"near/{p}", 0)
        text[80] = chr(97 + seed % 26) * 3  # a word of its own per seed (digits are no words)
        return " ".join(text)

    write_rows(root, voice_rows({"base": lambda s, p: " ".join(words(160, f"b/{s}/{p}", 1)),
                                 "cand": one_word_apart,
                                 "other": lambda s, p: " ".join(words(160, f"o/{s}/{p}", 2))}))
    done = vg_in(root, "score", GATE, "--json", "--dry-run")
    assert done.returncode == 0, done.stderr
    said = [w for w in json.loads(done.stdout)["warnings"] if "not replicates" in w]
    assert len(said) == 1 and said[0].startswith("cand: its seeds gave near-identical pools (95% of each")


def _greedy_workspace(root: Path, seeds: list[int]) -> Path:
    spec = base_spec()
    spec["sampling"] = {"temperature": 0, "top_p": 1.0, "max_tokens": 64}
    spec["seeds"] = seeds
    make_workspace(root, spec)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "workspace")
    return root


def test_register_refuses_greedy_sampling_with_several_seeds(tmp_path: Path) -> None:
    root = _greedy_workspace(tmp_path / "ws", [1, 2, 3])
    before = tree_snapshot(root)
    done = run_cli("register", "lv-test", "-C", root)
    assert done.code == 2 and done.stdout == ""
    assert done.stderr == ("voicegate: refusing to register lv-test: sampling.temperature is 0 with 3 seeds, and "
                           "greedy sampling gives every seed the same text, so the seeds are not replicates and no "
                           "floor can measure noise; register a temperature above 0 (e.g. 0.8)\n")
    assert tree_snapshot(root) == before and git(root, "rev-list", "--count", "HEAD").strip() == "1"
    # one seed claims no replicates: a greedy single-seed design registers
    one = _greedy_workspace(tmp_path / "one", [1])
    assert run_cli("register", "lv-test", "-C", one).code == 0


values = st.floats(0.0, 2.0, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(base=values, cand=values, toward_base=values, toward_cand=values, k=st.integers(2, 8))
def test_seeds_that_gave_one_value_never_pass_or_place_an_arm(base: float, cand: float, toward_base: float,
                                                              toward_cand: float, k: int) -> None:
    """Whatever the (constant) distances, identical pools give no VOICE PASS, no SPECIFIC and no "nearer X"."""
    gate = {"base": dict.fromkeys(range(k), base), "cand": dict.fromkeys(range(k), cand)}
    imp = {"base": dict.fromkeys(range(k), toward_base), "cand": dict.fromkeys(range(k), toward_cand)}
    axis = specificity(gate, {"Other": imp}, "base", "cand", author="Gate", decides=True, rule="welch-t")
    decided = decide(gate, "base", ["cand"], rule="welch-t", copying={"cand": "NOT-COPIED"},
                     damage={"cand": "NO-DAMAGE"}, specificity={"cand": axis})
    c = decided.candidates[0]
    assert set(c.voice.values()) == {"FAIL"} and set(axis.verdict.values()) == {"INCONCLUSIVE"}
    assert decided.ships is None and axis.nearer("welch-t") == []
    assert all(r is None for r in c.ratios.values())  # no bare ratio of a floor of 0 (or of none)
