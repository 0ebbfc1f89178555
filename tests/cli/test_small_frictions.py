"""The small frictions of an operator's day, one test each (each fails on 9a7ed27)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers.workspace import gate_spec, make_workspace, run_cli, tree_snapshot

GATE = "lv-gen"


@pytest.mark.parametrize("args", [(), ("seat",), ("seat", "up"), ("register",), ("verify",), ("seat", "simulate")])
def test_dash_h_is_help_everywhere(args: tuple[str, ...]) -> None:
    """`voicegate -h` was "No such option: -h"."""
    done = run_cli(*args, "-h")
    assert done.code == 0, done.stderr
    assert done.stdout.startswith(f"Usage: voicegate {' '.join(args)}".rstrip() + " ")
    assert done.stdout == run_cli(*args, "--help").stdout


def test_a_gate_named_by_its_spec_path_is_understood(tmp_path: Path) -> None:
    """`register preregistrations/lv-x.yaml` (what tab completion gives) said only "bad adapter name"."""
    make_workspace(tmp_path, gate_spec(GATE))
    registered = run_cli("register", f"./preregistrations/{GATE}.yaml", cwd=tmp_path)
    assert registered.code == 0, registered.stderr
    assert f"registered {GATE}: spec sha256 " in registered.stdout


@pytest.mark.parametrize("given", [f"{GATE}.yaml", f"../ws/preregistrations/{GATE}.yaml",
                                   f"preregistrations/{GATE}.registration.json", f"specs/{GATE}.yaml"])
def test_another_path_is_answered_with_the_gate_name(tmp_path: Path, given: str) -> None:
    make_workspace(tmp_path, gate_spec(GATE))
    before = tree_snapshot(tmp_path)
    for command in ("register", "verify", "generate"):
        done = run_cli(command, given, cwd=tmp_path)
        assert done.code == 2 and done.stdout == ""
        assert done.stderr == (f"voicegate: {given!r} names a file: give the gate name, {GATE} (voicegate reads its "
                               f"spec from preregistrations/{GATE}.yaml in the workspace, -C DIR)\n")
    assert tree_snapshot(tmp_path) == before


def test_seat_models_says_which_specs_url_it_used(tmp_path: Path) -> None:
    """With no --seat, `seat models` used a spec's seat.url without saying so."""
    from voicegate.seat import StandinSeat

    with StandinSeat() as seat:
        make_workspace(tmp_path, gate_spec(GATE, url=seat.url))
        done = run_cli("seat", "models", cwd=tmp_path)
        given = run_cli("seat", "models", "--seat", seat.url, cwd=tmp_path)
        as_json = run_cli("seat", "models", "--json", cwd=tmp_path)
    assert done.code == given.code == as_json.code == 0, done.stderr
    assert done.stderr == \
        f"voicegate: note: no --seat given: using the seat.url of preregistrations/{GATE}.yaml, {seat.url}\n"
    assert done.stdout.splitlines()[0].startswith(f"seat {seat.url}")
    assert given.stderr == ""   # a URL the user gave needs no note
    assert as_json.stderr == done.stderr and as_json.stdout.startswith("{")   # the note never enters the JSON


def _amendment(ships_before: str | None, ships_after: str | None, decision: object) -> str:
    """The record's amendment entry as the formatter writes it, for one candidate that stays FAIL."""
    from voicegate.artifacts import AmendmentChange
    from voicegate.artifacts._format import render
    from voicegate.gate import Standing

    change = AmendmentChange(arm="ckpt475", delta_cb=0.018, floors={"global-max-spread": 0.112,
                                                                    "pairwise-max-spread": 0.043},
                             before="FAIL", after="FAIL", before_ratio=0.2, after_ratio=0.4, disagree=False,
                             copying="NOT-COPIED", damage="NO-DAMAGE")
    citation = {"rule": "pairwise-max-spread", "gate": "lv-bronte-v2", "commit": "c" * 40, "spec_sha256": "a" * 64,
                "committed": "2026-12-06T18:19:46Z", "post_hoc": False, "numbers_at": "b" * 40, "after_numbers": 0}
    return render("record_amend.md.j2", when="2026-12-06T18:19:47Z", rule_from="global-max-spread",
                  rule_to="pairwise-max-spread", rule_to_registered="2026-09-17", reason="r",
                  generations_sha256="f" * 64,
                  citation=citation, rules=["global-max-spread", "pairwise-max-spread"], changes=[change],
                  ships_before=ships_before, ships_after=ships_after, decision=decision,
                  result=SimpleNamespace(signature_text="sig"), result_sha256="e" * 64,
                  standing=Standing(rule="pairwise-max-spread", ships=ships_after, amended_from="global-max-spread"))


@pytest.mark.parametrize(("before", "after", "line"), [
    (None, None, "- The rule's recommendation: none, as before."),
    ("ckpt475", "ckpt475", "- The rule's recommendation: ckpt475, as before."),
    (None, "ckpt475", "- The rule's recommendation changes: none → ckpt475."),
])
def test_an_amendment_entry_states_the_recommendation_once(before: str | None, after: str | None, line: str) -> None:
    """The entry said "the rule's recommendation: none" twice (and 'is X' under "does not change" when it changed)."""
    for decision in (None, {"arm": "ckpt475", "time": "2026-12-06T18:20:00Z", "reason": "r"}):
        text = _amendment(before, after, decision)
        said = [ln for ln in text.splitlines() if "recommendation" in ln]
        assert said == [line], said


def test_registered_means_one_thing_in_an_amendment_entry() -> None:
    """"was registered 2026-09-17" (the rule's date in voicegate) sat one line above "registered in commit ..." (a
    gate's registration): the entry now keeps the word for a gate's registration."""
    text = _amendment(None, None, None)
    assert "`pairwise-max-spread` was added to voicegate's rules on 2026-09-17, before this amendment." in text
    assert [ln for ln in text.splitlines() if "registered" in ln] == [
        next(ln for ln in text.splitlines() if ln.startswith("**Prospective registration cited.**"))]


def test_the_example_specs_seat_url_comes_from_voicegate_seat_url(tmp_path: Path) -> None:
    """The example spec hard-coded port 8027; a shared machine's seat is elsewhere, said once in the variable."""
    import yaml

    url = "http://127.0.0.1:8123/v1"
    done = run_cli("init", tmp_path / "ws", env={"VOICEGATE_SEAT_URL": url})
    assert done.code == 0, done.stderr
    assert "  preregistrations/lv-example.yaml.example (copy to <gate>.yaml and edit; its seat.url is " \
           "$VOICEGATE_SEAT_URL)" in done.stdout.splitlines()
    example = yaml.safe_load((tmp_path / "ws" / "preregistrations" / "lv-example.yaml.example").read_text())
    assert example["seat"]["url"] == url
    plain = run_cli("init", tmp_path / "plain", env={"VOICEGATE_SEAT_URL": None})
    assert plain.code == 0
    assert yaml.safe_load((tmp_path / "plain" / "preregistrations" / "lv-example.yaml.example").read_text())[
        "seat"]["url"] == "http://127.0.0.1:8027/v1"
    bad = run_cli("init", tmp_path / "bad", env={"VOICEGATE_SEAT_URL": "http://127.0.0.1:8123"})
    assert bad.code == 2 and bad.stderr.startswith("voicegate: $VOICEGATE_SEAT_URL: must be the OpenAI base URL")
    assert not (tmp_path / "bad").exists()
