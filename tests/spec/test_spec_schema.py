"""Every spec key is one declaration in `_schema`.

The reference tables are generated from the declarations. After changing a
declaration, regenerate them with

    PYTHONPATH=. python3 -c 'from voicegate.spec._schema import write_reference; write_reference("docs/reference.md")'
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml
from helpers.workspace import base_spec, cli, make_workspace, tree_snapshot

from voicegate._errors import VoicegateError
from voicegate._hashing import sha256_json
from voicegate._seat_url import check_seat_url
from voicegate.spec import _schema
from voicegate.spec._check import check_spec
from voicegate.spec._rules import RULES, RuleId
from voicegate.spec._schema import (
    PROBES_SCHEMA,
    REFERENCE_TABLES,
    SPEC_SCHEMA,
    Key,
    Role,
    Schema,
    reference_table,
    schema_table_markdown,
)
from voicegate.spec._spec import load_spec, read_spec_yaml
from voicegate.spec._types import Integer, Section

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "reference.md"


# -- the docs cannot drift ------------------------------------------------------------------


@pytest.mark.parametrize("heading,schema", REFERENCE_TABLES, ids=[h for h, _ in REFERENCE_TABLES])
def test_reference_tables_are_the_generated_ones(heading: str, schema: Schema) -> None:
    """If this fails, regenerate (see the module docstring) and review the diff."""
    text = REFERENCE.read_text(encoding="utf-8")
    start, end = reference_table(text, heading)
    assert text[start:end] == schema_table_markdown(schema)


# -- acceptance: adding a spec key is one declaration ----------------------------------------

WINDOW = Key("copying.window", Integer(1, 100), "tokens shown around a copied span", default=12)


@pytest.fixture
def with_window(monkeypatch: pytest.MonkeyPatch) -> Key:
    """The spec schema plus one declaration, and nothing else changed."""
    monkeypatch.setattr(_schema, "SPEC_SCHEMA", SPEC_SCHEMA.with_keys(WINDOW))
    return WINDOW


def _write(path: Path, raw: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")


def test_a_key_not_declared_is_refused(tmp_path: Path) -> None:
    path = make_workspace(tmp_path)
    raw = base_spec()
    raw["copying"]["window"] = 30
    _write(path, raw)
    with pytest.raises(VoicegateError, match=r"copying\.window: unknown key"):
        load_spec(tmp_path, "lv-test")
    assert "copying.window" not in schema_table_markdown()


def test_adding_a_spec_key_is_one_declaration(tmp_path: Path, with_window: Key) -> None:
    path = make_workspace(tmp_path)
    # its default appears on the loaded spec when the key is absent
    assert load_spec(tmp_path, "lv-test").values["copying.window"] == 12
    raw = base_spec()
    raw["copying"]["window"] = 30
    _write(path, raw)
    assert load_spec(tmp_path, "lv-test").values["copying.window"] == 30
    # its type and bounds are checked, with the usual one-line messages
    for bad, message in [(0, "must be >= 1, got 0"), (101, "must be <= 100, got 101"),
                         ("30", "must be an integer, got '30'"), ([30], "must be an integer"),
                         (True, "must be an integer, got True")]:
        raw["copying"]["window"] = bad
        _write(path, raw)
        with pytest.raises(VoicegateError) as err:
            load_spec(tmp_path, "lv-test")
        assert str(err.value).startswith(f"{path}: copying.window: {message}")
    # the docs table gains its row, and the allowed-keys message names it
    assert "| `copying.window` | no | integer 1–100 | `12` | tokens shown around a copied span |" in \
        schema_table_markdown().splitlines()
    raw["copying"]["windows"] = 1
    with pytest.raises(VoicegateError, match=r"allowed: max_run, n, tolerance, window\)"):
        check_spec(raw, "spec.yaml")


def test_a_declaration_needs_a_declared_parent() -> None:
    with pytest.raises(ValueError, match="not declared as a mapping"):
        SPEC_SCHEMA.with_keys(Key("copy.window", Integer(), "typo in the parent"))
    with pytest.raises(ValueError, match="declared twice"):
        SPEC_SCHEMA.with_keys(Key("copying", Section(), "again"))


# -- validation is pure ---------------------------------------------------------------------


def test_check_spec_reads_no_file_and_no_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOICEGATE_DATA_DIR", "/nowhere")
    monkeypatch.chdir(tmp_path)  # nothing the spec names exists here
    values = check_spec(base_spec(), "spec.yaml")
    assert values["corpora.heldout"] == ("corpora/held/*.txt",)
    assert values["prompts"] == "prompts/beats.txt"
    assert values["data_dir"] == "runs"
    assert values["damage.truncation_decides"] is False
    assert values["arms"][1] == {"name": "ckpt475", "model": "lv-test-ckpt475", "role": "candidate",
                                 "adapter_path": "/adapters/x/ckpt475", "voice_of": None}


def test_defaults_on_the_spec_come_from_the_declarations(tmp_path: Path) -> None:
    raw = base_spec()
    for section in ("voice", "copying", "damage"):
        raw.pop(section)
    _write(make_workspace(tmp_path), raw)
    spec = load_spec(tmp_path, "lv-test")
    for path, got in [("voice.mfw", spec.voice.mfw), ("voice.chunk", spec.voice.chunk),
                      ("voice.view", spec.voice.view), ("copying.n", spec.copying.n),
                      ("copying.tolerance", spec.copying.tolerance), ("copying.max_run", spec.copying.max_run),
                      ("damage.tolerance", spec.damage.tolerance), ("seat.concurrency", spec.seat.concurrency),
                      ("seat.timeout", spec.seat.timeout), ("order_seed", spec.order_seed)]:
        assert got == SPEC_SCHEMA.default(path) == spec.values[path], path
    assert spec.run_dir == tmp_path / "runs" / "lv-test"


def test_role_and_rule_id_are_typed_and_write_as_their_strings(tmp_path: Path) -> None:
    # `Arm.role` is a `Role` and `floor_rule` a `RuleId`; a record still reads the plain strings.
    _write(make_workspace(tmp_path), base_spec())
    spec = load_spec(tmp_path, "lv-test")
    assert [type(a.role) for a in spec.arms] == [Role] * len(spec.arms)
    assert spec.base.role == "base" and all(a.role == "candidate" for a in spec.candidates)
    assert json.dumps([a.role for a in spec.arms]) == json.dumps([str(a.role) for a in spec.arms])
    assert f"{spec.base.role}" == "base" and tuple(Role) == _schema.ROLES
    assert set(get_args(RuleId)) == set(RULES) and spec.floor_rule in get_args(RuleId)


# -- strictness ------------------------------------------------------------------

STRICT = [
    ("bool-as-string", ("damage", "truncation_decides"), "false", "damage.truncation_decides: must be true or false"),
    ("number-as-list", ("copying", "tolerance"), [0.1], "copying.tolerance: must be a number"),
    ("number-as-string", ("sampling", "top_p"), "0.9", "sampling.top_p: must be a number"),
    ("path-as-number", (None, "data_dir"), 7, "data_dir: must be a non-empty string"),
    ("model-as-number", ("voice", "revision"), 3, "voice.revision: must be a non-empty string"),
]


@pytest.mark.parametrize("case", STRICT, ids=[c[0] for c in STRICT])
def test_no_silent_coercion(case: tuple[str, tuple[str | None, str], Any, str]) -> None:
    _, (section, key), value, expected = case
    raw = copy.deepcopy(base_spec())
    (raw[section] if section else raw)[key] = value
    with pytest.raises(VoicegateError) as err:
        check_spec(raw, "lv-test.yaml")
    assert str(err.value).startswith(f"lv-test.yaml: {expected}")


def test_duplicate_yaml_key_is_refused_with_one_line(tmp_path: Path) -> None:
    path = make_workspace(tmp_path)
    text = path.read_text(encoding="utf-8").replace("seeds:\n", "seeds: [7]\nseeds:\n", 1)
    path.write_text(text, encoding="utf-8")
    before = tree_snapshot(tmp_path)
    done = cli(tmp_path, "register", "lv-test")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert "lv-test.yaml" in lines[0] and "duplicate key 'seeds'" in lines[0]
    assert tree_snapshot(tmp_path) == before


def test_duplicate_key_in_a_flow_mapping_on_one_line(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("copying: {n: 8, n: 9}\n", encoding="utf-8")
    with pytest.raises(VoicegateError, match="duplicate key 'n'"):
        read_spec_yaml(path)


@pytest.mark.parametrize("name", ["lv-marlowe", "lv-hemingway"])
def test_strict_yaml_reads_what_safe_load_reads(name: str) -> None:
    """The registered spec hash is of the parsed data: the strict loader must not change it."""
    path = REPO / "preregistrations" / f"{name}.yaml"
    assert sha256_json(read_spec_yaml(path)) == sha256_json(yaml.safe_load(path.read_text(encoding="utf-8")))


def test_probe_file_is_checked_by_its_schema(tmp_path: Path) -> None:
    path = make_workspace(tmp_path)
    (tmp_path / "probes").mkdir()
    (tmp_path / "probes" / "p.yaml").write_text(
        "probes:\n  - {id: 1, prompt: Add 2 and 2., check: {exact: '4'}}\n"
        "  - {id: two, prompt: Say no., check: {refuse: 'yes please'}}\n", encoding="utf-8")
    raw = base_spec()
    raw["damage"]["probes"] = "probes/p.yaml"
    _write(path, raw)
    with pytest.raises(VoicegateError, match=r"damage\.probes\[1\]\.check\.refuse: .*must be true or false"):
        load_spec(tmp_path, "lv-test")
    assert PROBES_SCHEMA.sections()["probes[]"] == {"id": True, "prompt": True, "check": True}


# -- one seat-URL check ---------------------------------------------------------------------


@pytest.mark.parametrize("url", ["ftp://seat", "http://", "seat:8000/v1", "", None, 8000])
def test_seat_url_check_refuses(url: object) -> None:
    with pytest.raises(VoicegateError, match=r"^--seat: must be"):
        check_seat_url(url, "--seat")


def test_seat_url_check_strips_the_slash() -> None:
    assert check_seat_url("http://127.0.0.1:8027/v1/", "seat URL") == "http://127.0.0.1:8027/v1"
