"""A registered sequential design at `generate`: the next look's seeds only.

A sequential design is decided at its looks (`floor.looks`): `generate` makes the seeds of the first look not yet
complete and stops there, so `score` can decide at that look before more seeds are spent. Where the look does not
decide (CONTINUE), `generate` again makes the next one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from voicegate.spec import GateSpec


def next_look(spec: GateSpec, rows: Sequence[Mapping[str, Any]]) -> GateSpec:
    """`spec` with its seeds cut to the first look whose seeds are not all stored (unchanged: a fixed design,
    or every look stored)."""
    if spec.looks is None:
        return spec
    cells = Counter((str(r["arm"]), int(r["seed"])) for r in rows if r.get("kind", "voice") == "voice")
    complete = {s for s in spec.seeds if all(cells[(a.name, s)] >= len(spec.prompts) for a in spec.arms)}
    for n in spec.looks:
        if not set(spec.seeds[:n]) <= complete:
            return replace(spec, seeds=spec.seeds[:n])
    return spec
