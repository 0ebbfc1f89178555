"""The root package's use cases, as README's "From Python" shows them: the block runs as written."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

from helpers.workspace import gate_spec, git, make_workspace

import voicegate
from voicegate.seat import StandinSeat

REPO = Path(__file__).resolve().parents[2]
GATE = "lv-bronte"


def _readme_block() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## From Python", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert found is not None, "README's 'From Python' section has no python block"
    return found.group(1)


def test_the_root_package_exports_the_use_cases() -> None:
    for name in ("register", "generate", "score", "amend", "ship", "note", "calibrate", "verify"):
        assert name in voicegate.__all__ and callable(getattr(voicegate, name)), name


def test_generate_stays_the_use_case_once_its_subpackage_is_imported() -> None:
    # Importing `voicegate.generate` binds the root's `generate` to the subpackage: it must be the use case.
    import voicegate.generate as package

    assert voicegate.generate is package and callable(voicegate.generate)
    assert list(inspect.signature(voicegate.generate).parameters)[:2] == ["root", "gate"]


def test_the_readme_block_runs_a_gate_end_to_end(tmp_path) -> None:
    with ExitStack() as stack:
        seat = stack.enter_context(StandinSeat(adapters={f"{GATE}-ckpt475": f"/adapters/{GATE}/ckpt475"},
                                               token_time=0.0005))
        root = tmp_path / "my-workspace"
        make_workspace(root, gate_spec(GATE, url=seat.url, concurrency=4))
        (root / ".gitignore").write_text("runs/\n", encoding="utf-8")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "workspace")
        script = tmp_path / "from_python.py"
        script.write_text(_readme_block(), encoding="utf-8")
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                              timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "pairwise-max-spread"
    record = (root / "gates" / f"{GATE}.md").read_text(encoding="utf-8")
    assert "checked by hand; no defect found" in record and "additive, reversible and safety-clean" in record
