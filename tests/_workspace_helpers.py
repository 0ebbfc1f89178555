"""Registered gate workspaces for the generate tests: a temp git repo, a spec, small corpora.

The corpora are a few KB written here (generation never reads them; registration
only hashes them), so these workspaces need nothing from ../shared.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

PROMPTS = ["Write about the moor at dusk.", "Write about a letter that came too late.",
           "Write about rain on the window."]
_HELD = "The moor lay grey beneath a sky of iron, and I walked alone, thinking of the cold house. " * 30
_TRAIN = "She said nothing; the wind said everything, and the heather bent as though it listened. " * 30
_BACK = "Mr. Pickwick laughed heartily at the notion, and the whole party went merrily to supper. " * 30


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


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True, env=env).stdout


def cli(root: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 300,
        drop_env: tuple[str, ...] = ("VOICEGATE_SEAT_URL", "VOICEGATE_DATA_DIR", "VOICEGATE_WORKSPACE"),
        ) -> subprocess.CompletedProcess[str]:
    """Run the real CLI as a user would, from the workspace."""
    full = {k: v for k, v in os.environ.items() if k not in drop_env}
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "voicegate", *args], cwd=root, check=False, capture_output=True,
                          text=True, env=full, timeout=timeout)


def registered_workspace(root: Path, spec: dict[str, Any], *, prompts: list[str] | None = None) -> Path:
    """Write every file the spec names, `git init`, and run `voicegate register` through the CLI."""
    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "t@t")
    _git(root, "config", "user.name", "t")
    files = {"prompts/beats.txt": "\n".join(prompts or PROMPTS) + "\n", "corpora/held/held.txt": _HELD,
             "corpora/train/train.txt": _TRAIN, "corpora/back/back.txt": _BACK,
             ".gitignore": "runs/\n"}
    if "damage" in spec:
        files["probes/general.yaml"] = yaml.safe_dump({"probes": [
            {"id": "p-capital", "prompt": "What is the capital of France? One word.", "check": {"regex": "(?i)paris"}},
            {"id": "p-short", "prompt": "Say hello in at most five words.", "check": {"max_words": 5}},
        ]}, sort_keys=False)
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    (root / "preregistrations").mkdir(exist_ok=True)
    (root / "gates").mkdir(exist_ok=True)
    (root / "preregistrations" / f"{spec['gate']}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False),
                                                                     encoding="utf-8")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "workspace")
    done = cli(root, "register", spec["gate"])
    if done.returncode != 0:
        raise RuntimeError(f"register failed: {done.stderr}")
    return root


def rows(root: Path, gate: str) -> list[dict[str, Any]]:
    path = root / "runs" / gate / "generations.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def manifest(root: Path, gate: str) -> dict[str, Any]:
    return json.loads((root / "runs" / gate / "run.json").read_text(encoding="utf-8"))
