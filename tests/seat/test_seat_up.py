"""`voicegate seat up`: bad input is one line on stderr, exit 2, no traceback, before any vLLM starts;
a real start on a carrier folder of your own stops on SIGTERM.

The tiny-voices folder and Ctrl-C are exercised by tests/real_seat/test_tutorial_vllm.py, which runs the
tutorial's `voicegate seat up` block.
"""

from __future__ import annotations

import json
import re
import shlex
import signal
import sys
from pathlib import Path

import pytest
from helpers.workspace import voicegate


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
    # A --log-file that can be written is checked first, and not left behind by the refusal.
    done = voicegate(tmp_path, "seat", "up", "--voices", str(voices), "--log-file", str(tmp_path / "vllm.log"))
    assert "no vLLM" in _one_line(done) and not (tmp_path / "vllm.log").exists()


def test_help_names_the_voices_folder() -> None:
    from helpers.workspace import run_cli

    done = run_cli("seat", "up", "--help")
    assert done.code == 0
    assert "--voices DIR" in done.stdout and "--port" in done.stdout and "Ctrl-C" in done.stdout


def _stub_seat(tmp_path: Path) -> tuple[int, dict[str, str]]:
    """(a free port, the environment) for `voicegate seat up` on the stub `vllm` (tests/helpers/vllm_stub.py), with a
    `voicegate` on PATH that runs this checkout; skips without the tiny-voices fixture."""
    from helpers.seat_up import VOICES, seat_env
    from helpers.vllm_seat import stub_venv

    from voicegate.seat._vllm import free_port

    if not (VOICES / "carrier" / "config.json").is_file() or not (VOICES / "lv-austen").is_dir():
        pytest.skip(f"tiny-voices fixture not present at {VOICES}")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "voicegate").write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m voicegate \"$@\"\n")
    (bin_dir / "voicegate").chmod(0o755)
    port = free_port()
    return port, {**seat_env(bin_dir, port), "VOICEGATE_VLLM_VENV": str(stub_venv(tmp_path / "stub-venv"))}


def test_a_carrier_of_your_own_comes_up_and_stops_on_sigterm(tmp_path: Path) -> None:
    # The tutorial test covers the tiny-voices folder and Ctrl-C on a real vLLM; this is the other way in (a
    # carrier folder, plus one voice by --adapter) and the other way out (SIGTERM, as a service manager sends
    # it). What is tested is `seat up`'s start, listing and signal forwarding, not vLLM: the `vllm` it starts
    # is the stub (tests/helpers/vllm_stub.py, through VOICEGATE_VLLM_VENV). The seat and its stub are stopped in the
    # finally whatever happens.
    from helpers.seat_up import VOICES, Seat, alive

    port, env = _stub_seat(tmp_path)
    cmd = f"voicegate seat up --voices {VOICES / 'carrier'} --adapter lv-austen={VOICES / 'lv-austen'}"
    seat = Seat(cmd, tmp_path, env, port)
    try:
        out = seat.wait_ready()
        assert f"seat ready: http://127.0.0.1:{port}/v1" in out
        assert "with 1 LoRA voice(s)" in out
        served = [ln.split()[:2] for ln in out.splitlines() if ln.startswith("  ")]
        assert served == [["voices-base", "base"], ["lv-austen", "adapter"]], out
        assert seat.vllm and all(alive(p) for p in seat.vllm)
        assert any(b"helpers/vllm_stub.py" in Path(f"/proc/{p}/cmdline").read_bytes() for p in seat.vllm)   # the stub
        code, tail = seat.stop(signal.SIGTERM)
        assert code == 0, tail
        assert tail.rstrip().splitlines()[-1].startswith("stopped in "), tail
        assert not [p for p in seat.vllm if alive(p)], "vLLM outlived `voicegate seat up`"
    finally:
        seat.kill()


# -- `seat up` as vLLM users run it --------------------------------------------------


def _time_wait_port() -> int:
    """A port whose only holder is a connection closing in TIME_WAIT, left as a stopped seat leaves it: the
    server's socket had SO_REUSEADDR (uvicorn's and the stand-in's do) and the server side closed first."""
    import socket
    import time

    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        conn, _ = server.accept()
        conn.close()   # the seat hangs up first: its side goes to TIME_WAIT for up to 60 s
        time.sleep(0.05)
        client.close()
    return port


def test_a_port_held_only_by_time_wait_is_free_and_a_listener_is_named() -> None:
    import socket

    from voicegate.seat._vllm import port_holder

    port = _time_wait_port()
    with socket.socket() as plain, pytest.raises(OSError):   # the old probe: a bind without SO_REUSEADDR
        plain.bind(("127.0.0.1", port))
    assert port_holder(port) is None
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert port_holder(busy.getsockname()[1]) == "listening"


@pytest.mark.parametrize(("flags", "owned"), [
    (["--port", "9000"], "--port"), (["--port=9000"], "--port"), (["--max-num-seqs", "4", "--model", "m"], "--model"),
    (["--lora_modules", "a=/b"], "--lora-modules"), (["--host", "0.0.0.0"], "--host"),
    (["--served-model-name", "x"], "--served-model-name"), (["--no-enable-lora"], "--no-enable-lora"),
    (["--api-key", "k"], "--api-key"),
])
def test_a_vllm_flag_voicegate_owns_is_refused_before_vllm_starts(tmp_path: Path, flags: list[str], owned: str) -> None:
    from helpers.workspace import run_cli

    (tmp_path / "carrier").mkdir()
    (tmp_path / "carrier" / "config.json").write_text("{}")
    done = run_cli("seat", "up", "--voices", tmp_path / "carrier", "--", *flags, cwd=tmp_path)
    assert done.code == 2 and done.stdout == "", done
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1
    named = flags[-2] if owned == "--model" else flags[0]
    assert line.startswith(f"voicegate: -- {named}: voicegate sets {owned} itself (")
    assert line.endswith("pass only other vLLM flags after --")


def test_vllm_flags_come_after_a_double_dash(tmp_path: Path) -> None:
    from helpers.workspace import run_cli

    from voicegate.seat import check_vllm_args

    assert check_vllm_args(["--max-num-seqs", "4", "--max_loras=4", "--enforce-eager"]) == [
        "--max-num-seqs", "4", "--max_loras=4", "--enforce-eager"]
    (tmp_path / "carrier").mkdir()
    (tmp_path / "carrier" / "config.json").write_text("{}")
    done = run_cli("seat", "up", "--voices", tmp_path / "carrier", "--", "my-model", cwd=tmp_path)
    assert done.code == 2 and done.stderr.strip() == (
        "voicegate: after `--` come vLLM flags (e.g. -- --max-num-seqs 4), got 'my-model': the carrier is --voices DIR")
    unknown = run_cli("seat", "up", "--voices", tmp_path / "carrier", "--max-num-seqs", "4", cwd=tmp_path)
    assert unknown.code == 2 and "No such option: --max-num-seqs" in unknown.stderr


def test_a_log_file_in_a_missing_folder_is_one_line_before_vllm(tmp_path: Path) -> None:
    from helpers.workspace import run_cli

    (tmp_path / "carrier").mkdir()
    (tmp_path / "carrier" / "config.json").write_text("{}")
    where = tmp_path / "no" / "vllm.log"
    done = run_cli("seat", "up", "--voices", tmp_path / "carrier", "--log-file", where, cwd=tmp_path)
    assert done.code == 2 and done.stdout == ""
    assert done.stderr.strip() == f"voicegate: --log-file {where}: no such folder {where.parent}"
    assert not (tmp_path / "no").exists()


def test_the_port_comes_from_voicegate_seat_url_when_it_names_this_machine() -> None:
    from voicegate.seat import up_port

    assert up_port(None, {}) == (8027, None)
    assert up_port(9100, {}) == (9100, None)
    assert up_port(None, {"VOICEGATE_SEAT_URL": "http://127.0.0.1:8123/v1"}) == (8123, None)
    assert up_port(None, {"VOICEGATE_SEAT_URL": "http://localhost:8124/v1"}) == (8124, None)
    assert up_port(8123, {"VOICEGATE_SEAT_URL": "http://127.0.0.1:8123/v1"}) == (8123, None)
    port, note = up_port(9100, {"VOICEGATE_SEAT_URL": "http://127.0.0.1:8123/v1"})
    assert port == 9100 and note == ("note: $VOICEGATE_SEAT_URL is http://127.0.0.1:8123/v1: commands in this shell "
                                     "reach that, not this seat on port 9100")
    port, note = up_port(None, {"VOICEGATE_SEAT_URL": "http://fv-ml1:8027/v1"})
    assert port == 8027 and note is not None and "reach that, not this seat on port 8027" in note


def test_a_stop_with_a_request_in_flight_is_prompt_and_a_restart_is_not_refused(tmp_path: Path) -> None:
    """Stopping took 30 s with a request in flight (vLLM drains it; the stub does too), then a restart on the
    same port was refused for up to 60 s (TIME_WAIT). vLLM's log is kept where the ready line says, and flags
    after `--` reach vLLM's command line."""
    import threading
    import time

    import httpx
    from helpers.seat_up import VOICES, Seat, alive

    from voicegate.seat._vllm import STOP_GRACE_S

    port, env = _stub_seat(tmp_path)
    env["VLLM_STUB_TOKEN_TIME"] = "1.0"   # an answer of 40 tokens takes 40 s
    log = tmp_path / "vllm.log"
    cmd = (f"voicegate seat up --voices {VOICES / 'carrier'} --adapter lv-austen={VOICES / 'lv-austen'} "
           f"--log-file {log} -- --max-num-seqs 3 --max_loras=4")
    seats = [Seat(cmd, tmp_path, env, port)]
    try:
        out = seats[0].wait_ready()
        ready = next(ln for ln in out.splitlines() if ln.startswith("seat ready: "))
        assert ready.startswith(f"seat ready: http://127.0.0.1:{port}/v1  (started in ")
        assert ready.endswith(f"), serving voices-base + 1 adapter(s): lv-austen; vLLM log {log}"), ready
        assert "passing --max-num-seqs 3 --max_loras=4" in out
        assert "vllm stub argv: " in log.read_text() and log.read_text().split("vllm stub argv: ")[1].splitlines()[
            0].endswith("--max-num-seqs 3 --max_loras=4")

        def ask() -> None:
            try:
                httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=60, json={
                    "model": "lv-austen", "messages": [{"role": "user", "content": "Begin."}], "max_tokens": 40,
                    "ignore_eos": True})
            except httpx.HTTPError:
                pass   # dropped by the stop: what the test expects

        threading.Thread(target=ask, daemon=True).start()
        time.sleep(0.5)   # the request is in flight (it would take 40 s)
        t0 = time.monotonic()
        code, tail = seats[0].stop(signal.SIGTERM)
        took = time.monotonic() - t0
        assert code == 0, tail
        assert took < STOP_GRACE_S + 2.5, (took, tail)
        assert re.fullmatch(r"stopped in \d+\.\d s \(vLLM was still busy \d+ s after SIGTERM, with requests in flight: "
                            r"they were dropped and its process group killed\)\n", tail), tail
        assert not [p for p in seats[0].vllm if alive(p)], "vLLM outlived `voicegate seat up`"
        assert "vllm stub: voices-base" in log.read_text()   # kept after the stop
        # At once, on the same port: a connection the seat closed is in TIME_WAIT, which must not refuse it.
        first_log = log.read_text()
        seats.append(Seat(cmd, tmp_path, env, port))
        seats[1].wait_ready()
        # the first start's log is kept beside the second's, which a restart after a crash would otherwise erase
        assert (tmp_path / "vllm.log.1").read_text() == first_log and "vllm stub argv: " in log.read_text()
        code, tail = seats[1].stop(signal.SIGTERM)
        assert code == 0 and re.fullmatch(r"stopped in \d+\.\d s\n", tail), tail
    finally:
        for seat in seats:
            seat.kill()


# -- `seat up --standin` and the default --voices ------------------------------------------------------------


def _spec(root: Path, gate: str, base: str = "voices-base") -> None:
    import yaml
    from helpers.workspace import gate_spec

    (root / "preregistrations").mkdir(parents=True, exist_ok=True)
    spec = gate_spec(gate, base_model=base, candidates=[
        {"name": "ckpt475", "model": f"{gate}-ckpt475", "role": "candidate"},
        {"name": "later", "model": f"{gate}-later", "role": "candidate", "adapter_path": "/adapters/later"}])
    (root / "preregistrations" / f"{gate}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))


def test_standin_refusals_are_one_line(tmp_path: Path) -> None:
    assert _one_line(voicegate(tmp_path, "seat", "up", "--standin")) == (
        f"voicegate: --standin serves the arms your specs name, and {tmp_path.resolve()}/preregistrations has no "
        "<gate>.yaml yet: write the spec first (`voicegate init` left an example), then start the seat")
    _spec(tmp_path, "lv-one")
    _spec(tmp_path, "lv-two", base="other-base")
    assert _one_line(voicegate(tmp_path, "seat", "up", "--standin")) == (
        "voicegate: the specs name 2 base models (other-base (preregistrations/lv-two.yaml); voices-base "
        "(preregistrations/lv-one.yaml)): one seat serves one base; choose the gates with --gate")
    assert _one_line(voicegate(tmp_path, "seat", "up", "--standin", "--gate", "lv-three")) == (
        "voicegate: --gate: no such spec preregistrations/lv-three.yaml")
    assert _one_line(voicegate(tmp_path, "seat", "up", "--standin", "--voices", str(tmp_path), "--log-file",
                               str(tmp_path / "x.log"))) == (
        "voicegate: --standin serves your specs' arms with synthetic text and runs no vLLM: --voices, --log-file are "
        "for a real seat")
    assert _one_line(voicegate(tmp_path, "seat", "up", "--gate", "lv-one")) == (
        "voicegate: --gate chooses the arms the stand-in serves: it goes with --standin")
    assert not (tmp_path / "x.log").exists()


def test_without_voices_the_fixtures_variable_names_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VOICEGATE_SHARED", raising=False)
    assert _one_line(voicegate(tmp_path, "seat", "up")) == (
        "voicegate: give --voices DIR (a tiny-voices folder, or a carrier folder of your own), or set "
        "$VOICEGATE_SHARED to the fixtures folder; no vLLM? --standin serves your specs' arms from the stand-in seat")
    monkeypatch.setenv("VOICEGATE_SHARED", str(tmp_path / "elsewhere"))
    line = _one_line(voicegate(tmp_path, "seat", "up"))
    assert line.startswith(f"voicegate: --voices {tmp_path / 'elsewhere' / 'fixtures' / 'tiny-voices'}: no such folder")


def test_standin_serves_the_specs_arms_labelled_synthetic_and_stops_on_sigterm(tmp_path: Path) -> None:
    import httpx
    from helpers.seat_up import Seat, seat_env

    from voicegate.seat._vllm import free_port

    _spec(tmp_path, "lv-one")
    _spec(tmp_path, "lv-two")
    port = free_port()
    seat = Seat("voicegate seat up --standin --gate lv-one", tmp_path, seat_env(tmp_path / "bin", port), port)
    try:
        out = seat.wait_ready()
        assert out.splitlines()[0] == (f"stand-in seat ready: http://127.0.0.1:{port}/v1, serving voices-base + 2 "
                                       "adapter(s) for lv-one: lv-one-ckpt475, lv-one-later")
        assert out.splitlines()[1].startswith("SYNTHETIC: every answer is deterministic pseudo-text")
        models = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=10).json()["data"]
        assert {(m["id"], m["root"], m["parent"]) for m in models} == {
            ("voices-base", "standin:synthetic/voices-base", None),
            ("lv-one-ckpt475", "standin:synthetic/lv-one-ckpt475", "voices-base"),
            ("lv-one-later", "standin:synthetic/lv-one-later", "voices-base")}
        assert httpx.get(f"http://127.0.0.1:{port}/version", timeout=10).json() == {
            "version": "stand-in: synthetic text, no model"}
        code, tail = seat.stop(signal.SIGTERM)
        assert code == 0 and re.fullmatch(r"stopped in \d+\.\d s\n", tail), (code, tail)
    finally:
        seat.kill()
