"""The gate spec: one declaration per key, validation, resolution, the floor rules, registration.

- `_schema`        every spec key declared once (kind, default, required, doc); the docs' tables
- `_types`         the kinds a value can have (no silent coercion)
- `_check`         validation, pure: parsed mapping in, checked values out
- `_resolve`       resolution: globs, prompt and probe files, paths, the environment
- `_model`         `GateSpec` and its parts, defaults taken from `_schema`
- `_spec`          `load_spec`: read (duplicate keys refused), check, resolve
- `check_seat_url` the one seat-URL check is the root's `_seat_url.py` (spec, `generate --seat`, `seat --seat`)
- `_artifact_kinds` the artifact kinds (record, README, compose): names, chain format, templates, requirements
- `_views`         the voice views as the spec sees them: name, keys, model, requirements (one registry)
- `_rules`         the floor rules, named, versioned and dated (docs/design.md §3, §6b)
- `_registration`  freezing a spec: hashes, the git commit, the registration record
- `_weights`       an adapter's identity outside the seat: its weights file's sha256 (pinned at register)
- `_workspace`     where a workspace is and how its paths are shown (strict YAML is the root's `_yaml.py`)
"""

from voicegate._yaml import load_strict
from voicegate.spec._artifact_kinds import ARTIFACT_KINDS, EVENTS, ArtifactKind, Event, artifact_kind
from voicegate.spec._artifact_paths import check_artifact_paths, check_output_path, check_regular
from voicegate.spec._checks import CHECKS
from voicegate.spec._model import Copying, Damage
from voicegate.spec._prospective import (
    Citation,
    check_citation,
    commit_time,
    commits_after,
    find_citation,
    head,
    is_ancestor,
    numbers_at,
    recorded_numbers_at,
)
from voicegate.spec._registration import (
    Registration,
    check_against,
    check_registered,
    check_scored_under,
    committed_registration,
    load_registration,
    register,
    registered,
    scored_under,
    spec_sha256,
    uncommitted_pins,
    words_warning,
)
from voicegate.spec._resolve import DATA_DIR_ENV, artifact_gaps, impostor_warnings, resolve_path, thin_evidence
from voicegate.spec._rules import (
    RULES,
    SMALLEST_EFFECT,
    WELCH_ALPHA,
    Effect,
    FloorRule,
    PromptParts,
    fallback_note,
    flip_seed,
    get_rule,
    in_registry_order,
    rule_family_note,
    rule_signature,
    rules_in_force,
    seed_check,
    sign_flip,
    smallest_in_units,
    spread,
    t_quantile,
    welch,
    zero_floor_fails,
)
from voicegate.spec._schema import Role
from voicegate.spec._sequential import Look, LookDecision, Operating, boundaries, check_looks, decide_look
from voicegate.spec._spec import GateSpec, check_gate_name, load_spec, name_pattern, no_such_spec, spec_path
from voicegate.spec._views import (
    HISTORICAL_SIGNATURE_KEYS,
    VIEW_SPECS,
    WIDE_FACTOR,
    Model,
    ViewSpec,
)
from voicegate.spec._weights import WEIGHTS_FILE, weights_file
from voicegate.spec._workspace import as_named, git, git_env, is_git_worktree, is_shallow, shown_path, workspace_root

__all__ = [
    "ARTIFACT_KINDS",
    "CHECKS",
    "DATA_DIR_ENV",
    "EVENTS",
    "HISTORICAL_SIGNATURE_KEYS",
    "RULES",
    "SMALLEST_EFFECT",
    "VIEW_SPECS",
    "WEIGHTS_FILE",
    "WELCH_ALPHA",
    "WIDE_FACTOR",
    "ArtifactKind",
    "Citation",
    "Copying",
    "Damage",
    "Effect",
    "Event",
    "FloorRule",
    "GateSpec",
    "Look",
    "LookDecision",
    "Model",
    "Operating",
    "PromptParts",
    "Registration",
    "Role",
    "ViewSpec",
    "artifact_gaps",
    "artifact_kind",
    "as_named",
    "boundaries",
    "check_against",
    "check_artifact_paths",
    "check_citation",
    "check_gate_name",
    "check_looks",
    "check_output_path",
    "check_registered",
    "check_regular",
    "check_scored_under",
    "commit_time",
    "commits_after",
    "committed_registration",
    "decide_look",
    "fallback_note",
    "find_citation",
    "flip_seed",
    "get_rule",
    "git",
    "git_env",
    "head",
    "impostor_warnings",
    "in_registry_order",
    "is_ancestor",
    "is_git_worktree",
    "is_shallow",
    "load_registration",
    "load_spec",
    "load_strict",
    "name_pattern",
    "no_such_spec",
    "numbers_at",
    "recorded_numbers_at",
    "register",
    "registered",
    "resolve_path",
    "rule_family_note",
    "rule_signature",
    "rules_in_force",
    "scored_under",
    "seed_check",
    "shown_path",
    "sign_flip",
    "smallest_in_units",
    "spec_path",
    "spec_sha256",
    "spread",
    "t_quantile",
    "thin_evidence",
    "uncommitted_pins",
    "weights_file",
    "welch",
    "words_warning",
    "workspace_root",
    "zero_floor_fails",
]
