"""One battery of named checks for each registry: floor rules, voice views, artifact kinds (and kind × event).

scikit-learn's `parametrize_with_checks` in voicegate's terms: a check is a plain function of one registry
entry and a `Ctx`, raising AssertionError with a message that says which part is missing. The battery
(`tests/project/test_registries.py`) runs every check over every entry the registries hold when the tests
are collected, so an entry added in the code is checked without a test being edited;
`tests/project/test_registry_recipes.py` runs the same checks over a throwaway rule, view and kind that live
only in a test, and shows each missing part failing a named check.

The registries are read at call time (`rules()`, `views()`, `kinds()`), never copied at import, so a
monkeypatched entry is seen. Docs are read from `ctx.docs` (the repository's docs/ unless a test points it
at a copy it wrote the entry's lines into) and templates through the environment `artifacts/_format.render`
uses (a test adds a loader folder of its own to it).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers.shared import REPO
from helpers.workspace import Templates, base_spec, git, make_workspace, register_prospective, run_cli

DOCS = REPO / "docs"
GATE = "lv-bronte"
SEEDS = (101, 202, 303)
CANDIDATES = ("ckpt475", "ckpt925")
# The reference case's distances (DESIGN.md §3), and two more shapes a floor must take: five seeds, and seeds
# that gave one value each (no spread at all).
DISTANCE_CASES: dict[str, dict[str, dict[int, float]]] = {
    "bronte": {"base": {101: 0.800, 202: 0.840, 303: 0.820},
               "ckpt475": {101: 0.5815, 202: 0.627, 303: 0.6725},
               "ckpt925": {101: 0.520, 202: 0.539, 303: 0.771}},
    "five-seeds": {"base": {s: 0.80 + 0.01 * (s % 3) for s in range(1, 6)},
                   "ckpt475": {s: 0.60 + 0.02 * (s % 2) for s in range(1, 6)},
                   "ckpt925": {s: 0.79 + 0.015 * (s % 4) for s in range(1, 6)}},
    "no-spread": {"base": {1: 0.8, 2: 0.8, 3: 0.8}, "ckpt475": {1: 0.6, 2: 0.6, 3: 0.6},
                  "ckpt925": {1: 0.7, 2: 0.7, 3: 0.7}},
}
PROMPTS = 8


def prompt_parts(distances: dict[str, dict[int, float]]) -> dict[str, dict[int, list[float]]]:
    """Each prompt's part of every (arm, seed) distance, as a rule that pairs prompts reads them
    (`Effect.prompts`, where the registry has it): per seed, prompts in pairs of equal and opposite offsets, so
    their mean is the distance."""
    return {arm: {s: [d + 0.01 * (-1) ** p * (1 + (p // 2 + s) % 3) for p in range(PROMPTS)] for s, d in per.items()}
            for arm, per in distances.items()}


def _with_prompts(function: Callable[..., Any], prompts: Any) -> dict[str, Any]:
    """`prompts=` for a verdict function (or `Effect`) that takes each prompt's part of the distances; nothing
    where it does not: the checks feed every rule what the scoring core would, whichever inputs it reads."""
    import inspect

    return {"prompts": prompts} if "prompts" in inspect.signature(function).parameters else {}


COMPOSE = ("services:\n  vllm:\n    command:\n      - --lora-modules\n"
           "      - lv-bronte=/adapters/lv-bronte-4b-v1\n")
README = "# lv-bronte-4b-v1\n\nCharlotte Bront\u00eb voice adapter.\n"
REASON = "additive, reversible and safety-clean"
AMEND_REASON = "the global floor let an unshipped arm fail the shipped one"
NOTE = "the global floor is one outlier seed of ckpt925; written down, not acted on"


# -- the registries, read when asked ----------------------------------------------------------------------


def rules() -> list[Any]:
    from voicegate.spec import _rules

    return list(_rules.RULES.values())


def views() -> list[Any]:
    from voicegate.spec import _views

    return list(_views.VIEW_SPECS.values())


def kinds() -> list[Any]:
    from voicegate.spec import _artifact_kinds

    return list(_artifact_kinds.ARTIFACT_KINDS)


def events() -> tuple[str, ...]:
    from voicegate.spec import EVENTS

    return EVENTS


@dataclass
class Ctx:
    """What a check may use beside its entry: a scratch folder, the docs, the templates, built workspaces."""

    tmp: Path
    docs: Path = DOCS
    templates: Templates | None = None
    cache: dict[Any, Any] = field(default_factory=dict)

    def doc(self, name: str) -> str:
        return (self.docs / name).read_text(encoding="utf-8")

    def scratch(self, name: str) -> Path:
        path = self.tmp / name
        n = 1
        while path.exists():
            n += 1
            path = self.tmp / f"{name}-{n}"
        return path

    def workspaces(self) -> Templates:
        if self.templates is None:
            self.templates = Templates(self.scratch("templates"))
        return self.templates


def template_loads(ctx: Ctx, name: str) -> None:
    """`name` found and parsed by the environment `artifacts/_format.render` renders it with."""
    import jinja2

    from voicegate.artifacts import _format

    env = _format.env(markdown=name.endswith(".md.j2"))
    try:
        env.get_template(name)
    except jinja2.TemplateNotFound:
        raise AssertionError(f"template {name} not found in voicegate/templates/") from None


# -- the reference workspace: lv-bronte, import-based, registered in this process ----------------------------


def story_spec(extra_kinds: Sequence[Any] = ()) -> dict[str, Any]:
    """lv-bronte's spec (global-max-spread decides), its three artifacts and `extra_kinds`' each at a path of
    its own."""
    spec = base_spec(GATE)
    spec["author"] = "Charlotte Bront\u00eb"
    spec["arms"] = [{"name": "base", "model": "voices-base", "role": "base"},
                    *({"name": c, "model": f"lv-bronte-{c}", "role": "candidate",
                       "adapter_path": f"/adapters/lv-bronte-4b-v1/{c}"} for c in CANDIDATES)]
    spec["seeds"] = list(SEEDS)
    spec["floor"] = {"rule": "global-max-spread"}
    spec["artifacts"] = {"record": f"gates/{GATE}.md", "readme": "adapters/lv-bronte-4b-v1/README.md",
                         "compose": "deploy/compose.yaml",
                         **{k.name: f"extra/{k.name}/{GATE}.md" for k in extra_kinds}}
    return spec


def _story_workspace(root: Path, extra_kinds: Sequence[Any]) -> Path:
    """Registered (in this process, so monkeypatched registries apply), a prospective registration of
    pairwise-max-spread for the amendment to cite, a row for every (arm, seed, prompt) imported; returns root."""
    from voicegate.generate._import import import_file
    from voicegate.spec._registration import register
    from voicegate.spec._spec import load_spec

    spec = story_spec(extra_kinds)
    make_workspace(root, spec)
    files = {"adapters/lv-bronte-4b-v1/README.md": README, "deploy/compose.yaml": COMPOSE, ".gitignore": "runs/\n"}
    for kind in extra_kinds:
        (root / "extra" / kind.name).mkdir(parents=True, exist_ok=True)
        if kind.must_exist:
            files[f"extra/{kind.name}/{GATE}.md"] = f"# {kind.what}\n"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "workspace")
    register(load_spec(root, GATE))
    register_prospective(root, "lv-hemingway", "pairwise-max-spread")
    rows = [{"arm": arm["name"], "model": arm["model"], "seed": seed, "prompt_id": str(p.id),
             "text": f"{arm['name']} {seed} {p.id}: Reader, the moor was grey and I walked on alone.",
             "finish_reason": "stop"}
            for arm in spec["arms"] for seed in SEEDS for p in load_spec(root, GATE).prompts]
    source = root.parent / f"{root.name}-generations.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    import_file(load_spec(root, GATE), source)
    return root


def story_workspace(ctx: Ctx, extra_kinds: Sequence[Any] = ()) -> Path:
    """A fresh copy of the registered, imported reference workspace (built once per `ctx.templates`)."""
    name = "story-" + "-".join(k.name for k in extra_kinds) if extra_kinds else "story"
    return ctx.workspaces().copy(name, lambda p: _story_workspace(p, extra_kinds), ctx.scratch(name))


def gate_result(rule: str, rules: Sequence[str], generations_sha256: str = "0" * 64,
                distances: dict[str, dict[int, float]] | None = None) -> Any:
    """A full GateResult for the reference case under `rule` (computing `rules` beside it), through `decide`."""
    from voicegate.scoring import decide
    from voicegate.scoring._result import ArmResult, CandidateResult, Control, Degeneration, GateResult
    from voicegate.scoring._signature import Signature
    from voicegate.spec import get_rule

    distances = distances or DISTANCE_CASES["bronte"]
    out = decide(distances, "base", CANDIDATES, rule=rule, rules=rules, copying=dict.fromkeys(CANDIDATES, "NOT-COPIED"),
                 damage=dict.fromkeys(CANDIDATES, "NO-DAMAGE"), **_with_prompts(decide, prompt_parts(distances)))
    stats: dict[str, Any] = {"overlap": 0.0, "longest_run": 0, "spans": (), "probe_pass_rate": None,
                             "degeneration": Degeneration(rate=0.0, empty=0.0, repetition=0.0, truncated=0.0)}
    b = out.base
    arms: list[ArmResult] = [ArmResult(name=b.name, role=b.role, model=b.name, distances=b.distances,
                                       mean_distance=b.mean_distance, spread=b.spread, **stats)]
    arms += [CandidateResult(name=c.name, role=c.role, model=c.name, distances=c.distances,
                             mean_distance=c.mean_distance, spread=c.spread, delta_cb=c.delta_cb, floors=c.floors,
                             voice=c.voice, ratios=c.ratios, ratio=c.ratio, disagree=c.disagree, copying=c.copying,
                             damage=c.damage, **stats) for c in out.candidates]
    computed = out.candidates[0].floors
    sig = {"generations_sha256": generations_sha256, "rules": {rid: get_rule(rid).signature for rid in computed}}
    return GateResult(gate=GATE, rule=out.rule, ships=out.ships, control=Control(arm="base", overlap=0.0),
                      arms=tuple(arms), signature=Signature.from_json(sig),
                      signature_text=f"view:stylometric|mfw:50|rule:{get_rule(rule).signature}")


def _record_score(root: Path, rule: str) -> Any:
    """`score`'s entry under `rule` (the rules the registration computes beside it), through the library."""
    from voicegate.artifacts import record_score
    from voicegate.run._manifest import RunManifest
    from voicegate.run._store import generations_hash, read_rows
    from voicegate.scoring._verdicts import rule_set
    from voicegate.spec._registration import check_registered
    from voicegate.spec._spec import load_spec

    spec = load_spec(root, GATE)
    registration = check_registered(spec)
    result = gate_result(rule, rule_set(rule, registration.rules),
                         generations_hash(read_rows(spec.generations_path)))
    manifest = json.loads(spec.run.manifest.read_text(encoding="utf-8")) if spec.run.manifest.is_file() else {}
    record_score(spec, registration, result, RunManifest.from_json(manifest))
    return result


# -- floor rules ----------------------------------------------------------------------------------------------


def rule_signature_and_date(rule: Any, ctx: Ctx) -> None:
    from voicegate.spec import RULES

    assert re.fullmatch(r"[a-z][a-z0-9-]*", rule.id), f"{rule.id!r}: a rule id is lower-case words and hyphens"
    assert RULES.get(rule.id) is rule, f"{rule.id}: not registered under its own id in RULES"
    assert isinstance(rule.version, int) and rule.version >= 1, f"{rule.id}: version {rule.version!r} is not >= 1"
    assert rule.signature == f"{rule.id}@{rule.version}", f"{rule.id}: signature {rule.signature!r} is not id@version"
    assert type(rule.registered) is _dt.date, f"{rule.id}: registered {rule.registered!r} is not a date"
    assert rule.summary.strip(), f"{rule.id}: no summary"


def rule_is_a_floor_rule_choice(rule: Any, ctx: Ctx) -> None:
    from voicegate.spec import _schema

    kind = _schema.spec_schema().key("floor.rule").kind
    assert rule.id in kind.options and kind.check(rule.id) == rule.id, \
        f"{rule.id}: a spec cannot name it as floor.rule (choices: {kind.options})"


def _floor_type(rule: Any) -> Any:
    """What the rule's floor returns, as its type says (`FloorRule.floor`'s annotation, or a subclass's)."""
    return typing.get_type_hints(type(rule).floor)["return"]


def _is_floor(value: Any, kind: Any) -> bool:
    if kind is float:
        return isinstance(value, float) and not math.isnan(value)
    origin = typing.get_origin(kind) or kind
    if origin in (typing.Union, types.UnionType):
        return any(_is_floor(value, k) for k in typing.get_args(kind))
    return kind is type(None) and value is None or isinstance(origin, type) and isinstance(value, origin)


def rule_floor_on_constructed_distances(rule: Any, ctx: Ctx) -> None:
    from voicegate.spec import Effect

    kind = _floor_type(rule)
    for case, distances in DISTANCE_CASES.items():
        for candidate in CANDIDATES:
            parts = _with_prompts(Effect, prompt_parts(distances))
            for effect in (Effect(**parts), Effect(smallest=0.01, family=2, **parts)):
                floor = rule.floor(distances, "base", candidate, effect)
                assert _is_floor(floor, kind), (f"{rule.id}: floor {floor!r} on {case}/{candidate} is not a "
                                                f"{kind} (its floor's type)")
                again = rule.floor({a: dict(d) for a, d in distances.items()}, "base", candidate, effect)
                assert again == floor, f"{rule.id}: floor on {case}/{candidate} not deterministic"
                nearer = rule.nearer_floor(distances, "base", candidate, effect)
                assert _is_floor(nearer, kind), f"{rule.id}: nearer floor {nearer!r} on {case}/{candidate}"
                detectable = rule.detectable(distances, "base", candidate, effect)
                assert detectable is None or isinstance(detectable, float), \
                    f"{rule.id}: detectable {detectable!r} on {case}/{candidate} is neither a float nor None"


def rule_verdict_for_every_candidate(rule: Any, ctx: Ctx) -> None:
    from voicegate.scoring import decide, specificity

    for case, distances in DISTANCE_CASES.items():
        out = decide(distances, "base", CANDIDATES, rule=rule.id, rules=(rule.id,),
                     copying=dict.fromkeys(CANDIDATES, "NOT-COPIED"), damage=dict.fromkeys(CANDIDATES, "NO-DAMAGE"),
                     **_with_prompts(decide, prompt_parts(distances)))
        assert out.rule == rule.id, f"{rule.id}: decide reports rule {out.rule!r}"
        for c in out.candidates:
            assert c.voice.get(rule.id) in ("PASS", "FAIL"), f"{rule.id}: {case}/{c.name} has voice {c.voice}"
            assert rule.id in c.floors, f"{rule.id}: {case}/{c.name} has no floor under it ({c.floors})"
        impostor = {a: {s: d + 0.05 for s, d in per.items()} for a, per in distances.items()}
        for candidate in CANDIDATES:
            parts = {"the author": prompt_parts(distances), "Someone Else": prompt_parts(impostor)}
            spec = specificity(distances, {"Someone Else": impostor}, "base", candidate, author="the author",
                               decides=True, rule=rule.id, rules=(rule.id,), **_with_prompts(specificity, parts))
            assert spec.under(rule.id), f"{rule.id}: {case}/{candidate} has no specificity verdict under it"


def rule_result_round_trips_json(rule: Any, ctx: Ctx) -> None:
    from voicegate.scoring import GateResult, result_text

    for case, distances in DISTANCE_CASES.items():
        result = gate_result(rule.id, (rule.id,), distances=distances)
        assert rule.id in result.rules, f"{rule.id}: a result decided under it does not list it ({result.rules})"
        text = result_text(result)
        back = GateResult.from_json(json.loads(text))
        assert result_text(back) == text, f"{rule.id}: the {case} result's JSON changes in a round trip"
        assert back.signature.to_json()["rules"].get(rule.id) == rule.signature, \
            f"{rule.id}: the {case} result's signature does not carry {rule.signature}"


def rule_renders_in_every_entry(rule: Any, ctx: Ctx) -> None:
    from voicegate.spec._spec import load_spec

    root = story_workspace(ctx)
    _record_score(root, rule.id)
    for name, path in load_spec(root, GATE).artifacts.named().items():
        assert rule.signature in path.read_text(encoding="utf-8"), \
            f"{rule.id}: the {name} entry of a score under it does not name {rule.signature}"


def rule_spelled_out_in_amend_help(rule: Any, ctx: Ctx) -> None:
    from voicegate.cli._entries import RULES_HELP

    text = f"{rule.id} (v{rule.version}, registered {rule.registered.isoformat()}: {rule.summary})"
    assert text in RULES_HELP, f"{rule.id}: cli/_entries.RULES_HELP does not spell out {text!r}"


def rule_styled_in_the_report(rule: Any, ctx: Ctx) -> None:
    from voicegate.report import _svg

    assert rule.id in _svg.FLOOR_STYLE, f"{rule.id}: report/_svg.FLOOR_STYLE gives it no letter and dash"
    letter, dash = _svg.FLOOR_STYLE[rule.id]
    others = {_svg.FLOOR_STYLE[r.id][0]: r.id for r in rules() if r.id != rule.id and r.id in _svg.FLOOR_STYLE}
    assert letter not in others, f"{rule.id}: its letter {letter!r} is {others.get(letter)}'s too"
    assert dash in _svg._DASH_WORDS, f"{rule.id}: its dash {dash!r} has no word in report/_svg._DASH_WORDS"


def rule_named_in_the_docs(rule: Any, ctx: Ctx) -> None:
    line = f"`{rule.id}` (v{rule.version}, registered {rule.registered.isoformat()})"
    assert line in ctx.doc("concepts.md"), f"{rule.id}: docs/concepts.md does not name it as {line!r}"
    row = next((ln for ln in ctx.doc("reference.md").splitlines() if ln.startswith("| `floor.rule` |")), "")
    assert f"`{rule.id}`" in row, f"{rule.id}: docs/reference.md's floor.rule choices do not list it (regenerate)"


RULE_CHECKS: tuple[Callable[[Any, Ctx], None], ...] = (
    rule_signature_and_date, rule_is_a_floor_rule_choice, rule_floor_on_constructed_distances,
    rule_verdict_for_every_candidate, rule_result_round_trips_json, rule_renders_in_every_entry,
    rule_spelled_out_in_amend_help, rule_styled_in_the_report, rule_named_in_the_docs,
)


# -- voice views ------------------------------------------------------------------------------------------------


def view_descriptor_registered(view: Any, ctx: Ctx) -> None:
    from voicegate.scoring import _views as scoring_views
    from voicegate.spec import VIEW_SPECS

    assert VIEW_SPECS.get(view.name) is view, f"{view.name}: not registered under its name in VIEW_SPECS"
    cls = scoring_views.VIEWS.get(view.name)
    assert cls is not None, f"{view.name}: no View class in scoring/_views.VIEWS"
    assert cls.descriptor is view, f"{view.name}: VIEWS[{view.name!r}].descriptor is not its ViewSpec"
    assert cls.name == view.name, f"{view.name}: its View class is named {cls.name!r}"


def view_signature_keys(view: Any, ctx: Ctx) -> None:
    from voicegate.spec import HISTORICAL_SIGNATURE_KEYS

    keys = view.signature_keys
    assert keys and len(set(keys)) == len(keys), f"{view.name}: signature keys {keys} empty or repeated"
    for other in views():
        if other.name != view.name:
            shared = set(keys) & set(other.signature_keys)
            assert not shared, f"{view.name}: signature keys {sorted(shared)} are {other.name}'s too"
    reserved = {"view", "n", "tokenizer", "rule", "rules", "voicegate", "numpy", "scipy"}
    taken = sorted(set(keys) & reserved)
    assert not taken, f"{view.name}: signature keys {taken} are the signature's own"
    late = [k for k in keys if k not in HISTORICAL_SIGNATURE_KEYS]
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", k) for k in late), f"{view.name}: signature keys {late} not snake_case"


def view_keys_declared(view: Any, ctx: Ctx) -> None:
    from voicegate.spec import _schema

    for key in view.keys:
        assert key.startswith("voice."), f"{view.name}: key {key} is not under voice"
        try:
            _schema.spec_schema().key(key)
        except KeyError:
            raise AssertionError(f"{view.name}: key {key} is not declared in spec/_schema.py") from None
    if view.model is not None:
        for key in (view.model.key, view.model.revision):
            assert key in view.keys, f"{view.name}: its model key {key} is not among its keys {view.keys}"


def view_listed_in_the_reference(view: Any, ctx: Ctx) -> None:
    row = next((ln for ln in ctx.doc("reference.md").splitlines() if ln.startswith("| `voice.view` |")), "")
    assert f"`{view.name}`" in row, f"{view.name}: docs/reference.md's voice.view choices do not list it (regenerate)"


SMALL = {"voice.mfw": 100, "voice.chunk": 500}
"""Parameters small enough for the constructed corpora (3,000 words an author), where a view reads them."""


def _model_dir(view: Any, root: Path) -> str:
    """A local model directory for a view that measures through one: its files are only hashed here, since
    the check measures through `score_gate`'s `encode` seam (the model's own numbers are
    tests/scoring/test_scoring_embedding.py's)."""
    if view.unavailable():
        import pytest

        pytest.skip(f"{view.name}: {view.unavailable()}")
    model = root / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}\n", encoding="utf-8")
    return str(model)


def stand_in_encoder(texts: list[str]) -> Any:
    """Deterministic embeddings: 64 buckets of word hashes, so texts in different words land apart."""
    import hashlib

    import numpy as np

    out = np.zeros((len(texts), 64))
    for i, text in enumerate(texts):
        for word in text.split():
            out[i, hashlib.sha256(word.encode()).digest()[0] % 64] += 1.0
    return out + 1e-3


def view_measures_every_arm_and_seed(view: Any, ctx: Ctx) -> None:
    from helpers.workspace import SEEDS as SCORING_SEEDS
    from helpers.workspace import author_like, carrier_like, scoring_workspace, unrelated, voice_rows
    from voicegate.scoring import score_gate
    from voicegate.spec._registration import check_registered
    from voicegate.spec._spec import load_spec

    where = ctx.scratch(f"view-{view.name}")
    voice: dict[str, Any] = {"view": view.name, **{k.split(".", 1)[1]: v for k, v in SMALL.items() if k in view.keys}}
    if view.model is not None:
        voice[view.model.key.split(".", 1)[1]] = _model_dir(view, where)
    root = scoring_workspace(where / "ws", voice=voice)
    spec = load_spec(root, "lv-test")
    check_registered(spec)
    rows = voice_rows({"base": carrier_like("b"), "cand": author_like("c"), "other": unrelated("o")})
    result = score_gate(spec, rows, cache_dir=root / "runs" / ".cache", encode=stand_in_encoder)
    assert {a.name for a in result.arms} == {"base", "cand", "other"}, \
        f"{view.name}: arms {[a.name for a in result.arms]}"
    for a in result.arms:
        got = sorted(int(s) for s in a.distances)
        assert got == sorted(SCORING_SEEDS), f"{view.name}: arm {a.name} has distances for seeds {got}"
        for seed, d in a.distances.items():
            assert isinstance(d, float) and math.isfinite(d), f"{view.name}: d({a.name}, {seed}) = {d!r}"
    params = result.signature.to_json()
    assert params.get("view") == view.name, f"{view.name}: the signature names view {params.get('view')!r}"
    missing = [k for k in view.signature_keys if k not in params]
    assert not missing, f"{view.name}: the signature lacks its keys {missing}"


VIEW_CHECKS: tuple[Callable[[Any, Ctx], None], ...] = (
    view_descriptor_registered, view_signature_keys, view_keys_declared, view_listed_in_the_reference,
    view_measures_every_arm_and_seed,
)


# -- artifact kinds --------------------------------------------------------------------------------------------------


def kind_templates(kind: Any, ctx: Ctx) -> None:
    assert "{event}" in kind.template, f"{kind.name}: its template {kind.template!r} has no {{event}} to fill in"
    for event in events():
        template_loads(ctx, kind.template_for(event))
    if kind.header:
        template_loads(ctx, kind.header)


def kind_chain_format(kind: Any, ctx: Ctx) -> None:
    from voicegate.artifacts import _chain, _entries

    assert kind.chain in _chain.CHAINS, f"{kind.name}: chain format {kind.chain!r} not in artifacts/_chain.CHAINS"
    assert kind.chain in _entries._WRITERS, \
        f"{kind.name}: chain format {kind.chain!r} has no writer in artifacts/_entries._WRITERS"
    assert _chain.CHAINS[kind.chain].name == kind.chain, f"{kind.name}: CHAINS[{kind.chain!r}] is named otherwise"


def kind_documented(kind: Any, ctx: Ctx) -> None:
    rows = {ln.split("|")[1].strip(): ln for ln in ctx.doc("reference.md").splitlines() if ln.startswith("| `")}
    assert f"`artifacts.{kind.name}`" in rows, f"{kind.name}: docs/reference.md has no `artifacts.{kind.name}` row"
    outside = rows.get("`artifacts.outside_workspace`", "").split("|")[3]
    assert (f"`{kind.name}`" in outside) == kind.may_be_outside, \
        f"{kind.name}: docs/reference.md's outside_workspace choices disagree with may_be_outside={kind.may_be_outside}"


def _entries_in(kind: Any, path: Path) -> int:
    from voicegate.artifacts import _chain

    return len(_chain.CHAINS[kind.chain].markers(path.read_bytes())) if path.is_file() else 0


def _verify(root: Path) -> tuple[int, str]:
    done = run_cli("verify", GATE, "-C", str(root))
    return done.code, done.stdout + done.stderr


def kind_story(kind: Any, ctx: Ctx) -> dict[str, Any]:
    """The kind's file through score, ship, amend and note in a workspace configured with it (once per ctx):
    entries after each event, verify's answer after each, and verify's after a hand edit."""
    key = ("story", kind)
    if key in ctx.cache:
        return dict(ctx.cache[key])
    from voicegate.artifacts import record_ship
    from voicegate.gate import amend_spec
    from voicegate.spec._spec import load_spec

    extra = [] if kind.name in story_spec()["artifacts"] else [kind]
    root = story_workspace(ctx, extra)
    path = load_spec(root, GATE).artifacts.named()[kind.name]
    story: dict[str, Any] = {"path": path, "before": _entries_in(kind, path)}
    gh: list[str] = []

    def score() -> None:
        gh.append(_record_score(root, "global-max-spread").signature.to_json()["generations_sha256"])

    def ship() -> None:
        record_ship(load_spec(root, GATE), "ckpt925", REASON)

    def amend() -> None:
        amend_spec(load_spec(root, GATE), "pairwise-max-spread", AMEND_REASON,
                   scorer=lambda spec, rows, *, rule, rules, provenance: gate_result(rule, rules, gh[0]))

    def note() -> None:
        done = run_cli("note", GATE, "--text", NOTE, "-C", str(root))
        assert done.code == 0, done.stderr

    for event, run in (("score", score), ("ship", ship), ("amend", amend), ("note", note)):
        run()
        story[event] = (_entries_in(kind, path), *_verify(root))
    data = path.read_bytes()
    at = data.find(b"voicegate:entry 1") if kind.chain != "markdown" else data.find(b"\n", data.find(b"## ")) + 1
    path.write_bytes(data[:at] + b"x" + data[at:])  # one byte, inside the first entry's bytes
    story["hand edit"] = _verify(root)
    ctx.cache[key] = story
    return dict(story)


def kind_end_to_end(kind: Any, ctx: Ctx) -> None:
    story = kind_story(kind, ctx)
    counts = [story["before"], *(story[e][0] for e in events())]
    assert counts == list(range(counts[0], counts[0] + len(counts))), \
        f"{kind.name}: entries in {story['path'].name} after score, ship, amend, note: {counts[1:]} (from {counts[0]})"
    code, out = story["hand edit"]
    assert code != 0 and "BROKEN" in out and kind.name in out, \
        f"{kind.name}: verify after a hand edit of {story['path'].name} exits {code}: {out[-400:]}"


KIND_CHECKS: tuple[Callable[[Any, Ctx], None], ...] = (
    kind_templates, kind_chain_format, kind_documented, kind_end_to_end,
)


def kind_event_template(kind: Any, event: str, ctx: Ctx) -> None:
    template_loads(ctx, kind.template_for(event))


def kind_event_appends_and_verifies(kind: Any, event: str, ctx: Ctx) -> None:
    story = kind_story(kind, ctx)
    order = list(events())
    before = story["before"] if order.index(event) == 0 else story[order[order.index(event) - 1]][0]
    count, code, out = story[event]
    assert count == before + 1, f"{kind.name}: {event} left {count} entries in {story['path'].name} (was {before})"
    assert code == 0, f"{kind.name}: verify after {event} exits {code}: {out[-400:]}"


KIND_EVENT_CHECKS: tuple[Callable[[Any, str, Ctx], None], ...] = (kind_event_template, kind_event_appends_and_verifies)
