"""`voicegate seat simulate`: dry-run a spec's generation against the stand-in seat.

Before a gate spends GPU time, this runs the real `generate` path — schedule, adapter
loading, interleaving, storage — against an in-process stand-in that serves every arm,
in a scratch copy of the workspace, so nothing is registered or written in the real one.
It reports the counts, how long the dry run took, a runtime estimate for a real seat,
and the files a real run writes.

Linear in the prompts, and quick at any size (issue 25: 10,000 prompts were still running
after 300 s, every request a real HTTP round trip to the stand-in): the counts come from
the full registered schedule, while the real path runs on the first `SAMPLE_PROMPTS`
prompts (and every probe), which is what exercises it; the summary says when it sampled.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voicegate.spec import ARTIFACT_KINDS, GateSpec, load_spec, spec_path

# Decode speeds the fleet's seat measured (DESIGN.md §5): the estimate uses the LoRA one,
# the slower of the two, per sequence in flight.
SEAT_LORA_TOK_S = 108.2
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

    def lines(self) -> list[str]:
        if self.sampled is None:
            how = f"simulated in {self.wall_s:.1f} s against the stand-in seat"
        else:
            ran, total, requests = self.sampled
            how = (f"scheduled; the real path ran {requests} of them (the first {ran} of {total:,} prompts, every "
                   f"probe) in {self.wall_s:.1f} s against the stand-in seat")
        out = [f"{self.gate}: {self.requests} requests ({self.voice_rows} voice + {self.probe_rows} probe) {how}"]
        out += [f"  {arm}: {n} generations" for arm, n in self.per_arm.items()]
        out.append(f"  on a real seat: ~{self.estimated_tokens:,} completion tokens, roughly "
                   f"{self.estimated_real_s / 60:.0f} min at {SEAT_LORA_TOK_S} tok/s per sequence in flight")
        out += [f"  note: {n}" for n in self.notes]
        out.append("a real run writes:")
        out += [f"  {f}" for f in self.files]
        return out


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
    target = scratch / "preregistrations" / spec.path.name
    import yaml

    raw = _anchored(spec.raw, spec.root)
    if len(spec.prompts) > SAMPLE_PROMPTS and isinstance(raw, dict):
        sample = scratch / ".voicegate-simulate-prompts.jsonl"
        sample.write_text("".join(json.dumps({"id": p.id, "text": p.text}, ensure_ascii=False) + "\n"
                                  for p in spec.prompts[:SAMPLE_PROMPTS]), encoding="utf-8")
        raw["prompts"] = str(sample)
    target.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True), encoding="utf-8")
    git(scratch, "init", "-q")


def _anchored(raw: Any, root: Path) -> Any:
    """The scratch spec: input paths that climb out of the workspace (`../shared/...`) made absolute.

    The scratch copy lives elsewhere, so a `..` there would point at another folder; paths
    inside the workspace resolve the same through the scratch copy's symlinks.
    """
    import copy

    def fix(value: Any) -> Any:
        if isinstance(value, str) and not os.path.isabs(os.path.expanduser(value)) \
                and Path(value).parts[:1] == ("..",):
            return os.path.normpath(root / value)
        return value

    if not isinstance(raw, dict):
        return raw
    out = copy.deepcopy(raw)
    if "prompts" in out:
        out["prompts"] = fix(out["prompts"])
    corpora = out.get("corpora")
    if isinstance(corpora, dict):
        for key, patterns in corpora.items():
            if isinstance(patterns, list):
                corpora[key] = [fix(x) for x in patterns]
    for section, key in (("damage", "probes"), ("voice", "model")):
        if isinstance(out.get(section), dict) and key in out[section]:
            out[section][key] = fix(out[section][key])
    artifacts = out.get("artifacts")
    if isinstance(artifacts, dict):
        # a simulation writes no verdict; through the scratch copy's symlinks these would
        # resolve outside it (and refuse), so the scratch spec names the record only
        for key in [k.name for k in ARTIFACT_KINDS if not k.required] + ["outside_workspace"]:
            artifacts.pop(key, None)
    return out


def simulate(root: Path, gate: str, *, token_time: float = 0.0) -> Simulation:
    from voicegate.generate._generate import generate
    from voicegate.generate._schedule import build_schedule
    from voicegate.run import read_generations
    from voicegate.seat import StandinSeat
    from voicegate.spec import register

    spec = load_spec(root, gate)
    # candidates without an adapter_path must already be served; the rest load at run time
    served = {a.model: f"/adapters/{a.model}" for a in spec.candidates if not a.adapter_path}
    with tempfile.TemporaryDirectory(prefix="voicegate-simulate-") as tmp:
        scratch = Path(tmp)
        _scratch_workspace(spec, scratch)
        overrides = {"VOICEGATE_DATA_DIR": str(scratch / "runs")}
        if spec.seat.api_key_env and not os.environ.get(spec.seat.api_key_env):
            overrides[spec.seat.api_key_env] = "simulated-key"  # the stand-in takes any key
        with _environ(overrides):
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
    estimate = tokens / (SEAT_LORA_TOK_S * spec.seat.concurrency)

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
    return Simulation(gate, len(jobs), per_arm, voice, probes, wall, tokens, estimate, files, notes, sampled)
