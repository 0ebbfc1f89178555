"""The gate spec: `preregistrations/<gate>.yaml`, loaded and validated completely.

Validation runs before anything touches the seat or a file: every problem is a
`VoicegateError` whose one line names the file, the key and what is wrong. An
unknown key is an error, because a typo that silently became a default would
change what was registered.
"""

from __future__ import annotations

import glob
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from voicegate._errors import VoicegateError
from voicegate.run._rundir import RunDir
from voicegate.spec._rules import RULES

DEFAULT_NAME_PATTERN = r"lv-[a-z0-9-]+"
NAME_PATTERN_ENV = "VOICEGATE_NAME_PATTERN"

ROLES = ("base", "candidate")
VIEWS = ("stylometric", "embedding")
CHECK_TYPES = ("exact", "regex", "refuse", "max_words", "json")


def name_pattern() -> str:
    return os.environ.get(NAME_PATTERN_ENV, DEFAULT_NAME_PATTERN)


def check_gate_name(name: str) -> str:
    """Refuse a name before it becomes part of any path."""
    pattern = name_pattern()
    if not re.fullmatch(pattern, name) or "/" in name or ".." in name:
        raise VoicegateError(f"bad adapter name {name!r}: must match {pattern}")
    return name


@dataclass(frozen=True)
class Arm:
    name: str
    model: str
    role: str
    adapter_path: str | None = None

    @property
    def is_base(self) -> bool:
        return self.role == "base"


@dataclass(frozen=True)
class Prompt:
    id: str
    text: str


@dataclass(frozen=True)
class Probe:
    id: str
    prompt: str
    check: dict[str, Any]


@dataclass(frozen=True)
class Seat:
    url: str
    base_model: str
    api_key_env: str | None = None
    concurrency: int = 8
    timeout: float = 120.0


@dataclass(frozen=True)
class Sampling:
    temperature: float
    top_p: float
    max_tokens: int

    def as_dict(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens}


@dataclass(frozen=True)
class Corpora:
    heldout: tuple[Path, ...]
    training: tuple[Path, ...]
    background: tuple[Path, ...]


@dataclass(frozen=True)
class Voice:
    view: str = "stylometric"
    mfw: int = 1000
    chunk: int = 2500
    model: str | None = None
    revision: str | None = None


@dataclass(frozen=True)
class Copying:
    n: int = 8
    tolerance: float = 0.005
    max_run: int = 50


@dataclass(frozen=True)
class Damage:
    probes_path: Path | None = None
    probes: tuple[Probe, ...] = ()
    tolerance: float = 0.05
    truncation_decides: bool = False


@dataclass(frozen=True)
class Artifacts:
    record: Path
    readme: Path | None
    compose: Path | None


@dataclass(frozen=True)
class GateSpec:
    path: Path
    root: Path
    raw: dict[str, Any]
    gate: str
    author: str
    seat: Seat
    arms: tuple[Arm, ...]
    prompts: tuple[Prompt, ...]
    prompts_path: Path | None
    seeds: tuple[int, ...]
    sampling: Sampling
    corpora: Corpora
    voice: Voice
    copying: Copying
    damage: Damage
    floor_rule: str
    artifacts: Artifacts
    data_dir: Path
    prefer: tuple[str, ...] = ()
    expected_words: int = 250
    order_seed: int = 0
    embedding_files: tuple[Path, ...] = field(default=())

    @property
    def base(self) -> Arm:
        return next(a for a in self.arms if a.is_base)

    @property
    def candidates(self) -> tuple[Arm, ...]:
        return tuple(a for a in self.arms if not a.is_base)

    def arm(self, name: str) -> Arm:
        for a in self.arms:
            if a.name == name:
                return a
        raise VoicegateError(f"{self.gate}: no arm named {name!r} (arms: {', '.join(a.name for a in self.arms)})")

    @property
    def run(self) -> RunDir:
        """The gate's run directory; it names every file voicegate keeps there."""
        return RunDir(self.data_dir / self.gate, self.data_dir)

    @property
    def run_dir(self) -> Path:
        return self.run.path

    @property
    def generations_path(self) -> Path:
        return self.run.generations

    def referenced_files(self) -> list[Path]:
        """Every file whose bytes the registration hashes, in a stable order."""
        files: list[Path] = []
        if self.prompts_path is not None:
            files.append(self.prompts_path)
        files += [*self.corpora.heldout, *self.corpora.training, *self.corpora.background]
        if self.damage.probes_path is not None:
            files.append(self.damage.probes_path)
        files += list(self.embedding_files)
        seen: set[Path] = set()
        return [f for f in files if not (f in seen or seen.add(f))]

    def words_per_arm_seed(self) -> int:
        return len(self.prompts) * self.expected_words


# -- validation ---------------------------------------------------------------


class _Where:
    """Builds the one-line messages: '<file>: <key>: <problem>'."""

    def __init__(self, path: Path, check_files: bool = True):
        self.path = path
        # Off only to lint a spec whose corpora live elsewhere (e.g. on the fleet's storage).
        self.check_files = check_files

    def fail(self, key: str, problem: str) -> VoicegateError:
        return VoicegateError(f"{self.path}: {key}: {problem}" if key else f"{self.path}: {problem}")


# The schema: for each mapping, its keys and whether each is required. The reference docs
# are tested against this table, so a key cannot exist in one and not the other.
SCHEMA: dict[str, dict[str, bool]] = {
    "": {"gate": True, "author": True, "seat": True, "arms": True, "prompts": True, "seeds": True,
         "sampling": True, "corpora": True, "voice": False, "copying": False, "damage": False,
         "floor": True, "artifacts": True, "data_dir": False, "prefer": False,
         "expected_words": False, "order_seed": False, "description": False},
    "seat": {"url": True, "base_model": True, "api_key_env": False, "concurrency": False, "timeout": False},
    "arms[]": {"name": True, "model": True, "role": True, "adapter_path": False},
    "sampling": {"temperature": True, "top_p": True, "max_tokens": True},
    "corpora": {"heldout": True, "training": True, "background": False},
    "voice": {"view": False, "mfw": False, "chunk": False, "model": False, "revision": False},
    "copying": {"n": False, "tolerance": False, "max_run": False},
    "damage": {"probes": False, "tolerance": False, "truncation_decides": False},
    "floor": {"rule": True},
    "artifacts": {"record": True, "readme": False, "compose": False},
    "probes[]": {"id": True, "prompt": True, "check": True},
}


def _mapping(w: _Where, key: str, value: Any, allowed: dict[str, bool]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise w.fail(key, f"must be a mapping, got {type(value).__name__}")
    for k in value:
        if k not in allowed:
            raise w.fail(f"{key}.{k}" if key else str(k), f"unknown key (allowed: {', '.join(sorted(allowed))})")
    for k, required in allowed.items():
        if required and k not in value:
            raise w.fail(f"{key}.{k}" if key else k, "required key is missing")
    return value


def _str(w: _Where, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise w.fail(key, "must be a non-empty string")
    return value


def _int(w: _Where, key: str, value: Any, lo: int | None = None, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise w.fail(key, f"must be an integer, got {value!r}")
    if lo is not None and value < lo:
        raise w.fail(key, f"must be >= {lo}, got {value}")
    if hi is not None and value > hi:
        raise w.fail(key, f"must be <= {hi}, got {value}")
    return value


def _num(w: _Where, key: str, value: Any, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise w.fail(key, f"must be a number, got {value!r}")
    if not lo <= value <= hi:
        raise w.fail(key, f"must be between {lo} and {hi}, got {value}")
    return float(value)


def _resolve(root: Path, p: str) -> Path:
    path = Path(os.path.expanduser(p))
    return path if path.is_absolute() else root / path


def _read_text(w: _Where, key: str, path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise w.fail(key, f"file not found: {path}") from None
    except UnicodeDecodeError:
        raise w.fail(key, f"not UTF-8 text: {path}") from None
    except OSError as exc:
        raise w.fail(key, f"cannot read {path}: {exc.strerror}") from None


def _corpus(w: _Where, root: Path, key: str, value: Any, required: bool) -> tuple[Path, ...]:
    if value is None and not required:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise w.fail(key, "must be a non-empty list of file globs")
    files: list[Path] = []
    for i, pattern in enumerate(value):
        pattern = _str(w, f"{key}[{i}]", pattern)
        if not w.check_files:
            continue
        matched = sorted(Path(m) for m in glob.glob(str(_resolve(root, pattern))) if Path(m).is_file())
        if not matched:
            raise w.fail(f"{key}[{i}]", f"glob {pattern!r} matches no file")
        for m in matched:
            _read_text(w, key, m)
        files += matched
    return tuple(dict.fromkeys(files))


def _prompts(w: _Where, root: Path, value: Any) -> tuple[tuple[Prompt, ...], Path | None]:
    path: Path | None = None
    prompts: list[Prompt] = []
    if isinstance(value, str):
        path = _resolve(root, value)
        if not w.check_files:
            return (Prompt("0", f"(prompts from {path})"),), path
        text = _read_text(w, "prompts", path)
        if path.suffix == ".jsonl":
            for n, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError:
                    raise w.fail("prompts", f"{path} line {n}: not JSON") from None
                if not isinstance(obj, dict) or not isinstance(obj.get("id"), (str, int)) or not isinstance(obj.get("text"), str):
                    raise w.fail("prompts", f"{path} line {n}: needs 'id' and 'text'")
                prompts.append(Prompt(str(obj["id"]), obj["text"]))
        else:
            lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
            prompts = [Prompt(str(i), ln) for i, ln in enumerate(lines)]
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, str):
                prompts.append(Prompt(str(i), item))
            elif isinstance(item, dict) and set(item) == {"id", "text"}:
                prompts.append(Prompt(str(item["id"]), _str(w, f"prompts[{i}].text", item["text"])))
            else:
                raise w.fail(f"prompts[{i}]", "must be a string or {id, text}")
    else:
        raise w.fail("prompts", "must be a file path or a list of prompts")
    prompts = [p for p in prompts if p.text.strip()]
    if not prompts:
        raise w.fail("prompts", "no non-empty prompt")
    ids = [p.id for p in prompts]
    if len(set(ids)) != len(ids):
        raise w.fail("prompts", "prompt ids are not unique")
    return tuple(prompts), path


def load_probes(w: _Where, path: Path) -> tuple[Probe, ...]:
    text = _read_text(w, "damage.probes", path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise w.fail("damage.probes", f"{path}: not valid YAML ({_yaml_where(exc)})") from None
    if isinstance(data, dict):
        data = data.get("probes")
    if not isinstance(data, list) or not data:
        raise w.fail("damage.probes", f"{path}: needs a non-empty list of probes")
    probes: list[Probe] = []
    for i, item in enumerate(data):
        key = f"damage.probes[{i}]"
        item = _mapping(w, key, item, SCHEMA["probes[]"])
        check = item["check"]
        if not isinstance(check, dict) or len(check) != 1 or next(iter(check)) not in CHECK_TYPES:
            raise w.fail(f"{key}.check", f"must be one of {', '.join(CHECK_TYPES)}")
        if "regex" in check:
            try:
                re.compile(str(check["regex"]))
            except re.error as exc:
                raise w.fail(f"{key}.check.regex", f"bad regular expression: {exc}") from None
        probes.append(Probe(str(item["id"]), _str(w, f"{key}.prompt", item["prompt"]), dict(check)))
    if len({p.id for p in probes}) != len(probes):
        raise w.fail("damage.probes", f"{path}: probe ids are not unique")
    return tuple(probes)


def _yaml_where(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or "syntax error"
    return f"{problem} at line {mark.line + 1}" if mark is not None else problem


def spec_path(root: Path, gate: str) -> Path:
    return root / "preregistrations" / f"{check_gate_name(gate)}.yaml"


def load_spec(root: Path, gate: str) -> GateSpec:
    """Load and validate `preregistrations/<gate>.yaml` under the workspace root."""
    path = spec_path(root, gate)
    if not path.is_file():
        raise VoicegateError(f"{path}: no such spec (write it, then `voicegate register {gate}`)")
    spec = parse_spec(path, root)
    if spec.gate != gate:
        raise _Where(path).fail("gate", f"names {spec.gate!r} but the file is for {gate!r}")
    return spec


def parse_spec(path: Path, root: Path) -> GateSpec:
    w = _Where(path)
    text = _read_text(w, "", path)
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise w.fail("", f"not valid YAML ({_yaml_where(exc)})") from None
    return validate(raw, path, root)


def validate(raw: Any, path: Path, root: Path, *, check_files: bool = True) -> GateSpec:
    w = _Where(path, check_files)
    if raw is None:
        raise w.fail("", "empty spec")
    raw = _mapping(w, "", raw, SCHEMA[""])

    gate = _str(w, "gate", raw["gate"])
    try:
        check_gate_name(gate)
    except VoicegateError as exc:
        raise w.fail("gate", str(exc)) from None
    author = _str(w, "author", raw["author"])

    s = _mapping(w, "seat", raw["seat"], SCHEMA["seat"])
    url = _str(w, "seat.url", s["url"])
    if not re.match(r"https?://", url):
        raise w.fail("seat.url", f"must be an http(s) URL, got {url!r}")
    key_env = s.get("api_key_env")
    if key_env is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(key_env)):
        raise w.fail("seat.api_key_env", "must name an environment variable (the key itself never goes in a file)")
    seat = Seat(url=url.rstrip("/"), base_model=_str(w, "seat.base_model", s["base_model"]),
                api_key_env=key_env,
                concurrency=_int(w, "seat.concurrency", s.get("concurrency", 8), 1, 1024),
                timeout=_num(w, "seat.timeout", s.get("timeout", 120.0), 0.1, 3600))

    if not isinstance(raw["arms"], list) or not raw["arms"]:
        raise w.fail("arms", "must be a non-empty list")
    arms: list[Arm] = []
    for i, a in enumerate(raw["arms"]):
        a = _mapping(w, f"arms[{i}]", a, SCHEMA["arms[]"])
        name = _str(w, f"arms[{i}].name", a["name"])
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
            raise w.fail(f"arms[{i}].name", f"{name!r}: use letters, digits, '.', '_' or '-'")
        if a["role"] not in ROLES:
            raise w.fail(f"arms[{i}].role", f"must be one of {', '.join(ROLES)}, got {a['role']!r}")
        path_ = a.get("adapter_path")
        if path_ is not None:
            _str(w, f"arms[{i}].adapter_path", path_)
        arms.append(Arm(name, _str(w, f"arms[{i}].model", a["model"]), a["role"], path_))
    bases = [a for a in arms if a.is_base]
    if len(bases) != 1:
        raise w.fail("arms", f"needs exactly one arm with role: base, found {len(bases)}")
    if len(arms) < 2:
        raise w.fail("arms", "needs at least one candidate arm")
    for attr in ("name", "model"):
        values = [getattr(a, attr) for a in arms]
        dupes = sorted({v for v in values if values.count(v) > 1})
        if dupes:
            raise w.fail("arms", f"duplicate arm {attr}: {', '.join(dupes)}")

    prompts, prompts_path = _prompts(w, root, raw["prompts"])

    seeds = raw["seeds"]
    if not isinstance(seeds, list) or not seeds:
        raise w.fail("seeds", "must be a non-empty list of integers")
    seeds = [_int(w, f"seeds[{i}]", v, 0, 2**63 - 1) for i, v in enumerate(seeds)]
    if len(set(seeds)) != len(seeds):
        raise w.fail("seeds", "seeds are not unique")

    sm = _mapping(w, "sampling", raw["sampling"], SCHEMA["sampling"])
    sampling = Sampling(_num(w, "sampling.temperature", sm["temperature"], 0.0, 2.0),
                        _num(w, "sampling.top_p", sm["top_p"], 1e-9, 1.0),
                        _int(w, "sampling.max_tokens", sm["max_tokens"], 1, 1_000_000))

    c = _mapping(w, "corpora", raw["corpora"], SCHEMA["corpora"])
    v = _mapping(w, "voice", raw.get("voice", {}), SCHEMA["voice"])
    view = v.get("view", "stylometric")
    if view not in VIEWS:
        raise w.fail("voice.view", f"must be one of {', '.join(VIEWS)}, got {view!r}")
    voice = Voice(view=view, mfw=_int(w, "voice.mfw", v.get("mfw", 1000), 10, 100_000),
                  chunk=_int(w, "voice.chunk", v.get("chunk", 2500), 50, 1_000_000),
                  model=v.get("model"), revision=v.get("revision"))
    corpora = Corpora(
        heldout=_corpus(w, root, "corpora.heldout", c["heldout"], True),
        training=_corpus(w, root, "corpora.training", c["training"], True),
        # Without other authors the z-scores come from the target alone and the
        # cosine is noise (DESIGN.md §3), so the stylometric view requires it.
        background=_corpus(w, root, "corpora.background", c.get("background"), view == "stylometric"),
    )
    embedding_files: tuple[Path, ...] = ()
    if view == "embedding":
        model = _str(w, "voice.model", voice.model)
        local = _resolve(root, model)
        if local.is_dir() and w.check_files:
            embedding_files = tuple(sorted(p for p in local.rglob("*") if p.is_file()))
        elif voice.revision is None and not local.is_dir():
            raise w.fail("voice.revision", "a hub model must be pinned by revision (or give a local path)")

    cp = _mapping(w, "copying", raw.get("copying", {}), SCHEMA["copying"])
    copying = Copying(n=_int(w, "copying.n", cp.get("n", 8), 2, 64),
                      tolerance=_num(w, "copying.tolerance", cp.get("tolerance", 0.005), 0.0, 1.0),
                      max_run=_int(w, "copying.max_run", cp.get("max_run", 50), 2, 1_000_000))
    if copying.max_run < copying.n:
        raise w.fail("copying.max_run", f"must be >= copying.n ({copying.n})")

    d = _mapping(w, "damage", raw.get("damage", {}), SCHEMA["damage"])
    probes_path = _resolve(root, _str(w, "damage.probes", d["probes"])) if d.get("probes") else None
    damage = Damage(probes_path=probes_path,
                    probes=load_probes(w, probes_path) if probes_path and w.check_files else (),
                    tolerance=_num(w, "damage.tolerance", d.get("tolerance", 0.05), 0.0, 1.0),
                    truncation_decides=bool(d.get("truncation_decides", False)))

    f = _mapping(w, "floor", raw["floor"], SCHEMA["floor"])
    if f["rule"] not in RULES:
        raise w.fail("floor.rule", f"unknown floor rule {f['rule']!r} (registered: {', '.join(sorted(RULES))})")

    ar = _mapping(w, "artifacts", raw["artifacts"], SCHEMA["artifacts"])
    artifacts = Artifacts(
        record=_resolve(root, _str(w, "artifacts.record", ar["record"])),
        readme=_resolve(root, _str(w, "artifacts.readme", ar["readme"])) if ar.get("readme") else None,
        compose=_resolve(root, _str(w, "artifacts.compose", ar["compose"])) if ar.get("compose") else None,
    )

    prefer = raw.get("prefer", [])
    if isinstance(prefer, str):
        prefer = [prefer]
    if not isinstance(prefer, list) or any(p not in {a.name for a in arms if not a.is_base} for p in prefer):
        raise w.fail("prefer", "must list candidate arm names, most preferred first")

    data_dir = _resolve(root, str(os.environ.get("VOICEGATE_DATA_DIR") or raw.get("data_dir", "runs")))

    return GateSpec(
        path=path, root=root, raw=raw, gate=gate, author=author, seat=seat, arms=tuple(arms),
        prompts=prompts, prompts_path=prompts_path, seeds=tuple(seeds), sampling=sampling,
        corpora=corpora, voice=voice, copying=copying, damage=damage, floor_rule=f["rule"],
        artifacts=artifacts, data_dir=data_dir, prefer=tuple(prefer),
        expected_words=_int(w, "expected_words", raw.get("expected_words", 250), 1, 1_000_000),
        order_seed=_int(w, "order_seed", raw.get("order_seed", 0), 0, 2**63 - 1),
        embedding_files=embedding_files,
    )
