"""The gate spec: `preregistrations/<gate>.yaml`, loaded completely before anything touches the seat or a file.

Loading is two steps: `check_spec` (pure: the parsed text against the declarations
in `_schema`) and `resolve` (the files, globs and environment it names). Every
problem is a `VoicegateError` whose one line names the file, the key and what is
wrong. An unknown key is an error, because a typo that silently became a default
would change what was registered; so is a key written twice.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

from voicegate._errors import VoicegateError
from voicegate._yaml import load_strict
from voicegate.spec import _check
from voicegate.spec._check import DEFAULT_NAME_PATTERN, check_spec, failer
from voicegate.spec._model import GateSpec
from voicegate.spec._resolve import read_text, resolve, yaml_where
from voicegate.spec._resolve import resolve_path as _resolve
from voicegate.spec._schema import PROBES_SCHEMA, SPEC_SCHEMA

NAME_PATTERN_ENV = "VOICEGATE_NAME_PATTERN"

# The spec's parts (`Arm`, `Seat`, ...) are `_model`'s; this module re-exports only `GateSpec`, what its callers read.
__all__ = [
    "DEFAULT_NAME_PATTERN", "NAME_PATTERN_ENV", "SCHEMA", "GateSpec", "_resolve", "check_gate_name", "load_spec",
    "name_pattern", "no_such_spec", "parse_spec", "read_spec_yaml", "spec_path", "validate",
]

# Each mapping's keys and whether each is required, derived from the declarations
# (the reference docs are tested against it).
SCHEMA: dict[str, dict[str, bool]] = {**SPEC_SCHEMA.sections(), "probes[]": PROBES_SCHEMA.sections()["probes[]"]}


def name_pattern() -> str:
    """The adapter-name pattern: $VOICEGATE_NAME_PATTERN (checked to be a regular expression) or the default."""
    pattern = os.environ.get(NAME_PATTERN_ENV)
    if pattern is None:
        return DEFAULT_NAME_PATTERN
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise VoicegateError(f"${NAME_PATTERN_ENV} is not a valid regular expression ({exc}): "
                             f"{pattern!r:.80}") from None
    if not pattern:
        raise VoicegateError(f"${NAME_PATTERN_ENV} is empty; unset it for the default {DEFAULT_NAME_PATTERN}")
    return pattern


def check_gate_name(name: str) -> str:
    """Refuse a name before it becomes part of any path (the pattern may come from the environment)."""
    return _check.check_gate_name(name, name_pattern())


def spec_path(root: Path, gate: str) -> Path:
    return root / "preregistrations" / f"{check_gate_name(gate)}.yaml"


def no_such_spec(root: Path, gate: str) -> str:
    """What to say for a gate with no spec: the gate meant, when one is close; else how to start one."""
    import difflib

    path = spec_path(root, gate)
    if not (root / "preregistrations").is_dir():
        return (f"{root} is not a voicegate workspace (no preregistrations/); run in one, give -C DIR, "
                "or start one with `voicegate init`")
    yml = path.with_suffix(".yml")
    if yml.is_file():   # the name is right, the extension is the other one YAML uses
        return f"{path}: no such spec, but {yml.name} is there: voicegate reads <gate>.yaml; rename it to {path.name}"
    gates = sorted(p.stem for p in (root / "preregistrations").glob("*.yaml")
                   if not p.name.endswith(".registration.yaml"))
    close = difflib.get_close_matches(gate, gates, n=1, cutoff=0.6)
    if close:
        return f"{path}: no such spec; did you mean {close[0]}?"
    known = f" (the gates here: {', '.join(gates)})" if gates else ""
    return f"{path}: no such spec{known}; write it, then `voicegate register {gate}`"


def load_spec(root: Path, gate: str, *, for_register: bool = False) -> GateSpec:
    """Load, check and resolve `preregistrations/<gate>.yaml` under the workspace root.

    `for_register` also requires what the artifacts need (the adapter README's folder).
    """
    path = spec_path(root, gate)
    if not path.is_file():
        raise VoicegateError(no_such_spec(root, gate))
    spec = parse_spec(path, root, check_artifacts=for_register)
    if spec.gate != gate:
        raise failer(path)("gate", f"names {spec.gate!r} but the file is for {gate!r}")
    return spec


def read_spec_yaml(path: Path) -> Any:
    """The spec file's data, exactly as yaml.safe_load reads it, but with duplicate keys refused."""
    fail = failer(path)
    text = read_text(fail, "", path)
    try:
        return load_strict(text)
    except yaml.YAMLError as exc:
        raise fail("", f"not valid YAML ({yaml_where(exc)})") from None


def parse_spec(path: Path, root: Path, *, check_artifacts: bool = False) -> GateSpec:
    return validate(read_spec_yaml(path), path, root, check_artifacts=check_artifacts)


def validate(raw: Any, path: Path, root: Path, *, check_files: bool = True, check_artifacts: bool = False) -> GateSpec:
    """Check `raw` (pure), then resolve it against the workspace and the environment."""
    values = check_spec(raw, path, name_pattern=name_pattern())
    return resolve(values, raw, path, root, check_files=check_files, check_artifacts=check_artifacts)
