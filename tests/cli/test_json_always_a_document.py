"""`--json` is always exactly one UTF-8 JSON document on stdout: on a workspace whose path holds a byte that is not
UTF-8 (git's answers and the lock's key read it as Python reads a path, never crash on it), and when a command
crashes (one error document, exit 2, one line on stderr, no traceback; without --json the traceback stays).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.workspace import run_cli


def voicegate(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """The real CLI in its own process, its output as bytes: what a CI job reads."""
    return subprocess.run([sys.executable, "-m", "voicegate", *args], cwd=cwd, check=False, capture_output=True,
                          env={**os.environ, **(env or {})}, timeout=300)


@pytest.fixture(scope="module")
def odd_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's whole story in a directory named with byte 0xff (it ran `register`, `generate`, `score`, `ship`,
    `note`, `amend`, `verify` and `report` there, each in its own process)."""
    tmp = tmp_path_factory.mktemp("odd")
    root = tmp / os.fsdecode(b"ws\xff")
    done = voicegate(tmp, "demo", str(root))
    assert done.returncode == 0, done.stderr[-2000:]
    assert b"demo workspace: " + os.fsencode(root) + b"\n" in done.stdout  # the path as the user gave it
    return root


@pytest.mark.parametrize("args", [("verify",), ("score", "lv-marlowe", "--dry-run"), ("report", "lv-marlowe"),
                                  ("verify", "lv-nope")])
def test_a_workspace_path_with_byte_0xff_gives_one_document(odd_demo: Path, args: tuple[str, ...]) -> None:
    for encoding in ({}, {"PYTHONIOENCODING": "utf-8"}, {"LC_ALL": "C", "PYTHONIOENCODING": "ascii"}):
        done = voicegate(odd_demo.parent, *args, "--json", "-C", str(odd_demo), env=encoding)
        assert b"Traceback" not in done.stderr, done.stderr
        doc = json.loads(done.stdout.decode("utf-8"))
        if args[-1] == "lv-nope":
            assert done.returncode == 2 and set(doc) == {"error", "exit"} and doc["exit"] == 2
        else:
            assert done.returncode == 0, done.stderr
            assert "error" not in doc
    verified = json.loads(voicegate(odd_demo.parent, "verify", "--json", "-C", str(odd_demo)).stdout.decode("utf-8"))
    assert verified["ok"] is True and verified["workspace"].endswith("ws\udcff")


def test_a_crash_under_json_is_one_error_document(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import voicegate.spec

    def broken(*_: object) -> object:
        raise ZeroDivisionError("division by zero\nsecond line")

    monkeypatch.setattr(voicegate.spec, "workspace_root", broken)
    done = run_cli("report", "lv-x", "--json", cwd=tmp_path)
    assert done.code == 2
    message = ("internal error: ZeroDivisionError: division by zero (a bug in voicegate; run the command without "
               "--json for the traceback)")
    assert json.loads(done.stdout) == {"error": message, "exit": 2}
    assert done.stderr == f"voicegate: {message}\n"
    with pytest.raises(ZeroDivisionError):  # without --json: the traceback a bug report needs
        run_cli("report", "lv-x", cwd=tmp_path)
