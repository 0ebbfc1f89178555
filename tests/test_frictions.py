"""Issue 24, item 4: the frictions a new user met on their own gate, one test (or a few) each."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from _workspace import gate_spec, registered_workspace, run_cli, tree_snapshot

GATE = "lv-gen"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- a seat that is not there --------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_loopback_seat_that_is_not_up_fails_fast_and_says_how_to_start_one(tmp_path: Path, host: str) -> None:
    """Nothing listening on a loopback port was retried for ~50 s, and the message named a generations
    file that did not exist."""
    root = registered_workspace(tmp_path / "ws", gate_spec(GATE))
    url = f"http://{host}:{_closed_port()}/v1"
    t0 = time.monotonic()
    done = run_cli("generate", GATE, "--quiet", "--seat", url, cwd=root)  # the default retry policy
    took = time.monotonic() - t0
    assert done.code == 3
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1, done.stderr
    assert took < 4.0, took
    assert "connection refused" in line and "`voicegate seat up --voices DIR`" in line
    assert "generations.jsonl" not in line and not (root / "runs" / GATE / "generations.jsonl").exists()
    assert "no generation is stored yet (0/" in line
    assert line.endswith(f"run `voicegate generate {GATE} --seat {url}` again to resume")


def test_a_host_that_does_not_resolve_says_how_to_start_a_local_seat(tmp_path: Path) -> None:
    root = registered_workspace(tmp_path / "ws", gate_spec(GATE))
    url = "http://no-such-seat.invalid:8027/v1"
    t0 = time.monotonic()
    done = run_cli("generate", GATE, "--quiet", "--seat", url, cwd=root)
    assert done.code == 3 and time.monotonic() - t0 < 4.0
    line = done.stderr.strip()
    assert "host name does not resolve" in line and "`voicegate seat up --voices DIR`" in line
    assert "generations.jsonl" not in line
    assert line.endswith(f"run `voicegate generate {GATE} --seat {url}` again to resume")


def test_retry_notes_carry_one_prefix(tmp_path: Path) -> None:
    root = registered_workspace(tmp_path / "ws", gate_spec(GATE))
    done = run_cli("generate", GATE, "--seat", f"http://127.0.0.1:{_closed_port()}/v1", cwd=root)
    assert done.code == 3 and "voicegate: retrying GET /version" in done.stderr
    assert "voicegate: voicegate:" not in done.stderr


# -- a seat URL that is not the base URL --------------------------------------------------------------


@pytest.mark.parametrize(("given", "meant"), [
    ("http://127.0.0.1:8027", "http://127.0.0.1:8027/v1"),
    ("http://127.0.0.1:8027/", "http://127.0.0.1:8027/v1"),
    ("http://127.0.0.1:8027/v1/chat/completions", "http://127.0.0.1:8027/v1"),
    ("http://127.0.0.1:8027/v1/models", "http://127.0.0.1:8027/v1"),
])
def test_a_seat_url_that_is_not_the_base_url_says_what_it_must_look_like(tmp_path: Path, given: str,
                                                                         meant: str) -> None:
    root = registered_workspace(tmp_path / "ws", gate_spec(GATE))
    before = tree_snapshot(root)
    for args in (("generate", GATE, "--quiet", "--seat", given), ("seat", "models", "--seat", given)):
        done = run_cli(*args, cwd=root)
        assert done.code == 2, (args, done.stderr)
        line = done.stderr.strip()
        assert len(line.splitlines()) == 1
        assert line.startswith("voicegate: --seat: must be the OpenAI base URL, ending in /v1, such as "
                               f"{meant} "), line
    assert tree_snapshot(root) == before


def test_a_spec_seat_url_without_v1_is_refused_at_load(tmp_path: Path) -> None:
    from _workspace import make_workspace

    make_workspace(tmp_path, gate_spec(GATE, url="http://127.0.0.1:8027"))
    done = run_cli("register", GATE, cwd=tmp_path)
    assert done.code == 2
    assert "seat.url: must be the OpenAI base URL, ending in /v1, such as http://127.0.0.1:8027/v1" in done.stderr
