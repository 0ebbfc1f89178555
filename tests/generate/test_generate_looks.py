"""`generate` under a registered sequential design makes one look's seeds at a time, so `score` decides there."""

from __future__ import annotations

from collections import Counter

from helpers.workspace import cli, gate_spec, registered_workspace, rows

from voicegate.seat import StandinSeat

GATE = "lv-gen"


def test_generate_stops_at_the_next_look_and_then_makes_the_next(tmp_path):
    spec = gate_spec(GATE, seeds=[11, 22, 33, 44, 55])
    spec["floor"] = {"rule": "welch-t-min-effect", "looks": [3, 5]}
    with StandinSeat(adapters={f"{GATE}-ckpt475": f"/adapters/{GATE}/ckpt475"}, token_time=0.001, slots=8) as seat:
        spec["seat"]["url"] = seat.url
        root = registered_workspace(tmp_path / "ws", spec)
        first = cli(root, "generate", GATE, "--quiet")
        assert first.returncode == 0, first.stderr
        assert Counter(r["seed"] for r in rows(root, GATE)) == {11: 9, 22: 9, 33: 9}  # 3 arms x 3 prompts a seed
        second = cli(root, "generate", GATE, "--quiet")
        assert second.returncode == 0, second.stderr
        assert Counter(r["seed"] for r in rows(root, GATE)) == {s: 9 for s in (11, 22, 33, 44, 55)}
