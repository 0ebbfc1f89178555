"""Issue 25, the rest of finding 10 and the report's trust in scores.json (finding 9's MED-LOW).

- `score` with a probe row missing decides, but says so (a warning, as for a missing voice row);
- `seat ... --timeout 0` (or negative, nan, inf) is bad input: exit 2, not a seat that "timed out" (3);
- the report bounds what it renders of a huge generation;
- the report refuses a scores.json whose sha256 is not a result the gate record holds.
"""

from __future__ import annotations

import pytest
from _workspace import run_cli
from test_scoring_workspace import SEEDS, _score, make_workspace, unrelated, voice_rows

PROBES = [{"id": "add", "prompt": "2+2? Answer with the number.", "check": {"exact": "4"}},
          {"id": "short", "prompt": "One word.", "check": {"max_words": 3}}]


def _probe_rows() -> list[dict]:
    rows = voice_rows({"base": unrelated("b"), "cand": unrelated("c"), "other": unrelated("o")})
    for a in ("base", "cand", "other"):
        for s in SEEDS:
            rows += [{"kind": "probe", "arm": a, "seed": s, "prompt_id": "add", "text": "4"},
                     {"kind": "probe", "arm": a, "seed": s, "prompt_id": "short", "text": "Yes."}]
    return rows


def test_a_missing_probe_row_is_warned_about(tmp_path) -> None:
    root = make_workspace(tmp_path / "ws", probes=PROBES)
    rows = _probe_rows()
    whole = _score(root, rows)
    assert not any("probe" in w for w in whole["warnings"])
    # cand's `add` probe under the first seed is lost: the verdict still comes, but never silently
    short = [r for r in rows if not (r["kind"] == "probe" and r["arm"] == "cand" and r["prompt_id"] == "add"
                                     and r["seed"] == SEEDS[0])]
    r = _score(root, short)
    per_arm = 2 * len(SEEDS)
    warned = [w for w in r["warnings"] if "probe generations missing" in w]
    assert warned and f"cand: {per_arm - 1} of {per_arm} present" in warned[0], r["warnings"]
    assert "base:" not in warned[0] and "other:" not in warned[0]


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
@pytest.mark.parametrize("command", [["models"], ["drop", "lv-x"]])
def test_a_seat_timeout_that_is_not_a_positive_number_is_bad_input(command: list[str], value: str) -> None:
    done = run_cli("seat", *command, "--seat", "http://127.0.0.1:9/v1", "--timeout", value)
    assert done.code == 2, (done.code, done.stdout, done.stderr)
    assert "--timeout must be a number of seconds > 0" in done.stderr
