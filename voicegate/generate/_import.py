"""`voicegate import`: bring in generations made outside voicegate, all or nothing.

lv-bronte's 360 generations predate the tool, so a gate must be able to score
rows it did not generate. Every line of the file is validated before anything
is written; one bad line refuses the whole file, naming its line number, so a
half-imported run can never be scored. Accepted rows are stored with
`imported: true` (and `model` from the arm when the file does not say), and
`<run_dir>/run.json` records `source: "imported"`, the file's path and sha256,
so the gate record can say where the numbers came from.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

from voicegate import _json
from voicegate._clock import now_utc
from voicegate._errors import VoicegateError
from voicegate._hashing import sha256_file
from voicegate.run import (
    append_rows,
    manifest_path,
    read_generations,
    read_manifest,
    repair_tail,
    row_key,
    row_problem,
    write_manifest,
)
from voicegate.spec import GateSpec, check_registered, shown_path


def _check(spec: GateSpec, n: int, obj: Any) -> dict[str, Any]:
    def bad(problem: str) -> VoicegateError:
        return VoicegateError(f"line {n}: {problem}; nothing imported")

    problem = row_problem(obj)  # the stored shape, the same check every reader of generations.jsonl makes
    if problem is not None:
        raise bad(problem)
    kind = obj.get("kind", "voice")
    arms = {a.name: a for a in spec.arms}
    if obj["arm"] not in arms:
        raise bad(f"arm {obj['arm']!r:.80} is not in the spec ({', '.join(arms)})")
    seed = obj["seed"]
    if seed not in spec.seeds:
        raise bad(f"seed {seed!r} is not a registered seed ({', '.join(map(str, spec.seeds))})")
    pid = obj["prompt_id"]
    known = {p.id for p in spec.prompts} if kind == "voice" else {p.id for p in spec.damage.probes}
    if str(pid) not in known:
        what = "voice prompt" if kind == "voice" else "probe"
        raise bad(f"prompt_id {pid!r:.80} is not a registered {what} id")
    # A model name that differs from the arm's is kept as given: history predates today's names
    # (the fleet's adapters were `baby*` before they were `lv-*`), and the arm is what scoring reads.
    model = obj.get("model", arms[obj["arm"]].model)
    row = {**obj, "kind": kind, "prompt_id": str(pid), "model": model, "imported": True}
    return row


def import_file(spec: GateSpec, source: Path, *, now: _dt.datetime | None = None) -> dict[str, Any]:
    """Validate every line of source, then append its rows and write run.json; returns the manifest."""
    from voicegate._locks import gate_lock

    check_registered(spec)
    # An import beside another import or a generate would store some keys twice: one writer per gate.
    with gate_lock(spec.run_dir, spec.gate, "import"):
        return _import(spec, Path(source), now)


def _import(spec: GateSpec, source: Path, now: _dt.datetime | None) -> dict[str, Any]:
    source = Path(source)
    try:
        raw = source.read_bytes()
    except OSError as exc:
        raise VoicegateError(f"{source}: cannot read ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad_line = raw[:exc.start].count(b"\n") + 1
        raise VoicegateError(f"line {bad_line}: not UTF-8; nothing imported") from None
    previous = read_manifest(spec.run_dir) or {}
    if previous.get("source", "imported") != "imported":
        # The mirror of generate's refusal: one run is either the seat's or brought in, never a blend.
        raise VoicegateError(f"{spec.gate}: its generations were made by `voicegate generate` "
                             f"({manifest_path(spec.run_dir)}); "
                             "import will not mix outside generations into them; nothing imported")
    stored = {row_key(r) for r in read_generations(spec.generations_path)}
    seen: dict[tuple[str, str, int, str], int] = {}
    rows = []
    # Lines end at "\n" only: str.splitlines() would also cut at U+2028 and friends, which JSON
    # strings may hold raw.
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = _json.loads(line)  # strict: no NaN or Infinity, no key twice, no runaway nesting
        except ValueError as exc:
            raise VoicegateError(f"line {n}: not JSON ({exc}); nothing imported") from None
        row = _check(spec, n, obj)
        key = row_key(row)
        if key in seen:
            raise VoicegateError(f"line {n}: duplicate of line {seen[key]} "
                                 f"({key[1]}, seed {key[2]}, prompt {key[3]}); nothing imported")
        if key in stored:
            raise VoicegateError(f"line {n}: {key[1]}, seed {key[2]}, prompt {key[3]} is already stored; "
                                 "nothing imported")
        seen[key] = n
        rows.append(row)
    if not rows:
        raise VoicegateError(f"{source}: no generations in the file; nothing imported")

    repair_tail(spec.generations_path)
    append_rows(spec.generations_path, rows)
    all_rows = read_generations(spec.generations_path)
    imports = list(previous.get("imports", []))
    when = (now or now_utc()).strftime("%Y-%m-%dT%H:%M:%SZ")
    shown = shown_path(spec.root, source.resolve())
    imports.append({"file": shown, "sha256": sha256_file(source), "rows": len(rows), "time": when})
    manifest = {
        **{k: v for k, v in previous.items() if k not in ("counts",)},
        "gate": spec.gate,
        "source": "imported",
        "file": imports[-1]["file"] if len(imports) == 1 else "; ".join(i["file"] for i in imports),
        "file_sha256": imports[-1]["sha256"] if len(imports) == 1 else "; ".join(i["sha256"] for i in imports),
        "imports": imports,
        "counts": {
            "rows": len(all_rows),
            "voice": sum(1 for r in all_rows if r.get("kind", "voice") == "voice"),
            "probe": sum(1 for r in all_rows if r.get("kind") == "probe"),
            "imported": sum(1 for r in all_rows if r.get("imported")),
            "per_arm": {a.name: sum(1 for r in all_rows if r["arm"] == a.name) for a in spec.arms},
        },
    }
    write_manifest(spec.run_dir, manifest)
    return manifest
