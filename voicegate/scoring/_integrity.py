"""Seat integrity: canaries that tell whether the seat served each arm its own weights.

The gate's premise is that a difference between arms is the adapter's. A seat can
break it silently: vLLM on CPU, base and adapters batched together, has answered
adapter requests with the carrier's weights and base requests with an adapter's,
echoing the requested ``model`` name all along. This module makes that visible.

**Method** (``canary-reproduction@2``; every parameter is recorded in run.json):

1. *Canaries a seat cannot tell from real requests.* Each session draws, from a
   secret per-session nonce, ``count`` of the gate's own voice cells (a prompt and a
   registered seed); a canary is that cell's very request — the prompt, its request
   seed, the gate's own sampling (temperature, top_p, max_tokens) — so nothing in
   its body marks it, not even for a seat that knows the schedule. vLLM's seeded
   sampling repeats on the same weights (the same seed gives the same text, also
   under concurrency and across restarts), so a canary's answer is a fingerprint of
   the weights that produced it.
2. *References, alone.* Before any check, each arm answers the first ``repeated``
   (1) canary ``asks`` (2) times and the others once, alone on the seat (one wave
   per arm, drained before the next). A canary is its cell's very request, so the
   cell's real row of that arm, sent in that wave, is one of those answers
   (``real_row`` in canaries.jsonl; `verdict` holds the copy to the stored row):
   each arm asks only the first canary's repeat on its own. The two asks of the
   first canary *calibrate* the session from the seat itself:
   ``S`` = the lowest similarity between two asks of one (arm, canary) — how well
   the seat reproduces itself — and ``X`` = the highest similarity between two
   different arms' references on one canary — how near different weights come.
   The threshold sits a third of the way from the nearest other arm to the seat's own
   reproduction, ``t = X + (S - X) / 3``: an answer of another arm's (or of no arm's)
   weights lands near ``X`` or below, a reproduction near ``S`` — and on the stand-in
   with late divergence, the midpoint flagged 1 clean run in 20 (a reproduction at
   0.676 against t = 0.677). When ``S - X`` is below ``min_gap`` the seat cannot tell
   its arms apart and every check is *unclear*.
3. *Checks.* During the run the canaries are re-sent at unpredictable positions
   (stratified random, from the nonce) among the real requests, so they meet the
   conditions those meet; at least one check per arm falls in the last
   ``closing`` share of the run, and under ``--isolate-arms`` a check opens every
   wave (the first request after an arm switch) and one more falls in each arm's
   last wave.
4. *Reproduction.* Similarity is the Dice coefficient over the multisets of
   character ``ngram``-grams of the case-folded, whitespace-collapsed texts; a
   check is compared with each arm's asks and keeps the best. It is **right** only
   when it reproduces its own arm's reference (similarity >= t, and no other arm's
   reference nearer). Otherwise it counts against integrity: **wrong** (answered as
   another arm: that arm's reference is reproduced), **foreign weights** (near no
   reference at all: stale or unknown weights), or **unclear** (the session could
   not be calibrated). Nothing but "right" can make a session hold. Arms whose
   references are the very same text on a canary cannot be told apart on it; such
   a pair never counts as wrong.
5. *Replicas.* The lead (the first replica whose references are whole) answers
   the canaries as above and calibrates the session; a replica serving the same
   weights answers the same canaries alike, so every other replica answers each
   arm the first canary once, alone on it. Before any cell those answers must
   reproduce the lead's (within the lead's threshold), or the run is refused
   naming the replica; its checks and identity re-asks are judged against the
   lead's references and threshold. (A record whose every replica answered every
   canary, as before this rule, is judged replica by replica, each on its own.)

**Detection floor.** Checks per arm scale with the run: every extra request (each
arm's reference asks of its own, any identity re-ask, the checks) stays within
``overhead`` (5%) of the real requests, with at least ``min_checks_per_arm`` per
arm (and, isolated, one per wave). ``n`` checks would all miss a fault that
hits a share ``f`` of the requests with probability ``(1 - f)^n``; the record
states ``f95 = 1 - 0.05^(1/n)``, the fault rate caught with 95% probability, for
the seat (all checks) and for one arm alone (its checks).

**Verdict.** `score` recomputes every check from the stored texts of
``canaries.jsonl`` under the parameters in run.json (a row's own ``status`` is
never read back). Integrity *holds* for the scored rows only when every
(session, replica) that produced one of them was calibrated, had at least one
check, every check was right, and its stored rows and checks are no more than
run.json recorded for it. Anything else refuses the verdict: ``generate
--isolate-arms`` moves the rows of a failed (session, replica) to the quarantine
file (never deleting one) and regenerates them with one arm on the seat at a time.

Where it lives: `scoring/_similarity.py` holds the method's parameters and the comparison,
this module the tallies and the verdict (and the replica facts `score` checks beside it),
reading the typed `RunManifest`; `generate/_canaries.py` plans the canaries and the checks.
Both `generate` and `gate` use this module through `voicegate.scoring`: `gate` never imports
`generate`.

Over 400 lines because the tallies, the verdict and the replicas behind the rows read the same
stored checks under one method; `generate` and `gate` call it whole.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from voicegate.run import CellKey, RunManifest, cell_key
from voicegate.scoring._carrier_agreement import carrier_judged
from voicegate.scoring._result import Confusion, Integrity
from voicegate.scoring._similarity import (
    FOREIGN,
    METHOD_ID,
    Attribution,
    Calibration,
    CanaryParams,
    _r,
    alike_pairs,
    attribute,
    calibrate,
    complete,
    detection_floor,
    identity_outcome,
    is_prefix,
    replica_differs,
)

# -- tallies and the verdict --------------------------------------------------------------


@dataclass
class Tally:
    """Checks of one (session, replica), or of the sessions behind the scored rows."""

    references: int = 0
    sent: int = 0
    right: int = 0
    exact: int = 0
    wrong: int = 0
    foreign: int = 0
    unclear: int = 0
    confusions: Counter[tuple[str, str]] = field(default_factory=Counter)
    per_arm: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)   # neither held nor failed (an identity across versions)
    calibration: Calibration | None = None
    confidence: float = 0.95
    cells: set[tuple[str, int, str]] = field(default_factory=set)   # the distinct gate cells the checks asked

    def add(self, arm: str, found: Attribution, cell: Sequence[Any] | None = None) -> None:
        if cell is not None and len(cell) == 3:
            self.cells.add((str(cell[0]), int(cell[1]), str(cell[2])))
        self.sent += 1
        self.per_arm[arm] += 1
        if found.status == "right":
            self.right += 1
            self.exact += found.exact
        elif found.status == "wrong":
            self.wrong += 1
            self.confusions[(arm, str(found.answered_as))] += 1
        elif found.status == "foreign":
            self.foreign += 1
            self.confusions[(arm, FOREIGN)] += 1
        else:
            self.unclear += 1

    def merge(self, other: Tally) -> None:
        for name in ("references", "sent", "right", "exact", "wrong", "foreign", "unclear"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.confusions.update(other.confusions)
        self.per_arm.update(other.per_arm)
        self.cells |= other.cells
        self.problems.extend(other.problems)
        self.undecided.extend(other.undecided)

    @property
    def against(self) -> int:
        return self.wrong + self.foreign + self.unclear

    @property
    def failed(self) -> bool:
        return self.against > 0 or bool(self.problems)

    @property
    def status(self) -> str:
        return "failed" if self.failed else ("holds" if self.sent and not self.undecided else "not checked")

    def floors(self) -> tuple[float | None, float | None]:
        """(the seat's f95 over all checks, one arm's f95 over its fewest checks)."""
        fewest = min(self.per_arm.values()) if self.per_arm else 0
        return detection_floor(self.sent, self.confidence), detection_floor(fewest, self.confidence)

    def cell_floor(self) -> float | None:
        """A fault tied to cells: the share of cells it must hit to be met by the checks' distinct cells with 95%."""
        return detection_floor(len(self.cells), self.confidence)

    def as_dict(self) -> dict[str, Any]:
        seat, arm = self.floors()
        return {"references": self.references, "sent": self.sent, "right": self.right, "exact": self.exact,
                "wrong": self.wrong, "foreign": self.foreign, "unclear": self.unclear, "status": self.status,
                "confusions": [{"arm": a, "answered_as": b, "count": n}
                               for (a, b), n in sorted(self.confusions.items())],
                "checks_per_arm": dict(sorted(self.per_arm.items())), "detects_95": _r(seat),
                "detects_95_one_arm": _r(arm), "cells_checked": len(self.cells),
                "detects_cells_95": _r(self.cell_floor()), "problems": list(self.problems),
                **({"undecided": list(self.undecided)} if self.undecided else {}),
                "calibration": self.calibration.as_dict() if self.calibration else None}


Part = tuple[int, str | None]   # (session, replica): what one set of references fingerprints


def part_of(row: Mapping[str, Any]) -> Part | None:
    """The (session, replica) a generation or canary row belongs to (replica None before replicas existed)."""
    s = row.get("session")
    if not isinstance(s, int) or isinstance(s, bool):
        return None
    replica = row.get("replica")
    return (s, str(replica) if replica else None)


def describe_parts(parts: Iterable[Part]) -> str:
    return ", ".join(f"{s}" + (f" on {r}" if r else "") for s, r in sorted(parts, key=lambda p: (p[0], p[1] or "")))


def references_of(canary_rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, list[str]]]:
    refs: dict[str, dict[str, list[tuple[int, str]]]] = {}
    for row in canary_rows:
        if row.get("phase") == "reference":
            raw = row.get("ask")
            ask = raw if isinstance(raw, int) else 0
            refs.setdefault(str(row.get("canary")), {}).setdefault(str(row.get("arm")), []).append(
                (ask, str(row.get("text", ""))))
    return {c: {a: [t for _, t in sorted(v)] for a, v in by_arm.items()} for c, by_arm in refs.items()}


def _max_tokens(row: Mapping[str, Any]) -> int | None:
    sampling = row.get("sampling")
    value = sampling.get("max_tokens") if isinstance(sampling, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def judge(canary_rows: Sequence[Mapping[str, Any]], arms: Sequence[str], params: CanaryParams,
          models: Mapping[str, str] | None = None,
          lead: tuple[Mapping[str, Mapping[str, Sequence[str]]], Calibration] | None = None) -> Tally:
    """One (session, replica)'s checks judged again from their texts against its own references.

    `lead`: the lead replica's references and calibration, which a replica after the lead is judged
    against (its own references are one ask per arm, held to the lead's by `tallies`).
    A re-ask check is judged against the stored rows it copied (`against`); `verdict` holds those
    copies to generations.jsonl. A canary check asked under a shorter max_tokens than its references
    is judged against their prefixes when the length cut its answer.
    """
    own = references_of(canary_rows)
    refs, cal = (own, calibrate(own, arms, params, models)) if lead is None else lead
    tally = Tally(calibration=cal, confidence=params.confidence)
    tally.references = sum(len(v) for by_arm in own.values() for v in by_arm.values())
    if cal.problem is not None:
        tally.problems.append(cal.problem)
    gate_max = max((m for r in canary_rows if r.get("phase") == "reference" and (m := _max_tokens(r)) is not None),
                   default=None)
    # Each arm's greedy answers against its own files (the base: the carrier's; an adapter: the carrier's with
    # the adapter merged), where they were at hand (`generate._carrier_files`, `generate._adapter_files`).
    probes = [r for r in canary_rows if r.get("phase") == "carrier"]
    by_files: set[str] = set()
    for arm in sorted({str(r.get("arm")) for r in probes}):
        check = carrier_judged([r for r in probes if str(r.get("arm")) == arm])
        if check is not None and (problem := check.problem(arm)) is not None:
            tally.problems.append(problem)
        elif check is not None and check.status == "holds":
            by_files.add(arm)
    for row in canary_rows:
        against = row.get("against")
        if row.get("phase") == "identity" and isinstance(against, Mapping):
            problem, undecided = identity_outcome(str(row.get("arm")), str(row.get("text", "")), against, cal,
                                                  params, row.get("version"))
            if problem is not None:
                tally.problems.append(problem)
            if undecided is not None and str(row.get("arm")) not in by_files:   # its own files decided it
                tally.undecided.append(undecided)
        if row.get("phase") != "check":
            continue
        arm = str(row.get("arm"))
        text = str(row.get("text", ""))
        cell = row.get("cell") if isinstance(row.get("cell"), list) else None
        against = row.get("against")
        if row.get("check") == "reask":
            stored = {str(a): [str(t)] for a, t in against.items()} if isinstance(against, Mapping) else {}
            tally.add(arm, attribute(text, arm, stored, cal, params), cell)
            continue
        prefix = is_prefix(_max_tokens(row), gate_max, row.get("finish_reason"))
        tally.add(arm, attribute(text, arm, refs.get(str(row.get("canary")), {}), cal, params, prefix=prefix), cell)
    return tally


def by_part(canary_rows: Iterable[Mapping[str, Any]]) -> dict[Part, list[Mapping[str, Any]]]:
    out: dict[Part, list[Mapping[str, Any]]] = {}
    for row in canary_rows:
        part = part_of(row)
        if part is not None:
            out.setdefault(part, []).append(row)
    return out


def _arms(manifest: RunManifest | None, canary_rows: Iterable[Mapping[str, Any]]) -> list[str]:
    arms = list(manifest.arms) if manifest is not None else []
    return arms or sorted({str(r.get("arm")) for r in canary_rows if r.get("phase") == "reference"})


def params_of(manifest: RunManifest | None) -> CanaryParams:
    info = None if manifest is None else manifest.integrity
    raw = info.get("params") if info is not None else None
    return CanaryParams.from_dict(raw if isinstance(raw, Mapping) else {})


def arm_models(manifest: RunManifest | None) -> dict[str, str] | None:
    """Arm -> the model it asks, as run.json recorded them (None when it did not)."""
    arms = None if manifest is None else manifest.data.get("arms")
    if not isinstance(arms, list):
        return None
    out = {str(a.get("name")): str(a.get("model")) for a in arms if isinstance(a, Mapping) and a.get("model")}
    return out or None


def tallies(canary_rows: Sequence[Mapping[str, Any]], manifest: RunManifest | None,
            rows: Iterable[Mapping[str, Any]] = ()) -> dict[Part, Tally]:
    """Each (session, replica)'s checks judged from the texts; a replica whose references differ fails, and so
    does one whose stored `rows` hold two arms answering a cell alike (`alike_problem`)."""
    params = params_of(manifest)
    arms = _arms(manifest, canary_rows)
    parts = by_part(canary_rows)
    models = arm_models(manifest)
    refs = {part: references_of(rows) for part, rows in parts.items()}
    out: dict[Part, Tally] = {}
    differ: list[tuple[Part, str]] = []
    for session in sorted({s for s, _ in parts}):
        order = _replica_order(manifest, session, [p for p in parts if p[0] == session])
        # The lead: the first replica whose references are whole (one stopped in its reference waves is not).
        first = next((p for p in order if complete(refs[p], arms, params)), order[0])
        out[first] = judge(parts[first], arms, params, models)
        cal = out[first].calibration or Calibration(None, None, None)
        for part in order:
            if part == first:
                continue
            # A replica with whole references of its own (a record from before the lead judged the others) is
            # judged on them; every other one against the lead's.
            lent = None if complete(refs[part], arms, params) else (refs[first], cal)
            out[part] = judge(parts[part], arms, params, models, lent)
            differs = replica_differs(refs[first], refs[part], cal, params)
            if differs is not None:
                said = (f"replica {part[1]}'s references for arm {differs[0]} do not reproduce {first[1]}'s "
                        f"(similarity {differs[1]:.3f})")
                differ.append((part, said))
    for part, cells in cells_by_part(rows).items():
        t = out.get(part)
        if t is not None and t.calibration is not None:
            problem = alike_problem(cells, t.calibration, models, params)
            if problem is not None:
                t.problems.append(problem)
    _hold_borrowed_to_originals(canary_rows, out)
    for part, problem in differ:
        out[part].problems.append(problem)
    return out


def cells_by_part(rows: Iterable[Mapping[str, Any]]) -> dict[Part, dict[CellKey, dict[str, str]]]:
    out: dict[Part, dict[CellKey, dict[str, str]]] = {}
    for r in rows:
        part = part_of(r)
        if part is not None:
            out.setdefault(part, {}).setdefault(cell_key(r), {})[str(r.get("arm"))] = str(r.get("text", ""))
    return out


def alike_problem(cells: Mapping[CellKey, Mapping[str, str]], cal: Calibration, models: Mapping[str, str] | None,
                  params: CanaryParams) -> str | None:
    """Cells of one (session, replica) where two arms of different models answered alike, said in one line."""
    pairs = alike_pairs(cells, cal, models, params)
    if not pairs:
        return None
    (_, seed, prompt), a, b, v = min(pairs, key=lambda p: (str(p[0]), p[1], p[2]))
    named = sorted({f"{x} and {y}" for _, x, y, _ in pairs})
    return (f"{len(pairs)} stored cell(s) where two arms of different models answered alike ({', '.join(named)}; "
            f"e.g. prompt {prompt} seed {seed}: {a} and {b} at similarity {v:.3f}, the seat's own reproduction "
            f"{cal.self_similarity:.3f}): one arm's weights answered under the other's name")


def _hold_borrowed_to_originals(canary_rows: Sequence[Mapping[str, Any]], out: dict[Part, Tally]) -> None:
    """References a session borrowed (``reused_from``) must be, byte for byte, the lending session's own."""
    def key(r: Mapping[str, Any], session: Any) -> tuple[Any, ...]:
        return (session, r.get("replica"), r.get("canary"), r.get("arm"), r.get("ask"))

    own = {key(r, r.get("session")): r.get("text") for r in canary_rows
           if r.get("phase") == "reference" and "reused_from" not in r}
    for r in canary_rows:
        if r.get("phase") == "reference" and "reused_from" in r:
            part = part_of(r)
            if part in out and own.get(key(r, r.get("reused_from")), object()) != r.get("text"):
                out[part].problems.append(f"a reference session {part[0]} borrowed is not session "
                                          f"{r.get('reused_from')}'s own")
                return


def _replica_order(manifest: RunManifest | None, session: int, parts: list[Part]) -> list[Part]:
    s = _session(manifest, session)
    named = [str(u) for u in s.get("replicas") or [s.get("seat_url")] if u]
    rank = {u: i for i, u in enumerate(named)}
    return sorted(parts, key=lambda p: (rank.get(p[1] or "", len(rank)), p[1] or ""))


def failed_parts(canary_rows: Sequence[Mapping[str, Any]], manifest: RunManifest | None,
                 rows: Iterable[Mapping[str, Any]] = ()) -> set[Part]:
    """The (session, replica)s whose checks (or stored `rows`) failed. One that sent no check is not checked (as
    `verdict` says), whatever its references say: a session stopped in its reference waves, which carry real
    rows, has fewer asks than the calibration wants, and its rows are redone like any unchecked ones."""
    return {p for p, t in tallies(canary_rows, manifest, rows).items() if t.failed and t.sent}


def is_generated(row: Mapping[str, Any], manifest: RunManifest | None) -> bool:
    """A row `generate` made (not imported, not written by hand): it must carry checks to be scored."""
    if row.get("imported"):
        return False
    if manifest is not None and manifest.source == "generated":
        return True
    return any(k in row for k in ("session", "replica", "seat_url", "request_seed", "latency_s"))


def undecided_parts(canary_rows: Sequence[Mapping[str, Any]], manifest: RunManifest | None) -> set[Part]:
    """The (session, replica)s that failed nothing but left an identity not decided: their rows cannot hold."""
    return {p for p, t in tallies(canary_rows, manifest).items() if t.undecided and not t.failed}


def unchecked_parts(rows: Iterable[Mapping[str, Any]], canary_rows: Sequence[Mapping[str, Any]]) -> set[Part | None]:
    """The (session, replica)s of `rows` without a single check (a run killed before its first one)."""
    checked = {part_of(r) for r in canary_rows if r.get("phase") == "check"}
    return {part_of(r) for r in rows} - checked


def _recorded(manifest: RunManifest | None, part: Part) -> dict[str, Any] | None:
    """What run.json says (session, replica) generated and checked, once the session ended."""
    s = _session(manifest, part[0])
    if "generated" not in s:
        return None   # killed before it could write its end: nothing to hold the files to
    for p in s.get("per_replica") or []:
        if isinstance(p, Mapping) and (p.get("url") == part[1] or part[1] is None):
            canaries = p.get("canaries")
            return {"rows": p.get("rows"), "checks": canaries.get("sent") if isinstance(canaries, Mapping) else None}
    return {"rows": s.get("generated"), "checks": (s.get("integrity") or {}).get("sent")}


def verdict(rows: Sequence[Mapping[str, Any]], canary_rows: Sequence[Mapping[str, Any]],
            manifest: RunManifest | None, *, quarantine: str | None = None) -> Integrity | None:
    """The integrity of the seat behind `rows` (the generations that are scored), judged again from the texts.

    None when no row was generated by voicegate (imported generations, or rows written by hand):
    the record then stays as it always was. Generated rows without checks are "not checked",
    which `score` refuses.
    """
    generated = [r for r in rows if is_generated(r, manifest)]
    if not generated:
        return None
    problems: list[str] = []
    info = None if manifest is None else manifest.integrity
    if manifest is None:
        problems.append("run.json is missing")
    elif manifest.source != "generated":
        problems.append(f"run.json says its generations were {manifest.source!r}, but "
                        f"{len(generated)} rows were generated")
    elif info is None:
        problems.append("run.json has no integrity record")
    elif info.get("method") != METHOD_ID:
        problems.append(f"run.json records the canary method {info.get('method')!r}, not {METHOD_ID} "
                        "(a faulty seat can slip past older methods)")
    per_part = tallies(canary_rows, manifest, generated) if not problems else {}
    used = Counter(part_of(r) for r in generated)
    total = Tally(confidence=params_of(manifest).confidence)
    unchecked = 0
    for maybe, n in sorted(used.items(), key=lambda x: (x[0] is None, x[0] or (0, ""))):
        t = per_part.get(maybe) if maybe is not None else None
        if maybe is None or t is None or t.sent == 0:
            unchecked += n
            continue
        part: Part = maybe
        total.merge(t)
        rec = _recorded(manifest, part)
        if not _session(manifest, part[0]):
            problems.append(f"session {part[0]} is not in run.json")
        elif rec is not None:
            if isinstance(rec["rows"], int) and n > rec["rows"]:
                problems.append(f"session {describe_parts([part])}: {n} stored rows, run.json records "
                                f"{rec['rows']} generated")
            if isinstance(rec["checks"], int) and t.sent != rec["checks"]:
                problems.append(f"session {describe_parts([part])}: {t.sent} checks in canaries.jsonl, run.json "
                                f"records {rec['checks']}")
    problems.extend(_copies_differ(generated, canary_rows))
    total.problems.extend(problems)
    sessions = sorted({p[0] for p in used if p is not None and p in per_part})
    modes = {bool(_session(manifest, s).get("isolate_arms")) for s in sessions}
    if total.failed:
        status = "failed"
    elif unchecked or not total.sent or total.undecided:
        status = "not checked"
    else:
        status = "holds"
    # An identity not decided is said as why the seat does not hold; beside a failure, the failure says enough.
    said = tuple(total.problems) + (tuple(dict.fromkeys(total.undecided)) if status == "not checked" else ())
    cal = [t.calibration.threshold for p, t in per_part.items()
           if p in used and t.calibration is not None and t.calibration.threshold is not None]
    seat, one_arm = total.floors()
    q = (None if manifest is None else manifest.quarantine) if quarantine is None else {"file": quarantine}
    return Integrity(
        status=status, method=str(info.get("method", METHOD_ID)) if info is not None else METHOD_ID,
        params=dict(info.get("params") or {}) if info is not None else {},
        references=total.references, sent=total.sent, right=total.right, wrong=total.wrong,
        unclear=total.unclear, foreign=total.foreign, exact=total.exact,
        confusions=tuple(Confusion(arm=a, answered_as=b, count=n) for (a, b), n in sorted(total.confusions.items())),
        sessions=tuple(sessions), isolated=(modes == {True}) if modes else None, unchecked_rows=unchecked,
        quarantined=int(q.get("rows", 0)) if q is not None else 0,
        quarantine=str(q.get("file")) if q is not None and q.get("file") else None,
        threshold=round(min(cal), 4) if cal else None,
        checks_per_arm=min(total.per_arm.values()) if total.per_arm else 0,
        detects=_r(seat), detects_one_arm=_r(one_arm), problems=said,
        cells_checked=len(total.cells), detects_cells=_r(total.cell_floor()),
        identity=_identity_lines(manifest, sessions))


def _identity_lines(manifest: RunManifest | None, sessions: Sequence[int]) -> tuple[str, ...]:
    """Per arm, what the identity of its weights rested on in the sessions behind the rows."""
    said: dict[str, str] = {}
    for index in sessions:
        s = _session(manifest, index)
        ident, asks = s.get("identity"), s.get("identity_asks") or {}
        if not isinstance(ident, Mapping):
            continue
        for arm, info in sorted(ident.items()):
            if not isinstance(info, Mapping):
                continue
            held = asks.get(arm) if isinstance(asks, Mapping) else None
            unsealed = info.get("unsealed")
            if isinstance(held, Mapping):
                line = f", held to its answer in gate {held.get('gate')} session {held.get('session')}"
                if "version_now" in held:
                    line += f" (on vLLM {held.get('version')!r}; the seat reported {held.get('version_now')!r})"
            elif isinstance(unsealed, int) and unsealed > 0:
                line = (f", held to no earlier answer: the {unsealed} on file were written before the identity store "
                        "sealed its lines (not asked: not checked)")
            else:
                line = ", held to no earlier answer (the first session on it)"
            said[arm] = f"{arm}: {info.get('rests_on')}{line}"
    return tuple(said.values())


def _copies_differ(rows: Sequence[Mapping[str, Any]], canary_rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """A re-ask check is judged against its copy of the stored rows, and a canary cell's real row that was one
    of its arm's reference asks (``real_row``) is copied as that reference: each copy must be the stored
    row's text (a borrowed reference is held to its lender's copy instead)."""
    stored = {(part_of(r), cell_key(r), str(r.get("arm"))): str(r.get("text", "")) for r in rows}
    bad = real = 0
    for c in canary_rows:
        against, cell = c.get("against"), c.get("cell")
        if not isinstance(cell, list) or len(cell) != 3:
            continue
        key = (str(cell[0]), int(cell[1]), str(cell[2]))
        if c.get("phase") == "reference" and c.get("real_row") and "reused_from" not in c:
            t = str(c.get("text", ""))
            real += stored.get((part_of(c), key, str(c.get("arm"))), t) != t
        elif c.get("check") == "reask" and isinstance(against, Mapping):
            bad += sum(1 for a, t in against.items() if stored.get((part_of(c), key, str(a)), t) != t)
    return ([f"{bad} re-ask check copies differ from the stored rows they name"] if bad else []) + (
        [f"{real} reference copies of real rows differ from the stored rows they name"] if real else [])


def _session(manifest: RunManifest | None, index: int) -> Mapping[str, Any]:
    return {} if manifest is None else manifest.session(index)


# -- the replicas behind the scored rows -----------------------------------------------------


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
