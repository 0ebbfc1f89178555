"""`seat check --vllm-python`: a venv's registry answer is kept, and asked again only when the venv changed.

The venv's python is a fake: a script that answers vLLM's probe from a version file of its own site-packages
(and records each time it was asked) and runs voicegate's locating code as a real python would, on those
site-packages. So "vLLM imported" is a line in a file, and a reinstall is a file rewritten.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.workspace import run_cli

PROBED = "2026-12-07T20:00:00Z"
EPOCH = "1796673600"          # PROBED as SOURCE_DATE_EPOCH
DAMAGE = "probed again: local damage to this machine's cache, not the venv's"

FAKE = """#!{python}
import json, os, sys, time
site = {site!r}
sys.path.insert(0, site)
code = sys.argv[2]
if "import vllm" in code:
    with open({count!r}, "a") as f:
        f.write("probe\\n")
    time.sleep(float(os.environ.get("FAKE_VLLM_SECONDS", "0")))
    version = open(os.path.join(site, "vllm", "version.py")).read().split('"')[1]
    archs = json.loads(sys.argv[3])
    print("VOICEGATE-PROBE " + json.dumps({{"version": version, "archs": {{a: True for a in archs}}}}))
else:
    sys.argv = ["-c", *sys.argv[3:]]
    exec(compile(code, "<string>", "exec"), {{"__name__": "__main__"}})
"""


class Venv:
    def __init__(self, root: Path) -> None:
        self.site = root / "venv" / "lib" / "site-packages"
        self.python = root / "venv" / "bin" / "python"
        self.count = root / "probes.log"
        for package in ("vllm", "torch"):
            (self.site / package).mkdir(parents=True)
            (self.site / package / "__init__.py").write_text("", encoding="utf-8")
        self.write("vllm/version.py", '__version__ = "0.32.0"\n')
        self.write("torch/version.py", '__version__ = "2.13.0"\n')
        self.python.parent.mkdir(parents=True)
        self.python.write_text(FAKE.format(python=sys.executable, site=str(self.site), count=str(self.count)),
                               encoding="utf-8")
        self.python.chmod(0o755)

    def write(self, rel: str, text: str) -> None:
        (self.site / rel).write_text(text, encoding="utf-8")

    @property
    def probes(self) -> int:
        return len(self.count.read_text(encoding="utf-8").splitlines()) if self.count.exists() else 0


@pytest.fixture
def venv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Venv:
    monkeypatch.setenv("VOICEGATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    return Venv(tmp_path)


@pytest.fixture
def carrier(tmp_path: Path) -> Path:
    d = tmp_path / "carrier"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"architectures": ["Qwen3ForCausalLM"]}), encoding="utf-8")
    (d / "model.safetensors").write_bytes(b"\0" * 1000)
    return d


def check(carrier: Path, venv: Venv) -> tuple[int, str, str]:
    return run_cli("seat", "check", "--model", carrier, "--vllm-python", venv.python, "--adapter-size", "1M")


def source_line(out: str) -> str:
    return next(ln for ln in out.splitlines() if ln.startswith("  Qwen3ForCausalLM:"))


def fresh(venv: Venv, version: str = "0.32.0") -> str:
    return f"  Qwen3ForCausalLM: LoRA supported — vllm {version} registry ({venv.python})"


def cached(venv: Venv, version: str = "0.32.0") -> str:
    return f"  Qwen3ForCausalLM: LoRA supported — vllm {version} registry ({venv.python}; cached, probed {PROBED})"


def test_the_second_check_does_not_import_vllm_and_says_the_answer_is_cached(venv, carrier, tmp_path):
    code, out, err = check(carrier, venv)
    assert (code, err, source_line(out), venv.probes) == (0, "", fresh(venv), 1)
    assert (tmp_path / "cache" / "vllm-registry.json").is_file()   # beside the carrier caches
    code, out, err = check(carrier, venv)
    assert (code, err, source_line(out), venv.probes) == (0, "", cached(venv), 1)
    assert "warning:" not in out
    code, out, _ = run_cli("seat", "check", "--model", carrier, "--vllm-python", venv.python, "--json")
    assert json.loads(out)["support"][0]["source"] == f"vllm 0.32.0 registry ({venv.python}; cached, probed {PROBED})"
    assert venv.probes == 1


def _rewrite_keeping_mtime(path: Path) -> None:
    # The same bytes, the mtime put back: only the ctime tells a reinstall from nothing.
    st = path.stat()
    path.write_bytes(path.read_bytes())
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize("change", ["upgrade vllm", "reinstall vllm", "reinstall torch", "replace the interpreter"])
def test_a_changed_venv_is_asked_again(venv, carrier, change):
    assert source_line(check(carrier, venv)[1]) == fresh(venv)
    assert source_line(check(carrier, venv)[1]) == cached(venv)
    version = "0.32.0"
    if change == "upgrade vllm":
        version = "0.33.1"
        venv.write("vllm/version.py", f'__version__ = "{version}"\n')
    elif change == "reinstall vllm":
        _rewrite_keeping_mtime(venv.site / "vllm" / "__init__.py")
    elif change == "reinstall torch":
        _rewrite_keeping_mtime(venv.site / "torch" / "version.py")
    else:
        _rewrite_keeping_mtime(venv.python)
    assert (source_line(check(carrier, venv)[1]), venv.probes) == (fresh(venv, version), 2)
    assert (source_line(check(carrier, venv)[1]), venv.probes) == (cached(venv, version), 2)


def _flip_an_answer(cache: Path) -> None:
    data = json.loads(cache.read_text(encoding="utf-8"))
    (entry,) = data.values()
    entry["answers"]["Qwen3ForCausalLM"] = False     # a hand edit that would make the check exit 1
    cache.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize(("damage", "what"), [
    ("a hand-edited answer", "a damaged entry"),
    ("an entry under another key", "a damaged entry"),
    ("bytes that are not UTF-8", "unreadable"),
    ("a torn file", "unreadable"),
    ("a list", "unreadable"),
])
def test_a_damaged_cache_is_said_in_one_line_and_rebuilt(venv, carrier, tmp_path, damage, what):
    cache = tmp_path / "cache" / "vllm-registry.json"
    assert check(carrier, venv)[0] == 0 and cache.is_file()
    if damage == "a hand-edited answer":
        _flip_an_answer(cache)
    elif damage == "an entry under another key":
        # another venv's entry moved under this one's key: sealed over its own key, so not this venv's answer
        (key,) = json.loads(cache.read_text(encoding="utf-8"))
        assert check(carrier, Venv(tmp_path / "other"))[0] == 0
        data = json.loads(cache.read_text(encoding="utf-8"))
        (other_key,) = set(data) - {key}
        data[key] = data[other_key]
        cache.write_text(json.dumps(data), encoding="utf-8")
    elif damage == "bytes that are not UTF-8":
        cache.write_bytes(b"\xff\xfe{" + cache.read_bytes())
    elif damage == "a torn file":
        cache.write_bytes(cache.read_bytes()[:40])
    else:
        cache.write_text("[]", encoding="utf-8")
    before = venv.probes
    code, out, err = check(carrier, venv)
    warnings = [ln for ln in out.splitlines() if ln.startswith("warning: ")]
    assert (code, err, venv.probes, source_line(out)) == (0, "", before + 1, fresh(venv))
    assert warnings == [f"warning: {cache}: {what}, {DAMAGE}"]
    # rebuilt: the next check is answered from the cache again, and says nothing of damage
    code, out, _ = check(carrier, venv)
    assert (code, venv.probes, source_line(out)) == (0, before + 1, cached(venv))
    assert "warning:" not in out


def test_two_checks_at_once_import_vllm_once_and_leave_one_sound_cache(venv, carrier, tmp_path):
    env = {**os.environ, "FAKE_VLLM_SECONDS": "1.5",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])}
    args = [sys.executable, "-m", "voicegate", "seat", "check", "--model", str(carrier), "--vllm-python",
            str(venv.python), "--adapter-size", "1M"]
    runs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for _ in range(2)]
    done = [(p.wait(timeout=120), p.stdout.read() if p.stdout else "") for p in runs]
    assert [code for code, _ in done] == [0, 0]
    assert sorted(source_line(out) for _, out in done) == sorted([fresh(venv), cached(venv)])
    assert venv.probes == 1
    data = json.loads((tmp_path / "cache" / "vllm-registry.json").read_text(encoding="utf-8"))
    assert [e["answers"] for e in data.values()] == [{"Qwen3ForCausalLM": True}]


def test_the_cache_is_kept_in_the_home_cache_folder_by_default(venv, carrier, tmp_path, monkeypatch):
    monkeypatch.delenv("VOICEGATE_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert source_line(check(carrier, venv)[1]) == fresh(venv)
    assert source_line(check(carrier, venv)[1]) == cached(venv)
    assert (tmp_path / "home" / ".cache" / "voicegate" / "vllm-registry.json").is_file()
    assert not (tmp_path / "cache").exists()
