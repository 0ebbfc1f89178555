"""The decision in force: after an amendment, the amended result stands for the generations it re-scored.

`voicegate score` on the same generations computes the registered rule's result
again; the record is current, and what a reader must be shown is the amendment's
decision, with what it was amended from. Read from recorded.json and the
amendments file, the two things only the artifact writers own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from voicegate.artifacts._entries import amendments, load_state, result_sha256
from voicegate.scoring import GateResult
from voicegate.spec import GateSpec


@dataclass(frozen=True)
class InForce:
    """An amendment's result that still stands for these generations, and where it came from."""

    result: GateResult
    amended_from: str
    time: str

    def note(self) -> str:
        return (f"as amended {self.time}: {self.amended_from} -> {self.result.rule} on these same generations; "
                f"the decision in force is under {self.result.rule}")


def in_force(spec: GateSpec, result: GateResult) -> InForce | None:
    """The recorded amendment that supersedes `result` (same generations, another rule), if any."""
    state = load_state(spec) or {}
    if state.get("current_kind") != "amend" or not isinstance(state.get("current"), dict):
        return None
    if (state.get("results") or {}).get(result.rule) != result_sha256(result):
        return None  # not the result that was amended: this score is news, and is recorded as such
    current = GateResult.from_json(state["current"])
    if current.rule == result.rule or current.generations_sha256 != result.generations_sha256:
        return None
    newest: dict[str, Any] = next(reversed(amendments(spec)), {})
    return InForce(current, str(newest.get("rule_from", result.rule)), str(state.get("time", "?")))
