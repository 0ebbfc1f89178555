"""An adapter's identity outside the seat: the sha256 of its weights file.

A seat names what it serves (`/v1/models`: a name and a root); whether those are the weights
the gate means is the seat's word. When an adapter's directory is reachable from here (its
``adapter_path`` in the spec, which it is whenever the adapter README is an artifact), the
sha256 of its ``adapter_model.safetensors`` is the identity: `register` pins it, and every
generate session keys its references by it, so two gates or sessions that ask the same request
of the same file can be held to each other's answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from voicegate._hashing import sha256_file
from voicegate.spec._model import GateSpec

WEIGHTS_FILE = "adapter_model.safetensors"


def weights_file(spec: GateSpec, adapter_dir: str | None) -> Path | None:
    """The weights file of an adapter directory as the spec names it (relative: to the workspace), if reachable."""
    if not adapter_dir:
        return None
    path = Path(adapter_dir)
    if not path.is_absolute():
        path = spec.root / path
    f = path / WEIGHTS_FILE
    return f if f.is_file() else None


def adapter_weights(spec: GateSpec) -> dict[str, dict[str, Any]]:
    """Each candidate whose weights file is reachable: {arm: {"model", "file", "sha256"}} (pinned at register)."""
    out: dict[str, dict[str, Any]] = {}
    for arm in spec.candidates:
        f = weights_file(spec, arm.adapter_path)
        if f is not None:
            out[arm.name] = {"model": arm.model, "file": str(f), "sha256": sha256_file(f)}
    return out
