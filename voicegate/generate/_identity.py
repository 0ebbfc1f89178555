"""Each arm's weights held to what the same weights answered before.

Reproduction inside a session cannot see a seat that serves an arm the same wrong weights from
the start: the references are wrong too, and every check "reproduces". What the seat does not
control is an answer the same weights gave earlier. So:

- every arm gets an **identity key**, the weights alone: the sha256 of its
  ``adapter_model.safetensors`` when its directory is reachable (pinned by `register`, else hashed
  now), otherwise the seat's own word (its model name and root). The seat's reported version is
  recorded beside each answer, never in the key: a seat that reports another version is still
  asked what the same weights answered before;
- a calibrated session appends its references to the data dir's ``identity.jsonl``, each line
  sealed (`voicegate._stores`); a damaged line refuses the run before any request, as local damage,
  and says how to rebuild the store; a line written before seals is counted, never asked;
- a later session (of this gate or another) asks, for each arm whose weights are there from another
  session, one of those recorded requests again (one recorded on the version the seat reports now,
  when there is one), alone in the arm's reference wave. Its answer must reproduce the recorded one
  within the session's threshold, or the session fails; across a version change (seeded sampling
  is only promised to repeat on one version) an answer that does not reproduce is *not decided*,
  and the session's integrity does not hold.

run.json says, per arm, what its identity rests on. Only when no answer of those weights is on file
is a session the first on them: then the identity rests on the seat's word and the record says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voicegate import _json
from voicegate._atomic import write_atomic
from voicegate._hashing import sha256_file, sha256_text
from voicegate._stores import LocalDamage, seal, seal_of
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
    against: Mapping[str, Any]     # {"gate", "session", "text", "key", "version"}


def arm_identities(spec: GateSpec, reg: Registration, cards: Iterable[ModelCard]) -> dict[str, ArmIdentity]:
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
        key = f"sha256:{sha}" if sha else f"seat:{arm.model}:{root}"
        out[arm.name] = ArmIdentity(arm.name, arm.model, key, rests, sha, problem)
    return out


@dataclass(frozen=True)
class Ledger:
    """The identity store as read: its sealed lines, and those written before lines were sealed."""

    rows: list[dict[str, Any]]
    unsealed: list[dict[str, Any]]


def weights_key(row: Mapping[str, Any]) -> tuple[str, str | None]:
    """A stored reference's weights key and the seat version it was answered on (an unsealed line's key
    carried the version after its last ``@``)."""
    key = str(row.get("key", ""))
    if "version" in row:
        version = row.get("version")
        return key, str(version) if version is not None else None
    weights, _, version = key.rpartition("@")
    return (weights, version or None) if weights else (key, None)


def _reference_shape(row: Any) -> bool:
    return (isinstance(row, dict) and isinstance(row.get("key"), str) and isinstance(row.get("text"), str)
            and isinstance(row.get("prompt"), str) and isinstance(row.get("seed"), int)
            and not isinstance(row.get("seed"), bool) and isinstance(row.get("sampling"), dict))


def _parse_ledger(raw: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[tuple[int, str]], bytes]:
    """(sealed rows, unsealed rows, damaged lines as (number, why), the sound lines' bytes). A last line
    without its newline is a write a kill cut short, not damage: it is left out."""
    lines = raw.split(b"\n")
    lines.pop()     # after the last newline: nothing, or a torn write
    rows: list[dict[str, Any]] = []
    unsealed: list[dict[str, Any]] = []
    damaged: list[tuple[int, str]] = []
    sound = bytearray()
    for number, line in enumerate(lines, 1):
        try:
            row = _json.loads(line.decode("utf-8"))
        except UnicodeDecodeError:
            damaged.append((number, "not UTF-8"))
            continue
        except ValueError:
            damaged.append((number, "not a JSON line"))
            continue
        state = seal_of(row)
        if state == "damaged":
            damaged.append((number, "its checksum does not match its content" if isinstance(row, dict)
                            else "not an identity line"))
        elif not _reference_shape(row):
            damaged.append((number, "not an identity line"))
        else:
            (rows if state == "intact" else unsealed).append(row)
            sound += line + b"\n"
    return rows, unsealed, damaged, bytes(sound)


def damaged_copy(path: Path) -> Path:
    """Where a damaged store is moved aside, and what the next run rebuilds it from."""
    return path.with_name(path.name + ".damaged")


def read_ledger(path: Path, say: Callable[[str], None] | None = None) -> Ledger:
    """The data dir's recorded references. Raises LocalDamage (exit 2, before any request) on a damaged line.

    With no store but a copy moved aside as damaged, the store is first rebuilt from that copy's sound
    lines (the damaged ones left out; the copy kept).
    """
    aside = damaged_copy(path)
    if not path.exists() and aside.is_file():
        _rebuild(path, aside, say)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Ledger([], [])
    except OSError as exc:
        raise LocalDamage(f"{path}: cannot be read ({exc.strerror or exc}): this machine's store of earlier "
                          "answers, not the seat's; nothing was sent to the seat") from None
    rows, unsealed, damaged, _ = _parse_ledger(raw)
    if damaged:
        number, why = damaged[0]
        more = f" (and {len(damaged) - 1} more)" if len(damaged) > 1 else ""
        raise LocalDamage(
            f"{path}: line {number} is damaged ({why}){more}: local damage to this machine's store of earlier "
            f"answers, not the seat's doing; nothing was sent to the seat. Rebuild it: `mv {path} {aside}`, and "
            "the next generate rebuilds it from that copy's sound lines")
    return Ledger(rows, unsealed)


def _rebuild(path: Path, aside: Path, say: Callable[[str], None] | None) -> None:
    try:
        raw = aside.read_bytes()
    except OSError:
        return
    rows, unsealed, damaged, sound = _parse_ledger(raw)
    write_atomic(path, sound)
    if say is not None:
        say(f"note: rebuilt {path} from the {len(rows) + len(unsealed)} sound lines of {aside} ({len(damaged)} damaged "
            f"line(s) left out; {aside} kept)")


@dataclass(frozen=True)
class Earlier:
    """Per arm, the earlier answer of its weights it is asked again, and what else is on file for them."""

    asks: dict[str, IdentityAsk]
    unsealed: dict[str, int]      # arm -> lines of its weights written before seals (never asked)


def earlier_asks(ledger: Ledger, identities: Mapping[str, ArmIdentity], run_id: str,
                 version: str | None) -> Earlier:
    """Per arm, the latest reference another session recorded of the same weights: one answered on the
    version the seat reports now when there is one, else the latest on any version."""
    asks: dict[str, IdentityAsk] = {}
    for arm, ident in identities.items():
        mine = [r for r in ledger.rows if weights_key(r)[0] == ident.key and r.get("run") != run_id]
        same = [r for r in mine if weights_key(r)[1] == version]
        pick = (same or mine)[-1] if mine else None
        if pick is None:
            continue
        asks[arm] = IdentityAsk(arm, ident.model, str(pick["prompt"]), int(pick["seed"]), dict(pick["sampling"]),
                                {"gate": pick.get("gate"), "session": pick.get("session"), "text": pick["text"],
                                 "key": ident.key, "version": weights_key(pick)[1]})
    unsealed = {arm: n for arm, ident in identities.items()
                if arm not in asks and (n := sum(weights_key(r)[0] == ident.key for r in ledger.unsealed))}
    return Earlier(asks, unsealed)


def record_references(path: Path, identities: Mapping[str, ArmIdentity], gate: str, session: int, run_id: str,
                      refs: Iterable[tuple[str, str, int, Mapping[str, Any], str]], time: str,
                      version: str | None = None) -> None:
    """Append a calibrated session's references (arm, prompt, seed, sampling, text) under each arm's weights
    key, the seat's version beside it, each line sealed."""
    rows = [seal({"key": identities[arm].key, "version": version, "model": identities[arm].model, "gate": gate,
                  "session": session, "run": run_id, "prompt": prompt, "prompt_sha256": sha256_text(prompt),
                  "seed": seed, "sampling": dict(sampling), "text": text, "time": time})
            for arm, prompt, seed, sampling, text in refs if arm in identities]
    if rows:
        append_ledger(path, rows)


def append_ledger(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Append `rows` under the store's lock (gates of one data dir append to it at once); a torn last line a
    killed writer left is cut first, so it never becomes a damaged line in the middle."""
    from filelock import FileLock

    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=30):
        try:
            with open(path, "rb+") as fh:
                data = fh.read()
                if data and not data.endswith(b"\n"):
                    fh.truncate(data.rfind(b"\n") + 1)
        except FileNotFoundError:
            pass
        append_rows(path, rows)


# -- references reused across sessions of one gate ---------------------------------------------------------


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
        # The lead (the first replica) answered every canary; every other replica each arm's first canary once.
        want = [len(arms) * (params.references_per_arm(len(canaries)) if i == 0 else 1) for i in range(len(replicas))]
        if canaries and all(len(rows.get(u, [])) == n for u, n in zip(replicas, want, strict=True)):
            return Reuse(index, [dict(c) for c in canaries], rows)
    return None
