"""The gate's error rates on the record: the deciding rule's false-pass rate by design, where its power comes from
(or "power unknown"), the detectable delta with its uncertainty, intervals named for what they cover, and no
bare VOICE ratio for an arm whose seeds are not replicates.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers.workspace import (
    GATE,
    N_PROMPTS,
    arm,
    author_like,
    carrier_like,
    scoring_workspace,
    vg_in,
    voice_rows,
    words,
    write_rows,
)

MIN = "welch-t-min-effect"
BEFORE = "1796169600"  # 2026-12-02: a gate registered then keeps the record format it had
THREE = [1, 2, 3]


def _rows(texts: dict, seeds: list[int]) -> list[dict]:
    return [{"kind": "voice", "arm": name, "model": name, "seed": s, "prompt_id": str(p), "text": make(s, p),
             "finish_reason": "stop"} for name, make in texts.items() for s in seeds for p in range(N_PROMPTS)]


def _scored(root: Path, rows: list[dict]) -> tuple[dict, str]:
    write_rows(root, rows)
    done = vg_in(root, "score", GATE, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8")


def _stated(record: str) -> list[str]:
    block = record.split("**Error rates (what the verdicts above can be trusted to).**\n", 1)[1]
    from voicegate.artifacts._recorded import md_unescape

    return [md_unescape(line[2:]) for line in block.split("\n\n", 1)[0].splitlines() if line.startswith("- ")]


def test_a_t_rule_states_alpha_unknown_power_and_a_detectable_delta_from_two_to_four_df(tmp_path: Path) -> None:
    root = scoring_workspace(tmp_path / "ws", extra={"floor": {"rule": MIN}, "seeds": THREE})
    result, record = _scored(root, _rows({"base": carrier_like("b"), "cand": author_like("c"),
                                          "other": carrier_like("o")}, THREE))
    lines = _stated(record)
    assert lines[:2] == [
        (f"false-pass rate of {MIN} by design: α 0.01 (one-sided Welch t test of the voice delta against the "
         "smallest effect that matters)"),
        "power unknown: no calibration of Test Author on carrier base at 3 seeds is recorded in another gate's record"]
    stated = result["error_rates"]
    assert (stated["rule"], stated["seeds"], stated["false_pass"], stated["power"]) == (MIN, 3, 0.01, None)
    cand = next(c for c in stated["candidates"] if c["arm"] == "cand")
    assert round(arm(result, "cand")["detectable"][MIN], 6) == cand["detectable"]  # as recorded, to 6 decimals
    # 3 seeds per arm: the SE behind the detectable delta has 2 to 4 degrees of freedom, and the true detectable
    # delta lies in an interval several times wider at the top than at the bottom
    assert 2 <= cand["df"] <= 4
    low, high = cand["detectable_interval"]
    assert low < cand["detectable"] < high and high - low > 2 * cand["detectable"]
    said = next(line for line in lines if line.startswith("cand: detectable delta (80% power) "))
    assert f"estimated from {cand['df']:.1f} degrees of freedom: the design's true one lies in [{low:.3f}, " \
           f"{high:.3f}] (95%)" in said
    # the intervals, each named for what it covers
    delta = arm(result, "cand")["delta_cb"]
    seed_low, seed_high = cand["seed_interval"]
    assert seed_low < delta < seed_high
    assert f"cand: delta_cb 95% interval over seeds (seed variance, Welch t) [{seed_low:+.3f}, {seed_high:+.3f}]" \
        in lines
    boot = arm(result, "cand")["bootstrap"]
    assert (f"cand: delta_cb 95% prompt-bootstrap interval [{boot['low']:+.3f}, {boot['high']:+.3f}] covers the "
            "prompts' sampling only (prompts resampled, every seed's rows kept): not seed variance") in lines


def test_a_range_floor_states_no_false_pass_rate(tmp_path: Path) -> None:
    root = scoring_workspace(tmp_path / "ws")  # pairwise-max-spread, registered today
    result, record = _scored(root, voice_rows({"base": carrier_like("b"), "cand": author_like("c"),
                                               "other": carrier_like("o")}))
    assert _stated(record)[0] == (
        "false-pass rate of pairwise-max-spread by design: not stated: a range floor registers no false-pass rate "
        "(it is whatever the seeds' spreads give; calibrate a pilot with an A-vs-A arm to measure it)")
    assert result["error_rates"]["false_pass"] is None
    assert all(c["detectable"] is None for c in result["error_rates"]["candidates"])


def test_seeds_that_are_not_replicates_get_no_voice_ratio(tmp_path: Path) -> None:
    root = scoring_workspace(tmp_path / "ws", extra={"floor": {"rule": MIN}, "seeds": THREE})

    def looping(seed: int, p: int) -> str:  # a greedy seat whose batches part at a few tokens: near-identical pools
        text = words(160, f"loop/{p}", 0)
        for at, word in zip((20, 50, 80, 110, 140), words(5, f"loop/{seed}/{p}", 0), strict=True):
            text[at] = word
        return " ".join(text)

    result, record = _scored(root, _rows({"base": carrier_like("b"), "cand": looping,
                                          "other": carrier_like("o")}, THREE))
    cand = arm(result, "cand")
    assert cand["spread"] > 0 and all(f is not None and f > 0 for f in cand["floors"].values())
    assert cand["ratio"] is None and set(cand["ratios"].values()) == {None}  # a floor on no noise: no "6.4x"
    assert arm(result, "other")["ratio"] is not None
    line = next(line for line in record.splitlines() if line.startswith("- cand: VOICE "))
    assert not re.search(r"\d\.\dx", line), line
    assert ("cand: no VOICE ratio: its seeds gave identical or near-identical pools (not replicates): a floor built "
            "on them measures no noise") in _stated(record)


def test_a_gate_registered_before_states_none_and_keeps_its_record(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", BEFORE)
    root = scoring_workspace(tmp_path / "ws")
    result, record = _scored(root, voice_rows({"base": carrier_like("b"), "cand": author_like("c"),
                                               "other": carrier_like("o")}))
    assert result.get("error_rates") is None and "Error rates" not in record
