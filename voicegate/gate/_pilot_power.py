"""The power a later gate may quote: calibrations chained in other gates' records, of its author on its carrier.

`calibrate` appends a calibration entry to a pilot's record (`artifacts.record_calibration`); `register` and the
error-rate statement quote it from there, never from a run directory's calibration file (a cache anyone can edit
or delete), and only for the same author on the same carrier.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def pilot_power(spec: GateSpec, rule: str) -> dict[int, PilotPower]:
    """K -> `rule`'s power from the calibration entries chained in other gates' records for the same author on the
    same carrier (`rule`: the one in force, an amendment's where one decides; not the spec's registered rule, which
    an amendment no longer decides by): the mean would-ship share of the pilot's real voices — its arms of this
    author where the pilot says whose voice each arm is (`arms[].voice_of`), else those that ship under the rule
    on every stored seed (VOICE PASS, and SPECIFIC where checked), which can take in another author's voice.
    Another author's pilot says nothing about this one's power (a Dickens gate was quoted Anne Brontë's 0.48
    where its own gave 0.035). A calibration file in a run directory is never read: a quoted power rests on an
    entry the chain and git vouch for. The newest entry of a K wins when several pilots have one."""
    from voicegate.artifacts import gate_records, recorded_entries
    from voicegate.spec import shown_path

    found: dict[int, PilotPower] = {}
    for gate, record in gate_records(spec.root).items():
        if gate == spec.gate:
            continue
        for e in recorded_entries(record):
            data = e.summary
            if e.kind != "calibration" or data is None:
                continue
            try:
                if data.get("carrier") != spec.seat.base_model or data.get("author") != spec.author:
                    continue
                arms = [c for c in data["candidates"].values() if rule in c["rules"]]
                if any(c.get("voice_of") is not None for c in arms):
                    # the pilot says whose voice each arm is: the gate author's are the real ones, whatever they did
                    real = [c["rules"][rule] for c in arms if c.get("voice_of") == spec.author]
                else:
                    real = [r for r in (c["rules"][rule] for c in arms)
                            if r["all_seeds"].get("voice") == "PASS"  # not-a-result: a calibration's summary
                            and r["all_seeds"].get("specific", "SPECIFIC") == "SPECIFIC"]
                ships = [r["would_ship"] for r in real]
                k = int(data["seeds_per_arm"])
                quoted = PilotPower(
                    power=sum(float(x["share"]) for x in ships) / len(ships) if ships else 0.0,
                    low=sum(float(x["low"]) for x in ships) / len(ships) if ships else 0.0,
                    high=sum(float(x["high"]) for x in ships) / len(ships) if ships else 0.0,
                    voices=len(ships), pilot=gate, record=shown_path(spec.root, record), entry=e.number, time=e.time)
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
    from voicegate.artifacts import gate_records, recorded_entries
    from voicegate.spec import shown_path

    rule = spec.floor_rule
    found: PilotDesign | None = None
    for gate, record in gate_records(spec.root).items():
        if gate == spec.gate:
            continue
        for e in recorded_entries(record):
            data = e.summary
            if e.kind != "calibration" or data is None or "sequential" not in data:
                continue
            try:
                sq = data["sequential"]
                if (data.get("carrier") != spec.seat.base_model or data.get("author") != spec.author
                        or sq["rule"] != rule or sq["looks"] != design):
                    continue
                arms = {name: c for name, c in data["candidates"].items() if name in sq["candidates"]}
                if any(c.get("voice_of") is not None for c in arms.values()):
                    real = [sq["candidates"][n] for n, c in arms.items() if c.get("voice_of") == spec.author]
                else:
                    real = [sq["candidates"][n] for n, c in arms.items() if rule in c["rules"]
                            and c["rules"][rule]["all_seeds"].get("voice") == "PASS"  # not-a-result: a summary
                            and c["rules"][rule]["all_seeds"].get("specific", "SPECIFIC") == "SPECIFIC"]
                fresh = [float(a["false_pass"]["share"]) for a in sq["a_vs_a"].values()]
                n = len(real)
                quoted = PilotDesign(
                    power=sum(float(r["would_ship"]["share"]) for r in real) / n if n else 0.0,
                    low=sum(float(r["would_ship"]["low"]) for r in real) / n if n else 0.0,
                    high=sum(float(r["would_ship"]["high"]) for r in real) / n if n else 0.0,
                    expected_seeds=sum(float(r["expected_seeds"]) for r in real) / n if n else 0.0,
                    false_pass=sum(fresh) / len(fresh) if fresh else None, voices=n, pilot=gate,
                    record=shown_path(spec.root, record), entry=e.number, time=e.time)
            except (ValueError, KeyError, TypeError, AttributeError, ZeroDivisionError):
                continue  # a summary this version cannot read: no design check from it
            if n and (found is None or e.time >= found.time):
                found = quoted
    return found
