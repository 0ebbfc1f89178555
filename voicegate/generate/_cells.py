"""Cells: the unit a gate is spread over replicas by.

A cell is one (kind, seed, prompt) with every arm. Arms are compared cell by cell
(the same prompt under the same request seed), so every arm of a cell must come
from one process: a cell runs whole on one replica, recorded on each row as
``replica``. Which replica takes a cell is decided at run time by free capacity;
what this module decides, from the stored rows alone, is where an unfinished cell
may continue:

- a cell with no stored row is *free*: any replica may take it;
- a cell whose stored rows all came from one replica that is in this run's set is
  *pinned* there: only its missing arms are sent, to that replica;
- any other partly stored cell (its replica is gone, or its rows already disagree)
  is re-run whole on one replica, and its stored rows are *orphans*: moved to the
  quarantine file, never deleted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from voicegate.generate._schedule import Job
from voicegate.run import CellKey, row_key
from voicegate.run import cell_key as row_cell


def cell_key(item: Job | Mapping[str, Any]) -> CellKey:
    if isinstance(item, Job):
        return (item.kind, item.seed, item.prompt_id)
    return row_cell(item)


def replica_of(row: Mapping[str, Any]) -> str | None:
    """The replica a stored row came from (rows made before replicas name their seat URL)."""
    value = row.get("replica") or row.get("seat_url")
    return str(value) if value else None


@dataclass(frozen=True)
class Cell:
    index: int                    # its place in schedule order
    key: CellKey
    jobs: tuple[Job, ...]         # what to send: every arm, or a pinned cell's missing arms
    pinned: str | None = None     # the replica its stored rows came from

    def describe(self) -> str:
        kind, seed, prompt = self.key
        return f"({kind}, seed {seed}, {prompt})"


@dataclass
class CellPlan:
    free: list[Cell] = field(default_factory=list)
    pinned: dict[str, list[Cell]] = field(default_factory=dict)
    orphans: list[dict[str, Any]] = field(default_factory=list)

    @property
    def cells(self) -> int:
        return len(self.free) + sum(len(v) for v in self.pinned.values())


def build_cells(jobs: Sequence[Job]) -> list[Cell]:
    """Every cell of the schedule, in schedule order, each with all its arms' jobs."""
    grouped: dict[CellKey, list[Job]] = {}
    for j in jobs:
        grouped.setdefault(cell_key(j), []).append(j)
    return [Cell(i, key, tuple(js)) for i, (key, js) in enumerate(grouped.items())]


def plan_cells(jobs: Sequence[Job], rows: Iterable[Mapping[str, Any]], replicas: Sequence[str]) -> CellPlan:
    """Which cells are left, and where each may run (see the module docstring)."""
    stored: dict[tuple[str, str, int, str], Mapping[str, Any]] = {row_key(r): r for r in rows}
    plan = CellPlan()
    for cell in build_cells(jobs):
        have = [stored[j.key] for j in cell.jobs if j.key in stored]
        missing = tuple(j for j in cell.jobs if j.key not in stored)
        if not missing:
            continue
        if not have:
            plan.free.append(cell)
            continue
        where = {replica_of(r) for r in have}
        home = next(iter(where)) if len(where) == 1 else None
        if home is not None and home in replicas:
            plan.pinned.setdefault(home, []).append(Cell(cell.index, cell.key, missing, pinned=home))
        else:
            plan.orphans.extend(dict(r) for r in have)
            plan.free.append(cell)
    return plan
