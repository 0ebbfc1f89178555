"""The lv-bronte reference case as test data: a workspace, 360 generations, exact distances.

Distances are chosen to reproduce DESIGN.md §3 exactly: base spread 0.040,
ckpt475 spread 0.091 and delta_cb +0.193, ckpt925 spread 0.251 (one outlier
seed) and delta_cb +0.210. Under global-max-spread both candidates face 0.251
and FAIL; under pairwise-max-spread ckpt475 faces 0.091 and PASSES 2.1x while
ckpt925 still faces its own 0.251.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from helpers.workspace import base_spec, git, make_workspace, register_prospective, voicegate

SEEDS = (101, 202, 303)
DISTANCES: dict[str, dict[int, float]] = {
    "base": {101: 0.800, 202: 0.840, 303: 0.820},
    "ckpt475": {101: 0.5815, 202: 0.627, 303: 0.6725},
    "ckpt925": {101: 0.520, 202: 0.539, 303: 0.771},
}
SHIPPED_BLOCK_START = "# \u26a0 IT WAS SHIPPED AS A VOICE-AXIS FAILURE"
ITEM = "- lv-bronte=/adapters/lv-bronte-4b-v1"
README = ("# lv-bronte-4b-v1\n\nCharlotte Bront\u00eb voice adapter for Qwen3-4B-Instruct (LoRA r=32).\n\n"
          "Trained on the pair-SFT set; held-out novel: Villette.\n")


def as_shipped(fixture: Path) -> bytes:
    """The fleet compose as it was when lv-bronte shipped: without the later correction block."""
    lines = fixture.read_bytes().splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.strip().decode("utf-8").startswith(SHIPPED_BLOCK_START))
    end = next(i for i, ln in enumerate(lines) if ln.strip().decode("utf-8") == ITEM)
    return b"".join(lines[:start] + lines[end:])


def bronte_spec(rule: str = "global-max-spread") -> dict[str, Any]:
    spec = base_spec("lv-bronte")
    spec["author"] = "Charlotte Bront\u00eb"
    spec["arms"] = [
        {"name": "base", "model": "voices-base", "role": "base"},
        {"name": "ckpt475", "model": "lv-bronte-ckpt475", "role": "candidate",
         "adapter_path": "/adapters/lv-bronte-4b-v1/ckpt475"},
        {"name": "ckpt925", "model": "lv-bronte-ckpt925", "role": "candidate",
         "adapter_path": "/adapters/lv-bronte-4b-v1/ckpt925"},
    ]
    spec["prompts"] = "prompts/bronte-beats.txt"
    spec["seeds"] = list(SEEDS)
    spec["floor"] = {"rule": rule}
    spec["artifacts"] = {"record": "gates/lv-bronte.md", "readme": "adapters/lv-bronte-4b-v1/README.md",
                         "compose": "deploy/compose.yaml"}
    return spec


BRONTE_REGISTERED = "1796169600"  # 2026-12-02: before welch-t@1 (2026-12-06) was registered
HISTORY_RULES = ("global-max-spread", "pairwise-max-spread")


def bronte_workspace(root: Path, compose: bytes | None, *, register: bool = True,
                     spec: dict[str, Any] | None = None, prospective: bool = True) -> Path:
    """A registered lv-bronte workspace with README and compose in place; returns root.

    `prospective`: as in the history, the pairwise rule is then registered for the next gate,
    lv-hemingway (un-run: no numbers of it exist), which lv-bronte's amendment cites.
    """
    spec = spec or bronte_spec()
    make_workspace(root, spec)
    (root / "prompts" / "bronte-beats.txt").write_text(
        "".join(f"Beat {i}: a governess walks out on a grey morning and meets someone.\n" for i in range(40)),
        encoding="utf-8")
    readme = root / "adapters" / "lv-bronte-4b-v1" / "README.md"
    readme.parent.mkdir(parents=True, exist_ok=True)
    readme.write_text(README, encoding="utf-8")
    if compose is not None:
        (root / "deploy").mkdir(exist_ok=True)
        (root / "deploy" / "compose.yaml").write_bytes(compose)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "workspace")
    if register:
        # lv-bronte was registered before welch-t existed: its story is told under the two rules then in force.
        history = {} if "SOURCE_DATE_EPOCH" in os.environ else {"SOURCE_DATE_EPOCH": BRONTE_REGISTERED}
        done = voicegate(root, "register", "lv-bronte", env=history)
        assert done.returncode == 0, done.stderr
        if prospective and (spec.get("floor") or {}).get("rule") != "pairwise-max-spread":
            register_prospective(root, "lv-hemingway", "pairwise-max-spread")
    return root


def generations(arms: tuple[str, ...] = ("base", "ckpt475", "ckpt925")) -> list[dict[str, Any]]:
    """360 rows as they came off the seat before voicegate existed (text differs per row)."""
    models = {"base": "voices-base", "ckpt475": "lv-bronte-ckpt475", "ckpt925": "lv-bronte-ckpt925"}
    return [{"arm": arm, "model": models[arm], "seed": seed, "prompt_id": str(p),
             "text": f"{arm} {seed} {p}: Reader, the moor was grey and I walked on alone.",
             "finish_reason": "stop"}
            for arm in arms for seed in SEEDS for p in range(40)]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def result(rule: str, generations_sha256: str = "0" * 64) -> Any:
    """A full score result (a GateResult) for the reference case, through the scoring core's verdict seam."""
    from voicegate.scoring import decide
    from voicegate.scoring._result import ArmResult, CandidateResult, Control, Degeneration, GateResult
    from voicegate.scoring._signature import Signature

    cands = ("ckpt475", "ckpt925")
    # lv-bronte's rules: the two in force when it was registered (welch-t came later), and the deciding one
    out = decide(DISTANCES, "base", cands, rule=rule, rules=HISTORY_RULES, copying={c: "NOT-COPIED" for c in cands},
                 damage={c: "NO-DAMAGE" for c in cands})
    stats: dict[str, Any] = {"overlap": 0.0, "longest_run": 0, "spans": (), "probe_pass_rate": None,
                                 "degeneration": Degeneration(rate=0.0, empty=0.0, repetition=0.0, truncated=0.0)}
    b = out.base
    arms: list[ArmResult] = [ArmResult(name=b.name, role=b.role, model=b.name, distances=b.distances,
                                       mean_distance=b.mean_distance, spread=b.spread, **stats)]
    for c in out.candidates:
        arms.append(CandidateResult(name=c.name, role=c.role, model=c.name, distances=c.distances,
                                    mean_distance=c.mean_distance, spread=c.spread, delta_cb=c.delta_cb,
                                    floors=c.floors, voice=c.voice, ratios=c.ratios, ratio=c.ratio,
                                    disagree=c.disagree, copying=c.copying, damage=c.damage, **stats))
    sig = {"generations_sha256": generations_sha256, "rules": {"global-max-spread": "global-max-spread@1",
                                                               "pairwise-max-spread": "pairwise-max-spread@1"}}
    return GateResult(gate="lv-bronte", rule=out.rule, ships=out.ships, control=Control(arm="base", overlap=0.0),
                      arms=tuple(arms), signature=Signature.from_json(sig),
                      signature_text=f"view:stylometric|mfw:50|rule:{rule}@1")


def marker_count(data: bytes) -> int:
    return len(re.findall(rb"voicegate:entry \d+", data))


def fixed_view(distances: Any) -> Any:
    """A `view_of` for scoring._score whose distances toward the gate author are `distances` (a mapping, or a
    function returning one, read at each scoring), with no ruler check (the seam's distances are not the
    corpora's: a ruler check beside them would mean nothing)."""
    from voicegate.scoring._views import Measured, Stylometric

    class Fixed(Stylometric):
        def measure(self, cache: Any, cells: Any, target: Any) -> Measured:
            dist = distances() if callable(distances) else distances
            return Measured({arm: dict(per_seed) for arm, per_seed in dist.items()}, lambda *a: None)

        def ruler(self, cache: Any, target: Any) -> None:
            return None

    return lambda spec, *, encode=None: Fixed(spec, encode=encode)


def patch_scoring(monkeypatch: Any = None) -> None:
    """The test seam: the scoring core's per-(arm, seed) voice distances become DISTANCES.

    Everything else in `score_gate` (copying, damage, verdicts, signature) runs
    for real on the stored generations. Without a monkeypatch (a subprocess
    driver) the module attributes are replaced for the life of the process.
    """
    import voicegate.scoring._score as S

    def no_interval(*args: Any, **kwargs: Any) -> None:
        return None  # the informational bootstrap needs per-prompt pools the seam does not fake

    view = fixed_view(lambda: globals()["DISTANCES"])  # looked up at each scoring: a test may move them
    if monkeypatch is not None:
        monkeypatch.setattr(S, "view_of", view)
        monkeypatch.setattr(S, "paired_interval", no_interval)
    else:
        S.view_of = view
        S.paired_interval = no_interval


def scored_workspace(root: Path, compose: bytes | None, *, ship: bool = True, amend: bool = True,
                     prospective: bool = True, registered_before: tuple[tuple[str, str], ...] = ()) -> Path:
    """lv-bronte imported and scored under global-max-spread (+ shipped, + amended), via the library.

    `registered_before`: (gate, rule) registrations committed before lv-bronte's numbers exist, so an
    amendment can cite them as prospective (a registration after the first score is a post-hoc one).
    """
    from voicegate.artifacts import record_score, record_ship
    from voicegate.gate import amend_spec
    from voicegate.generate._import import import_file
    from voicegate.run._manifest import RunManifest
    from voicegate.run._store import generations_hash, read_rows
    from voicegate.spec._registration import check_registered
    from voicegate.spec._spec import load_spec

    bronte_workspace(root, compose, prospective=prospective)
    for gate, rule in registered_before:
        register_prospective(root, gate, rule)
    spec = load_spec(root, "lv-bronte")
    manifest = import_file(spec, write_jsonl(root / "bronte-360.jsonl", generations()))
    gh = generations_hash(read_rows(spec.generations_path))
    record_score(spec, check_registered(spec), result("global-max-spread", gh), RunManifest.from_json(manifest))
    if ship:
        record_ship(spec, "ckpt475", "additive, reversible and safety-clean")
    if amend:
        amend_spec(spec, "pairwise-max-spread", "the global floor let an unshipped arm fail the shipped one",
                   scorer=lambda spec, rows, *, rule, rules, provenance: result(rule, gh))
    return root


def committed_story(root: Path) -> Path:
    """`scored_workspace` (scored, shipped, amended) on the fleet compose fixture, its verdicts committed and
    runs/ ignored, as in a real workspace; skips without the fixture."""
    import pytest

    from helpers.shared import COMPOSE_FIXTURE as fixture

    if not fixture.is_file():
        pytest.skip(f"fleet compose fixture not present at {fixture}")
    scored_workspace(root, as_shipped(fixture))
    (root / ".gitignore").write_text("runs/\n", encoding="utf-8")  # run data is not in git
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "verdicts")
    return root
