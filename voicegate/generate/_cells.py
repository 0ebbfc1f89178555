"""Cells: the unit a gate is spread over replicas by (issue 13).

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
from voicegate.run import row_key

CellKey = tuple[str, int, str]   # (kind, seed, prompt_id)


def cell_key(item: Job | Mapping[str, Any]) -> CellKey:
    if isinstance(item, Job):
        return (item.kind, item.seed, item.prompt_id)
    return (str(item.get("kind", "voice")), int(item.get("seed", 0)), str(item.get("prompt_id")))


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


def mixed_cells(rows: Iterable[Mapping[str, Any]]) -> list[tuple[CellKey, tuple[str, ...]]]:
    """Cells whose rows name more than one replica (only rows that record a ``replica`` count)."""
    seen: dict[CellKey, set[str]] = {}
    for r in rows:
        if r.get("replica"):
            seen.setdefault(cell_key(r), set()).add(str(r["replica"]))
    return [(k, tuple(sorted(v))) for k, v in seen.items() if len(v) > 1]


def replica_shares(rows: Iterable[Mapping[str, Any]],
                   sessions: Iterable[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """Cells and rows per replica among `rows`, and tokens/s from the sessions' own measurements.

    Empty when no row names its replica (imported generations, runs made before replicas).
    """
    cells: dict[str, set[CellKey]] = {}
    counts: dict[str, int] = {}
    for r in rows:
        url = r.get("replica")
        if url:
            cells.setdefault(str(url), set()).add(cell_key(r))
            counts[str(url)] = counts.get(str(url), 0) + 1
    tokens: dict[str, float] = {}
    busy: dict[str, float] = {}
    for s in sessions:
        for p in s.get("per_replica") or () if isinstance(s, Mapping) else ():
            if isinstance(p, Mapping) and p.get("url") in cells:
                tokens[p["url"]] = tokens.get(p["url"], 0.0) + float(p.get("tokens") or 0)
                busy[p["url"]] = busy.get(p["url"], 0.0) + float(p.get("busy_s") or 0)
    return [{"url": url, "cells": len(cells[url]), "rows": counts[url],
             "tokens_per_s": round(tokens[url] / busy[url], 1) if busy.get(url) else None}
            for url in sorted(cells)]
