"""score_gate: a registered spec and its stored generations in, the score result out.

Pure given its inputs: the only I/O is the content-addressed cache (reading
corpus files, storing corpus-side work and embeddings). The result holds no
timestamp and every float is rounded (6 decimals), so the same generations give
the same bytes every time (docs/design.md §6 for the keys). `score_gate_both` also
returns the same result with the numbers unrounded (`score --json`); both come
from one computation, so they carry the same verdicts and the same pick.

Over 400 lines because measuring a gate (distances toward every target, copying, damage) and scoring
it share one pass over the rows and the cache.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from voicegate._errors import VoicegateError
from voicegate._hashing import sha256_json
from voicegate.run import generations_hash, row_key
from voicegate.scoring import _damage
from voicegate.scoring._bootstrap import paired_interval
from voicegate.scoring._cache import Cache
from voicegate.scoring._cells import Cells
from voicegate.scoring._copying import copy_stats, copying_verdict, vocab_hashes
from voicegate.scoring._harness import identical_to_base
from voicegate.scoring._prompts import prompt_parts
from voicegate.scoring._replicates import NEAR, repeated_shares, replicate_warnings
from voicegate.scoring._result import (
    ArmResult,
    Bootstrap,
    CandidateResult,
    Control,
    Counts,
    Degeneration,
    GateResult,
    Impostors,
    PoolCheck,
    Provenance,
    RulerCheck,
    Span,
)
from voicegate.scoring._ruler import (
    POOL_METHOD,
    POOL_MIN,
    POOL_MIN_AUC,
    POOL_WORDS,
    RULER_METHOD,
    RULER_MIN_AUC,
    PoolNumbers,
    RulerNumbers,
)
from voicegate.scoring._signature import Signature
from voicegate.scoring._specificity import specificity
from voicegate.scoring._verdicts import DIGITS, ArmVoice, CandidateVoice, decide, rnd, rule_set
from voicegate.scoring._views import (
    Distances,
    Encoder,
    PoolOf,
    Target,
    View,
    gate_target,
    impostor_targets,
    view_of,
)
from voicegate.spec import (
    CHECKS,
    GateSpec,
    PromptParts,
    as_named,
    fallback_note,
    flip_seed,
    get_rule,
    thin_evidence,
    zero_floor_fails,
)

Row = dict[str, Any]
SPANS = 5
SPAN_CHARS = 400


def _display(spec: GateSpec, path: Path) -> str:
    return as_named(spec.root, path)


def check_rows(spec: GateSpec, rows: Iterable[Row]) -> tuple[list[Row], list[Row]]:
    """Validate rows against the spec; (voice rows, probe rows), each in a canonical order."""
    arms = {a.name: i for i, a in enumerate(spec.arms)}
    seeds = set(spec.seeds)
    prompt_order = {p.id: i for i, p in enumerate(spec.prompts)}
    probe_order = {p.id: i for i, p in enumerate(spec.damage.probes)}
    voice: list[Row] = []
    probe: list[Row] = []
    seen: set[tuple[str, str, int, str]] = set()
    for n, row in enumerate(rows, 1):
        where = f"generation row {n}"
        if not isinstance(row, dict):
            raise VoicegateError(f"{where}: not a JSON object")
        for key in ("arm", "seed", "prompt_id", "text"):
            if key not in row:
                raise VoicegateError(f"{where}: missing {key!r}")
        if not isinstance(row["text"], str):
            raise VoicegateError(f"{where}: 'text' must be a string")
        kind = row.get("kind", "voice")
        if row["arm"] not in arms:
            raise VoicegateError(f"{where}: arm {row['arm']!r} is not an arm of {spec.gate}")
        try:
            seed = int(row["seed"])
        except (TypeError, ValueError):
            raise VoicegateError(f"{where}: seed {row['seed']!r} is not an integer") from None
        if seed not in seeds:
            raise VoicegateError(f"{where}: seed {seed} is not a registered seed of {spec.gate}")
        pid = str(row["prompt_id"])
        if kind == "voice":
            if pid not in prompt_order:
                raise VoicegateError(f"{where}: prompt_id {pid!r} is not a registered prompt")
            voice.append(row)
        elif kind == "probe":
            if pid not in probe_order:
                raise VoicegateError(f"{where}: probe {pid!r} is not in the registered probe file")
            probe.append(row)
        else:
            raise VoicegateError(f"{where}: kind must be 'voice' or 'probe', got {kind!r}")
        cell = row_key(row)
        if cell in seen:
            raise VoicegateError(f"{where}: duplicate generation for {cell}")
        seen.add(cell)
    voice.sort(key=lambda r: (arms[r["arm"]], int(r["seed"]), prompt_order[str(r["prompt_id"])]))
    probe.sort(key=lambda r: (arms[r["arm"]], int(r["seed"]), probe_order[str(r["prompt_id"])]))
    if not voice:
        raise VoicegateError(f"{spec.gate}: no voice generations to score")
    for arm in spec.arms:
        for seed in spec.seeds:
            if not any(r["arm"] == arm.name and int(r["seed"]) == seed for r in voice):
                raise VoicegateError(f"{spec.gate}: no generations for arm {arm.name} seed {seed} "
                                     "(finish `voicegate generate` first)")
    if spec.damage.probes:
        for arm in spec.arms:
            if not any(r["arm"] == arm.name for r in probe):
                raise VoicegateError(f"{spec.gate}: probes are registered but arm {arm.name} has no probe "
                                     "generations (finish `voicegate generate` first)")
    return voice, probe


def _ruler_checks(nums: RulerNumbers | None, view: str, digits: int | None = DIGITS,
                  pool: PoolNumbers | None = None) -> dict[str, RulerCheck]:
    """The ruler check as a result carries it, its AUCs rounded to `digits` (no key without a ruler); the pool
    check beside it where the gate is held to it."""
    if nums is None:
        return {}
    return {view: RulerCheck(
        view=view, method=RULER_METHOD, heldout_auc=rnd(nums.heldout_auc, digits),
        author_auc=rnd(nums.author_auc, digits),
        heldout_chunks=nums.heldout_chunks, background_chunks=nums.background_chunks,
        training_chunks=nums.training_chunks, threshold=RULER_MIN_AUC, ok=nums.ok,
        pool=None if pool is None else PoolCheck(
            method=POOL_METHOD, words=POOL_WORDS, author_auc=rnd(pool.author_auc, digits),
            impostor_auc={n: rnd(a, digits) for n, a in pool.impostor_auc.items()},
            training_pools=pool.training_pools, background_pools=pool.background_pools,
            impostor_pools=dict(pool.impostor_pools), threshold=POOL_MIN_AUC, weak_author=pool.weak_author,
            weak_impostors=pool.weak_impostors))}


def pool_warnings(pool: PoolNumbers, author: str) -> list[str]:
    """What the pool check says a verdict cannot rest on: RULER-WEAK's reasons, or a check too short to take."""
    out = []
    if pool.weak_author:
        out.append(f"the ruler cannot tell {author}'s other writing from strangers' at a pool's length (training "
                   f"pools vs background pools of {POOL_WORDS:,} words: AUC {pool.author_auc:.3f}, under "
                   f"{POOL_MIN_AUC}): VOICE is RULER-WEAK, an abstention that never ships; check the background "
                   "(other authors, not the author's own text) and the training text (the author's)")
    elif pool.author_auc is None:
        out.append(f"the ruler could not be checked at a pool's length (the training text gives "
                   f"{pool.training_pools} pool(s) of {POOL_WORDS:,} words, the background {pool.background_pools}; "
                   f"{POOL_MIN} needed a side): VOICE is decided without that check")
    for name in pool.weak_impostors:
        out.append(f"the ruler cannot tell {author}'s other writing from impostor {name!r}'s at a pool's length "
                   f"(AUC {pool.impostor_auc[name]:.3f}, under {POOL_MIN_AUC}): specificity is RULER-WEAK, "
                   "an abstention that never ships")
    return out


def ruler_warnings(checks: dict[str, RulerCheck]) -> list[str]:
    out = []
    for view, c in checks.items():
        if c.ok:
            continue
        low = [f"{what} AUC {auc:.3f}" for what, auc in (("held-out vs background", c.heldout_auc),
                                                          ("author's training text vs background", c.author_auc))
               if auc is not None and auc < RULER_MIN_AUC]
        out.append(f"the {view} ruler cannot see this author ({', '.join(low)}; under {RULER_MIN_AUC}): "
                   "a FAIL may mean a ruler that cannot tell the author, not a voice that is absent; "
                   "check the background corpus (other authors, not the author's own text)")
    return out


def impostor_warnings(aucs: dict[str, float | None], author: str) -> list[str]:
    """One warning per impostor whose ruler cannot tell her text from the gate author's."""
    return [f"the ruler of impostor {name!r} cannot tell that author's text from {author}'s (chunk AUC {auc:.3f}, "
            f"under {RULER_MIN_AUC}): a margin against that impostor measures little; choose impostors the ruler "
            "can tell apart"
            for name, auc in aucs.items() if auc is not None and auc < RULER_MIN_AUC]


def _degeneration(d: dict[str, Any], digits: int | None) -> Degeneration:
    return Degeneration(rate=rnd(d["rate"], digits), empty=rnd(d["empty"], digits),
                        repetition=rnd(d["repetition"], digits), truncated=rnd(d["truncated"], digits),
                        rows=int(d["rows"]))


class _Copy(NamedTuple):
    overlap: float
    ngrams: int
    longest_run: int
    spans: tuple[Span, ...]


def _spans(spec: GateSpec, cells: Cells, arm_rows: list[int], stats: Any, index: Any) -> tuple[Span, ...]:
    out = []
    for run in stats.runs:
        row = cells.rows[arm_rows[run.generation]]
        text = " ".join(cells.tokens(arm_rows[run.generation], run.start, run.start + run.length))
        f, offset = index.source(run.source_offset)
        out.append(Span(text=text if len(text) <= SPAN_CHARS else text[:SPAN_CHARS - 1] + "…",
                        tokens=run.length, source=_display(spec, spec.corpora.training[f]), offset=offset,
                        seed=int(row["seed"]), prompt_id=str(row["prompt_id"])))
    return tuple(out)


def _targets(spec: GateSpec) -> tuple[Target, ...]:
    return (gate_target(spec), *impostor_targets(spec))


def warm_cache(spec: GateSpec, cache_dir: Path) -> None:
    """Fill the corpus side of the cache (tokens, each target's reference and ruler check, the n-gram
    index) from the corpora alone: `register` calls it, so the first `score` is as fast as the next.

    Only what depends on the generations (their tokens) is left for `score`."""
    cache = Cache(cache_dir, write=True)
    view = view_of(spec)
    targets = _targets(spec)
    cache.prefetch_docs((*view.corpus_files(targets), *spec.corpora.training))
    view.warm(cache, targets)
    _rulers(view, cache, targets)
    view.pool_ruler(cache, targets[0], targets[1:])
    cache.index(spec.corpora.training, n=spec.copying.n)


def _rulers(view: View, cache: Cache, targets: Sequence[Target]) -> tuple[RulerNumbers | None, dict[str, float | None]]:
    """The gate target's ruler check and, per impostor, whether its ruler tells it from the gate author."""
    gate, *impostors = targets
    return view.ruler(cache, gate), {t.author: view.impostor_ruler(cache, t, gate) for t in impostors}


class Scored(NamedTuple):
    """One scoring, two precisions: the same verdicts and pick, the numbers rounded or not."""

    recorded: GateResult  # every number rounded to 6 decimals: scores.json, the record, its sha256
    full: GateResult      # every number as computed: `score --json`


def score_gate(spec: GateSpec, rows: Iterable[Row], *, cache_dir: Path | None, rule: str | None = None,
               rules: Iterable[str] | None = None, write_cache: bool = True, encode: Encoder | None = None,
               provenance: Provenance | None = None, checks: Iterable[str] = ()) -> GateResult:
    """Score stored generations under `rule` (default: the spec's registered rule): the recorded result.

    `encode` replaces the embedding model (tests); `write_cache=False` keeps the
    cache read-only (``--dry-run``). `provenance` is what the run says about the seat
    (integrity, replicas, the evidence's hashes): the result carries it and its signature
    names the evidence. `rules`: the rules computed beside the deciding one (None: every registered
    rule; a registered gate passes the rules in force at its registration).
    """
    return score_gate_both(spec, rows, cache_dir=cache_dir, rule=rule, rules=rules, write_cache=write_cache,
                           encode=encode, provenance=provenance, checks=checks).recorded


class Measures(NamedTuple):
    """What a gate's stored generations measure before any verdict is decided: computed once, then decided by
    `score_gate_both` (once, on every seed) or by `calibrate` (on many draws of seeds)."""

    voice_rows: list[Row]
    probe_rows: list[Row]
    cache: Cache
    cells: Cells
    view: View
    targets: tuple[Target, ...]
    distances: Distances                  # arm -> seed -> d(arm, seed) toward the gate author, EVERY arm
    pool: PoolOf
    toward: dict[str, Distances]          # impostor author -> arm -> seed -> d(arm, seed), every arm
    copy: dict[str, _Copy]                # every arm
    copying: dict[str, str]               # candidate -> its copying verdict, on every stored row
    degeneration: dict[str, dict[str, Any]]
    passed: dict[str, float | None]
    damage: dict[str, str]                # candidate -> its damage verdict, on every stored row
    # target author (the gate's, then each impostor) -> each prompt's own distance (`_prompts`): measured only
    # for a paired rule
    parts: Mapping[str, PromptParts]


def measure_gate(spec: GateSpec, rows: Iterable[Row], *, cache_dir: Path | None, write_cache: bool = True,
                 encode: Encoder | None = None, parts: bool = False) -> Measures:
    """Rows checked, then every number a verdict is decided from: d(a, s) toward the gate author and toward each
    impostor for every (arm, seed) (the A-vs-A arm's too), copying and damage on every stored row; `parts`: each
    prompt's own distance too (a paired rule's).

    The one computation of per-seed distances: `score_gate_both` decides it once, `gate.calibrate` re-decides
    draws of its seeds, both through `decide` and `specificity`.
    """
    voice_rows, probe_rows = check_rows(spec, rows)
    cache = Cache(cache_dir, write=write_cache)
    cells = Cells(voice_rows, cache)
    base = spec.base.name
    cand_names = [a.name for a in spec.candidates]

    # -- voice distance d(a, s), toward the gate author and toward each impostor -----------
    view = view_of(spec, encode=encode)
    targets = _targets(spec)
    cache.prefetch_docs((*view.corpus_files(targets), *spec.corpora.training))
    measured = view.measure(cache, cells, targets[0])
    others = {t.author: view.measure(cache, cells, t) for t in targets[1:]}
    toward = {author: m.distances for author, m in others.items()}
    arm_names = [a.name for a in spec.arms]
    by_prompt = {author: prompt_parts(m.pool, cells, arm_names, spec.seeds)
                 for author, m in ((spec.author, measured), *others.items())} if parts else {}

    # -- copying ---------------------------------------------------------------
    index = cache.index(spec.corpora.training, n=spec.copying.n)
    hashes = vocab_hashes(cells.vocab)
    copy: dict[str, _Copy] = {}
    for arm in spec.arms:
        arm_rows = cells.arm_rows(arm.name)
        stats = copy_stats(index, [hashes[cells.ids[i]] for i in arm_rows], top=SPANS)
        copy[arm.name] = _Copy(stats.overlap, stats.ngrams, stats.longest_run,
                               _spans(spec, cells, arm_rows, stats, index))
    control = copy[base].overlap
    copying = {a: copying_verdict(copy[a].overlap, control, copy[a].longest_run,
                                  tolerance=spec.copying.tolerance, max_run=spec.copying.max_run)
               for a in cand_names}

    # -- damage ----------------------------------------------------------------
    degen = {arm.name: _damage.degeneration(
        [(cells.ids[i].tolist(), cells.rows[i].get("finish_reason")) for i in cells.arm_rows(arm.name)],
        truncation_decides=spec.damage.truncation_decides) for arm in spec.arms}
    checks = {p.id: p.check for p in spec.damage.probes}
    passed: dict[str, float | None] = {}
    for arm in spec.arms:
        mine = [r for r in probe_rows if r["arm"] == arm.name]
        passed[arm.name] = (sum(_damage.check_probe(checks[str(r["prompt_id"])], r["text"]) for r in mine) / len(mine)
                            if mine else None)
    damage = {a: _damage.damage_verdict(base_degeneration=degen[base]["rate"], degeneration_rate=degen[a]["rate"],
                                        base_pass=passed[base], pass_rate=passed[a],
                                        tolerance=spec.damage.tolerance) for a in cand_names}
    return Measures(voice_rows=voice_rows, probe_rows=probe_rows, cache=cache, cells=cells, view=view,
                    targets=targets, distances=measured.distances, pool=measured.pool, toward=toward, copy=copy,
                    copying=copying, degeneration=degen, passed=passed, damage=damage, parts=by_prompt)


def decided_arms(spec: GateSpec, distances: Mapping[str, Any]) -> dict[str, Any]:
    """`distances` (arm -> ...) without the A-vs-A arms: what a gate's verdicts are decided on (an A-vs-A arm is
    not an arm of the decision, so it cannot move the global floor of the candidates that may ship)."""
    fresh = {a.name for a in spec.a_vs_a}
    return {arm: d for arm, d in distances.items() if arm not in fresh}


def paired_warnings(spec: GateSpec, dist: Distances, toward: Mapping[str, Distances],
                    parts: Mapping[str, PromptParts], rules: Iterable[str]) -> list[str]:
    """Where a paired rule decided a candidate's delta or margin by another rule's floor, and why."""
    from voicegate.spec import Effect

    out = []
    base = spec.base.name
    for rid in (r for r in rules if get_rule(r).paired):
        for arm in spec.candidates:
            where: list[tuple[str, Distances, PromptParts | None]] = [("delta_cb", dist, parts.get(spec.author))]
            for author, d in toward.items():
                rel = {a: {s: dist[a][s] - d[a][s] for s in dist[a]} for a in (base, arm.name)}
                p: PromptParts | None = None if spec.author not in parts else {
                    a: {s: tuple(g - i for g, i in zip(parts[spec.author][a][s], parts[author][a][s], strict=True))
                        for s in dist[a]} for a in (base, arm.name)}
                where.append((f"the margin against {author}", rel, p))
            for what, d, p in where:
                note = fallback_note(rid, d, base, arm.name, Effect(prompts=p))
                if note is not None:
                    out.append(f"{arm.name}, {what}, under {rid}: {note}")
    return out


def a_vs_a_warnings(spec: GateSpec, distances: Distances, rule: str, rules: Iterable[str],
                    prompts: PromptParts | None = None) -> list[str]:
    """One line per A-vs-A arm: its VOICE verdict under each rule, decided as if it were a candidate of the gate
    (`decide`, beside every arm of the run); a PASS is a false pass, since it is the base against itself."""
    out = []
    computed = tuple(rules)
    for arm in spec.a_vs_a:
        c = decide(distances, spec.base.name, [arm.name], rule=rule, rules=computed, digits=None,
                   smallest_effect=spec.smallest_effect, prompts=prompts, flip_seed=flip_seed(spec.gate)).candidates[0]
        passing = [r for r in computed if c.voice[r] == "PASS"]
        if not passing:
            out.append(f"A-vs-A arm {arm.name}: VOICE FAIL under every rule (a PASS would be a false pass)")
            continue
        failing = [r for r in computed if r not in passing]
        out.append(f"A-vs-A arm {arm.name}: VOICE PASS under {', '.join(passing)}"
                   + (f" (FAIL under {', '.join(failing)})" if failing else "")
                   + ": a false pass (the base against itself under fresh seeds); a PASS of a candidate under "
                     f"{'that rule' if len(passing) == 1 else 'those rules'} is weak evidence here — "
                     f"`voicegate calibrate {spec.gate}` measures how often")
    return out


def score_gate_both(spec: GateSpec, rows: Iterable[Row], *, cache_dir: Path | None, rule: str | None = None,
                    rules: Iterable[str] | None = None, write_cache: bool = True, encode: Encoder | None = None,
                    provenance: Provenance | None = None, checks: Iterable[str] = ()) -> Scored:
    """`score_gate`, with the same result at full precision beside it (computed once, assembled twice)."""
    rows = list(rows)
    in_force = set(checks)
    for cid in in_force:
        if cid not in CHECKS:
            raise VoicegateError(f"unknown gate check {cid!r} (known: {', '.join(CHECKS)})")
    seat = provenance or Provenance()
    rule_id = get_rule(rule or spec.floor_rule).id
    computed = rule_set(rule_id, rules)
    is_paired = any(get_rule(r).paired for r in computed)
    m = measure_gate(spec, rows, cache_dir=cache_dir, write_cache=write_cache, encode=encode, parts=is_paired)
    voice_rows, probe_rows, cache, cells, view, targets = (m.voice_rows, m.probe_rows, m.cache, m.cells, m.view,
                                                           m.targets)
    base = spec.base.name
    cand_names = [a.name for a in spec.candidates]
    arms = tuple(a for a in spec.arms if not a.is_a_vs_a)  # the arms of the decision and of the result
    warnings: list[str] = []
    dist, pool = decided_arms(spec, m.distances), m.pool
    toward = {author: decided_arms(spec, d) for author, d in m.toward.items()}
    words = int(min(cells.lengths[rs].sum() for rs in cells.by_cell.values()))
    if view.reliable_words is not None and words < view.reliable_words:
        warnings.append(f"smallest (arm, seed) pool has {words:,} words; {view.title} needs "
                        f"~{view.reliable_words:,} to be reliable")
    ruler, impostor_aucs = _rulers(view, cache, targets)
    pools = view.pool_ruler(cache, targets[0], targets[1:]) if "ruler-weak" in in_force else None
    weak_author, weak_impostors = (False, ()) if pools is None else (pools.weak_author, pools.weak_impostors)
    rulers = _ruler_checks(ruler, view.name)
    warnings += ruler_warnings(rulers)  # the ok flag and the AUCs it quotes: the same at either precision
    warnings += impostor_warnings(impostor_aucs, spec.author)
    gate_parts = m.parts.get(spec.author)
    flips = flip_seed(spec.gate)
    warnings += a_vs_a_warnings(spec, m.distances, rule_id, computed, prompts=gate_parts)
    if is_paired:
        warnings += paired_warnings(spec, dist, toward, m.parts, computed)
    if "thin-evidence" in in_force:
        warnings += thin_evidence(spec)
    if pools is not None:
        warnings += pool_warnings(pools, spec.author)
    strict = zero_floor_fails(computed)
    unreplicated: set[str] = set()
    if strict:  # said from the date a floor of 0 stopped passing: an older gate's record keeps its warnings
        repeats = repeated_shares(cells, (a.name for a in spec.arms), spec.seeds)
        warnings += replicate_warnings(repeats)
        # a floor built on seeds that are not replicates measures no noise: a ratio to it ("6.4x") means nothing
        unreplicated = {arm for arm, share in repeats.items() if share >= NEAR}
    pool_words = cells.pool_words()
    copy, copying, degen, passed, damage = m.copy, m.copying, m.degeneration, m.passed, m.damage
    control = copy[base].overlap

    # -- informational: bootstrap intervals, arms identical to the base (computed once) --------
    boots: dict[str, dict[str, Any] | None] = {}
    for arm in spec.candidates:
        prompts = cells.aligned([base, arm.name], list(spec.seeds))
        boots[arm.name] = paired_interval({s: pool(base, s, prompts) for s in spec.seeds},
                                          {s: pool(arm.name, s, prompts) for s in spec.seeds}, len(prompts))
    identical: dict[str, int | None] = {}
    for arm in spec.candidates:
        same = identical_to_base(voice_rows, base, arm.name) if arm.role == "candidate" else None
        identical[arm.name] = same
        if same:
            warnings.append(f"{arm.name}: {same} voice generation(s) are byte-identical to the base's under "
                            "the same seed and prompt: the seat may not have applied the adapter to them "
                            "(seen on vLLM CPU with mixed batches); check the seat before trusting delta_cb")

    expected = len(spec.arms) * len(spec.seeds) * len(spec.prompts)
    if len(voice_rows) < expected:
        warnings.append(f"{len(voice_rows)} of {expected} registered voice generations present")
    # A probe row missing makes the damage verdict compare pass rates over different probes: said,
    # like a missing voice row, never silent.
    per_arm = len(spec.seeds) * len(spec.damage.probes)
    short = {a.name: per_arm - sum(1 for r in probe_rows if r["arm"] == a.name) for a in spec.arms}
    if per_arm and any(n > 0 for n in short.values()):
        warnings.append("registered probe generations missing (" + ", ".join(
            f"{a}: {per_arm - n} of {per_arm} present" for a, n in short.items() if n > 0)
            + "): the damage verdict compares pass rates over different probes; run `voicegate generate` to "
              "complete them")

    corpora: dict[str, Any] = {k: cache.corpus_sha256(getattr(spec.corpora, k))
                               for k in ("heldout", "training", "background")}
    if spec.corpora.impostors:  # a key only where there are impostors: older results keep their hash
        corpora["impostors"] = {imp.author: cache.corpus_sha256(imp.files) for imp in spec.corpora.impostors}
    # The verdict names the evidence it stands on: edit run.json's integrity block or canaries.jsonl
    # and the signature changes.
    sig = Signature.of(spec, view=view, rule=rule_id, generations_sha256=generations_hash(rows),
                       corpus_sha256=sha256_json(corpora),
                       evidence=seat.evidence if seat.integrity is not None else None, rules=computed,
                       checks=in_force)
    impostors = None if not toward else Impostors(
        author=spec.author, mode=spec.voice.specificity, authors=tuple(toward),
        ruler_auc={a: rnd(auc) for a, auc in impostor_aucs.items()})

    # -- verdicts, assembled at a precision ----------------------------------------
    def assemble(digits: int | None) -> GateResult:
        axis = {a: specificity(dist, toward, base, a, author=spec.author, decides=spec.voice.specificity == "decides",
                               rule=rule_id, rules=computed, digits=digits, weak=weak_impostors,
                               smallest_effect=spec.smallest_effect, zero_floor_fails=strict,
                               prompts=m.parts or None, flip_seed=flips)
                for a in cand_names} if toward else {}
        decided = decide(dist, base, cand_names, rule=rule_id, rules=computed, copying=copying, damage=damage,
                         specificity=axis, prefer=spec.prefer, digits=digits, ruler_weak=weak_author,
                         smallest_effect=spec.smallest_effect, zero_floor_fails=strict, prompts=gate_parts,
                         flip_seed=flips)
        voices: dict[str, ArmVoice] = {a.name: a for a in decided.arms}
        arms_out: list[ArmResult] = []
        for arm in arms:
            v = voices[arm.name]
            c = copy[arm.name]
            common: dict[str, Any] = {
                "name": arm.name, "role": arm.role, "model": arm.model, "distances": v.distances,
                "mean_distance": v.mean_distance, "spread": v.spread, "overlap": rnd(c.overlap, digits),
                "ngrams": c.ngrams, "longest_run": c.longest_run, "spans": c.spans,
                "degeneration": _degeneration(degen[arm.name], digits),
                "probe_pass_rate": rnd(passed[arm.name], digits), "generations": len(cells.arm_rows(arm.name)),
                "pool_words": {str(s): pool_words[arm.name][str(s)] for s in spec.seeds}}
            if not isinstance(v, CandidateVoice):
                arms_out.append(ArmResult(**common))
                continue
            boot = boots[arm.name]
            bare = arm.name in unreplicated
            arms_out.append(CandidateResult(
                **common, delta_cb=v.delta_cb, floors=v.floors, voice=v.voice,
                ratios=dict.fromkeys(v.ratios) if bare else v.ratios, ratio=None if bare else v.ratio,
                disagree=v.disagree, copying=v.copying, damage=v.damage, identical_to_base=identical[arm.name],
                detectable=v.detectable,
                specificity=axis.get(arm.name),
                bootstrap=None if boot is None else Bootstrap(**{**boot, "low": rnd(boot["low"], digits),
                                                                  "high": rnd(boot["high"], digits),
                                                                  "bias": rnd(boot["bias"], digits)})))
        return GateResult(gate=spec.gate, rule=rule_id, ships=decided.ships,
                          control=Control(arm=base, overlap=rnd(control, digits)), arms=tuple(arms_out),
                          counts=Counts(voice=len(voice_rows), probe=len(probe_rows), expected_voice=expected),
                          ruler=_ruler_checks(ruler, view.name, digits, pools),
                          warnings=tuple(warnings), signature=sig, signature_text=sig.text(),
                          impostors=impostors, integrity=seat.integrity, replicas=seat.replicas)

    return Scored(recorded=assemble(DIGITS), full=assemble(None))
