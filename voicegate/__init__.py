"""voicegate: pre-registered ship gates for author-voice LoRA adapters."""

from typing import TYPE_CHECKING, Any

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
