"""Test workspaces and the two ways the tests run the CLI — the one place for both.

Workspaces
    `make_workspace(root, spec)` writes a gate workspace with every file the
    spec names (prompts, small corpora, probes when the spec has them), a git
    repository, and the spec; `registered_workspace(root, spec)` also commits
    it and runs `voicegate register` (in this process). The corpora are a few KB written here, so
    nothing needs ../shared. `base_spec` (every section, all three artifacts)
    and `gate_spec` (a seat-facing spec for the generate tests) are the specs.

Constructed corpora (the scoring tests)
    `scoring_workspace(root)` is a registered workspace over small constructed
    corpora: random words from a fixed vocabulary (`VOCAB`), seeded, so no two
    texts share an 8-gram by chance, in three word "styles" (`text(n, seed,
    style)`): the held-out author writes style 0, the background 1 and 2.
    `constructed_spec` is its spec, `voice_rows` / `write_rows` its generations,
    `score` scores it in this process. `impostor_workspace(root, impostor_spec(...))`
    adds impostor corpora (the specificity tests). `warm_workspace` is a
    registered `base_spec` gate with imported generations.

Running the CLI
    `run_cli(*args, cwd=root)` runs `voicegate.cli.main` in this process: a
    monkeypatched seam applies and no interpreter starts. `voicegate(root,
    *args)` runs `python -m voicegate` as a user would, in a subprocess: kept for
    what needs a real process (a kill, a signal, two commands at once, an
    import guard) and for one smoke test per command; `cli(root, *args)` gives
    the same answer (returncode, stdout, stderr) from a run in this process.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
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


def git(root: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    """git in `root` as a test identity; `env` adds variables (a backdated commit's dates)."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", **(env or {})}
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
    """make_workspace, committed, then `voicegate register` through the CLI, in this process; returns root."""
    make_workspace(root, spec, prompts=prompts or PROMPTS)
    (root / ".gitignore").write_text("runs/\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "workspace")
    done = run_cli("register", spec["gate"], cwd=root)
    if done.code != 0:
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


class Templates:
    """Workspaces built once (a module-scoped fixture holds one `Templates`) and copied per test.

    `copy(name, build, dest)` runs `build(path)` the first time `name` is asked for, then copies
    the built tree (its .git too) to `dest`: a test gets its own workspace for the cost of a copy.
    """

    def __init__(self, where: Path) -> None:
        self.where = where
        self.built: set[str] = set()

    def copy(self, name: str, build: Callable[[Path], object], dest: Path) -> Path:
        src = self.where / name
        if name not in self.built:
            build(src)
            self.built.add(name)
        shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True)
        return dest


def copy_workspace(template: Path, root: Path) -> Path:
    """A test's own copy of a workspace a module built once (its git history with it); returns root."""
    shutil.copytree(template, root, symlinks=True)
    return root


def rows(root: Path, gate: str) -> list[dict[str, Any]]:
    path = root / "runs" / gate / "generations.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def manifest(root: Path, gate: str) -> dict[str, Any]:
    return json.loads((root / "runs" / gate / "run.json").read_text(encoding="utf-8"))


def tree_snapshot(root: Path) -> dict[str, bytes]:
    """Every file's bytes outside .git: proves a refused command wrote nothing."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}


# -- constructed corpora (the scoring workspaces) ----------------------------------------

VOCAB = [f"w{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}" for i in range(400)] + \
    ["the", "and", "of", "to", "a", "in", "was", "she", "he", "it", "her", "his", "that", "had", "not"] * 6
GATE = "lv-test"
SEEDS = [101, 202]
N_PROMPTS = 6

# Three "styles": each favours a different third of the vocabulary, so the
# held-out author (style 0) and the background authors (1, 2) differ the way
# real authors differ: in the rates of the same common words.
STYLES = {s: [3.0 if i % 3 == s else 1.0 for i in range(len(VOCAB))] for s in range(3)}


def words(n: int, seed: int | str, style: int | None = None) -> list[str]:
    rng = random.Random(seed)
    if style is None:
        return [rng.choice(VOCAB) for _ in range(n)]
    return rng.choices(VOCAB, weights=STYLES[style], k=n)


def text(n: int, seed: int | str, style: int | None = None) -> str:
    return " ".join(words(n, seed, style))


TRAIN_WORDS = words(6000, "train")  # the constructed training text, word by word


def constructed_spec(*, voice: dict | None = None, arms: tuple[str, ...] = ("cand", "other"),
                     extra: dict | None = None) -> dict[str, Any]:
    """The spec over the constructed corpora: base plus `arms` as candidates (models lv-test-<arm>)."""
    return {
        "gate": GATE, "author": "Test Author",
        "seat": {"url": "http://127.0.0.1:9/v1", "base_model": "base"},
        "arms": [{"name": "base", "model": "base", "role": "base"},
                 *({"name": a, "model": f"lv-test-{a}", "role": "candidate"} for a in arms)],
        "prompts": [f"prompt {i}" for i in range(N_PROMPTS)],
        "seeds": SEEDS,
        "sampling": {"temperature": 0.8, "top_p": 0.95, "max_tokens": 400},
        "corpora": {"heldout": ["corpora/held/*.txt"], "training": ["corpora/train/*.txt"],
                    "background": ["corpora/bg/*.txt"]},
        "voice": voice or {"view": "stylometric", "mfw": 100, "chunk": 500},
        "copying": {"n": 8, "tolerance": 0.005, "max_run": 50},
        "floor": {"rule": "pairwise-max-spread"},
        "artifacts": {"record": f"gates/{GATE}.md"},
        "expected_words": 120,
        **(extra or {}),
    }


def scoring_workspace(root: Path, *, probes: list[dict] | None = None, voice: dict | None = None,
                      extra: dict | None = None) -> Path:
    """A registered workspace under `root` (no generations yet) over the constructed corpora; returns root."""
    from voicegate.spec._registration import register
    from voicegate.spec._spec import load_spec

    spec = constructed_spec(voice=voice, extra=extra)
    corpora = {"corpora/held/held.txt": text(3000, "held", 0), "corpora/train/train.txt": " ".join(TRAIN_WORDS),
               "corpora/bg/bg1.txt": text(3000, "bg1", 1), "corpora/bg/bg2.txt": text(3000, "bg2", 2)}
    if probes is not None:
        corpora["probes.yaml"] = yaml.safe_dump({"probes": probes})
        spec["damage"] = {"probes": "probes.yaml", "tolerance": 0.05}
    make_workspace(root, spec, corpora=corpora)
    register(load_spec(root, GATE))
    return root


def voice_rows(texts: dict[str, Any], finish: dict[str, str] | None = None) -> list[dict]:
    """texts: arm -> callable(seed, prompt_index) -> text."""
    rows = []
    for name, make in texts.items():
        for seed in SEEDS:
            for p in range(N_PROMPTS):
                rows.append({"kind": "voice", "arm": name, "model": name, "seed": seed, "prompt_id": str(p),
                             "text": make(seed, p), "finish_reason": (finish or {}).get(name, "stop")})
    return rows


def write_rows(root: Path, rows: list[dict]) -> None:
    from voicegate.run._store import append_rows

    append_rows(root / "runs" / GATE / "generations.jsonl", rows)


def rules_of_gate(root: Path, gate: str) -> tuple[str, ...]:
    """The rules a registered gate computes, from `RULES`: those in force on its registration date
    (`rules_in_force`) and its deciding one, in the registry's order. What a test means by "every rule of
    the gate", so a rule added to the registry changes no test but the ones about it."""
    import datetime as dt

    from voicegate.spec import RULES, rules_in_force

    record = json.loads((root / "preregistrations" / f"{gate}.registration.json").read_text(encoding="utf-8"))
    in_force = set(rules_in_force(dt.date.fromisoformat(record["registered_at"][:10]))) | {record["deciding_rule"]}
    return tuple(r for r in RULES if r in in_force)


def arm(result: dict, name: str) -> dict:
    return next(a for a in result["arms"] if a["name"] == name)


def unrelated(tag: str) -> Any:
    return lambda seed, p: text(160, f"{tag}/{seed}/{p}")


def author_like(tag: str) -> Any:  # the held-out author's style
    return lambda seed, p: " ".join(words(160, f"{tag}/{seed}/{p}", 0))


def carrier_like(tag: str) -> Any:  # a background author's style: far from the author
    return lambda seed, p: " ".join(words(160, f"{tag}/{seed}/{p}", 1))


def copier(seed: int, p: int) -> str:
    return " ".join(TRAIN_WORDS[200 * p + seed % 7: 200 * p + seed % 7 + 120])


def score(root: Path, rows: list[dict], **kw: Any) -> dict:
    """score_gate on the constructed workspace, in this process: the §6 JSON contract."""
    from voicegate.scoring import score_gate
    from voicegate.spec._registration import check_registered
    from voicegate.spec._spec import load_spec

    spec = load_spec(root, GATE)
    check_registered(spec)
    return score_gate(spec, rows, cache_dir=root / "runs" / ".cache", **kw).to_json()


def result_json(data: dict) -> str:
    """The JSON bytes, through one from_json/to_json round trip (which must not change them)."""
    from voicegate.scoring import GateResult, result_text

    return result_text(GateResult.from_json(data))


# Impostors (the specificity tests): the gate author writes style 0, the impostor style 1, the
# background style 2 (and so does the second impostor, imp2).
IMPOSTOR_COMPOSE = """services:
  vllm:
    command:
      - --lora-modules
      - lv-test=/adapters/lv-test
"""
IMPOSTOR_CORPORA = {
    "corpora/held/held.txt": text(3000, "held", 0), "corpora/train/train.txt": " ".join(TRAIN_WORDS),
    "corpora/bg/bg1.txt": text(3000, "bg1", 2), "corpora/imp/imp.txt": text(3000, "imp", 1),
    "corpora/imp2/imp2.txt": text(3000, "imp2", 2), "deploy/compose.yaml": IMPOSTOR_COMPOSE,
    "corpora/back/back.txt": BACK}  # what a prospective registration's spec names (base_spec)


def impostor_spec(impostors: dict[str, list[str]] | None, specificity_mode: str = "decides") -> dict[str, Any]:
    """`constructed_spec` with arms cand and mimic, all three artifacts, and `impostors` (author -> globs)."""
    spec = constructed_spec(voice={"view": "stylometric", "mfw": 100, "chunk": 500, "specificity": specificity_mode},
                            arms=("cand", "mimic"),
                            extra={"artifacts": {"record": f"gates/{GATE}.md", "readme": "adapters/lv-test/README.md",
                                                 "compose": "deploy/compose.yaml"}})
    if impostors is not None:
        spec["corpora"]["impostors"] = impostors
    return spec


def impostor_workspace(root: Path, spec: dict[str, Any]) -> Path:
    """A committed, unregistered workspace over `IMPOSTOR_CORPORA`; returns root."""
    make_workspace(root, spec, corpora=IMPOSTOR_CORPORA)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "workspace")
    return root


def ruler_scored(root: Path, *, training_style: int, impostors: dict[str, list[str]] | None, day: str,
                 background: tuple[int, ...] = (2,), seeds: list[int] | None = None,
                 words: int = 40_000) -> tuple[dict[str, Any], str]:
    """A gate on constructed corpora, registered, imported and scored on `day` (SOURCE_DATE_EPOCH): the author
    writes style 0, the impostor 'imp' style 1, 'twin' style 0 (the author's own: the ruler cannot tell them),
    the background `background`'s styles, the training text `training_style`. Returns (scores.json, its text)."""
    seeds = SEEDS if seeds is None else seeds
    spec = impostor_spec(impostors)
    spec["seeds"] = seeds
    corpora = {"corpora/held/held.txt": text(3000, "held", 0),
               "corpora/train/train.txt": text(words, "train", training_style),
               **{f"corpora/bg/bg{i}.txt": text(words, f"bg{i}", style) for i, style in enumerate(background, 1)},
               "corpora/imp/imp.txt": text(words, "imp", 1),
               "corpora/twin/twin.txt": text(words, "twin", 0),
               "deploy/compose.yaml": IMPOSTOR_COMPOSE}
    make_workspace(root, spec, corpora=corpora)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "workspace")
    style = {"base": None, "cand": 0, "mimic": 1}
    rows = [{"arm": arm, "seed": s, "prompt_id": str(p), "text": text(160, f"{arm}/{s}/{p}", st)}
            for arm, st in style.items() for s in seeds for p in range(N_PROMPTS)]
    source = root / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for args in (("register", GATE), ("import", GATE, str(source)), ("score", GATE)):
        done = run_cli(*args, "-C", root, env={"SOURCE_DATE_EPOCH": day})
        assert done.code == 0, done.stderr
    scores = (root / "runs" / GATE / "scores.json").read_text(encoding="utf-8")
    return json.loads(scores), scores


def warm_workspace(tmp_path: Path, gate: str) -> Path:
    """A registered stylometric gate (`register` through the CLI) with imported generations."""
    from voicegate.spec._spec import load_spec

    root = registered_workspace(tmp_path / "ws", base_spec(gate))
    ids = [p.id for p in load_spec(root, gate).prompts]
    rows = [{"arm": name, "model": model, "seed": seed, "prompt_id": str(p), "text": f"{name} {seed} {p} the moor",
             "finish_reason": "stop"}
            for name, model in (("base", "voices-base"), ("ckpt475", f"{gate}-ckpt475"),
                                ("ckpt925", f"{gate}-ckpt925"))
            for seed in (101, 202) for p in ids]
    source = tmp_path / "g.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert run_cli("import", gate, str(source), cwd=root).code == 0
    return root


# -- running the CLI -------------------------------------------------------------------


def voicegate(root: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 300,
              ) -> subprocess.CompletedProcess[str]:
    """Run the real CLI as a user would, in the workspace, in its own process."""
    # The autouse fixture in conftest.py has cleared the caller's VOICEGATE_* settings already.
    return subprocess.run([sys.executable, "-m", "voicegate", *args], cwd=root, check=False, capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=timeout)


def cli(root: Path, *args: str, env: Mapping[str, str | None] | None = None, timeout: float | None = None,
        ) -> subprocess.CompletedProcess[str]:
    """`voicegate(root, ...)`'s answer (returncode, stdout, stderr) from a run in this process (`run_cli` in
    `root`): for the tests where a real process is not the subject. `timeout` is accepted and unused."""
    done = run_cli(*args, cwd=root, env=env)
    return subprocess.CompletedProcess(["voicegate", *args], done.code, done.stdout, done.stderr)


def vg(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`voicegate ARGS -C root` in its own process."""
    return voicegate(root, *args, "-C", str(root))


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


def vg_in(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`vg`'s answer (`voicegate ARGS -C root`) from a run in this process."""
    return cli(root, *args, "-C", str(root))
