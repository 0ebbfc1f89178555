"""The gate spec: one declaration per key, validation, resolution, the floor rules, registration.

- `_schema`        every spec key declared once (kind, default, required, doc); the docs' tables
- `_types`         the kinds a value can have (no silent coercion)
- `_check`         validation, pure: parsed mapping in, checked values out
- `_resolve`       resolution: globs, prompt and probe files, paths, the environment
- `_model`         `GateSpec` and its parts, defaults taken from `_schema`
- `_spec`          `load_spec`: read (duplicate keys refused), check, resolve
- `_seat_url`      the one seat-URL check (spec, `generate --seat`, `seat --seat`)
- `_rules`         the floor rules, named, versioned and dated (DESIGN.md §3, §6b)
- `_registration`  freezing a spec: hashes, the git commit, the registration record
- `_workspace`     where a workspace is and how its paths are shown
"""

from voicegate.spec._rules import RULES, FloorRule, get_rule
from voicegate.spec._spec import GateSpec, load_spec

__all__ = ["RULES", "FloorRule", "GateSpec", "get_rule", "load_spec"]
