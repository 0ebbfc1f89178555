"""Build small, valid gate workspaces for tests: a git repo, a spec, prompts, corpora."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

HELD = ("The moor lay grey beneath a sky of iron, and I walked alone, "
        "thinking of the cold house and of him. ") * 40
TRAIN = ("She said nothing; the wind said everything, and the heather bent "
         "as though it listened to a voice I could not hear. ") * 40
BACK = ("Mr. Pickwick laughed heartily at the notion, and the whole party "
        "went merrily down to supper in the best of humours. ") * 40


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


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True, env=env).stdout


def make_workspace(root: Path, spec: dict[str, Any] | None = None, *, git_init: bool = True) -> Path:
    """Write a workspace with every file the default spec names; returns the spec path."""
    spec = spec if spec is not None else base_spec()
    root.mkdir(parents=True, exist_ok=True)
    if git_init:
        git(root, "init", "-q")
        git(root, "config", "user.email", "t@t")
        git(root, "config", "user.name", "t")
    for rel, text in {"prompts/beats.txt": "Write about the moor.\n\nWrite about a letter.\nWrite about rain.\n",
                      "corpora/held/held.txt": HELD, "corpora/train/train.txt": TRAIN,
                      "corpora/back/back.txt": BACK}.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    (root / "preregistrations").mkdir(exist_ok=True)
    (root / "gates").mkdir(exist_ok=True)
    path = root / "preregistrations" / f"{spec.get('gate', 'lv-test')}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def voicegate(root: Path, *args: str, env: dict[str, str] | None = None,
              timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the real CLI as a user would, in the workspace."""
    return subprocess.run([sys.executable, "-m", "voicegate", *args], cwd=root, check=False, capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=timeout)


def tree_snapshot(root: Path) -> dict[str, bytes]:
    """Every file's bytes outside .git: proves a refused command wrote nothing."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}
