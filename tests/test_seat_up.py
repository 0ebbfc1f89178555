"""`voicegate seat up`: bad input is one line on stderr, exit 2, no traceback, before any vLLM starts;
a real start on a carrier folder of your own stops on SIGTERM.

The tiny-voices folder and Ctrl-C are exercised by tests/test_tutorial_vllm.py, which runs the
tutorial's `voicegate seat up` block.
"""

from __future__ import annotations

import json
import shlex
import signal
import sys
from pathlib import Path

import pytest
from _workspace import voicegate


def _one_line(done) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


def test_a_missing_folder_is_one_line(tmp_path: Path) -> None:
    line = _one_line(voicegate(tmp_path, "seat", "up", "--voices", str(tmp_path / "nowhere")))
    assert "nowhere: no such folder" in line and "tiny-voices" in line


def test_a_folder_without_a_carrier_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "voices" / "lv-x").mkdir(parents=True)
    line = _one_line(voicegate(tmp_path, "seat", "up", "--voices", str(tmp_path / "voices")))
    assert "neither carrier/config.json nor config.json" in line


def test_a_bad_adapter_option_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "carrier").mkdir()
    (tmp_path / "carrier" / "config.json").write_text("{}")
    line = _one_line(voicegate(tmp_path, "seat", "up", "--voices", str(tmp_path / "carrier"),
                               "--adapter", f"lv-y={tmp_path / 'missing'}"))
    assert "--adapter" in line and "NAME=DIR" in line


def test_no_vllm_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm imports in this python: the no-vLLM path cannot be shown here")
    voices = tmp_path / "voices"
    (voices / "carrier").mkdir(parents=True)
    (voices / "carrier" / "config.json").write_text("{}")
    (voices / "lv-a").mkdir()
    (voices / "lv-a" / "adapter_config.json").write_text(json.dumps({"r": 16}))
    monkeypatch.setenv("VOICEGATE_VLLM_VENV", str(tmp_path / "no-venv"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    done = voicegate(tmp_path, "seat", "up", "--voices", str(voices))
    line = _one_line(done)
    assert "no vLLM" in line and str(tmp_path / "no-venv") in line
    assert done.stdout == ""   # nothing claimed to start
    assert list((tmp_path / "tmp").iterdir()) == []   # no seat folder made


def test_help_names_the_voices_folder() -> None:
    from _workspace import run_cli

    done = run_cli("seat", "up", "--help")
    assert done.code == 0
    assert "--voices DIR" in done.stdout and "--port" in done.stdout and "Ctrl-C" in done.stdout


def test_a_carrier_of_your_own_comes_up_and_stops_on_sigterm(tmp_path: Path) -> None:
    # The tutorial test covers the tiny-voices folder and Ctrl-C on a real vLLM; this is the other way in (a
    # carrier folder, plus one voice by --adapter) and the other way out (SIGTERM, as a service manager sends
    # it). What is tested is `seat up`'s start, listing and signal forwarding, not vLLM: the `vllm` it starts
    # is the stub (tests/_vllm_stub.py, through VOICEGATE_VLLM_VENV). The seat and its stub are stopped in the
    # finally whatever happens.
    from _seat_up import VOICES, Seat, alive, seat_env
    from vllm_seat import stub_venv

    from voicegate.seat._vllm import free_port

    if not (VOICES / "carrier" / "config.json").is_file() or not (VOICES / "lv-austen").is_dir():
        pytest.skip(f"tiny-voices fixture not present at {VOICES}")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "voicegate").write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m voicegate \"$@\"\n")
    (bin_dir / "voicegate").chmod(0o755)
    port = free_port()
    cmd = f"voicegate seat up --voices {VOICES / 'carrier'} --adapter lv-austen={VOICES / 'lv-austen'}"
    env = {**seat_env(bin_dir, port), "VOICEGATE_VLLM_VENV": str(stub_venv(tmp_path / "stub-venv"))}
    seat = Seat(cmd, tmp_path, env, port)
    try:
        out = seat.wait_ready()
        assert f"seat ready: http://127.0.0.1:{port}/v1" in out
        assert "with 1 LoRA voice(s)" in out
        served = [ln.split()[:2] for ln in out.splitlines() if ln.startswith("  ")]
        assert served == [["voices-base", "base"], ["lv-austen", "adapter"]], out
        assert seat.vllm and all(alive(p) for p in seat.vllm)
        assert any(b"_vllm_stub.py" in Path(f"/proc/{p}/cmdline").read_bytes() for p in seat.vllm)   # the stub
        code, tail = seat.stop(signal.SIGTERM)
        assert code == 0, tail
        assert tail.rstrip().splitlines()[-1].startswith("stopped in "), tail
        assert not [p for p in seat.vllm if alive(p)], "vLLM outlived `voicegate seat up`"
    finally:
        seat.kill()
