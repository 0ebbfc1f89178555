"""`voicegate seat simulate`: dry-run a spec's generation against the stand-in seat.

Before a gate spends GPU time, this runs the real `generate` path — schedule, adapter
loading, interleaving, storage — against an in-process stand-in that serves every arm,
in a scratch copy of the workspace, so nothing is registered or written in the real one.
It reports the counts, how long the dry run took, a runtime estimate for a real seat,
and the files a real run writes.

Linear in the prompts, and quick at any size (10,000 prompts were still running
after 300 s, every request a real HTTP round trip to the stand-in): the counts come from
the full registered schedule, while the real path runs on the first `SAMPLE_PROMPTS`
prompts (and every probe), which is what exercises it; the summary says when it sampled.

It accepts every spec `register` accepts: the scratch copy holds the user's spec
as written, and every input path resolves there as it does in the workspace (`_scratch_root`
mirrors what a `../` path climbs to), so no path is rewritten and no message names a
temporary folder: whatever the scratch run refuses is said with the user's paths.
"""

from __future__ import annotations

import itertools
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voicegate._errors import VoicegateError
from voicegate.generate._estimate import RunCost, RunShape, Speed, duration_text, run_cost, run_shape
from voicegate.generate._schedule import Job
from voicegate.scoring import CanaryParams
from voicegate.spec import ARTIFACT_KINDS, GateSpec, load_spec, spec_path

TOKENS_PER_WORD = 1.3
SAMPLE_PROMPTS = 100  # the dry run's real path runs on at most this many prompts; the counts cover all


@dataclass
class Simulation:
    gate: str
    requests: int
    per_arm: dict[str, int]
    voice_rows: int
    probe_rows: int
    wall_s: float
    estimated_tokens: int
    estimated_real_s: float
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sampled: tuple[int, int, int] | None = None   # (prompts run, prompts in all, requests run) when sampled
    speed: Speed | None = None
    concurrency: int = 1
    shape: RunShape | None = None
    cost: RunCost | None = None

    def lines(self) -> list[str]:
        if self.sampled is None:
            how = f"simulated in {self.wall_s:.1f} s against the stand-in seat"
        else:
            ran, total, requests = self.sampled
            how = (f"scheduled; the real path ran {requests} of them (the first {ran} of {total:,} prompts, every "
                   f"probe) in {self.wall_s:.1f} s against the stand-in seat")
        out = [f"{self.gate}: {self.requests} requests ({self.voice_rows} voice + {self.probe_rows} probe) {how}"]
        out += [f"  {arm}: {n} generations" for arm, n in self.per_arm.items()]
        speed = self.speed
        if speed is not None:
            out.append(f"  on a real seat: roughly {duration_text(self.estimated_real_s)} at "
                       f"{speed.rate_text(self.concurrency)}, {speed.how}")
        if self.shape is not None and self.cost is not None:
            out.append("    = " + " + ".join(parts_text(self.shape, self.cost)))
        out += [f"  note: {n}" for n in self.notes]
        out.append("a real run writes:")
        out += [f"  {f}" for f in self.files]
        return out


def parts_text(shape: RunShape, cost: RunCost) -> list[str]:
    """The estimate's parts, each with what it counts: they add up to the estimate."""
    integrity = [f"{n} {what}" for n, what in ((shape.references, "references"), (shape.checks, "canary checks"),
                                                (shape.file_probes, "file probes"), (shape.reasks, "identity re-asks"))
                 if n]
    out = [f"generations ~{cost.generations_s:.1f} s ({shape.generations}, ~{shape.tokens:,} completion tokens)",
           f"integrity requests ~{cost.integrity_s:.1f} s ({shape.integrity}: {', '.join(integrity)})",
           f"drains ~{cost.drains_s:.1f} s ({shape.idle_slots} slots idle while {len(shape.drains)} waves end"
           + (f", {shape.turns} of them arm switches)" if shape.turns else ")")]
    if shape.loads:
        out.append(f"adapter loads ~{cost.loads_s:.1f} s ({shape.loads})")
    out.append(f"start and seat checks ~{cost.start_s:.1f} s")
    return out


def estimate_json(sim: Simulation) -> dict[str, Any] | None:
    """The estimate as `--json` gives it: the total, the speed it used, each part with what it counts."""
    speed, shape, cost = sim.speed, sim.shape, sim.cost
    if speed is None or shape is None or cost is None:
        return None
    return {
        "seconds": round(cost.total_s, 2),
        "speed": {"tok_s": round(speed.tok_s, 1), "in_flight": speed.in_flight, "measured": speed.measured,
                  "how": speed.how},
        "parts": {
            "generations": {"seconds": round(cost.generations_s, 2), "requests": shape.generations,
                            "completion_tokens": shape.tokens},
            "integrity_requests": {"seconds": round(cost.integrity_s, 2), "requests": shape.integrity,
                                   "references": shape.references, "canary_checks": shape.checks,
                                   "file_probes": shape.file_probes, "identity_reasks": shape.reasks,
                                   "completion_tokens": round(shape.integrity_tokens)},
            "drains": {"seconds": round(cost.drains_s, 2), "waves": len(shape.drains), "arm_switches": shape.turns,
                       "idle_slots": shape.idle_slots},
            "adapter_loads": {"seconds": round(cost.loads_s, 2), "adapters": shape.loads},
            "start": {"seconds": round(cost.start_s, 2)},
        },
    }


@contextmanager
def _environ(overrides: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in overrides}
    os.environ.update(overrides)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _climbs(raw: Any) -> list[tuple[int, str]]:
    """(levels up, the name found there) for every input path of the spec that leaves the workspace by `..`.

    Input paths are wherever the spec names files: prompts, every corpus (a glob, a list of globs, the
    impostors' mapping of either), the probes, a local voice model. Absolute and `~` paths need nothing.
    """
    found: list[str] = []

    def strings(value: Any) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list):
            for v in value:
                strings(v)
        elif isinstance(value, dict):
            for v in value.values():
                strings(v)

    if isinstance(raw, dict):
        strings(raw.get("prompts"))
        strings(raw.get("corpora"))
        for section, key in (("damage", "probes"), ("voice", "model")):
            if isinstance(raw.get(section), dict):
                strings(raw[section].get(key))
    out = []
    for value in found:
        if os.path.isabs(os.path.expanduser(value)):
            continue
        parts = Path(os.path.normpath(value)).parts
        ups = len(parts) - len(tuple(itertools.dropwhile(lambda p: p == "..", parts)))
        if ups and ups < len(parts):
            out.append((ups, parts[ups]))
    return out


def _scratch_root(spec: GateSpec, tmp: Path) -> Path:
    """The scratch workspace under `tmp`, at the depth the spec's `..` paths climb, named as the real one.

    For `../shared/x.txt` the scratch is tmp/<workspace name> and tmp/shared links to the real ../shared:
    the path resolves to the same file from the scratch as from the workspace. Where a climbed-to name
    is a glob, each folder it matches is linked.
    """
    import glob as globbing

    root = spec.root.resolve()
    climbs = _climbs(spec.raw)
    depth = min(max((ups for ups, _ in climbs), default=0), len(root.parents) - 1)
    chain = [root.parents[i].name for i in range(depth - 1, -1, -1)] + [root.name]
    scratch = tmp.joinpath(*chain)
    scratch.mkdir(parents=True)
    for ups, name in climbs:
        if ups > depth:
            continue
        here = scratch.parents[ups - 1]     # the scratch's folder `ups` levels up
        real = root.parents[ups - 1]
        for match in globbing.glob(str(real / name)):
            link = here / Path(match).name
            if not link.exists() and not link.is_symlink():
                link.symlink_to(match)
    return scratch


def _scratch_workspace(spec: GateSpec, scratch: Path) -> None:
    """The same relative paths as the real workspace, through symlinks; its own git and data dir.

    More than `SAMPLE_PROMPTS` prompts: the scratch spec names a file of the first ones, with their ids.
    """
    from voicegate.spec import git

    for entry in spec.root.iterdir():
        if entry.name in {".git", "preregistrations", "gates", spec.data_dir.name}:
            continue
        (scratch / entry.name).symlink_to(entry)
    (scratch / "preregistrations").mkdir()
    for entry in (spec.root / "preregistrations").iterdir():
        # files kept beside the specs (prompts, probes) are inputs too; specs and records are not
        if not entry.name.endswith((".yaml", ".yml", ".json")):
            (scratch / "preregistrations" / entry.name).symlink_to(entry)
    target = scratch / "preregistrations" / spec.path.name
    import yaml

    raw = _trimmed(spec.raw)
    if len(spec.prompts) > SAMPLE_PROMPTS and isinstance(raw, dict):
        sample = scratch / ".voicegate-simulate-prompts.jsonl"
        sample.write_text("".join(json.dumps({"id": p.id, "text": p.text}, ensure_ascii=False) + "\n"
                                  for p in spec.prompts[:SAMPLE_PROMPTS]), encoding="utf-8")
        raw["prompts"] = str(sample)
    target.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True), encoding="utf-8")
    git(scratch, "init", "-q")


def _trimmed(raw: Any) -> Any:
    """The scratch spec: the user's, but naming the gate record as its only artifact.

    A simulation writes no verdict; the other artifacts (an adapter's README, a compose file) may sit
    outside the workspace, which the scratch copy does not mirror.
    """
    import copy

    if not isinstance(raw, dict):
        return raw
    out = copy.deepcopy(raw)
    artifacts = out.get("artifacts")
    if isinstance(artifacts, dict):
        for key in [k.name for k in ARTIFACT_KINDS if not k.required] + ["outside_workspace"]:
            artifacts.pop(key, None)
    return out


@contextmanager
def _users_paths(tmp: Path, real: Path) -> Iterator[None]:
    """A refusal from the scratch run, said with the user's paths: `tmp` stands for the folder `real`."""
    try:
        yield
    except VoicegateError as exc:
        text = str(exc)
        for fake in dict.fromkeys((str(tmp), os.path.realpath(tmp))):
            text = text.replace(fake, str(real))
        exc.args = (text, *exc.args[1:])
        raise


def simulate(root: Path, gate: str, *, token_time: float = 0.0, seat_url: str | None = None,
             speed: Callable[[GateSpec], Speed] | None = None) -> Simulation:
    """Dry-run `gate`; `speed(spec)` is the real seat's speed for the estimate (`seat_speed` by default,
    which probes `seat_url`, else $VOICEGATE_SEAT_URL, else the spec's seat)."""
    from voicegate.generate._generate import generate
    from voicegate.generate._schedule import build_schedule
    from voicegate.run import read_generations
    from voicegate.seat import StandinSeat
    from voicegate.spec import register

    spec = load_spec(root, gate)
    # candidates without an adapter_path must already be served; the rest load at run time
    served = {a.model: f"/adapters/{a.model}" for a in spec.candidates if not a.adapter_path}
    with tempfile.TemporaryDirectory(prefix="voicegate-simulate-") as tmp:
        scratch = _scratch_root(spec, Path(tmp))
        real_tmp = spec.root.resolve().parents[len(scratch.relative_to(tmp).parts) - 1]
        _scratch_workspace(spec, scratch)
        overrides = {"VOICEGATE_DATA_DIR": str(scratch / "runs")}
        if spec.seat.api_key_env and not os.environ.get(spec.seat.api_key_env):
            overrides[spec.seat.api_key_env] = "simulated-key"  # the stand-in takes any key
        with _environ(overrides), _users_paths(Path(tmp), real_tmp):
            scratch_spec = load_spec(scratch, gate)
            register(scratch_spec)
            with StandinSeat(base=spec.seat.base_model, adapters=served, slots=spec.seat.concurrency,
                             token_time=token_time) as seat:
                started = time.monotonic()
                generate(scratch_spec, seat_url=seat.url, quiet=True)
                wall = time.monotonic() - started
            ran = len(read_generations(scratch_spec.generations_path))
    jobs = build_schedule(spec)  # the counts: the whole registered schedule, whatever ran
    per_arm = {a.name: 0 for a in spec.arms}
    for j in jobs:
        per_arm[j.arm] += 1
    probes = sum(1 for j in jobs if j.kind == "probe")
    voice = len(jobs) - probes
    tokens = int(voice * min(spec.sampling.max_tokens, spec.expected_words * TOKENS_PER_WORD)
                 + probes * min(spec.sampling.max_tokens, 64))
    real_speed = (speed or (lambda s: seat_speed(s, seat_url)))(spec)
    shape = spec_shape(spec, jobs, tokens, real_speed.cards)
    cost = run_cost(shape, real_speed)

    def rel(p: Path) -> str:
        return os.path.relpath(p, root)

    files = [rel(spec_path(root, gate).with_name(f"{gate}.registration.json")) + "  (register)",
             rel(spec.generations_path) + "  (generate)", rel(spec.run.manifest) + "  (generate)",
             rel(spec.run.scores) + "  (score)"]
    files += [rel(p) + "  (score, amend, ship)" for p in spec.artifacts.named().values()]  # the record first
    notes = []
    runtime = [a.model for a in spec.candidates if a.adapter_path]
    if runtime:
        notes.append(f"{len(runtime)} candidate(s) would be runtime-loaded and unloaded after: {', '.join(runtime)}")
    sampled = (SAMPLE_PROMPTS, len(spec.prompts), ran) if len(spec.prompts) > SAMPLE_PROMPTS else None
    return Simulation(gate, len(jobs), per_arm, voice, probes, wall, tokens, cost.total_s, files, notes, sampled,
                      real_speed, spec.seat.concurrency, shape, cost)


def spec_shape(spec: GateSpec, jobs: list[Job], tokens: int,
               cards: tuple[tuple[str, str | None], ...] = ()) -> RunShape:
    """What a first run of `spec` sends beside its generations (`run_shape`), on the seat whose `cards` (model,
    root) the probe read: the files a run probes are those at hand here, the adapters it loads those not served."""
    from voicegate.generate._adapter_files import adapter_dir
    from voicegate.generate._adapter_files import spec_path as adapter_path
    from voicegate.generate._carrier_files import carrier_bound, carrier_dir, over_bound, why_no_local
    from voicegate.generate._generate import WAVE_FACTOR, registered_isolation

    roots = dict(cards)
    found = carrier_dir(roots.get(spec.base.model))
    carrier = found is not None and why_no_local() is None and over_bound(found, carrier_bound()) is None
    adapters = sum(adapter_dir([adapter_path(spec, a.adapter_path), roots.get(a.model)]) is not None
                   for a in spec.candidates) if carrier else 0
    loads = sum(1 for a in spec.candidates if a.adapter_path and a.model not in roots)
    params = CanaryParams()
    conc = spec.seat.concurrency
    return run_shape([a.name for a in spec.arms], len(jobs) // max(1, len(spec.arms)), tokens=tokens,
                     answer_tokens=min(spec.sampling.max_tokens, spec.expected_words * TOKENS_PER_WORD),
                     max_tokens=spec.sampling.max_tokens, concurrency=conc, isolate=registered_isolation(spec),
                     wave_size=conc * WAVE_FACTOR, canaries=min(params.count, len(spec.prompts)),
                     order_seed=spec.order_seed, reasks=_reasks(spec), probed_files=int(carrier) + adapters,
                     loads=loads, params=params)


def _reasks(spec: GateSpec) -> int:
    """The arms a run re-asks an earlier answer of: those whose model answered before in this data dir's ledger."""
    from voicegate.run import read_rows

    try:
        models = {r.get("model") for r in read_rows(spec.run.identity)}
    except (OSError, VoicegateError):
        return 0
    return sum(1 for a in spec.arms if a.model in models)


def seat_speed(spec: GateSpec, seat_url: str | None = None) -> Speed:
    """The speed of the seat a run of `spec` would use (`--seat`, $VOICEGATE_SEAT_URL, the spec's), probed."""
    from voicegate.generate._estimate import probe_speed
    from voicegate.seat import api_key_from_env, seat_urls

    urls = seat_urls([seat_url] if seat_url else [], lambda: [(spec.seat.url, f"{spec.path.name}: seat.url")])
    from voicegate.generate._generate import registered_isolation

    return probe_speed(spec, urls[0], api_key_from_env(spec.seat.api_key_env), isolate=registered_isolation(spec))
