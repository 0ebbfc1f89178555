"""The power `register` quotes rests on a calibration chained in a pilot's record, of the same author and carrier.

`calibrate` appends one calibration entry to the pilot's gate record (its rates with intervals that include the
pilot's sampling, and a summary held to its sha256); `register` of a later gate quotes only such an entry of its
own author on its own carrier, naming the pilot and the entry, and otherwise says "power unknown". A calibration
file in a run directory is a cache anyone can edit or delete: it is never read for a quote.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.workspace import GATE, N_PROMPTS, git, impostor_spec, impostor_workspace, run_cli, text

PILOT_SEEDS = list(range(1, 9))
STYLE = {"base": None, "cand": 0, "aa": None}


@pytest.fixture(scope="module")
def pilot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """lv-test, an 8-seed pilot of Test Author's voice (`voice_of`) with an A-vs-A arm, calibrated at 3 seeds."""
    spec = impostor_spec(None)
    spec["seeds"] = PILOT_SEEDS
    spec["arms"] = [spec["arms"][0], {**spec["arms"][1], "voice_of": "Test Author"},
                    {"name": "aa", "model": "base", "role": "a-vs-a"}]
    spec["artifacts"] = {"record": f"gates/{GATE}.md"}
    root = impostor_workspace(tmp_path_factory.mktemp("pilot") / "ws", spec)
    (root / ".gitignore").write_text("runs/\n", encoding="utf-8")
    source = root.parent / "rows.jsonl"
    source.write_text("".join(json.dumps({"arm": a, "seed": s, "prompt_id": str(p), "text": text(160, f"{a}/{s}/{p}",
                                                                                                   st)}) + "\n"
                              for a, st in STYLE.items() for s in PILOT_SEEDS for p in range(N_PROMPTS)),
                      encoding="utf-8")
    calibrate = ("calibrate", GATE, "--seeds", "3", "--draws", "200")
    for args in (("register", GATE), ("import", GATE, str(source)), calibrate):
        code, out, err = run_cli(*args, "-C", root)
        assert code == 0, err
    assert f"gates/{GATE}.md: appended entry " in out and "(calibration)" in out
    return root


def _gate(root: Path, gate: str, **changes: Any) -> list[str]:
    """A later 3-seed welch-t gate `gate`, registered in a copy of the pilot's workspace; its design lines."""
    spec = yaml.safe_load((root / "preregistrations" / f"{GATE}.yaml").read_text(encoding="utf-8"))
    spec.update({"gate": gate, "seeds": [1, 2, 3], "floor": {"rule": "welch-t"},
                 "artifacts": {"record": f"gates/{gate}.md"}, "arms": spec["arms"][:2], **changes})
    (root / "preregistrations" / f"{gate}.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", gate)
    code, out, err = run_cli("register", gate, "-C", root)
    assert code == 0, err
    return [line.strip() for line in out.splitlines() if line.strip().startswith(("design:", "warning:"))]


def _copy(pilot: Path, tmp_path: Path) -> Path:
    import shutil

    root = tmp_path / "ws"
    shutil.copytree(pilot, root, symlinks=True)
    return root


def test_register_quotes_the_same_authors_pilot_naming_its_chained_entry(pilot: Path, tmp_path: Path) -> None:
    root = _copy(pilot, tmp_path)
    record = (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    entry = record.count("<!-- voicegate:entry")  # the anchor, then the calibration
    assert "## Calibration — " in record and "| cand | Test Author | power | welch-t | " in record
    quoted = json.loads((root / "runs" / GATE / "calibration-K3.json").read_text(encoding="utf-8"))
    share = quoted["candidates"]["cand"]["rules"]["welch-t"]["would_ship"]
    # the run directory's copy is a cache: deleted, the quote stands on the record
    import shutil

    shutil.rmtree(root / "runs" / GATE)
    lines = _gate(root, "lv-next")
    assert lines[1] == ("design: welch-t ships a real voice of Test Author on carrier base in 3 seeds "
                        f"{share['share']:.2f} [{share['low']:.2f}, {share['high']:.2f}] of draws (95% intervals "
                        f"include the pilot's sampling; calibration recorded in {GATE}, entry {entry} of "
                        f"gates/{GATE}.md)")
    assert lines[2].startswith("design: expected power at the registered 3 seeds: ")
    # the later gate's score entry states the same power, citing the same entry
    source = root.parent / "next.jsonl"
    source.write_text("".join(json.dumps({"arm": a, "seed": s, "prompt_id": str(p),
                                          "text": text(160, f"next/{a}/{s}/{p}", STYLE[a])}) + "\n"
                              for a in ("base", "cand") for s in (1, 2, 3) for p in range(N_PROMPTS)), encoding="utf-8")
    for args in (("import", "lv-next", str(source)), ("score", "lv-next")):
        code, out, err = run_cli(*args, "-C", root)
        assert code == 0, err
    scored = (root / "gates" / "lv-next.md").read_text(encoding="utf-8").replace("\\[", "[").replace("\\]", "]")
    assert (f"- power {share['share']:.2f} [{share['low']:.2f}, {share['high']:.2f}] at 3 seeds (95% interval "
            "including the pilot's sampling), mean of 1 real voice(s) of Test Author on carrier base in pilot "
            f"{GATE}, entry {entry} of gates/{GATE}.md\n") in scored
    code, out, err = run_cli("verify", "-C", root)
    assert code == 0, (out, err)


def test_register_never_quotes_another_authors_pilot(pilot: Path, tmp_path: Path) -> None:
    root = _copy(pilot, tmp_path)
    # the only calibration on file, on this very carrier, is Test Author's: another author's gate knows nothing
    lines = _gate(root, "lv-other", author="Other Author")
    assert lines[1:] == [("design: power unknown: no calibrate result on file for Other Author on carrier base (run "
                          "`voicegate calibrate PILOT --seeds K` on a many-seed pilot of this author to know this "
                          "design's power)")]
    # nor another carrier's gate of the same author
    seat = {**yaml.safe_load((root / "preregistrations" / f"{GATE}.yaml").read_text(encoding="utf-8"))["seat"],
            "base_model": "another-base"}
    arms = [{"name": "base", "model": "another-base", "role": "base"},
            {"name": "cand", "model": "lv-test-cand", "role": "candidate"}]
    assert _gate(root, "lv-carrier", seat=seat, arms=arms)[1].startswith("design: power unknown: ")


def test_a_run_directory_file_or_an_edited_summary_is_never_quoted(pilot: Path, tmp_path: Path) -> None:
    root = _copy(pilot, tmp_path)
    path = root / "gates" / f"{GATE}.md"
    data = path.read_text(encoding="utf-8")
    # the summary edited (its share raised) without its sha256: the entry states nothing a registration can quote
    summary = data.rpartition("reads it (sha256 ")[2]
    rest = summary.partition("): ")[2]
    forged = json.loads(rest.split("\n", 1)[0].replace("\\_", "_").replace("\\[", "[").replace("\\]", "]"))
    assert forged["candidates"]["cand"]["voice_of"] == "Test Author"
    path.write_text(data.replace('"share":', '"share":1', 1), encoding="utf-8")
    # and a run-directory calibration of another pilot of the same author, the newest on file
    fake = root / "runs" / "lv-fake" / "calibration-K3.json"
    fake.parent.mkdir(parents=True)
    fake.write_text(json.dumps({"gate": "lv-fake", "author": "Test Author", "carrier": "base", "seeds_per_arm": 3,
                                "candidates": {"x": {"voice_of": "Test Author", "rules": {"welch-t": {
                                    "would_ship": {"share": 0.99, "low": 0.9, "high": 1.0},
                                    "all_seeds": {"voice": "PASS"}}}}}}), encoding="utf-8")
    assert _gate(root, "lv-next")[1].startswith("design: power unknown: ")


def test_after_an_amendment_the_power_stated_is_the_amended_rules(pilot: Path, tmp_path: Path) -> None:
    from helpers.workspace import register_prospective

    root = _copy(pilot, tmp_path)
    quoted = json.loads((root / "runs" / GATE / "calibration-K3.json").read_text(encoding="utf-8"))
    shares = {rule: quoted["candidates"]["cand"]["rules"][rule]["would_ship"]
              for rule in ("welch-t", "pairwise-max-spread")}
    assert f"{shares['welch-t']['share']:.2f}" != f"{shares['pairwise-max-spread']['share']:.2f}"
    _gate(root, "lv-next")
    register_prospective(root, "lv-later", "pairwise-max-spread")  # before lv-next's numbers: prospective
    source = root.parent / "next.jsonl"
    source.write_text("".join(json.dumps({"arm": a, "seed": s, "prompt_id": str(p),
                                          "text": text(160, f"next/{a}/{s}/{p}", STYLE[a])}) + "\n"
                              for a in ("base", "cand") for s in (1, 2, 3) for p in range(N_PROMPTS)), encoding="utf-8")
    for args in (("import", "lv-next", str(source)), ("score", "lv-next"),
                 ("amend", "lv-next", "--rule", "pairwise-max-spread", "--reason", "the pairwise floor fits")):
        code, out, err = run_cli(*args, "-C", root)
        assert code == 0, err

    def stated(rule: str) -> str:
        s = shares[rule]
        return f"power {s['share']:.2f} [{s['low']:.2f}, {s['high']:.2f}] at 3 seeds (95% interval including the "

    code, out, err = run_cli("score", "lv-next", "--json", "-C", root)
    assert code == 0, err
    rates = json.loads(out)["error_rates"]
    assert rates["rule"] == "pairwise-max-spread"
    assert rates["power"] == pytest.approx(shares["pairwise-max-spread"]["share"])
    assert rates["power_text"].startswith(stated("pairwise-max-spread"))
    # the amendment's entry states the amended rule's power; the score entry before it, the registered rule's
    record = (root / "gates" / "lv-next.md").read_text(encoding="utf-8").replace("\\[", "[").replace("\\]", "]")
    score_entry, _, amend_entry = record.partition("## Amendment — ")
    assert stated("welch-t") in score_entry and stated("pairwise-max-spread") not in score_entry
    assert (f"error rates: false pass not stated (a range floor), power {shares['pairwise-max-spread']['share']:.2f} "
            "at 3 seeds (pilot).") in amend_entry
