"""What `register` and `calibrate` say of a sequential design's power: not simulated, and a pilot's is not it.

`register` states the design's α over every look with the false pass and expected seeds it simulated; `calibrate`
of a sequential gate says its shares are the fixed rules' at K seeds a draw, not the design's looks.
"""

from __future__ import annotations

from pathlib import Path

from helpers.sequential import look_rows, sequential_workspace
from helpers.workspace import GATE, run_cli, write_rows

DESIGN = ("  design: sequential, looks at 3, 5 seeds per arm: false pass ≤ α 0.01 overall across its looks (boundaries "
          "simulated at register); on 100,000 fresh simulated runs at the null's boundary it passed 0.0099 and used "
          "4.02 seeds per arm on average; its power is not simulated (calibrate measures the fixed rules at K seeds, "
          "not the looks)")


def test_register_and_calibrate_say_the_designs_power_is_not_simulated(tmp_path: Path) -> None:
    root = sequential_workspace(tmp_path / "ws")
    registered = run_cli("register", GATE, "-C", root, "--supersede")
    assert registered.code == 0, registered.stderr
    lines = registered.stdout.splitlines()
    assert DESIGN in lines and lines[-1] == DESIGN  # no "run calibrate to know this design's power"
    write_rows(root, look_rows([1, 2, 3, 4, 5]))
    calibrated = run_cli("calibrate", GATE, "--seeds", "3", "--draws", "20", "-C", root)
    assert calibrated.code == 0, calibrated.stderr
    assert ("note: lv-test registers a sequential design (looks at 3, 5 seeds per arm): these shares are the fixed "
            "rules' at 3 seeds a draw; calibrate does not simulate the design's looks, so its power is not stated"
            ) in calibrated.stdout.splitlines()
