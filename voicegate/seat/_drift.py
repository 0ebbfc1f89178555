"""Drift between what a seat serves (`/v1/models`) and what its compose file persists.

A runtime-loaded adapter answers requests exactly like a persisted one — until the next
`compose up -d`, when it is gone. A listed adapter the seat is not serving means the
container was not recreated since the list changed (or the load failed). Both are
invisible from a single request, so they are compared here, name by name and path by path.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from voicegate.seat._lora_modules import ComposeLoras


def _norm(path: str | None) -> str | None:
    if path is None:
        return None
    p = posixpath.normpath(path)
    return p


@dataclass
class Drift:
    """The comparison, ready to print or dump as JSON."""

    base: list[str]                                  # models with parent null
    in_step: list[dict[str, Any]] = field(default_factory=list)
    served_not_persisted: list[dict[str, Any]] = field(default_factory=list)
    persisted_not_served: list[dict[str, Any]] = field(default_factory=list)
    path_mismatch: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def drifted(self) -> bool:
        return bool(self.served_not_persisted or self.persisted_not_served or self.path_mismatch)

    def summary(self) -> str:
        if not self.drifted:
            return f"in step: {len(self.in_step)} adapter(s) served and persisted"
        parts = []
        if self.served_not_persisted:
            parts.append(f"{len(self.served_not_persisted)} served but not persisted")
        if self.persisted_not_served:
            parts.append(f"{len(self.persisted_not_served)} persisted but not served")
        if self.path_mismatch:
            parts.append(f"{len(self.path_mismatch)} path mismatch")
        return "drift: " + ", ".join(parts)

    def as_json(self) -> dict[str, Any]:
        return {"drift": self.drifted, "summary": self.summary(), "base": self.base,
                "in_step": self.in_step, "served_not_persisted": self.served_not_persisted,
                "persisted_not_served": self.persisted_not_served, "path_mismatch": self.path_mismatch,
                "warnings": self.warnings}


def compare(models: Iterable[Any], compose: ComposeLoras) -> Drift:
    """Compare model cards (``id``, ``root``, ``parent``) with the compose file's adapters."""
    cards = list(models)
    adapters = {c.id: c for c in cards if c.parent is not None}
    drift = Drift(base=[c.id for c in cards if c.parent is None], warnings=list(compose.warnings))
    persisted = compose.by_name()

    for name in sorted(adapters):
        card = adapters[name]
        mod = persisted.get(name)
        if mod is None:
            drift.served_not_persisted.append({
                "name": name, "root": card.root, "parent": card.parent,
                "why": "gone on the next `compose up -d`: loaded at run time, not in --lora-modules"})
        elif _norm(card.root) != _norm(mod.path):
            drift.path_mismatch.append({
                "name": name, "served_root": card.root, "compose_path": mod.path, "host_path": mod.host_path,
                "service": mod.service,
                "why": "the next `compose up -d` serves this name from the compose path, not the one serving now"})
        else:
            drift.in_step.append({"name": name, "root": card.root, "host_path": mod.host_path,
                                  "service": mod.service})
        if mod is not None and mod.base_model_name and card.parent != mod.base_model_name:
            drift.warnings.append(f"{name}: compose names base_model_name {mod.base_model_name!r}, "
                                  f"the seat reports parent {card.parent!r}")

    for name in sorted(set(persisted) - set(adapters)):
        mod = persisted[name]
        why = "listed in --lora-modules but not served: the container was not recreated since, or the load failed"
        if name in drift.base:
            why = "listed in --lora-modules but served as a base model name"
        drift.persisted_not_served.append({"name": name, "compose_path": mod.path, "host_path": mod.host_path,
                                           "service": mod.service, "why": why})

    # The base the compose file serves under should be the one the seat answers to.
    for svc in compose.services:
        names = svc.flag("--served-model-name")
        if names and drift.base and not set(names) & set(drift.base):
            drift.warnings.append(f"service {svc.name} serves the base as {', '.join(names)}, "
                                  f"but the seat's base is {', '.join(drift.base)}: is this the right compose file?")
    return drift
