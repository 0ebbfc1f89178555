"""The plan for one seat, and the refusals that come from what it serves, before any request.

The seat is asked what it serves (``/v1/models``, ``/version``) and the run is refused,
before any request, on a base the seat does not serve, a candidate it neither serves nor
can load (no ``adapter_path``), a served adapter on another base, and a seat that is not
the one an earlier part of this run used (another vLLM version, or an arm served from
other weights). Candidates the seat does not serve yet are the plan's loads. With
replicas, each replica gets its own plan once `seat._identity` found them one seat.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from voicegate._errors import VoicegateError
from voicegate.seat import ModelCard, seat_urls
from voicegate.spec import GateSpec


def resolve_seat_urls(spec: GateSpec, explicit: Sequence[str] = ()) -> list[str]:
    """The replicas: every --seat, else $VOICEGATE_SEAT_URL, else the spec's seat.replicas, else its seat.url
    (`seat.seat_urls`, the one resolver the seat commands use too)."""
    return seat_urls(explicit, lambda: [(u, "seat URL") for u in spec.seat.replicas or (spec.seat.url,)])


class Load(NamedTuple):
    """A candidate the seat does not serve yet, and the adapter_path the spec gives to load it from."""

    model: str
    adapter_path: str


@dataclass
class SeatPlan:
    to_load: list[Load]
    ours: set[str]                 # models voicegate loaded (now, or in an earlier part of this run)
    cards: list[ModelCard]
    version: str | None


def seat_plan(spec: GateSpec, url: str, cards: list[ModelCard], version: str | None,
              manifest: dict[str, Any] | None, loaded_before: set[str]) -> SeatPlan:
    served = {c.id: c for c in cards}
    listing = ", ".join(sorted(served)) or "nothing"
    base = spec.base
    if base.model not in served:
        raise VoicegateError(f"the seat at {url} does not serve the base model {base.model!r} "
                             f"(arm {base.name}); it serves: {listing}")
    # Loaded by an earlier part of this run: in its manifest, or only in the tracking file when
    # it was killed between the load and the manifest's first write.
    prev_loaded = set(manifest.get("runtime_loaded", [])) if manifest else set()
    prev_loaded |= loaded_before
    to_load: list[Load] = []
    ours: set[str] = set()
    for arm in spec.candidates:
        card = served.get(arm.model)
        if card is None:
            if not arm.adapter_path:
                raise VoicegateError(
                    f"candidate {arm.name}: the seat at {url} does not serve {arm.model!r} and the spec gives "
                    f"no adapter_path to load it from (the seat serves: {listing})")
            to_load.append(Load(arm.model, arm.adapter_path))
        else:
            # Harness-matched means one process: an adapter must sit on the base arm's model.
            if card.parent is not None and card.parent != base.model:
                raise VoicegateError(
                    f"candidate {arm.name}: {arm.model!r} is an adapter on {card.parent!r}, not on the base "
                    f"arm's {base.model!r}; arms must come from the same base in the same seat")
            if arm.model in prev_loaded:
                ours.add(arm.model)  # loaded by an earlier, interrupted part of this run
    if manifest is not None:
        check_same_seat(spec, manifest, url, cards, version, to_load)
    return SeatPlan(to_load, ours, cards, version)


def check_same_seat(spec: GateSpec, manifest: dict[str, Any], url: str, cards: list[ModelCard],
                    version: str | None, to_load: list[Load]) -> None:
    seat = manifest.get("seat", {})
    was = seat.get("url")
    if seat.get("version") != version:
        raise VoicegateError(
            f"refusing to continue {spec.gate}: its run started on a seat reporting vLLM version "
            f"{seat.get('version')!r} ({was}); {url} reports {version!r}. Every arm must come from one seat")
    then = {m["id"]: m.get("root") for m in seat.get("models", [])}
    now: dict[str, Any] = {c.id: c.root for c in cards}
    now.update({a.model: a.adapter_path for a in to_load})
    for arm in spec.arms:
        a, b = then.get(arm.model), now.get(arm.model)
        if a is not None and b is not None and a != b:
            raise VoicegateError(
                f"refusing to continue {spec.gate}: {arm.model!r} was served from {a} when the run started "
                f"({was}) and is now served from {b} ({url}). Every arm must come from one seat")
