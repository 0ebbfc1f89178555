"""The command line starts light. `--help` imports none of the heavy libraries, a dry-run
score imports only what scoring needs, plain options are coerced without pydantic, and the CLI runs
numpy's BLAS single-threaded (its own processes only). Timings are benchmarks/bench_cli.py's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Heavy or beside the point for a help page: each is imported lazily, where it is used.
HEAVY = ("numpy", "scipy", "httpx", "jinja2", "torch", "sentence_transformers", "yaml", "nltk", "filelock")


def _modules_after(args: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> dict:
    """Run `python -m voicegate ARGS` and report the top-level modules it had imported at exit."""
    code = ("import atexit, json, os, runpy, sys\n"
            "def report():\n"
            "    names = sorted({m.split('.')[0] for m in sys.modules})\n"
            "    sys.__stderr__.write('MODULES ' + json.dumps({'modules': names, 'full': sorted(sys.modules),\n"
            "        'blas': os.environ.get('OPENBLAS_NUM_THREADS')}) + '\\n')\n"
            "atexit.register(report)\n"
            f"sys.argv = ['voicegate', *{args!r}]\n"
            "runpy.run_module('voicegate', run_name='__main__', alter_sys=True)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, check=False,
                          env=env, timeout=120)
    line = next((x for x in done.stderr.splitlines() if x.startswith("MODULES ")), None)
    assert line is not None, done.stderr
    return {"code": done.returncode, "stdout": done.stdout, **json.loads(line[len("MODULES "):])}


@pytest.mark.parametrize(("args", "code"), [(["--help"], 0), (["--version"], 0), ([], 0)])  # bare: the help, exit 0
def test_help_and_version_import_no_heavy_library(args, code, tmp_path):
    seen = _modules_after(args, cwd=tmp_path)
    assert seen["code"] == code
    heavy = [m for m in (*HEAVY, "rich", "pydantic") if m in seen["modules"]]
    assert heavy == [], f"`voicegate {' '.join(args)}` imported {heavy}: import them where they are used"


@pytest.mark.parametrize("args", [["score", "--help"], ["generate", "--help"], ["seat", "cost", "--help"],
                                  ["report", "--help"], ["demo", "--help"]])
def test_command_help_imports_no_heavy_library(args, tmp_path):
    seen = _modules_after(args, cwd=tmp_path)
    assert seen["code"] == 0 and "Usage" in seen["stdout"]
    heavy = [m for m in HEAVY if m in seen["modules"]]
    assert heavy == [], f"`voicegate {' '.join(args)}` imported {heavy}"


def test_a_dry_run_score_imports_what_scoring_needs_only(tmp_path, monkeypatch):
    """No pydantic (typer's coercion of plain options), jinja2 (no entry is rendered), nltk (the tokenizer is
    the regex itself) or scipy.stats (~0.7 s: the bootstrap is drawn with numpy, welch-t's t quantile is
    scipy.special's stdtrit, each scipy.stats' numbers float for float; scipy.special only where welch-t is
    in force)."""
    from helpers.workspace import warm_workspace as _warm_workspace

    root = _warm_workspace(tmp_path, "lv-light")
    first = _modules_after(["score", "lv-light", "--dry-run", "--json"], cwd=root)
    assert first["code"] == 0
    again = _modules_after(["score", "lv-light", "--dry-run", "--json"], cwd=root)
    assert again["code"] == 0 and again["stdout"] == first["stdout"]
    assert "numpy" in again["modules"] and "scipy.stats" not in again["full"]  # it did score, without it
    for name in ("pydantic", "jinja2", "nltk", "httpx", "torch", "rich"):
        assert name not in again["modules"], name


def test_plain_options_are_coerced_as_typer_itself_would():
    """`_coerce` takes bool / str / Path parameters around pydantic: the values typer's own coercion gives."""
    import typer.main
    from typer import _coercion
    from typer import core as typer_core

    from voicegate.cli import _coerce, app

    assert _coerce.install()
    command = typer.main.get_command(app)

    def params(cmd):
        yield from ((cmd, p) for p in cmd.params)
        for sub in getattr(cmd, "commands", {}).values():
            yield from params(sub)

    samples = {str: ["lv-bronte", "", "two words", "Brontë", "-", "http://127.0.0.1:9/v1"],
               bool: [True, False], Path: ["x/y.jsonl", ".", "/tmp", "-", "~/a b"]}
    checked = 0
    for cmd, p in params(command):
        d = p.type_descriptor
        kind = next((k for k in samples if d.annotation is k or (k is Path and isinstance(d.annotation, type)
                                                                    and issubclass(d.annotation, Path))), None)
        if kind is None:
            assert type(typer_core.build_runtime_param(d)).__name__ != "PlainRuntimeParam"
            continue
        light = typer_core.build_runtime_param(d)
        assert type(light).__name__ == "PlainRuntimeParam", (cmd.name, p.name)
        heavy = _coercion.build_runtime_param(d)
        ctx = None  # neither coercion needs a click context for a valid value
        for value in samples[kind]:
            got, want = light.coerce(value, p, ctx), heavy.coerce(value, p, ctx)
            assert (got, type(got)) == (want, type(want)), (cmd.name, p.name, value)
        assert light.coerce(None, p, ctx) == heavy.coerce(None, p, ctx)
        checked += 1
    assert checked > 40  # the CLI's flags, names and paths


def test_the_cli_runs_blas_single_threaded_but_keeps_a_users_setting(tmp_path):
    import os

    from voicegate import _threads

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    assert _modules_after(["--version"], cwd=tmp_path, env=env)["blas"] == "1"
    assert _modules_after(["--version"], cwd=tmp_path, env={**env, "OPENBLAS_NUM_THREADS": "2"})["blas"] == "2"
    # what voicegate set itself is not handed to a process it starts for someone else (the vLLM seat)
    saved = set(_threads._set_here)
    try:
        _threads._set_here.clear()
        _threads._set_here.add("OPENBLAS_NUM_THREADS")
        assert "OPENBLAS_NUM_THREADS" not in _threads.without_our_blas({"OPENBLAS_NUM_THREADS": "1", "A": "b"})
        _threads._set_here.clear()
        assert _threads.without_our_blas({"OPENBLAS_NUM_THREADS": "3"}) == {"OPENBLAS_NUM_THREADS": "3"}
    finally:
        _threads._set_here.clear()
        _threads._set_here.update(saved)
