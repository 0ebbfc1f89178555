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

from voicegate._errors import GateFailed, SeatUnreachable, VoicegateError
from voicegate._version import __version__

if TYPE_CHECKING:
    from voicegate.spec import RULES, FloorRule, GateSpec, get_rule, load_spec

__all__ = ["RULES", "FloorRule", "GateFailed", "GateSpec", "SeatUnreachable", "VoicegateError",
           "__version__", "get_rule", "load_spec"]

# Loaded on first use, so `import voicegate` (and `voicegate --help`) stays cheap.
_LAZY = {"RULES": "voicegate.spec._rules", "FloorRule": "voicegate.spec._rules", "get_rule": "voicegate.spec._rules",
         "GateSpec": "voicegate.spec._spec", "load_spec": "voicegate.spec._spec"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'voicegate' has no attribute {name!r}")
