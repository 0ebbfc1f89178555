"""The power a later gate may quote: calibrations chained in other gates' records, of its author on its carrier.

`calibrate` appends a calibration entry to a pilot's record (`artifacts.record_calibration`); `register` and the
error-rate statement quote it from there, never from a run directory's calibration file (a cache anyone can edit
or delete), and only for the same author on the same carrier.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from voicegate.spec import GateSpec


@dataclass(frozen=True)
class PilotPower:
    """The deciding rule's power at K seeds, as a pilot's chained calibration entry states it."""

    power: float            # the mean would-ship share of the pilot's real voices of the author
    low: float              # the mean of their 95% intervals' ends (the pilot's sampling included)
    high: float
    voices: int
    pilot: str              # the pilot gate
    record: str             # its record, as the workspace names it
    entry: int              # the calibration entry's number in that record
    time: str

    def text(self) -> str:
        return f"{self.power:.2f} [{self.low:.2f}, {self.high:.2f}]"


def _calibrations(spec: GateSpec) -> Iterator[tuple[str, str, Any]]:
    """(pilot gate, its record as the workspace names it, entry) of every calibration entry chained in another
    gate's record for `spec`'s author on its carrier, with a summary."""
    from voicegate.artifacts import gate_records, recorded_entries
    from voicegate.spec import shown_path

    for gate, record in gate_records(spec.root).items():
        if gate == spec.gate:
            continue
        for e in recorded_entries(record):
            data = e.summary
            if (e.kind == "calibration" and isinstance(data, dict) and data.get("carrier") == spec.seat.base_model
                    and data.get("author") == spec.author):
                yield gate, shown_path(spec.root, record), e


def _real_voices(arms: Mapping[str, Any], rule: str, author: str) -> list[str]:
    """The pilot's real voices of `author` among `arms` (name -> its summary): those it says are the author's
    (`voice_of`), else those that ship under `rule` on every stored seed (VOICE PASS, and SPECIFIC where checked)."""
    if any(c.get("voice_of") is not None for c in arms.values()):
        # the pilot says whose voice each arm is: the gate author's are the real ones, whatever they did
        return [name for name, c in arms.items() if c.get("voice_of") == author]
    return [name for name, c in arms.items() if rule in c["rules"]
            and c["rules"][rule]["all_seeds"].get("voice") == "PASS"  # not-a-result: a calibration's summary
            and c["rules"][rule]["all_seeds"].get("specific", "SPECIFIC") == "SPECIFIC"]


def _mean(shares: list[Mapping[str, Any]], key: str) -> float:
    return sum(float(x[key]) for x in shares) / len(shares) if shares else 0.0


def pilot_power(spec: GateSpec, rule: str) -> dict[int, PilotPower]:
    """K -> `rule`'s power from the calibration entries chained in other gates' records for the same author on the
    same carrier (`rule`: the one in force, an amendment's where one decides; not the spec's registered rule, which
    an amendment no longer decides by): the mean would-ship share of the pilot's real voices — its arms of this
    author where the pilot says whose voice each arm is (`arms[].voice_of`), else those that ship under the rule
    on every stored seed (VOICE PASS, and SPECIFIC where checked), which can take in another author's voice.
    Another author's pilot says nothing about this one's power (a Dickens gate was quoted Anne Brontë's 0.48
    where its own gave 0.035). A calibration file in a run directory is never read: a quoted power rests on an
    entry the chain and git vouch for. The newest entry of a K wins when several pilots have one."""
    found: dict[int, PilotPower] = {}
    for gate, record, e in _calibrations(spec):
        data = e.summary
        try:
            arms = {name: c for name, c in data["candidates"].items() if rule in c["rules"]}
            ships = [arms[name]["rules"][rule]["would_ship"] for name in _real_voices(arms, rule, spec.author)]
            k = int(data["seeds_per_arm"])
            quoted = PilotPower(power=_mean(ships, "share"), low=_mean(ships, "low"), high=_mean(ships, "high"),
                                voices=len(ships), pilot=gate, record=record, entry=e.number, time=e.time)
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a summary this version cannot read: no design check from it
        if ships and (k not in found or e.time >= found[k].time):
            found[k] = quoted
    return dict(sorted(found.items()))


@dataclass(frozen=True)
class PilotDesign:
    """A sequential design's operating characteristics on a pilot, as its chained calibration entry states them."""

    power: float            # the mean would-ship share of the pilot's real voices of the author under the design
    low: float
    high: float
    expected_seeds: float   # their mean seeds per arm used
    false_pass: float | None  # the mean design PASS share of its A-vs-A arms (None: none registered)
    voices: int
    pilot: str
    record: str
    entry: int
    time: str

    def text(self) -> str:
        return f"{self.power:.2f} [{self.low:.2f}, {self.high:.2f}]"


def pilot_design(spec: GateSpec, design: list[dict[str, object]]) -> PilotDesign | None:
    """The newest calibration entry in another gate's record, of this author on this carrier, that simulated this
    very design (the same rule, looks and boundaries: `design` as the registration records them). Its real voices
    are chosen as `pilot_power` chooses them, under the design's rule on every stored seed where the pilot does
    not say whose voice an arm is."""
    rule = spec.floor_rule
    found: PilotDesign | None = None
    for gate, record, e in _calibrations(spec):
        data = e.summary
        try:
            sq = data.get("sequential")
            if sq is None or sq["rule"] != rule or sq["looks"] != design:
                continue
            arms = {name: c for name, c in data["candidates"].items() if name in sq["candidates"]}
            real = [sq["candidates"][name] for name in _real_voices(arms, rule, spec.author)]
            ships = [r["would_ship"] for r in real]
            fresh = [float(a["false_pass"]["share"]) for a in sq["a_vs_a"].values()]
            quoted = PilotDesign(
                power=_mean(ships, "share"), low=_mean(ships, "low"), high=_mean(ships, "high"),
                expected_seeds=_mean(real, "expected_seeds"),
                false_pass=sum(fresh) / len(fresh) if fresh else None, voices=len(real), pilot=gate,
                record=record, entry=e.number, time=e.time)
        except (ValueError, KeyError, TypeError, AttributeError, ZeroDivisionError):
            continue  # a summary this version cannot read: no design check from it
        if real and (found is None or e.time >= found.time):
            found = quoted
    return found
