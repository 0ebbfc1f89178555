"""Test workspaces and the two ways the tests run the CLI — the one place for both.

Workspaces
    `make_workspace(root, spec)` writes a gate workspace with every file the
    spec names (prompts, small corpora, probes when the spec has them), a git
    repository, and the spec; `registered_workspace(root, spec)` also commits
    it and runs `voicegate register`. The corpora are a few KB written here, so
    nothing needs ../shared. `base_spec` (every section, all three artifacts)
    and `gate_spec` (a seat-facing spec for the generate tests) are the specs.

Running the CLI
    `run_cli(*args, cwd=root)` runs `voicegate.cli.main` in this process: a
    monkeypatched seam applies and no interpreter starts. `voicegate(root,
    *args)` runs `python -m voicegate` as a user would, in a subprocess: kept for
    what needs a real process (a kill, a signal, two commands at once, an
    import guard, a stand-in seat the test process also serves).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import yaml

HELD = ("The moor lay grey beneath a sky of iron, and I walked alone, "
        "thinking of the cold house and of him. ") * 40
TRAIN = ("She said nothing; the wind said everything, and the heather bent "
         "as though it listened to a voice I could not hear. ") * 40
BACK = ("Mr. Pickwick laughed heartily at the notion, and the whole party "
        "went merrily down to supper in the best of humours. ") * 40
BEATS = "Write about the moor.\n\nWrite about a letter.\nWrite about rain.\n"  # a blank line is no prompt
PROMPTS = ["Write about the moor at dusk.", "Write about a letter that came too late.",
           "Write about rain on the window."]
PROBES = {"probes": [
    {"id": "p-capital", "prompt": "What is the capital of France? One word.", "check": {"regex": "(?i)paris"}},
    {"id": "p-short", "prompt": "Say hello in at most five words.", "check": {"max_words": 5}},
]}


# -- specs ---------------------------------------------------------------------------


def base_spec(gate: str = "lv-test") -> dict[str, Any]:
    return {
        "gate": gate,
        "author": "Test Author",
        "seat": {"url": "http://127.0.0.1:8027/v1", "base_model": "voices-base",
                 "api_key_env": "VOICES_API_KEY"},
        "arms": [
            {"name": "base", "model": "voices-base", "role": "base"},
            {"name": "ckpt475", "model": f"{gate}-ckpt475", "role": "candidate",
             "adapter_path": "/adapters/x/ckpt475"},
            {"name": "ckpt925", "model": f"{gate}-ckpt925", "role": "candidate",
             "adapter_path": "/adapters/x/ckpt925"},
        ],
        "prompts": "prompts/beats.txt",
        "seeds": [101, 202],
        "sampling": {"temperature": 0.8, "top_p": 0.95, "max_tokens": 64},
        "expected_words": 50,
        "corpora": {"heldout": ["corpora/held/*.txt"], "training": ["corpora/train/*.txt"],
                    "background": ["corpora/back/*.txt"]},
        "voice": {"view": "stylometric", "mfw": 50, "chunk": 100},
        "copying": {"n": 8, "tolerance": 0.005, "max_run": 50},
        "damage": {"tolerance": 0.05},
        "floor": {"rule": "pairwise-max-spread"},
        "artifacts": {"record": f"gates/{gate}.md", "readme": "adapters/README.md",
                      "compose": "deploy/compose.yaml"},
    }


def gate_spec(gate: str = "lv-gen", *, url: str = "http://127.0.0.1:9/v1", base_model: str = "voices-base",
              candidates: list[dict[str, Any]] | None = None, seeds: list[int] | None = None,
              probes: bool = False, concurrency: int = 4, timeout: float = 30.0,
              api_key_env: str | None = None, order_seed: int = 7, max_tokens: int = 32) -> dict[str, Any]:
    if candidates is None:
        candidates = [
            {"name": "ckpt475", "model": f"{gate}-ckpt475", "role": "candidate"},
            {"name": "ckpt925", "model": f"{gate}-ckpt925", "role": "candidate",
             "adapter_path": f"/adapters/{gate}/ckpt925"},
        ]
    seat: dict[str, Any] = {"url": url, "base_model": base_model, "concurrency": concurrency, "timeout": timeout}
    if api_key_env:
        seat["api_key_env"] = api_key_env
    spec: dict[str, Any] = {
        "gate": gate,
        "author": "Test Author",
        "seat": seat,
        "arms": [{"name": "base", "model": base_model, "role": "base"}, *candidates],
        "prompts": "prompts/beats.txt",
        "seeds": seeds or [101, 202],
        "sampling": {"temperature": 0.8, "top_p": 0.95, "max_tokens": max_tokens},
        "expected_words": 50,
        "order_seed": order_seed,
        "corpora": {"heldout": ["corpora/held/*.txt"], "training": ["corpora/train/*.txt"],
                    "background": ["corpora/back/*.txt"]},
        "voice": {"view": "stylometric", "mfw": 50, "chunk": 100},
        "floor": {"rule": "pairwise-max-spread"},
        "artifacts": {"record": f"gates/{gate}.md"},
    }
    if probes:
        spec["damage"] = {"probes": "probes/general.yaml", "tolerance": 0.05}
    return spec


# -- workspaces ----------------------------------------------------------------------


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True, env=env).stdout


def make_workspace(root: Path, spec: dict[str, Any] | None = None, *, git_init: bool = True,
                   prompts: list[str] | None = None, corpora: Mapping[str, str] | None = None) -> Path:
    """Write a workspace with every file the spec names; returns the spec path.

    `corpora` (relative path -> text) replaces the default held-out/training/background files.
    """
    spec = spec if spec is not None else base_spec()
    root.mkdir(parents=True, exist_ok=True)
    if git_init:
        git(root, "init", "-q")
        git(root, "config", "user.email", "t@t")
        git(root, "config", "user.name", "t")
    default = {"corpora/held/held.txt": HELD, "corpora/train/train.txt": TRAIN, "corpora/back/back.txt": BACK}
    beats = BEATS if prompts is None else "\n".join(prompts) + "\n"
    files = {"prompts/beats.txt": beats, **(default if corpora is None else corpora)}
    if (spec.get("damage") or {}).get("probes"):
        files.setdefault(spec["damage"]["probes"], yaml.safe_dump(PROBES, sort_keys=False))
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    readme = (spec.get("artifacts") or {}).get("readme")
    if isinstance(readme, str) and readme and not Path(readme).is_absolute():
        (root / readme).parent.mkdir(parents=True, exist_ok=True)  # the adapter's folder; voicegate writes the README
    (root / "preregistrations").mkdir(exist_ok=True)
    (root / "gates").mkdir(exist_ok=True)
    path = root / "preregistrations" / f"{spec.get('gate', 'lv-test')}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def registered_workspace(root: Path, spec: dict[str, Any], *, prompts: list[str] | None = None) -> Path:
    """make_workspace, committed, then `voicegate register` through the CLI; returns root."""
    make_workspace(root, spec, prompts=prompts or PROMPTS)
    (root / ".gitignore").write_text("runs/\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "workspace")
    done = voicegate(root, "register", spec["gate"])
    if done.returncode != 0:
        raise RuntimeError(f"register failed: {done.stderr}")
    return root


def register_prospective(root: Path, gate: str = "lv-hemingway", rule: str = "pairwise-max-spread") -> Path:
    """Another, un-run gate registered in `root` under `rule`: the prospective registration an amendment
    to `rule` cites (as lv-hemingway's registration, commit 0bb4938, was for lv-bronte's correction).

    Its spec names only files `make_workspace` wrote (prompts/beats.txt, the default corpora) and a gate
    record; registration is the library's, in this process, and makes the commit itself.
    """
    from voicegate.spec._registration import register
    from voicegate.spec._spec import load_spec

    spec = base_spec(gate)
    spec["floor"] = {"rule": rule}
    spec["artifacts"] = {"record": f"gates/{gate}.md"}
    path = root / "preregistrations" / f"{gate}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    register(load_spec(root, gate))
    return path


def rows(root: Path, gate: str) -> list[dict[str, Any]]:
    path = root / "runs" / gate / "generations.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def manifest(root: Path, gate: str) -> dict[str, Any]:
    return json.loads((root / "runs" / gate / "run.json").read_text(encoding="utf-8"))


def tree_snapshot(root: Path) -> dict[str, bytes]:
    """Every file's bytes outside .git: proves a refused command wrote nothing."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}


# -- running the CLI -------------------------------------------------------------------


def voicegate(root: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 300,
              ) -> subprocess.CompletedProcess[str]:
    """Run the real CLI as a user would, in the workspace, in its own process."""
    # The autouse fixture in conftest.py has cleared the caller's VOICEGATE_* settings already.
    return subprocess.run([sys.executable, "-m", "voicegate", *args], cwd=root, check=False, capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=timeout)


class Result(NamedTuple):
    code: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _environment(changes: Mapping[str, str | None]) -> Iterator[None]:
    """os.environ with changes applied (None unsets a variable), restored afterwards."""
    saved = {k: os.environ.get(k) for k in changes}
    try:
        for k, v in changes.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, old in saved.items():
            if old is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = old


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else 1  # sys.exit("message") exits 1


def run_cli(*args: object, cwd: str | os.PathLike[str] | None = None,
            env: Mapping[str, str | None] | None = None) -> Result:
    """`voicegate ARGS...` in this process: (exit code, stdout, stderr). Paths and numbers become strings."""
    from voicegate.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(contextlib.chdir(Path(cwd)))
        stack.enter_context(_environment(env or {}))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        try:
            main([os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args])
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc)
    return Result(code, out.getvalue(), err.getvalue())
