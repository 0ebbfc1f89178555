"""Each arm's weights held to what the same weights answered before (issue 35, build item 2).

Reproduction inside a session cannot see a seat that serves an arm the same wrong weights from
the start: the references are wrong too, and every check "reproduces". What the seat does not
control is an answer the same weights gave earlier. So:

- every arm gets an **identity key**: the sha256 of its ``adapter_model.safetensors`` when its
  directory is reachable (pinned by `register`, else hashed now), otherwise the seat's own word
  (its model name and root); and the seat's version (seeded sampling is only promised to repeat
  on one version);
- a calibrated session appends its references to the data dir's ``identity.jsonl``, keyed so;
- a later session (of this gate or another) asks, for each arm whose key is there from another
  session, one of those recorded requests again, alone in the arm's reference wave, and its
  answer must reproduce the recorded one within the session's threshold, or the session fails.

run.json says, per arm, what its identity rests on. A first session ever on a key has nothing to
be held to: then the identity rests on the seat's word and the record says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voicegate._hashing import sha256_file, sha256_text
from voicegate.run import append_rows
from voicegate.scoring import CanaryParams
from voicegate.seat import ModelCard
from voicegate.spec import WEIGHTS_FILE, GateSpec, Registration, weights_file


@dataclass(frozen=True)
class ArmIdentity:
    arm: str
    model: str
    key: str                  # what references are filed under
    rests_on: str             # in words, for the record
    sha256: str | None = None
    problem: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "rests_on": self.rests_on, "weights_sha256": self.sha256,
                **({"problem": self.problem} if self.problem else {})}


@dataclass(frozen=True)
class IdentityAsk:
    """A request another session asked of the same weights, asked again alone in the arm's reference wave."""

    arm: str
    model: str
    prompt: str
    seed: int
    sampling: Mapping[str, Any]
    against: Mapping[str, Any]     # {"gate", "session", "text", "key"}


def arm_identities(spec: GateSpec, reg: Registration, cards: Iterable[ModelCard],
                   version: str | None) -> dict[str, ArmIdentity]:
    pinned = reg.data.get("adapter_weights")
    pinned = pinned if isinstance(pinned, Mapping) else {}
    roots = {c.id: c.root for c in cards}
    out: dict[str, ArmIdentity] = {}
    for arm in spec.arms:
        root = roots.get(arm.model)
        found = weights_file(spec, arm.adapter_path) or weights_file(spec, root)
        now = sha256_file(found) if found is not None else None
        pin = pinned.get(arm.name)
        pin_sha = str(pin.get("sha256")) if isinstance(pin, Mapping) and pin.get("sha256") else None
        problem = None
        if pin_sha:
            sha, rests = pin_sha, f"{WEIGHTS_FILE} sha256 {pin_sha} pinned at register"
            if now is not None and now != pin_sha:
                problem = (f"arm {arm.name}'s {WEIGHTS_FILE} is not the file registered (sha256 {now}, "
                           f"registered {pin_sha})")
        elif now is not None:
            sha, rests = now, f"{WEIGHTS_FILE} sha256 {now} hashed at generate (not pinned at register)"
        else:
            sha, rests = None, (f"the seat's word only: model {arm.model!r}, root {root!r} (no weights file "
                                "reachable from here)")
        key = (f"sha256:{sha}" if sha else f"seat:{arm.model}:{root}") + f"@{version}"
        out[arm.name] = ArmIdentity(arm.name, arm.model, key, rests, sha, problem)
    return out


def read_ledger(path: Path) -> list[dict[str, Any]]:
    """The data dir's recorded references (a torn or foreign line is skipped: the ledger is evidence, not input)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("text"), str) and isinstance(row.get("prompt"), str):
            out.append(row)
    return out


def earlier_asks(ledger: Sequence[Mapping[str, Any]], identities: Mapping[str, ArmIdentity], gate: str,
                 run_id: str) -> dict[str, IdentityAsk]:
    """Per arm, the latest reference another session recorded for the same identity key."""
    out: dict[str, IdentityAsk] = {}
    for row in reversed(ledger):
        for arm, ident in identities.items():
            if arm in out or row.get("key") != ident.key or row.get("run") == run_id:
                continue
            seed, sampling = row.get("seed"), row.get("sampling")
            if not isinstance(seed, int) or not isinstance(sampling, Mapping):
                continue
            out[arm] = IdentityAsk(arm, ident.model, str(row["prompt"]), seed, dict(sampling),
                                   {"gate": row.get("gate"), "session": row.get("session"), "text": row["text"],
                                    "key": ident.key})
    return out


def record_references(path: Path, identities: Mapping[str, ArmIdentity], gate: str, session: int, run_id: str,
                      refs: Iterable[tuple[str, str, int, Mapping[str, Any], str]], time: str) -> None:
    """Append a calibrated session's references (arm, prompt, seed, sampling, text) under each arm's key."""
    rows = [{"key": identities[arm].key, "model": identities[arm].model, "gate": gate, "session": session,
             "run": run_id, "prompt": prompt, "prompt_sha256": sha256_text(prompt), "seed": seed,
             "sampling": dict(sampling), "text": text, "time": time}
            for arm, prompt, seed, sampling, text in refs if arm in identities]
    if rows:
        path.parent.mkdir(parents=True, exist_ok=True)
        append_rows(path, rows)


# -- references reused across sessions of one gate (issue 35, build item 4) -------------------------------


def seat_fingerprint(identities: Mapping[str, ArmIdentity], cards: Iterable[ModelCard], version: str | None,
                     replicas: Sequence[str]) -> str:
    """The seat's identity as references depend on it: version, the arms' models and roots, their weights'
    keys, the replica set. Another session with the same fingerprint may lend its references."""
    roots = {c.id: c.root for c in cards}
    return sha256_text(json.dumps({
        "version": version, "replicas": sorted(replicas),
        "arms": {a: [i.model, roots.get(i.model), i.key] for a, i in sorted(identities.items())},
    }, sort_keys=True))


@dataclass(frozen=True)
class Reuse:
    """An earlier session's references, lent to this one: its canaries and each replica's reference rows."""

    session: int
    canaries: list[dict[str, Any]]                      # the canary record's canaries (as_dict)
    rows: dict[str, list[dict[str, Any]]]              # replica url -> its reference rows


def reusable(manifest: Mapping[str, Any], canary_rows: Sequence[Mapping[str, Any]], fingerprint: str,
             replicas: Sequence[str], arms: Sequence[str], params: CanaryParams) -> Reuse | None:
    """The latest earlier session on the same seat whose check held, with every reference on file; else None.

    Only a session that ended with its integrity holding (no problem, no check against) lends; a
    session on another seat (version, roots, weights, replicas) never does.
    """
    sessions = manifest.get("sessions") or []
    for index in range(len(sessions) - 1, -1, -1):
        s = sessions[index]
        if not isinstance(s, Mapping) or s.get("seat_fingerprint") != fingerprint:
            continue
        verdict, record = s.get("integrity"), s.get("canaries")
        if not isinstance(verdict, Mapping) or verdict.get("status") != "holds" or not isinstance(record, Mapping):
            continue
        canaries = [c for c in record.get("canaries") or [] if isinstance(c, Mapping)]
        rows: dict[str, list[dict[str, Any]]] = {}
        for r in canary_rows:
            if r.get("session") == index and r.get("phase") == "reference" and r.get("replica") in replicas:
                rows.setdefault(str(r["replica"]), []).append(dict(r))
        want = len(arms) * params.references_per_arm(len(canaries))
        if canaries and all(len(rows.get(u, [])) == want for u in replicas):
            return Reuse(index, [dict(c) for c in canaries], rows)
    return None
