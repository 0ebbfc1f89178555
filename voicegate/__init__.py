"""voicegate: pre-registered ship gates for author-voice LoRA adapters."""

from voicegate._errors import GateFailed, SeatUnreachable, VoicegateError
from voicegate._rules import RULES, FloorRule, get_rule
from voicegate._spec import GateSpec, load_spec
from voicegate._version import __version__

__all__ = ["RULES", "FloorRule", "GateFailed", "GateSpec", "SeatUnreachable", "VoicegateError",
           "__version__", "get_rule", "load_spec"]
