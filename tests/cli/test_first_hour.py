"""The smaller findings of a newcomer's first hour: each is one line that now says what was meant.

(The bigger ones have their own tests: the README's set-up in test_install, the fixtures' manifest in
test_fixtures_manifest, the stand-in tutorial in test_tutorial_standin, the skip summary in this module's
last test.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers.workspace import base_spec, gate_spec, make_workspace, registered_workspace, run_cli, tree_snapshot

from voicegate._figures import ratio_text
from voicegate.seat import StandinSeat

REPO = Path(__file__).resolve().parents[2]


def test_a_yml_spec_is_told_about_the_extension(tmp_path: Path) -> None:
    spec = make_workspace(tmp_path, base_spec("lv-typo"))
    spec.rename(spec.with_suffix(".yml"))
    before = tree_snapshot(tmp_path)
    done = run_cli("register", "lv-typo", cwd=tmp_path)
    assert done.code == 2
    assert done.stderr == (f"voicegate: {tmp_path}/preregistrations/lv-typo.yaml: no such spec, but lv-typo.yml is "
                           "there: voicegate reads <gate>.yaml; rename it to lv-typo.yaml\n")
    assert tree_snapshot(tmp_path) == before


def test_simulate_refuses_a_registered_gate_whose_prompts_changed_as_generate_does(tmp_path: Path) -> None:
    root = registered_workspace(tmp_path, gate_spec("lv-gen"))
    (root / "prompts" / "beats.txt").write_text("Write about something else.\n", encoding="utf-8")
    generate = run_cli("generate", "lv-gen", "--seat", "http://127.0.0.1:9/v1", cwd=root)
    simulate = run_cli("seat", "simulate", "lv-gen", "--seat", "http://127.0.0.1:9/v1", cwd=root)
    assert generate.code == simulate.code == 2
    assert simulate.stderr == generate.stderr
    assert simulate.stderr.startswith("voicegate: registered file changed since registration: prompts/beats.txt; ")


def test_calibrate_help_says_required_once_and_version_has_help() -> None:
    calibrate = run_cli("calibrate", "-h").stdout
    assert "[required]  [required]" not in calibrate and calibrate.count("[required]") == 2   # GATE and --seeds
    top = run_cli("--help").stdout
    assert "  --version   Print voicegate's version and exit." in top
    done = run_cli("version")
    assert done.code == 2
    assert done.stderr == "voicegate: no command 'version': `voicegate --version` prints the version\n"


def test_a_ratio_near_zero_shows_its_sign_never_minus_zero() -> None:
    assert [ratio_text(r) for r in (-0.02, -0.004, 0.0, 0.04, -0.6, -1e-9)] == [
        "-0.02x", "-0.004x", "0.0x", "0.04x", "-0.6x", "0.0x"]


def test_seat_cost_does_not_call_a_faster_voice_a_cost() -> None:
    with StandinSeat(adapters={"lv-quick": "/adapters/lv-quick"}, token_time=0.002,
                     token_time_by_model={"lv-quick": 0.0015}) as seat:
        done = run_cli("seat", "cost", "lv-quick", "--n", "5", "--max-tokens", "32", "--seat", seat.url)
    assert done.code == 0, done.stderr
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("overhead +"))
    assert line.endswith("outside the floor: the voice decoded faster than the base, a measured difference and no cost")


def test_a_first_run_without_fixtures_says_what_it_skipped_one_line_per_group(tmp_path: Path) -> None:
    """What .ci/run's first-run step shows: the fixtures pointed at an empty folder, no Chromium; the run passes
    and its summary says, per group, how many tests went and why; a required group fails the run."""
    # The child is a run of its own: none of this run's switches (what it requires, where it keeps its seconds and
    # what passed, what it leaves out) reach it.
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("VOICEGATE_TESTS_")},
           "VOICEGATE_SHARED": str(tmp_path / "empty"), "VOICEGATE_CHROMIUM": str(tmp_path / "none"),
           "PYTHONPATH": str(REPO)}
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "tests/cli/test_tutorial_standin.py",
            "tests/report/test_report_browser.py::test_console_detector_sees_an_uncaught_error"]
    done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:]
    lines = done.stdout.splitlines()
    section = lines.index(next(ln for ln in lines if "skipped, by what they need" in ln))
    assert lines[section + 1] == (
        f"fixtures: 1 test skipped (the trained tiny voices, the british-fiction novels and the fleet compose): "
        f"under $VOICEGATE_SHARED={tmp_path / 'empty'}: no fixtures/tiny-voices, corpora/british-fiction, "
        "fixtures/voices-seat.compose.yaml; docs/fixtures.md says where to get them")
    assert lines[section + 2] == ("chromium: 1 test skipped (the report rendered in headless Chromium): headless "
                                  "chromium not installed; apt-get install -y chromium, or $VOICEGATE_CHROMIUM")
    required = subprocess.run(args, cwd=REPO, env={**env, "VOICEGATE_TESTS_REQUIRE": "fixtures"},
                              capture_output=True, text=True, timeout=600, check=False)
    assert required.returncode == 1
    assert "docs/fixtures.md says where to get them -- REQUIRED by $VOICEGATE_TESTS_REQUIRE: the run fails" \
        in required.stdout
