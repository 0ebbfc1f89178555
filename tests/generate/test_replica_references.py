"""Replicas after the lead ask each arm one reference and are judged against the lead's references.

The lead (the first replica) answers every canary (the first twice) and calibrates the session; a
replica that serves the same weights answers the same canaries alike, so every other replica asks
each arm the first canary once, before any check, held to the lead's, and its checks are judged
against the lead's references and threshold. On three stand-in replicas that is 12 requests fewer
than each replica calibrating itself (6 per replica after the lead).
"""

from __future__ import annotations

import json
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

from helpers.workspace import cli, gate_spec, manifest, registered_workspace, rows, run_cli

from voicegate.run import RunManifest
from voicegate.scoring._integrity import tallies
from voicegate.seat import StandinSeat

GATE = "lv-lead"
ARMS = ("base", "ckpt475", "ckpt925")
PROMPTS = [f"Write scene {i} of the story, in the author's voice." for i in range(6)]


def _canaries(root: Path) -> list[dict]:
    return [json.loads(x) for x in (root / "runs" / GATE / "canaries.jsonl").read_text().splitlines()]


def test_replicas_after_the_lead_send_one_reference_per_arm_and_score_holds_them_to_the_leads(tmp_path):
    with ExitStack() as stack:
        seats = [stack.enter_context(StandinSeat(adapters={f"{GATE}-ckpt475": f"/adapters/{GATE}/ckpt475"},
                                                 token_time=0.0005)) for _ in range(3)]
        spec = gate_spec(GATE, url=seats[0].url, concurrency=2)
        spec["seat"]["replicas"] = [s.url for s in seats]
        root = registered_workspace(tmp_path / "ws", spec, prompts=PROMPTS)
        out = cli(root, "generate", GATE, "--quiet")
        assert out.returncode == 0, out.stderr
        chats = [len([e for e in s.chat_log() if e["status"] == 200]) for s in seats]
        found = rows(root, GATE)
        lines = _canaries(root)
        refs = [c for c in lines if c["phase"] == "reference"]
        checks = [c for c in lines if c["phase"] == "check"]
        # The lead: per arm the first canary twice and the second once, the canary cells' real rows among them.
        lead = Counter((c["arm"], c["canary"]) for c in refs if c["replica"] == seats[0].url)
        assert lead == {(a, k): n for a in ARMS for k, n in (("k0", 2), ("k1", 1))}
        assert sum(bool(c.get("real_row")) for c in refs if c["replica"] == seats[0].url) == 6
        for s, n in zip(seats[1:], chats[1:], strict=True):
            mine = [c for c in refs if c["replica"] == s.url]
            # ... every other replica: each arm's first canary once, on its own, and nothing else besides its
            # rows and its checks
            assert sorted((c["arm"], c["canary"], c["ask"], bool(c.get("real_row"))) for c in mine) == [
                (a, "k0", 0, False) for a in ARMS]
            assert n == 3 + sum(r["replica"] == s.url for r in found) + sum(c["replica"] == s.url for c in checks)
        # every check on every replica reproduced (those after the lead against the lead's references)
        assert checks and all(c["status"] == "right" for c in checks)
        assert {c["replica"] for c in checks} == {s.url for s in seats}
        per = {p["url"]: p["canaries"] for p in manifest(root, GATE)["sessions"][0]["per_replica"]}
        lead_cal = per[seats[0].url]["calibration"]
        assert all(per[s.url]["calibration"] == lead_cal and per[s.url]["references"] == 3 for s in seats[1:])
        # score judges them again the same way
        assert run_cli("score", GATE, cwd=root).code == 0
        # A later session on the unchanged replicas borrows each replica's references as they were asked.
        path = root / "runs" / GATE / "generations.jsonl"
        path.write_text("".join(x + "\n" for x in path.read_text().splitlines()[:-4]))
        again = cli(root, "generate", GATE, "--quiet")
        assert again.returncode == 0, again.stderr
    s1 = manifest(root, GATE)["sessions"][1]
    assert s1["references_reused_from"] == 0
    copies = Counter(c["replica"] for c in _canaries(root) if c["session"] == 1 and c["phase"] == "reference")
    assert copies == {seats[0].url: 9, seats[1].url: 3, seats[2].url: 3}
    assert run_cli("score", GATE, cwd=root).code == 0


REFS = {"base": "The rain came down on the old house and the garden path was lost under the leaves.",
        "x": "A pale light moved across the moor while the dogs slept by the kitchen fire all night."}
OTHER = "Then a carriage drew up at the gate and nobody in the parish spoke of it again that winter."


def _session(b_answers: str, b_checks: str) -> dict:
    """Session 0 on replicas A (the lead: two asks of k0 per arm) and B (one ask per arm), a check per arm on each."""
    def ref(replica: str, arm: str, text: str, ask: int) -> dict:
        return {"session": 0, "replica": replica, "phase": "reference", "canary": "k0", "arm": arm, "ask": ask,
                "text": text}

    lines = [ref("A", a, REFS[a], k) for a in REFS for k in (0, 1)]
    lines += [ref("B", a, b_answers if a == "x" else REFS[a], 0) for a in REFS]
    lines += [{"session": 0, "replica": r, "phase": "check", "canary": "k0", "arm": a,
               "text": b_checks if (r, a) == ("B", "x") else REFS[a]} for r in ("A", "B") for a in REFS]
    m = {"arms": [{"name": "base"}, {"name": "x"}], "sessions": [{"replicas": ["A", "B"], "isolate_arms": False}],
         "integrity": {"method": "canary-reproduction@3", "params": {"count": 1, "repeated": 1}}}
    return tallies(lines, RunManifest.from_json(m))


def test_a_replica_after_the_lead_is_judged_against_the_leads_references() -> None:
    held = _session(REFS["x"], REFS["x"])
    assert all(not t.failed and t.right == 2 for t in held.values())
    assert held[(0, "B")].references == 2 and held[(0, "B")].calibration == held[(0, "A")].calibration
    # B's own answer and its check agree with each other, not with the lead: it fails on both counts
    off = _session(OTHER, OTHER)[(0, "B")]
    assert off.failed and off.right == 1 and off.foreign == 1
    assert off.problems == ["replica B's references for arm x do not reproduce A's (similarity 0.058)"]
    # its reference reproduces the lead's but its check does not: the check fails
    late = _session(REFS["x"], OTHER)[(0, "B")]
    assert late.failed and late.foreign == 1 and not late.problems


def test_a_lead_lost_in_its_reference_waves_leaves_the_next_replica_to_complete_its_own(tmp_path):
    with ExitStack() as stack:
        seats = [stack.enter_context(StandinSeat(adapters={f"{GATE}-ckpt475": f"/adapters/{GATE}/ckpt475"},
                                                 token_time=0.0005)) for _ in range(2)]

        def die(s: StandinSeat) -> None:
            if not s.dead:
                s.kill()

        seats[0].hooks = {2: die}     # the lead dies at its second chat request: in its first reference wave
        spec = gate_spec(GATE, url=seats[0].url, concurrency=2)
        spec["seat"]["replicas"] = [s.url for s in seats]
        root = registered_workspace(tmp_path / "ws", spec, prompts=PROMPTS)
        out = cli(root, "generate", GATE, "--quiet", "--retries", "1", "--retry-budget", "1")
        assert out.returncode == 0, out.stderr
        assert f"replica {seats[0].url} is unreachable" in out.stderr
        lines = _canaries(root)
    mine = Counter((c["arm"], c["canary"]) for c in lines if c["phase"] == "reference" and c["replica"] == seats[1].url)
    # its first canary once per arm (as a replica after the lead), then the rest of a lead's references
    assert mine == {(a, k): n for a in ARMS for k, n in (("k0", 2), ("k1", 1))}
    checks = [c for c in lines if c["phase"] == "check"]
    assert checks and all(c["replica"] == seats[1].url and c["status"] == "right" for c in checks)
