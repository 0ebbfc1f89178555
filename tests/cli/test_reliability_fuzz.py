"""Fuzzing the spec schema and the import format.

Every generated input is malformed by construction — a value of a kind its declaration
refuses (never checked against voicegate's own validator), an unknown key, a missing
required key, a key written twice, broken YAML, a cross-key rule broken, a bad probes file;
for import, a line that is not strict JSON, not an object, a field of the wrong type, an
arm/seed/prompt the gate does not have, a duplicate. Each must give exit 2, exactly one line
on stderr, and a workspace in which every file (`.git` included) hashes as before.

The CLI runs in-process (helpers.workspace.run_cli); each test builds its workspace once, so the
examples cost milliseconds and the whole file runs in seconds.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import string
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.workspace import GATE as IMPORT_GATE
from helpers.workspace import N_PROMPTS as PROMPTS
from helpers.workspace import SEEDS, base_spec, git, make_workspace, run_cli
from helpers.workspace import scoring_workspace as registered_workspace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from voicegate.spec._schema import SPEC_SCHEMA, Key
from voicegate.spec._types import (
    AuthorGlobs,
    Choice,
    Flag,
    Globs,
    Integer,
    IntList,
    Kind,
    Names,
    Number,
    Pattern,
    Prompts,
    Records,
    SeatUrl,
    SeatUrls,
    Section,
    Subset,
    Text,
)

GATE = "lv-test"
FUZZ = settings(max_examples=100, deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def workspace_hash(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _snapshot(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _restore(root: Path, snapshot: dict[Path, bytes]) -> None:
    """Put every file back as it was, so one failing example cannot change what the next one sees."""
    for p in sorted(root.rglob("*"), reverse=True):
        if p.is_file() and p not in snapshot:
            p.unlink()
        elif p.is_dir() and not any(p.iterdir()) and not any(q.is_relative_to(p) for q in snapshot):
            p.rmdir()
    for p, data in snapshot.items():
        if not p.is_file() or p.read_bytes() != data:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)


def assert_refused(root: Path, *args: str) -> str:
    """Run the CLI in `root`: exit 2, one line on stderr, no traceback, nothing changed."""
    before = workspace_hash(root)
    snapshot = _snapshot(root)
    try:
        res = run_cli(*args, cwd=root)
        changed = workspace_hash(root) != before
    finally:
        _restore(root, snapshot)
    lines = res.stderr.strip().splitlines()
    assert "Traceback" not in res.stderr, res.stderr
    assert res.code == 2, (res.code, res.stderr, res.stdout)
    assert len(lines) == 1, res.stderr
    assert not changed, "a refused command changed the workspace"
    return lines[0]


# -- values: plain data, and values each kind refuses ------------------------------------------------

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_SCALARS = st.one_of(st.integers(-10**20, 10**20), st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
                     _TEXT)
_DATA = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(_TEXT, inner, max_size=3)), max_leaves=6)
_NOT_STRING = st.one_of(st.integers(), st.floats(allow_nan=True), st.booleans(),
                        st.lists(_SCALARS, max_size=3), st.dictionaries(_TEXT, _SCALARS, max_size=2))
_NOT_LIST = st.one_of(st.integers(), st.floats(allow_nan=True), st.booleans(),
                      st.dictionaries(_TEXT, _SCALARS, min_size=1, max_size=2))
_BLANK = st.text(" \t\n", max_size=4)
_NOT_INT = st.one_of(_TEXT, st.floats(allow_nan=True), st.booleans(), st.lists(st.integers(), max_size=2),
                     st.dictionaries(_TEXT, st.integers(), max_size=2))


def refused_by(kind: Kind) -> st.SearchStrategy[Any]:
    """Values `kind` must refuse, built from what the kind is, not from its check."""
    if isinstance(kind, Integer):
        out = [_NOT_INT]
        if kind.lo is not None:
            out.append(st.integers(max_value=kind.lo - 1))
        if kind.hi is not None:
            out.append(st.integers(min_value=kind.hi + 1))
        return st.one_of(*out)
    if isinstance(kind, Number):
        return st.one_of(_TEXT, st.booleans(), st.lists(st.floats(), max_size=2),
                         st.sampled_from([math.nan, math.inf, -math.inf]),
                         st.floats(max_value=kind.lo, exclude_max=True, allow_infinity=False),
                         st.floats(min_value=kind.hi, exclude_min=True, allow_infinity=False, allow_nan=False))
    if isinstance(kind, Flag):
        return st.one_of(st.sampled_from(["true", "false", "yes", "no", "on", "off", "0", "1"]), st.integers(),
                         st.floats(), _TEXT, st.lists(st.booleans(), max_size=2))
    if isinstance(kind, Choice):
        return st.one_of(_TEXT.filter(lambda s: s not in kind.options), _NOT_STRING,
                         st.lists(st.sampled_from(kind.options), min_size=1, max_size=2))
    if isinstance(kind, Pattern):
        return st.one_of(_TEXT.filter(lambda s: not re.fullmatch(kind.regex, s)), _NOT_STRING)
    if isinstance(kind, SeatUrl):
        host = st.sampled_from(["127.0.0.1", "seat", "[::1]"])
        return st.one_of(
            _NOT_STRING, _BLANK,
            _TEXT.filter(lambda s: not s.startswith(("http://", "https://"))),
            st.builds(lambda h, c: f"http://{h}:8027/v1{c}", host, st.sampled_from(["\n", "\t", " x", "\x00", "\r\n"])),
            st.builds(lambda h, p: f"http://{h}:{p}/v1", host, st.one_of(st.integers(65536, 10**9), st.just(0))),
            st.sampled_from(["http://", "http:///v1", "http://:8027/v1", "https://user:pw@/v1", "http//seat:1/v1"]),
        )
    if isinstance(kind, SeatUrls):
        good = "http://127.0.0.1:8027/v1"
        return st.one_of(_NOT_LIST, _TEXT, st.just([]),
                         st.lists(refused_by(SeatUrl()), min_size=1, max_size=2).map(lambda bad: [good, *bad]),
                         st.just([good, good]), st.just([good, good + "/"]))
    if isinstance(kind, Text):
        return st.one_of(_NOT_STRING, _BLANK)
    if isinstance(kind, Globs):
        return st.one_of(_NOT_LIST, st.just([]), st.lists(st.one_of(_NOT_STRING, _BLANK), min_size=1, max_size=2))
    if isinstance(kind, AuthorGlobs):
        # Not a mapping, an empty one, an empty group, a group of non-strings, or one author twice.
        return st.one_of(_NOT_LIST.filter(lambda v: not isinstance(v, dict)), st.just({}),
                         st.just({"Other Author": []}),
                         st.lists(st.one_of(_NOT_STRING, _BLANK), min_size=1, max_size=2)
                         .map(lambda bad: {"Other Author": bad}),
                         st.just({"Other Author": ["a.txt"], "other  author": ["b.txt"]}))
    if isinstance(kind, IntList):
        return st.one_of(_NOT_LIST, _TEXT, st.just([]), st.lists(_NOT_INT, min_size=1, max_size=3),
                         st.integers(kind.lo, kind.lo + 5).map(lambda n: [n, n]),
                         st.integers(max_value=kind.lo - 1).map(lambda n: [n]))
    if isinstance(kind, Names):
        # Only the spec's candidates may be named (ckpt475, ckpt925): anything else is refused.
        return st.one_of(_NOT_LIST, _TEXT.filter(lambda s: s not in ("ckpt475", "ckpt925")),
                         st.lists(_NOT_STRING, min_size=1, max_size=2), st.just(["base"]))
    if isinstance(kind, Prompts):
        item = st.one_of(_NOT_STRING.filter(lambda v: not isinstance(v, dict)),
                         st.dictionaries(st.sampled_from(["id", "text", "prompt", "name"]), _SCALARS, max_size=3)
                         .filter(lambda d: set(d) != {"id", "text"}),
                         st.fixed_dictionaries({"id": st.one_of(st.booleans(), st.floats(), st.lists(_TEXT)),
                                                "text": st.just("Write.")}),
                         st.fixed_dictionaries({"id": st.just("a"), "text": st.one_of(_NOT_STRING, _BLANK)}))
        return st.one_of(_NOT_LIST, st.just([]), st.lists(_BLANK, min_size=1, max_size=3),
                         st.lists(item, min_size=1, max_size=3),
                         st.just("prompts/nowhere.txt"))
    if isinstance(kind, Subset):
        unknown = _TEXT.filter(lambda t: t not in kind.options)
        return st.one_of(_SCALARS.filter(lambda v: not isinstance(v, str)), unknown,
                         st.lists(st.one_of(_NOT_STRING, unknown), min_size=1, max_size=2),
                         st.sampled_from(kind.options).map(lambda o: [o, o]))
    if isinstance(kind, Section):
        return st.one_of(_SCALARS, st.lists(_SCALARS, min_size=1, max_size=2))
    if isinstance(kind, Records):
        return st.one_of(_SCALARS, st.just([]), st.lists(_SCALARS, min_size=1, max_size=2))
    raise AssertionError(f"no refused-value strategy for {kind!r}")


# -- mutations of a valid spec ------------------------------------------------------------------------


def _set(spec: dict[str, Any], path: str, value: Any, arm: int = 0) -> dict[str, Any]:
    node: Any = spec
    parts = path.split(".")
    for p in parts[:-1]:
        if p.endswith("[]"):
            node = node[p[:-2]][arm]
        else:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise AssertionError("a section was already replaced")
    last = parts[-1]
    if last.endswith("[]"):
        raise AssertionError(path)
    node[last] = value
    return spec


def _remove(spec: dict[str, Any], path: str) -> dict[str, Any]:
    node: Any = spec
    parts = path.split(".")
    for p in parts[:-1]:
        node = node[p[:-2]][0] if p.endswith("[]") else node[p]
    del node[parts[-1]]
    return spec


def dump(spec: Any) -> str:
    return yaml.safe_dump(spec, sort_keys=False, allow_unicode=True)


@st.composite
def wrong_value(draw: st.DrawFn) -> str:
    key: Key = draw(st.sampled_from(SPEC_SCHEMA.keys))
    spec = _set(base_spec(GATE), key.path, draw(refused_by(key.kind)), arm=draw(st.integers(0, 2)))
    return dump(spec)


@st.composite
def unknown_key(draw: st.DrawFn) -> str:
    spec = base_spec(GATE)
    where = draw(st.sampled_from(["", "seat", "sampling", "corpora", "voice", "copying", "damage", "floor",
                                  "artifacts", "arms[]"]))
    allowed = {k.name for k in SPEC_SCHEMA.children(where)}
    name = draw(st.one_of(_TEXT, st.integers(), st.sampled_from(["seed", "Gate", "floor_rule", "timeout_s", "rules"]))
                .filter(lambda n: n not in allowed))
    node = spec["arms"][draw(st.integers(0, 2))] if where == "arms[]" else (spec[where] if where else spec)
    node[name] = draw(_DATA)
    return dump(spec)


@st.composite
def missing_key(draw: st.DrawFn) -> str:
    required = [k for k in SPEC_SCHEMA.keys if k.required]
    return dump(_remove(base_spec(GATE), draw(st.sampled_from(required)).path))


@st.composite
def duplicate_key(draw: st.DrawFn) -> str:
    text = dump(base_spec(GATE))
    lines = text.splitlines()
    # A top-level or one-level-nested "key: value" line, repeated right after itself.
    candidates = [i for i, ln in enumerate(lines) if re.match(r"^( {2})?[a-z_]+: \S", ln)]
    i = draw(st.sampled_from(candidates))
    return "\n".join(lines[:i + 1] + [lines[i]] + lines[i + 1:]) + "\n"


@st.composite
def broken_yaml(draw: st.DrawFn) -> str:
    good = dump(base_spec(GATE))
    return draw(st.one_of(
        st.just(""), st.just("# nothing but a comment\n"), st.just("~\n"),
        st.builds(dump, st.one_of(_SCALARS.filter(lambda v: v is not None), st.lists(_SCALARS, max_size=3))),
        st.just(good + "arms: [unclosed\n"), st.just(good.replace("  ", "\t", 1)),
        st.just("gate: lv-test\n  author: x\n bad: [\n"), st.just(good + "{\n"),
        st.integers(1, len(good) - 1).map(lambda n: good[:n] + "\n:\n- [x\n"),
        st.integers(65, 3000).map(lambda d: good + "description: " + "[" * d + "]" * d + "\n"),
        st.integers(2, 9).map(lambda n: good + "".join(
            f"z{i}: &z{i} [{', '.join([f'*z{i - 1}' if i else 'x'] * 9)}]\n" for i in range(n + 1))),
    ))


@st.composite
def cross_key(draw: st.DrawFn) -> str:
    spec = base_spec(GATE)
    case = draw(st.sampled_from(["two-bases", "no-base", "one-arm", "same-name", "same-model", "max-run", "prefer",
                                 "gate-name", "gate-mismatch", "no-background", "embedding-no-model"]))
    arms = spec["arms"]
    if case == "two-bases":
        arms[1]["role"] = "base"
    elif case == "no-base":
        arms[0]["role"] = "candidate"
    elif case == "one-arm":
        spec["arms"] = arms[:1]
    elif case == "same-name":
        arms[2]["name"] = arms[1]["name"]
    elif case == "same-model":
        arms[2]["model"] = arms[draw(st.integers(0, 1))]["model"]
    elif case == "max-run":
        spec["copying"] = {"n": draw(st.integers(3, 64)), "max_run": 2}
    elif case == "prefer":
        spec["prefer"] = draw(st.sampled_from(["base", "ckpt999", ["ckpt475", "nobody"]]))
    elif case == "gate-name":
        spec["gate"] = draw(st.sampled_from(["LV-Test", "lv_test", "../lv-test", "lv-", "test"]))
    elif case == "gate-mismatch":
        spec["gate"] = "lv-other"
    elif case == "no-background":
        del spec["corpora"]["background"]
    else:
        spec["voice"] = {"view": "embedding"}
    return dump(spec)


PROBE_ITEM = {"id": "p1", "prompt": "What is the capital of France?", "check": {"regex": "(?i)paris"}}


@st.composite
def bad_probes(draw: st.DrawFn) -> str:
    """A probes file (damage.probes) of the wrong shape."""
    item = dict(PROBE_ITEM)
    case = draw(st.sampled_from(["top", "empty", "item", "missing", "unknown", "check", "dupe-ids", "regex"]))
    if case == "top":
        return dump(draw(st.one_of(_SCALARS.filter(lambda v: v is not None), st.just({"probes": 5}))))
    if case == "empty":
        return dump({"probes": []})
    if case == "item":
        return dump({"probes": [draw(_SCALARS)]})
    if case == "missing":
        del item[draw(st.sampled_from(["id", "prompt", "check"]))]
    elif case == "unknown":
        item[draw(st.sampled_from(["answer", "checks", "text", "ID"]))] = "x"
    elif case == "check":
        item["check"] = draw(st.one_of(
            _NOT_STRING.filter(lambda v: not isinstance(v, dict)), st.just({}),
            st.just({"exact": "a", "regex": "b"}), st.just({"contains": "x"}),
            st.just({"exact": True}), st.just({"exact": []}), st.just({"max_words": -1}),
            st.just({"max_words": "5"}), st.just({"refuse": "yes"}), st.just({"json": "yes"}),
            st.just({"regex": ""}), st.just({"json": [1]})))
    elif case == "dupe-ids":
        return dump({"probes": [item, dict(item)]})
    else:
        item["check"] = {"regex": draw(st.sampled_from(["(", "[a-", "*x", "a{2,1}"]))}
    return dump({"probes": [item]})


# -- the spec fuzz -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spec_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz-spec") / "ws"
    make_workspace(root, base_spec(GATE))
    (root / "probes").mkdir(exist_ok=True)
    (root / "probes" / "general.yaml").write_text(dump({"probes": [PROBE_ITEM]}), encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "workspace")
    return root


def _write(root: Path, rel: str, text: str) -> None:
    (root / rel).write_text(text, encoding="utf-8")


@FUZZ
@given(text=st.one_of(wrong_value(), unknown_key(), missing_key(), duplicate_key(), broken_yaml(), cross_key()))
def test_every_malformed_spec_is_refused_in_one_line(spec_ws: Path, text: str) -> None:
    _write(spec_ws, f"preregistrations/{GATE}.yaml", text)
    assert_refused(spec_ws, "register", GATE)
    assert not (spec_ws / "preregistrations" / f"{GATE}.registration.json").exists()


@FUZZ
@given(probes=bad_probes())
def test_every_malformed_probes_file_is_refused_in_one_line(spec_ws: Path, probes: str) -> None:
    spec = base_spec(GATE)
    spec["damage"] = {"probes": "probes/fuzz.yaml", "tolerance": 0.05}
    _write(spec_ws, f"preregistrations/{GATE}.yaml", dump(spec))
    _write(spec_ws, "probes/fuzz.yaml", probes)
    # Every other file the spec needs is there (another fuzz test's restore may have pruned the
    # README's empty folder), so the refusal can only be the probes file's.
    (spec_ws / "adapters").mkdir(exist_ok=True)
    line = assert_refused(spec_ws, "register", GATE)
    assert "damage" in line, line


def test_every_declared_key_has_values_its_kind_refuses() -> None:
    """A key added to the schema with a new kind must get a strategy here, or this fails."""
    for key in SPEC_SCHEMA.keys:
        refused_by(key.kind)


def test_the_fuzzed_spec_workspace_accepts_the_unmutated_spec(tmp_path: Path) -> None:
    """The control: the spec every mutation starts from registers (so refusals are the mutation's)."""
    root = tmp_path / "ws"
    spec = base_spec(GATE)
    spec["damage"] = {"probes": "probes/general.yaml", "tolerance": 0.05}
    make_workspace(root, spec)
    (root / "probes").mkdir(exist_ok=True)
    (root / "probes" / "general.yaml").write_text(dump({"probes": [PROBE_ITEM]}), encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "workspace")
    res = run_cli("register", GATE, cwd=root)
    assert res.code == 0, res.stderr


# -- the import fuzz --------------------------------------------------------------------------------------


def _row(arm: str = "base", seed: int = SEEDS[0], prompt: int = 0, **kw: Any) -> dict[str, Any]:
    return {"arm": arm, "seed": seed, "prompt_id": str(prompt), "text": f"the moor {arm} {seed} {prompt}", **kw}


GOOD_ROWS = [_row(a, s, p) for a in ("base", "cand") for s in SEEDS for p in range(3)]
ARMS = ("base", "cand", "other")
FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "arm": st.one_of(_NOT_STRING, _TEXT.filter(lambda s: s not in ARMS)),
    "seed": st.one_of(_NOT_INT, st.integers().filter(lambda n: n not in SEEDS)),
    "prompt_id": st.one_of(st.floats(), st.booleans(), st.lists(_TEXT, max_size=2), st.dictionaries(_TEXT, _TEXT),
                           _TEXT.filter(lambda s: s not in {str(i) for i in range(PROMPTS)}),
                           st.integers().filter(lambda n: not 0 <= n < PROMPTS)),
    "text": _NOT_STRING | st.none(),
    "kind": st.one_of(_NOT_STRING, st.none(), _TEXT.filter(lambda s: s not in ("voice", "probe")), st.just("probe")),
    "model": st.one_of(_NOT_STRING, st.none(), st.just("")),
    "finish_reason": st.one_of(st.integers(), st.floats(), st.booleans(), st.lists(_TEXT, min_size=1, max_size=2),
                               st.dictionaries(_TEXT, _TEXT, min_size=1)),
    "usage": st.one_of(_TEXT, st.integers(), st.lists(st.integers(), min_size=1, max_size=2),
                       st.fixed_dictionaries({"completion_tokens": st.one_of(
                           _TEXT, st.floats(), st.booleans(), st.integers(max_value=-1), st.lists(st.integers()))})),
    "imported": st.one_of(_TEXT, st.integers(), st.none(), st.lists(st.booleans(), min_size=1)),
}


def _json_line(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


@st.composite
def bad_line(draw: st.DrawFn) -> str:
    case = draw(st.sampled_from(["field", "missing", "not-object", "not-json", "constant", "dup-key", "deep",
                                 "surrogate"]))
    row = _row(prompt=5)
    if case == "field":
        name = draw(st.sampled_from(sorted(FIELDS)))
        return _json_line({**row, name: draw(FIELDS[name])})  # a NaN drawn here is refused as not JSON
    if case == "missing":
        del row[draw(st.sampled_from(["arm", "seed", "prompt_id", "text"]))]
        return _json_line(row)
    if case == "not-object":
        return _json_line(draw(st.one_of(_SCALARS.filter(lambda v: isinstance(v, (str, bool, int))),
                                         st.lists(_SCALARS, max_size=3), st.none())))
    if case == "not-json":
        good = _json_line(row)
        return draw(st.one_of(st.integers(1, len(good) - 1).map(lambda n: good[:n]),
                              st.text(string.ascii_letters + "{}[]:,'", min_size=1, max_size=20)
                              .filter(lambda t: t.strip() and _not_json(t)),
                              st.just("{'arm': 'base'}"), st.just('{"arm": "base",}')))
    if case == "constant":
        field = draw(st.sampled_from(["seed", "latency_s", "extra"]))
        constant = draw(st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e400"]))
        return _json_line({**row, field: 0}).replace(f'"{field}": 0', f'"{field}": {constant}')
    if case == "dup-key":
        field = draw(st.sampled_from(["arm", "seed", "text", "prompt_id"]))
        return _json_line(row)[:-1] + f', "{field}": ' + json.dumps(row[field]) + "}"
    if case == "deep":
        depth = draw(st.sampled_from([65, 500, 5000, 200_000]))
        return _json_line({**row, "extra": 0}).replace('"extra": 0', '"extra": ' + "[" * depth + "]" * depth)
    return _json_line(row)[:-1] + ', "note": "\\udc80"}'


def _not_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return True
    return False


@pytest.fixture(scope="module")
def import_ws(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("fuzz-import")
    return registered_workspace(base / "ws"), base / "source.jsonl"


def _import_refused(ws: tuple[Path, Path], lines: list[str] | bytes) -> str:
    root, source = ws
    data = lines if isinstance(lines, bytes) else ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    source.write_bytes(data)
    line = assert_refused(root, "import", IMPORT_GATE, str(source))
    assert not (root / "runs" / IMPORT_GATE / "generations.jsonl").exists()
    assert not (root / "runs" / IMPORT_GATE / "run.json").exists()
    return line


@FUZZ
@given(bad=bad_line(), at=st.integers(0, len(GOOD_ROWS)), blank=st.booleans())
def test_every_malformed_import_line_refuses_the_whole_file(import_ws: tuple[Path, Path], bad: str, at: int,
                                                            blank: bool) -> None:
    lines = [_json_line(r) for r in GOOD_ROWS]
    lines.insert(at, bad)
    if blank:
        lines.insert(0, "")
    line = _import_refused(import_ws, lines)
    assert f"line {at + 1 + blank}:" in line and "nothing imported" in line


@FUZZ
@given(data=st.one_of(
    st.just(b""), st.just(b"\n\n  \n"),
    st.builds(lambda good, junk: good + junk, st.just(("\n".join(_json_line(r) for r in GOOD_ROWS) + "\n").encode()),
              st.sampled_from([b"\xff\xfe\n", b'{"arm": "\xc3\x28"}\n', b"\x80\n"])),
    st.integers(1, len(GOOD_ROWS) - 1).map(
        lambda i: ("\n".join(_json_line(r) for r in [*GOOD_ROWS, GOOD_ROWS[i]]) + "\n").encode()),
))
def test_an_empty_undecodable_or_duplicating_import_file_is_refused(import_ws: tuple[Path, Path], data: bytes) -> None:
    _import_refused(import_ws, data)


def test_the_fuzzed_import_accepts_the_unmutated_rows(tmp_path: Path) -> None:
    """The control: the good rows every malformed file is built around do import."""
    root = registered_workspace(tmp_path / "ws")
    source = tmp_path / "good.jsonl"
    source.write_text("".join(_json_line(r) + "\n" for r in GOOD_ROWS), encoding="utf-8")
    res = run_cli("import", IMPORT_GATE, str(source), cwd=root)
    assert res.code == 0, res.stderr
