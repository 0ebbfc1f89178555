"""voicegate: pre-registered ship gates for author-voice LoRA adapters."""

from voicegate._errors import GateFailed, SeatUnreachable, VoicegateError
from voicegate._version import __version__
from voicegate.spec._rules import RULES, FloorRule, get_rule
from voicegate.spec._spec import GateSpec, load_spec

__all__ = ["RULES", "FloorRule", "GateFailed", "GateSpec", "SeatUnreachable", "VoicegateError",
           "__version__", "get_rule", "load_spec"]
