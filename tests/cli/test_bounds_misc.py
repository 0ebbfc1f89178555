"""Bounds on what a run may ask for, and the report's trust in scores.json.

- `score` with a probe row missing decides, but says so (a warning, as for a missing voice row);
- `seat ... --timeout 0` (or negative, nan, inf) is bad input: exit 2, not a seat that "timed out" (3);
- the report bounds what it renders of a huge generation;
- the report refuses a scores.json whose sha256 is not a result the gate record holds.
"""

from __future__ import annotations

import pytest
from helpers.workspace import SEEDS, run_cli, unrelated, voice_rows
from helpers.workspace import score as _score
from helpers.workspace import scoring_workspace as make_workspace

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


# -- the report: bounded, and holding scores.json to the record ------------------------------


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory):

    from helpers.bronte import as_shipped, scored_workspace
    from helpers.shared import COMPOSE_FIXTURE as fixture

    if not fixture.is_file():
        pytest.skip(f"fleet compose fixture not present at {fixture}")
    root = scored_workspace(tmp_path_factory.mktemp("report") / "ws", as_shipped(fixture), ship=False, amend=False)
    done = run_cli("score", "lv-bronte", cwd=root)  # the real score: scores.json and its record entry
    assert done.code == 0, done.stderr
    return root


def _copy(root, tmp_path):
    import shutil

    shutil.copytree(root, tmp_path / "ws", symlinks=True)
    return tmp_path / "ws"


def test_the_report_bounds_what_it_renders_of_a_huge_generation(scored, tmp_path) -> None:
    import json
    import time

    root = _copy(scored, tmp_path)
    path = root / "runs/lv-bronte/generations.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    huge = ("The moor lay grey beneath a sky of iron, and I walked on. " * 200_000)[:10_000_000]
    for r in rows:  # every arm of one (prompt, seed): the sample shown first
        if r["prompt_id"] == rows[0]["prompt_id"] and r["seed"] == rows[0]["seed"]:
            r["text"] = huge
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    t0 = time.monotonic()
    done = run_cli("report", "lv-bronte", cwd=root)
    took = time.monotonic() - t0
    assert done.code == 0, done.stderr
    page = (root / "runs/lv-bronte/report.html").read_text(encoding="utf-8")
    assert len(page) < 2_000_000, len(page)  # 3 x 10 MB of generation, and the page stays small
    assert "9,980,000 more characters not shown: the page shows the first 20,000 of a generation" in page
    assert took < 120, took


def test_the_report_refuses_a_scores_json_the_record_does_not_hold(scored, tmp_path) -> None:
    import json

    root = _copy(scored, tmp_path)
    assert run_cli("report", "lv-bronte", cwd=root).code == 0
    scores = root / "runs/lv-bronte/scores.json"
    data = json.loads(scores.read_text())
    cand = next(a for a in data["arms"] if a.get("role") == "candidate")
    cand["delta_cb"] = 9.999
    scores.write_text(json.dumps(data, indent=2))
    done = run_cli("report", "lv-bronte", cwd=root)
    assert done.code == 2, done.stdout
    assert "scores.json: its result (sha256" in done.stderr and "is not one the gate record" in done.stderr
    assert "gates/lv-bronte.md" in done.stderr and "voicegate score lv-bronte" in done.stderr


def test_a_client_that_hangs_up_on_the_stand_in_prints_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    # The stand-in runs in the test's process: socketserver's traceback for a reset connection went to the
    # same stderr an in-process CLI run was capturing, and a "one line on stderr" assertion failed at random.
    import socket
    import struct
    import time

    from voicegate.seat import StandinSeat

    with StandinSeat() as seat:
        host, port = seat.url.split("//")[1].split("/")[0].split(":")
        for _ in range(3):
            s = socket.create_connection((host, int(port)))
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST, not FIN
            s.close()
        time.sleep(0.3)
    assert "Traceback" not in capfd.readouterr().err
