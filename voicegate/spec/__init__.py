"""The gate spec: one declaration per key, validation, resolution, the floor rules, registration.

- `_schema`        every spec key declared once (type, default, bounds, doc)
- `_spec`          `GateSpec` and `load_spec`: validate (pure), then resolve (files, globs, env)
- `_rules`         the floor rules, named, versioned and dated (DESIGN.md §3, §6b)
- `_registration`  freezing a spec: hashes, the git commit, the registration record
- `_workspace`     where a workspace is and how its paths are shown
"""

from voicegate.spec._rules import RULES, FloorRule, get_rule
from voicegate.spec._spec import GateSpec, load_spec

__all__ = ["RULES", "FloorRule", "GateSpec", "get_rule", "load_spec"]
