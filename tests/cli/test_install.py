"""The README's first command, as written, in a fresh virtualenv made from the system python: the core installs
without torch, and the demo runs.

`pip install -e . && voicegate demo` once pulled a CUDA torch build (5.9 GB, 5 min) for a demo that
never imports torch; sentence-transformers is now the `[embedding]` extra. A stock Debian or Ubuntu python
refuses `pip install` outside a virtualenv, so the README's block makes one first: this test runs that block
verbatim with bash in the clone, `python3` being the system's (/usr/bin/python3 where there is one, else this
interpreter) and HOME a folder of the test's own (the virtualenv goes under it), then checks that the demo
completed and that neither torch nor sentence-transformers came along. It needs a package index; without one
it skips, saying so.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

SYSTEM_PYTHON = Path("/usr/bin/python3")


def readme_command_1() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Set up\n.*?```bash\n(?P<cmd>.*?)```", readme, re.DOTALL)
    assert block is not None, "README's Set up section has no bash block"
    return block["cmd"]


def test_the_readme_first_command_makes_a_venv_installs_no_torch_and_runs_the_demo(tmp_path: Path) -> None:
    command = readme_command_1()
    assert "python3 -m venv" in command and "pip install -e ." in command and "voicegate demo" in command
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    base = SYSTEM_PYTHON if SYSTEM_PYTHON.is_file() else Path(sys.executable)
    (bin_dir / "python3").symlink_to(base)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", TMPDIR=str(tmp_path))
    done = subprocess.run(["bash", "-e", "-c", command], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=1800, check=False)
    if done.returncode != 0:
        if any(s in done.stderr for s in ("No matching distribution", "Could not find a version",
                                          "NewConnectionError", "Network is unreachable")):
            pytest.skip(f"no package registry reachable: {done.stderr.strip().splitlines()[-1]}")
        if "ensurepip is not available" in done.stdout + done.stderr:
            pytest.skip(f"{base} has no venv module (apt install python3-venv): the README says so")
        pytest.fail(done.stdout[-3000:] + done.stderr[-3000:])
    assert "every chain holds" in done.stdout
    assert "ships under pairwise-max-spread: ckpt475 (under global-max-spread: none)" in done.stdout
    python = home / ".venvs" / "voicegate" / "bin" / "python"
    assert python.is_file(), "the README's virtualenv is not where its command says"
    for heavy in ("torch", "sentence_transformers"):
        probe = subprocess.run([str(python), "-c", f"import {heavy}"], capture_output=True, text=True, check=False)
        assert probe.returncode != 0 and "ModuleNotFoundError" in probe.stderr, f"{heavy} came with the core install"


def test_a_python_too_old_is_told_so_in_one_line() -> None:
    """Under 3.11 the package's modules would fail in a traceback: `import voicegate` says so in one line first."""
    fake = ("import sys; sys.version_info = (3, 10, 12, 'final', 0); sys.version = '3.10.12 (main)'; "
            "import voicegate")
    done = subprocess.run([sys.executable, "-c", fake], capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (f"voicegate: needs Python 3.11 or newer, and {sys.executable} is 3.10.12: make the "
                           "virtualenv with a newer python (README, Set up)\n")
