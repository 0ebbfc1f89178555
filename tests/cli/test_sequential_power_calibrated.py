"""What `register` and `calibrate` say of a sequential design's power: calibrate simulates its looks on a pilot, and
register quotes that pilot's simulation of the very design it registers (or says how to get one).

`register` states the design's α over every look with the false pass and expected seeds it simulated; without a
pilot's simulation of these looks on file it says the power is unknown and names the command; `calibrate` of a
gate registering the design simulates it beside the fixed rules (no note that it does not), and once another gate's
record chains a calibration of the same looks, author and carrier, `register` quotes it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from helpers.sequential import look_rows, sequential_workspace
from helpers.workspace import GATE, git, run_cli, words, write_rows

HEAD = ("  design: sequential, looks at 3, 5 seeds per arm: false pass ≤ α 0.01 overall across its looks (boundaries "
        "simulated at register); on 100,000 fresh simulated runs at the null's boundary it passed 0.0099 and used "
        "4.02 seeds per arm on average")
UNKNOWN = (HEAD + "; its power is unknown: no calibrate result on file simulates these looks for Test Author on "
           "carrier base (run `voicegate calibrate PILOT --seeds K --looks 3,5` on a many-seed pilot of this author to "
           "know it)")


def test_register_says_the_power_is_unknown_and_calibrate_simulates_the_registered_looks(tmp_path: Path) -> None:
    root = sequential_workspace(tmp_path / "ws")
    registered = run_cli("register", GATE, "-C", root, "--supersede")
    assert registered.code == 0, registered.stderr
    lines = registered.stdout.splitlines()
    assert UNKNOWN in lines and lines[-1] == UNKNOWN
    write_rows(root, look_rows([1, 2, 3, 4, 5]))
    calibrated = run_cli("calibrate", GATE, "--seeds", "3", "--draws", "20", "-C", root)
    assert calibrated.code == 0, calibrated.stderr
    out = calibrated.stdout.splitlines()
    assert not [line for line in out if line.startswith("note:")]
    assert ("  sequential design registered: looks at 3, 5 seeds per arm, welch-t-min-effect, α 0.01; 20 draws of 5 "
            "seeds per arm, each arm decided look by look as score decides a look and stopped at the first that "
            "decides it") in out
    data = json.loads((root / "runs" / GATE / "calibration-K3.json").read_text(encoding="utf-8"))["sequential"]
    cand = data["candidates"]["cand"]
    stops = ", ".join(f"look {k + 1} ({n}) {s['share']:.3f}" for k, (n, s) in enumerate(zip((3, 5), cand["stops"],
                                                                                          strict=True)))
    ship = cand["would_ship"]
    assert (f"  cand: would ship {ship['share']:.3f} [{ship['low']:.3f}, {ship['high']:.3f}] (the power or false-pass "
            f"rate); {cand['expected_seeds']:.2f} seeds per arm on average; stopped at {stops}") in out
    record = (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    assert ("**Sequential design** (registered by this pilot): looks at 3, 5 seeds per arm under welch-t-min-effect, "
            "α 0.01, boundaries 3 seeds p < 0.0021763 (futility p > 0.5); 5 seeds p < 0.00604411.") in record


def _long(tag: str, style: int) -> Any:  # 400 words a prompt: per-seed distances tight around the arm's mean
    return lambda seed, p: " ".join(words(400, f"{tag}/{seed}/{p}", style))


def test_register_quotes_a_pilots_simulation_of_the_same_looks(tmp_path: Path) -> None:
    root = sequential_workspace(tmp_path / "ws")
    spec = yaml.safe_load((root / "preregistrations" / f"{GATE}.yaml").read_text(encoding="utf-8"))
    spec.update({"gate": "lv-pilot", "seeds": list(range(1, 25)), "floor": {"rule": "welch-t-min-effect"},
                 "artifacts": {"record": "gates/lv-pilot.md"},
                 "arms": [spec["arms"][0], {**spec["arms"][1], "voice_of": "Test Author"},
                          {**spec["arms"][2], "voice_of": "Someone Else"},
                          {"name": "aa", "model": "base", "role": "a-vs-a"}]})
    (root / "preregistrations" / "lv-pilot.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "lv-pilot")
    texts = {"base": _long("b", 1), "cand": _long("c", 0), "other": _long("o", 1), "aa": _long("a", 1)}
    from voicegate.run._store import append_rows

    assert run_cli("register", "lv-pilot", "-C", root).code == 0
    append_rows(root / "runs" / "lv-pilot" / "generations.jsonl", look_rows(list(range(1, 25)), texts))
    run = run_cli("calibrate", "lv-pilot", "--seeds", "3", "--looks", "3,5", "--draws", "100", "-C", root)
    assert run.code == 0, run.stderr
    assert "  sequential design asked for (--looks): looks at 3, 5 seeds per arm" in run.stdout
    data = json.loads((root / "runs" / "lv-pilot" / "calibration-K3.json").read_text(encoding="utf-8"))["sequential"]
    ship, aa = data["candidates"]["cand"]["would_ship"], data["a_vs_a"]["aa"]["false_pass"]["share"]
    registered = run_cli("register", GATE, "-C", root, "--supersede")
    assert registered.code == 0, registered.stderr
    # cand is the pilot's one real voice of Test Author (`voice_of`); other's would-ship is a false pass
    assert (HEAD + f"; on a pilot it ships a real voice of Test Author in {ship['share']:.2f} [{ship['low']:.2f}, "
            f"{ship['high']:.2f}] of draws with {data['candidates']['cand']['expected_seeds']:.2f} seeds per arm on "
            f"average, its A-vs-A arms passed {aa:.3f} (95% intervals include the pilot's sampling; calibration "
            "recorded in lv-pilot, entry 2 of gates/lv-pilot.md)") in registered.stdout.splitlines()
