"""voicegate: pre-registered ship gates for author-voice LoRA adapters."""

import sys
from typing import TYPE_CHECKING, Any

# Checked before anything else is imported: the modules below use Python 3.11's syntax and library, so an older
# interpreter (a checkout run with PYTHONPATH, a pip told to ignore requires-python) would fail in a traceback.
MIN_PYTHON = (3, 11)
if tuple(sys.version_info[:2]) < MIN_PYTHON:
    sys.stderr.write(f"voicegate: needs Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer, and "
                     f"{sys.executable} is {sys.version.split()[0]}: make the virtualenv with a newer python "
                     f"(README, Set up)\n")
    raise SystemExit(2)

from os import PathLike

from voicegate._errors import GateFailed, SeatUnreachable, VoicegateError
from voicegate._version import __version__

if TYPE_CHECKING:
    from voicegate import generate
    from voicegate.artifacts import FileCheck
    from voicegate.gate import amend, calibrate, note, register, score, ship
    from voicegate.spec import RULES, FloorRule, GateSpec, get_rule, load_spec

# The use cases, one function each, as the commands of the same names run them (README, "From Python"); then
# the errors they raise (exit codes 1, 3 and 2) and what a caller needs to read a spec and its rules.
__all__ = ["RULES", "FloorRule", "GateFailed", "GateSpec", "SeatUnreachable", "VoicegateError", "__version__",
           "amend", "calibrate", "generate", "get_rule", "load_spec", "note", "register", "score", "ship", "verify"]

# Loaded on first use, so `import voicegate` (and `voicegate --help`) stays cheap.
_LAZY = {"RULES": "voicegate.spec", "FloorRule": "voicegate.spec", "get_rule": "voicegate.spec",
         "GateSpec": "voicegate.spec", "load_spec": "voicegate.spec",
         **{name: "voicegate.gate" for name in ("amend", "calibrate", "note", "register", "score", "ship")}}


def verify(root: str | PathLike[str] | None = None, gate: str | None = None) -> "list[FileCheck]":
    """Every artifact's append-only chain checked (one gate's, or every registered gate's), as `voicegate verify`
    does: each `FileCheck` says `.ok` and, when not, `.problem`."""
    from voicegate.artifacts import verify_gates
    from voicegate.spec import workspace_root

    return verify_gates(workspace_root(root), gate)


def __getattr__(name: str) -> Any:
    import importlib

    if name == "generate":
        # The subpackage itself, callable as the use case (`voicegate.generate(root, gate)`): once it is
        # imported, Python binds this very name to it, so a function of the same name here would not last.
        return importlib.import_module("voicegate.generate")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'voicegate' has no attribute {name!r}")
