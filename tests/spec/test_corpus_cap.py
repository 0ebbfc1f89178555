"""A corpus file over the cap is refused before it is read (exit 2, one line, quickly).

A 1 GB held-out file once registered after 149 s at 13.7 GB peak memory. The cap
(`corpora.max_file_mb`, default 32 MiB, documented in docs/reference.md) is checked
from the file's size alone, so a 1 GiB file is refused in well under a second without
being read; a spec raises the cap to register a genuinely larger corpus.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import yaml
from helpers.workspace import HELD, base_spec, cli, git, make_workspace


def _workspace(root: Path, held_bytes: int | None = None, *, sparse: int | None = None,
               cap_mb: float | None = None) -> Path:
    spec = base_spec("lv-cap")
    spec["artifacts"] = {"record": "gates/lv-cap.md"}
    if cap_mb is not None:
        spec["corpora"]["max_file_mb"] = cap_mb
    make_workspace(root, spec)
    held = root / "corpora/held/held.txt"
    if held_bytes is not None:
        unit = (HELD.strip() + "\n").encode()
        held.write_bytes((unit * (held_bytes // len(unit) + 1))[:held_bytes])
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "ws")
    if sparse is not None:  # a file of `sparse` bytes that takes no disk (nor git's time): refused from its size
        with open(root / "corpora/held/huge.txt", "wb") as fh:
            fh.truncate(sparse)
    return root


def test_the_default_cap_is_documented() -> None:
    from voicegate.spec._schema import CORPUS_CAP_MB

    reference = (Path(__file__).resolve().parents[2] / "docs" / "reference.md").read_text(encoding="utf-8")
    assert f"| `corpora.max_file_mb` | no | number of MiB > 0 | `{CORPUS_CAP_MB:g}` |" in reference


def test_a_1_gib_held_out_file_is_refused_quickly_without_being_read(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", sparse=2**30)
    # A fresh parent, so the peak memory read is that of `register` alone.
    probe = ("import resource, subprocess, sys\n"
             "done = subprocess.run([sys.executable, '-m', 'voicegate', 'register', 'lv-cap'], check=False,"
             " capture_output=True, text=True)\n"
             "sys.stderr.write(done.stderr)\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
             "sys.exit(done.returncode)\n")
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-c", probe], check=False, cwd=root, capture_output=True, text=True,
                          env=os.environ, timeout=60)
    took = time.monotonic() - t0
    peak_kib = int(done.stdout.split()[-1])
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert "corpora.heldout:" in line and "huge.txt is 1,024.0 MiB, over the corpus cap of 32 MiB per file" in line
    assert "corpora.max_file_mb" in line and "Traceback" not in done.stderr
    assert took < 15, took
    assert peak_kib < 512 * 1024, peak_kib  # the file (1 GiB) was never read into memory
    assert not (root / "preregistrations" / "lv-cap.registration.json").exists()


def test_a_small_cap_refuses_and_raising_it_registers(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", held_bytes=300_000, cap_mb=0.25)
    done = cli(root, "register", "lv-cap")
    assert done.returncode == 2
    assert "held.txt is 0.3 MiB, over the corpus cap of 0.25 MiB per file" in done.stderr
    spec_path = root / "preregistrations" / "lv-cap.yaml"
    spec = yaml.safe_load(spec_path.read_text())
    spec["corpora"]["max_file_mb"] = 0.5
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    git(root, "commit", "-q", "-am", "a larger cap")
    done = cli(root, "register", "lv-cap")
    assert done.returncode == 0, done.stderr


def test_the_cap_itself_is_checked(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", cap_mb=0)
    done = cli(root, "register", "lv-cap")
    assert done.returncode == 2 and "corpora.max_file_mb" in done.stderr


def test_a_corpus_set_over_8_times_the_file_cap_is_refused_though_each_file_is_under_it(tmp_path: Path) -> None:
    """Nine files of 9 KiB each under a 10 KiB cap: every file passes, the set (81 KiB > 8 x 10 KiB) does not."""
    root = _workspace(tmp_path / "ws", cap_mb=10 / 1024)
    unit = (HELD.strip() + "\n").encode()
    for i in range(9):
        (root / f"corpora/held/part{i}.txt").write_bytes((unit * 100)[:9 * 1024])
    (root / "corpora/held/held.txt").unlink()
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "parts")
    out = cli(root, "register", "lv-cap")
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert ("corpora.heldout: its files total over 0.1 MiB (9 files so far), over the corpus set cap of "
            "8 x 0.00976562 MiB") in out.stderr, out.stderr
