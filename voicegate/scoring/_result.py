"""The score result as types: what `score_gate` returns and every reader reads.

A result used to be a nested dict read back by string key in a dozen modules; a
misspelt key was a blank in a record or a KeyError at the worst moment. Here it
is frozen dataclasses and str-valued verdict enums, and this module is the ONE
place that knows the JSON key names: `to_json()` / `from_json()`.

`to_json()` must give the exact dict `score_gate` has always written (key order
included): scores.json, `--json`, recorded.json and the result sha256 in every
record are its bytes, and `tests/golden/` pins them. So the key order below is
the historical order, not alphabetical, and fields a base arm never had are not
emitted for it.

`from_json()` also reads results written by hand or by older versions (the
report renders whatever is on disk): a missing field is None or empty, never an
error, and an unknown verdict string is kept as a plain str.

Over 400 lines because it is the one module that knows a result's JSON keys
(tests/project/test_architecture.py holds every other module to attributes): every type of the result and
its one JSON form, written and read back, stay together.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from voicegate.scoring._signature import IntegrityEvidence, Signature
from voicegate.spec import Role  # the arm roles are the spec's

JSON = dict[str, Any]


class Voice(StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    RULER_WEAK = "RULER-WEAK"   # an abstention: the ruler cannot tell the author from strangers (`_ruler`)


class Copying(StrEnum):
    NOT_COPIED = "NOT-COPIED"
    COPIED = "COPIED"


class Damage(StrEnum):
    NO_DAMAGE = "NO-DAMAGE"
    DAMAGE = "DAMAGE"


class Specific(StrEnum):
    SPECIFIC = "SPECIFIC"
    NOT_SPECIFIC = "NOT-SPECIFIC"      # evidence: nearer another author by more than the floor
    INCONCLUSIVE = "INCONCLUSIVE"      # neither: a margin within noise says nothing about which author
    RULER_WEAK = "RULER-WEAK"          # an abstention: the ruler cannot tell the author from some impostor


E = TypeVar("E", bound=StrEnum)


def impostor_outcome(margin: float, floor: float, nearer: float | None = None, *,
                     zero_fails: bool = False) -> Specific:
    """What one margin over an impostor says against its floor, compared to 12 decimals as every verdict is:
    SPECIFIC above it, NOT-SPECIFIC below minus `nearer` (its floor where None: shown nearer that impostor),
    INCONCLUSIVE between. `zero_fails`: a floor of 0 says neither (seeds that gave one value)."""
    m, f = round(float(margin), 12), round(float(floor), 12)
    n = f if nearer is None else round(float(nearer), 12)
    if m > f and not (zero_fails and f == 0):
        return Specific.SPECIFIC
    if -m > n and not (zero_fails and n == 0):
        return Specific.NOT_SPECIFIC
    return Specific.INCONCLUSIVE


def _enum(kind: type[E], value: Any) -> E | str | None:
    """A verdict as its enum; a string this version does not know stays a string (hand-made data)."""
    if value is None:
        return None
    try:
        return kind(value)
    except ValueError:
        return str(value)


def _plain(value: Any) -> Any:
    # Enums leave as their plain string, so the JSON (and its sha256) is what it always was.
    return value.value if isinstance(value, StrEnum) else value


def _role(value: Any) -> Role:
    """A stored arm's role; a hand-made or older result's unknown role reads as a candidate, as it always has."""
    try:
        return Role(str(value))
    except ValueError:
        return Role.CANDIDATE


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


@dataclass(frozen=True, kw_only=True)
class Span:
    """A verbatim run shared with the training text."""

    text: str                   # the run's words as the generation wrote them
    tokens: int | None          # its length in tokens (None: not known, hand-made results)
    source: str | None          # the training file it occurs in first
    offset: int | None          # the token offset of that occurrence in the file
    seed: int | None            # the seed of the generation it was found in
    prompt_id: str | None       # the prompt of that generation
    # Only hand-made results carry a context excerpt; score_gate never writes one.
    excerpt: str | None = None

    def to_json(self) -> JSON:
        out: JSON = {"text": self.text, "tokens": self.tokens, "source": self.source, "offset": self.offset,
                     "seed": self.seed, "prompt_id": self.prompt_id}
        if self.excerpt is not None:
            out["excerpt"] = self.excerpt
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Span:
        return cls(text=str(d.get("text", "")), tokens=d.get("tokens"), source=d.get("source"),
                   offset=d.get("offset"), seed=d.get("seed"),
                   prompt_id=None if d.get("prompt_id") is None else str(d.get("prompt_id")),
                   excerpt=d.get("excerpt") or d.get("context"))


@dataclass(frozen=True, kw_only=True)
class Degeneration:
    """Rates over one arm's voice generations (docs/design.md §6b)."""

    rate: float | None = None        # share of generations empty or repetitive (or truncated, when that decides)
    empty: float | None = None       # share with no word token at all
    repetition: float | None = None  # share in runaway repetition
    truncated: float | None = None   # share stopped at max_tokens (finish_reason "length")
    rows: int | None = None          # the voice generations the shares are of (absent in older results)

    def to_json(self) -> JSON:
        out: JSON = {"rate": self.rate, "empty": self.empty, "repetition": self.repetition,
                     "truncated": self.truncated}
        if self.rows is not None:
            out["rows"] = self.rows
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Degeneration:
        return cls(rate=d.get("rate"), empty=d.get("empty"), repetition=d.get("repetition"),
                   truncated=d.get("truncated"), rows=d.get("rows"))


_BOOT_KEYS = ("low", "high", "level", "resamples", "bias", "method", "unit", "deciding")


@dataclass(frozen=True, kw_only=True)
class Bootstrap:
    """The informational prompt-clustered interval of delta_cb; never decides."""

    low: float | None = None         # the interval's lower end (recentred by the bias)
    high: float | None = None        # its upper end
    level: float | None = None       # its confidence level (0.95)
    resamples: int | None = None     # bootstrap replicates drawn
    bias: float | None = None        # mean of the replicates minus delta_cb
    method: str | None = None        # how the interval is read off the replicates ("percentile-recentred")
    unit: str | None = None          # what is resampled ("prompt": every seed's row of a prompt together)
    deciding: bool = False           # always False: the interval never decides a verdict

    def to_json(self) -> JSON:
        return {k: getattr(self, k) for k in _BOOT_KEYS}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Bootstrap:
        return cls(**{k: d[k] for k in _BOOT_KEYS if k in d})


@dataclass(frozen=True, kw_only=True)
class Specificity:
    """One candidate's specificity axis (`_specificity`): toward the gate author more than toward each impostor?"""

    decides: bool = False                # voice.specificity is "decides" (else only reported)
    verdict: Mapping[str, Specific | str] = field(default_factory=dict)   # rule id -> SPECIFIC / NOT-SPECIFIC
    disagree: bool = False               # the rules give different verdicts
    margin: float | None = None          # delta_cb − the largest delta toward any impostor
    nearest: str | None = None           # the impostor it moved toward most
    binding: Mapping[str, str] = field(default_factory=dict)   # rule id -> the impostor that decides under it
    floors: Mapping[str, float | None] = field(default_factory=dict)   # rule id -> floor against that impostor
    ratios: Mapping[str, float | None] = field(default_factory=dict)   # rule id -> its margin / floor
    deltas: Mapping[str, float | None] = field(default_factory=dict)   # author -> delta toward her, gate author first
    margins: Mapping[str, float | None] = field(default_factory=dict)  # impostor -> delta_cb − delta toward her
    # impostor -> rule id -> the floor its margin is set against (a result stored before impostors had floors of
    # their own carries only `floors`)
    impostor_floors: Mapping[str, Mapping[str, float | None]] = field(default_factory=dict)
    # The impostors the ruler cannot tell from the author at a pool's length: the verdict is RULER-WEAK.
    weak: tuple[str, ...] = ()
    # impostor -> rule id -> the floor a margin must lie below minus for "nearer that impostor", only for the
    # rules where it is not the floor (a rule that corrects that claim for the number of impostors)
    nearer_floors: Mapping[str, Mapping[str, float | None]] = field(default_factory=dict)

    def under(self, rule: str) -> Specific | str | None:
        return self.verdict.get(rule)

    def weak_said(self) -> str:
        """Why a RULER-WEAK verdict abstains, naming the impostors (every surface says it in these words)."""
        return f"the ruler cannot tell {', '.join(self.weak)} from the author at a pool's length"

    @property
    def largest_delta(self) -> float | None:
        """The largest delta toward any author, the gate author's included: what the matrices mark."""
        return max((d for d in self.deltas.values() if d is not None), default=None)

    def to_json(self) -> JSON:
        return {"decides": self.decides, "verdict": {k: _plain(v) for k, v in self.verdict.items()},
                "disagree": self.disagree, "margin": self.margin, "nearest": self.nearest,
                "binding": dict(self.binding), "floors": dict(self.floors), "ratios": dict(self.ratios),
                "deltas": dict(self.deltas), "margins": dict(self.margins),
                **({"impostor_floors": {k: dict(v) for k, v in self.impostor_floors.items()}}
                   if self.impostor_floors else {}),
                **({"ruler_weak": list(self.weak)} if self.weak else {}),
                **({"nearer_floors": {k: dict(v) for k, v in self.nearer_floors.items()}}
                   if self.nearer_floors else {})}

    def floor_against(self, impostor: str, rule: str) -> float | None:
        """The floor of the margin against `impostor` under `rule` (older results: only the binding one's)."""
        if impostor in self.impostor_floors:
            return self.impostor_floors[impostor].get(rule)
        return self.floors.get(rule) if self.binding.get(rule) == impostor else None

    def nearer_floor_against(self, impostor: str, rule: str) -> float | None:
        """The floor a margin against `impostor` must lie below minus for "nearer" under `rule`: its own where the
        rule corrects that claim for the impostors (None there: infinite), else the floor."""
        own = self.nearer_floors.get(impostor, {})
        return own.get(rule) if rule in own else self.floor_against(impostor, rule)

    def outcome_against(self, impostor: str, rule: str) -> Specific | None:
        """What the margin over `impostor` says against its floors under `rule` (as the verdict is made); None
        where a number is missing or not finite."""
        margin, floor, nearer = (self.margins.get(impostor), self.floor_against(impostor, rule),
                                 self.nearer_floor_against(impostor, rule))
        def finite(v: Any) -> bool:
            return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

        if not (finite(margin) and finite(floor)):
            return None
        return impostor_outcome(margin, floor, nearer if finite(nearer) else None)  # type: ignore[arg-type]

    def nearer(self, rule: str) -> list[str]:
        """The impostors this candidate is shown to be nearer to than to the gate author, under `rule`:
        a negative margin beyond its floor. Empty unless the verdict is NOT-SPECIFIC."""
        if self.under(rule) != Specific.NOT_SPECIFIC:
            return []
        out = []
        for name, m in self.margins.items():
            if m is None:
                continue
            corrected = self.nearer_floors.get(name, {})
            if rule in corrected:
                # the rule's own "nearer" floor; none recorded is an infinite one, which nothing lies beyond
                n = corrected[rule]
                if n is not None and impostor_outcome(m, n) == Specific.NOT_SPECIFIC:
                    out.append(name)
                continue
            f = self.floor_against(name, rule)
            # an older result holds only the binding impostor's floor: any other negative margin is named
            if impostor_outcome(m, f) == Specific.NOT_SPECIFIC if f is not None else m < 0:
                out.append(name)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Specificity:
        verdict: dict[str, Specific | str] = {}
        for k, v in _mapping(d.get("verdict")).items():
            e = _enum(Specific, v)
            if e is not None:
                verdict[str(k)] = e
        return cls(decides=bool(d.get("decides", False)), verdict=verdict, disagree=bool(d.get("disagree", False)),
                   margin=d.get("margin"), nearest=d.get("nearest"),
                   binding={str(k): str(v) for k, v in _mapping(d.get("binding")).items()},
                   floors=_mapping(d.get("floors")), ratios=_mapping(d.get("ratios")),
                   deltas=_mapping(d.get("deltas")), margins=_mapping(d.get("margins")),
                   impostor_floors={str(k): _mapping(v) for k, v in _mapping(d.get("impostor_floors")).items()},
                   weak=tuple(str(w) for w in d.get("ruler_weak") or ()),
                   nearer_floors={str(k): _mapping(v) for k, v in _mapping(d.get("nearer_floors")).items()})


RULER_AUC_WARN = 0.8
"""Below this chunk AUC an impostor's ruler barely tells that author from the gate author: a warning, not a verdict."""


@dataclass(frozen=True, kw_only=True)
class Impostors:
    """What the specificity axis measured against: the gate author, the impostors, and their rulers."""

    author: str                                  # the gate author, whom the impostors are held against
    mode: str                                    # decides | reported (voice.specificity)
    authors: tuple[str, ...] = ()                # the impostors, in the spec's order
    # impostor -> AUC that its ruler tells its text from the gate author's (None: the view has no such check)
    ruler_auc: Mapping[str, float | None] = field(default_factory=dict)

    @property
    def weak_rulers(self) -> dict[str, float]:
        """The impostors whose ruler tells their text from the gate author's with chunk AUC below 0.8: each
        surface warns of them (a verdict against such an impostor says little)."""
        return {name: auc for name, auc in self.ruler_auc.items() if auc is not None and auc < RULER_AUC_WARN}

    def to_json(self) -> JSON:
        return {"author": self.author, "mode": self.mode, "authors": list(self.authors),
                "ruler_auc": dict(self.ruler_auc)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Impostors:
        return cls(author=str(d.get("author", "")), mode=str(d.get("mode", "")),
                   authors=tuple(str(a) for a in d.get("authors") or ()), ruler_auc=_mapping(d.get("ruler_auc")))


@dataclass(frozen=True, kw_only=True)
class ArmResult:
    """Every arm, the base carrier included: its distances and its copying and damage statistics."""

    name: str                     # the arm's name in the spec
    role: Role                    # its role: base, candidate, a-vs-a
    model: str | None = None      # the served model name it was generated under
    distances: Mapping[str, float | None] = field(default_factory=dict)  # seed -> d(a, s) to the author's held-out text
    mean_distance: float | None = None   # the mean of those distances over seeds
    spread: float | None = None          # their max − min over seeds
    overlap: float | None = None         # share of its word n-grams found in the training text
    ngrams: int | None = None            # the n-grams that share is of
    longest_run: int | None = None       # the longest verbatim run shared with the training text, in tokens
    spans: tuple[Span, ...] = ()         # its longest such runs (a few)
    degeneration: Degeneration = field(default_factory=Degeneration)  # its degeneration rates
    probe_pass_rate: float | None = None  # share of the damage probes it passed (None: no probes)
    generations: int | None = None       # its voice generations scored
    # Words (tokens) in each seed's pool: what d(a, s) rests on. Absent in older results.
    pool_words: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Built from plain dicts (`stats`, `_common`) as often as by keyword: the role is a Role either way.
        object.__setattr__(self, "role", Role(self.role))

    @property
    def is_base(self) -> bool:
        return self.role == Role.BASE

    def _head(self) -> JSON:
        return {"name": self.name, "role": self.role, "model": self.model, "distances": dict(self.distances),
                "mean_distance": self.mean_distance, "spread": self.spread}

    def _stats(self) -> JSON:
        out: JSON = {"overlap": self.overlap, "ngrams": self.ngrams, "longest_run": self.longest_run,
                     "spans": [s.to_json() for s in self.spans], "degeneration": self.degeneration.to_json(),
                     "probe_pass_rate": self.probe_pass_rate, "generations": self.generations}
        if self.pool_words:
            out["pool_words"] = dict(self.pool_words)
        return out

    def to_json(self) -> JSON:
        return {**self._head(), **self._stats()}

    @staticmethod
    def _common(d: Mapping[str, Any]) -> JSON:
        return {"name": str(d.get("name")), "role": _role(d.get("role")), "model": d.get("model"),
                "distances": {str(k): v for k, v in _mapping(d.get("distances")).items()},
                "mean_distance": d.get("mean_distance"), "spread": d.get("spread"),
                "overlap": d.get("overlap"), "ngrams": d.get("ngrams"), "longest_run": d.get("longest_run"),
                "spans": tuple(Span.from_json(s) for s in d.get("spans") or () if isinstance(s, Mapping)),
                "degeneration": Degeneration.from_json(_mapping(d.get("degeneration"))),
                "probe_pass_rate": d.get("probe_pass_rate"), "generations": d.get("generations"),
                "pool_words": {str(k): int(v) for k, v in _mapping(d.get("pool_words")).items()}}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ArmResult:
        if _role(d.get("role")) is Role.BASE:
            return ArmResult(**ArmResult._common(d))
        return CandidateResult.from_json(d)


@dataclass(frozen=True, kw_only=True)
class CandidateResult(ArmResult):
    """A candidate arm: the voice axis under every registered rule, and the other two verdicts."""

    delta_cb: float | None = None        # mean d(base) − mean d(candidate) over seeds: how much nearer the author
    floors: Mapping[str, float | None] = field(default_factory=dict)   # rule id -> the floor delta_cb must clear
    voice: Mapping[str, Voice | str] = field(default_factory=dict)     # rule id -> its VOICE verdict
    ratios: Mapping[str, float | None] = field(default_factory=dict)   # rule id -> delta_cb / floor
    ratio: float | None = None           # the deciding rule's ratio
    disagree: bool = False               # the rules give different VOICE verdicts (DISAGREE)
    copying: Copying | str | None = None  # COPIED / NOT-COPIED against the base's overlap
    damage: Damage | str | None = None    # DAMAGED / NO-DAMAGE against the base's probes and degeneration
    bootstrap: Bootstrap | None = None    # the informational interval of delta_cb
    identical_to_base: int | None = None  # its generations equal to the base's for the same (seed, prompt)
    # The specificity axis; None when the spec registers no impostors ("not checked").
    specificity: Specificity | None = None
    # rule id -> the smallest true delta_cb this design detects with 80% power; only rules with a power
    # model have one (none of the max-spread rules), so a result without such a rule keeps its bytes.
    detectable: Mapping[str, float | None] = field(default_factory=dict)

    def detectable_under(self, rule: str) -> float | None:
        return self.detectable.get(rule)

    def unseen(self, rule: str) -> bool:
        """A FAIL under `rule` with a positive delta_cb smaller than the design's detectable delta: the gate
        could not have seen that voice, which is not evidence that it is absent."""
        d, det = self.delta_cb, self.detectable_under(rule)
        return (self.voice_under(rule) == Voice.FAIL and d is not None and det is not None
                and math.isfinite(d) and math.isfinite(det) and 0 < d < det)

    def to_json(self) -> JSON:
        out = self._head()
        out.update({"delta_cb": self.delta_cb, "floors": dict(self.floors),
                    "voice": {k: _plain(v) for k, v in self.voice.items()}, "ratios": dict(self.ratios),
                    "ratio": self.ratio, "disagree": self.disagree})
        out.update(self._stats())
        out.update({"copying": _plain(self.copying), "damage": _plain(self.damage),
                    "bootstrap": None if self.bootstrap is None else self.bootstrap.to_json()})
        if self.identical_to_base is not None:
            out["identical_to_base"] = self.identical_to_base
        if self.specificity is not None:
            out["specificity"] = self.specificity.to_json()
        if self.detectable:
            out["detectable"] = dict(self.detectable)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CandidateResult:
        boot = d.get("bootstrap")
        voice: dict[str, Voice | str] = {}
        for k, v in _mapping(d.get("voice")).items():
            verdict = _enum(Voice, v)
            if verdict is not None:
                voice[str(k)] = verdict
        return cls(**ArmResult._common(d), delta_cb=d.get("delta_cb"), floors=_mapping(d.get("floors")),
                   voice=voice, ratios=_mapping(d.get("ratios")), ratio=d.get("ratio"),
                   disagree=bool(d.get("disagree", False)), copying=_enum(Copying, d.get("copying")),
                   damage=_enum(Damage, d.get("damage")),
                   bootstrap=Bootstrap.from_json(boot) if isinstance(boot, Mapping) else None,
                   identical_to_base=d.get("identical_to_base"),
                   specificity=Specificity.from_json(spec) if isinstance(spec := d.get("specificity"), Mapping)
                   else None, detectable=_mapping(d.get("detectable")))

    def voice_under(self, rule: str) -> Voice | str | None:
        return self.voice.get(rule)

    def short_of(self, rule: str) -> list[str]:
        """Every axis on which this candidate falls short under `rule`, in pipeline order (voice, specificity,
        copying, damage): a failing verdict, an inconclusive one, or a missing one. Empty: nothing blocks it."""
        out = []
        voice = self.voice_under(rule)
        if voice != Voice.PASS:
            out.append(f"VOICE {voice or 'not decided'}")
        axis = self.specificity
        if axis is not None and axis.under(rule) != Specific.SPECIFIC:
            out.append(f"SPECIFICITY {axis.under(rule) or 'not decided'}" + ("" if axis.decides else " (reported)"))
        if self.copying != Copying.NOT_COPIED:
            out.append(f"COPYING {self.copying or 'not decided'}")
        if self.damage != Damage.NO_DAMAGE:
            out.append(f"DAMAGE {self.damage or 'not decided'}")
        return out

    def floor_under(self, rule: str) -> float | None:
        return self.floors.get(rule)

    def ratio_under(self, rule: str) -> float | None:
        """delta_cb / floor under `rule`: the result's own number, else computed (None for a zero floor)."""
        if rule in self.ratios:
            return self.ratios[rule]
        floor = self.floors.get(rule)
        if floor is None or self.delta_cb is None or floor == 0:
            return None
        return self.delta_cb / floor


@dataclass(frozen=True, kw_only=True)
class Verdicts:
    """One candidate's three verdicts as a ship decision recorded them (`decisions.jsonl`'s `verdicts`).

    `voice` is per rule, as `ship` writes it; an older or hand-made row may give a
    single verdict instead, which then stands under whatever rule is asked for.
    """

    voice: Mapping[str, Voice | str | None] | Voice | str | None = None  # rule id -> VOICE, or one verdict (older rows)
    copying: Copying | str | None = None  # the COPYING verdict
    damage: Damage | str | None = None    # the DAMAGE verdict

    def voice_under(self, rule: str | None) -> Voice | str | None:
        if isinstance(self.voice, Mapping):
            return self.voice.get(rule) if rule is not None else None
        return self.voice

    def to_json(self) -> JSON:
        voice = ({k: _plain(v) for k, v in self.voice.items()} if isinstance(self.voice, Mapping)
                 else _plain(self.voice))
        return {"voice": voice, "copying": _plain(self.copying), "damage": _plain(self.damage)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Verdicts:
        voice = d.get("voice")
        return cls(voice={str(k): _enum(Voice, v) for k, v in voice.items()} if isinstance(voice, Mapping)
                   else _enum(Voice, voice),
                   copying=_enum(Copying, d.get("copying")), damage=_enum(Damage, d.get("damage")))


@dataclass(frozen=True, kw_only=True)
class Control:
    """The never-saw-it control for copying: the base carrier and its overlap."""

    arm: str | None          # the base arm (never trained on the author's text)
    overlap: float | None    # its n-gram overlap with the training text: the copying baseline

    def to_json(self) -> JSON:
        return {"arm": self.arm, "overlap": self.overlap}


@dataclass(frozen=True, kw_only=True)
class Counts:
    voice: int               # voice generations scored
    probe: int               # probe generations scored
    expected_voice: int      # voice generations the design calls for

    def to_json(self) -> JSON:
        return {"voice": self.voice, "probe": self.probe, "expected_voice": self.expected_voice}


@dataclass(frozen=True, kw_only=True)
class Confusion:
    """Canary checks of `arm` answered with `answered_as`'s weights."""

    arm: str                 # the arm the checks were sent as
    answered_as: str         # the arm whose weights answered them
    count: int               # how many checks

    def to_json(self) -> JSON:
        return {"arm": self.arm, "answered_as": self.answered_as, "count": self.count}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Confusion:
        return cls(arm=str(d.get("arm")), answered_as=str(d.get("answered_as")), count=int(d.get("count") or 0))


@dataclass(frozen=True, kw_only=True)
class Integrity:
    """Did the seat serve every arm its own weights? The canary verdict behind the scored rows."""

    status: str                       # "holds" | "failed" | "not checked"
    method: str                       # the canary method and its version (e.g. canary-reproduction@2)
    params: Mapping[str, Any] = field(default_factory=dict)  # the method's parameters
    references: int = 0               # reference canaries (each arm alone on the seat)
    sent: int = 0                     # check canaries sent among the real requests
    right: int = 0                    # checks that reproduced their arm's reference
    wrong: int = 0                    # checks nearer another arm's reference
    unclear: int = 0                  # checks the references could not tell apart
    confusions: tuple[Confusion, ...] = ()  # the wrong checks, by arm and the arm that answered
    sessions: tuple[int, ...] = ()    # the generate sessions behind the scored rows
    isolated: bool | None = None      # every session behind the rows ran with --isolate-arms
    unchecked_rows: int = 0           # scored rows from a session without a check
    quarantined: int = 0              # suspect rows moved out of the generations
    quarantine: str | None = None     # the file they went to
    # canary-reproduction@2: reproduction against a calibrated threshold, and the detection floor
    foreign: int = 0                  # checks near no arm's reference (weights of no arm)
    exact: int = 0                    # right checks that reproduced their reference byte for byte
    threshold: float | None = None    # the (lowest) calibrated threshold of the sessions behind the rows
    checks_per_arm: int = 0           # the fewest checks any arm had
    detects: float | None = None      # the fault rate (share of requests) the checks catch with 95%
    detects_one_arm: float | None = None   # ... when only one arm is affected (its checks alone)
    problems: tuple[str, ...] = ()    # why the evidence does not hold (uncalibrated, files disagree, ...)
    # canary-reproduction@3: the distinct gate cells the checks asked, and the share of cells a
    # fault tied to cells must hit to meet them with 95%
    cells_checked: int = 0
    detects_cells: float | None = None
    identity: tuple[str, ...] = ()   # per arm, what its weights' identity rests on (and whose answers it was held to)

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    @property
    def holds(self) -> bool:
        return self.status == "holds"

    @property
    def affected(self) -> tuple[str, ...]:
        return tuple(sorted({c.arm for c in self.confusions}))

    def confusion_text(self) -> str:
        return ", ".join(f"{c.arm} answered as {c.answered_as} ×{c.count}" for c in self.confusions)

    def line(self) -> str:
        """One line for tables and records."""
        mode = {True: "arms isolated", False: "arms mixed in flight", None: ""}[self.isolated]
        text = (f"{self.status.upper()}: {self.sent} canaries sent, {self.right} reproduced their reference, "
                f"{self.wrong} wrong" + (f", {self.foreign} foreign weights" if self.foreign else "")
                + (f" ({self.confusion_text()})" if self.confusions else "")
                + (f", {self.unclear} unclear" if self.unclear else "")
                + f"; {self.references} references" + (f"; {mode}" if mode else ""))
        if self.detects is not None:
            text += f"; catches a fault on {_pct(self.detects)} of requests with 95%"
            if self.detects_one_arm is not None:
                text += f" ({_pct(self.detects_one_arm)} on one arm alone)"

        if self.problems:
            text += "; " + "; ".join(self.problems)
        if self.unchecked_rows:
            text += f"; {self.unchecked_rows} rows from sessions without a check"
        if self.quarantined:
            text += f"; {self.quarantined} suspect rows quarantined in {self.quarantine}"
        return text

    def to_json(self) -> JSON:
        return {"status": self.status, "method": self.method, "params": dict(self.params),
                "references": self.references, "sent": self.sent, "right": self.right, "wrong": self.wrong,
                "unclear": self.unclear, "confusions": [c.to_json() for c in self.confusions],
                "sessions": list(self.sessions), "isolated": self.isolated, "unchecked_rows": self.unchecked_rows,
                "quarantined": self.quarantined, "quarantine": self.quarantine, "foreign": self.foreign,
                "exact": self.exact, "threshold": self.threshold, "checks_per_arm": self.checks_per_arm,
                "detects_95": self.detects, "detects_95_one_arm": self.detects_one_arm,
                "problems": list(self.problems),
                # only when checks named their cells (canary-reproduction@3): older results keep their bytes
                **({"cells_checked": self.cells_checked, "detects_cells_95": self.detects_cells}
                   if self.cells_checked else {}),
                **({"identity": list(self.identity)} if self.identity else {})}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Integrity:
        return cls(status=str(d.get("status", "not checked")), method=str(d.get("method", "")),
                   params=_mapping(d.get("params")), references=int(d.get("references") or 0),
                   sent=int(d.get("sent") or 0), right=int(d.get("right") or 0), wrong=int(d.get("wrong") or 0),
                   unclear=int(d.get("unclear") or 0),
                   confusions=tuple(Confusion.from_json(c) for c in d.get("confusions") or ()
                                    if isinstance(c, Mapping)),
                   sessions=tuple(int(s) for s in d.get("sessions") or ()), isolated=d.get("isolated"),
                   unchecked_rows=int(d.get("unchecked_rows") or 0), quarantined=int(d.get("quarantined") or 0),
                   quarantine=d.get("quarantine"), foreign=int(d.get("foreign") or 0), exact=int(d.get("exact") or 0),
                   threshold=_float_or_none(d.get("threshold")), checks_per_arm=int(d.get("checks_per_arm") or 0),
                   detects=_float_or_none(d.get("detects_95")),
                   detects_one_arm=_float_or_none(d.get("detects_95_one_arm")),
                   problems=tuple(str(p) for p in d.get("problems") or ()),
                   cells_checked=int(d.get("cells_checked") or 0),
                   detects_cells=_float_or_none(d.get("detects_cells_95")),
                   identity=tuple(str(x) for x in d.get("identity") or ()))


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _float_or_none(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


@dataclass(frozen=True, kw_only=True)
class ReplicaShare:
    """The scored rows one replica of the seat produced: every arm of a cell on one replica."""

    url: str                 # the replica's URL (credentials redacted)
    cells: int               # (seed, prompt) cells it generated, every arm of each
    rows: int                # scored rows it generated
    tokens_per_s: float | None = None   # over every session's busy span on it; None when not measured

    def to_json(self) -> JSON:
        return {"url": self.url, "cells": self.cells, "rows": self.rows, "tokens_per_s": self.tokens_per_s}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ReplicaShare:
        tps = d.get("tokens_per_s")
        return cls(url=str(d.get("url", "")), cells=int(d.get("cells") or 0), rows=int(d.get("rows") or 0),
                   tokens_per_s=None if tps is None else float(tps))

    def line(self) -> str:
        speed = "" if self.tokens_per_s is None else f", {self.tokens_per_s:.0f} tok/s"
        return f"{self.url}: {self.cells} cells, {self.rows} rows{speed}"


@dataclass(frozen=True, kw_only=True)
class RulerCheck:
    """Can the view's ruler tell this author at all? From the registered corpora alone (`_ruler`)."""

    view: str                               # the view whose ruler it is
    method: str | None = None               # how the ruler's AUCs were computed
    heldout_auc: float | None = None        # AUC telling held-out chunks from background chunks
    author_auc: float | None = None         # AUC telling the author's training chunks from background
    heldout_chunks: int | None = None       # held-out chunks compared
    background_chunks: int | None = None    # background chunks compared
    training_chunks: int | None = None      # training chunks compared
    threshold: float | None = None          # the AUC both must reach
    ok: bool | None = None                  # both reached it (None: not computed)
    # The pool check (`_ruler.pool_check`), for gates registered since the ruler-weak check; None before it.
    pool: PoolCheck | None = None

    def to_json(self) -> JSON:
        out: JSON = {"method": self.method, "heldout_auc": self.heldout_auc, "author_auc": self.author_auc,
               "heldout_chunks": self.heldout_chunks, "background_chunks": self.background_chunks,
               "training_chunks": self.training_chunks, "threshold": self.threshold, "ok": self.ok}
        if self.pool is not None:
            out["pool"] = self.pool.to_json()
        return out

    @classmethod
    def from_json(cls, view: str, d: Mapping[str, Any]) -> RulerCheck:
        ok = d.get("ok")
        return cls(view=view, method=d.get("method"), heldout_auc=d.get("heldout_auc"),
                   author_auc=d.get("author_auc"), heldout_chunks=d.get("heldout_chunks"),
                   background_chunks=d.get("background_chunks"), training_chunks=d.get("training_chunks"),
                   threshold=d.get("threshold"), ok=None if ok is None else bool(ok),
                   pool=PoolCheck.from_json(pool) if isinstance(pool := d.get("pool"), Mapping) else None)


@dataclass(frozen=True, kw_only=True)
class PoolCheck:
    """The ruler at a verdict's pool length: is the author's other writing nearer H than strangers'?"""

    method: str | None = None
    words: int | None = None                       # tokens per pool
    author_auc: float | None = None                # training pools nearer H than background pools
    impostor_auc: Mapping[str, float | None] = field(default_factory=dict)   # ... than each impostor's pools
    training_pools: int | None = None
    background_pools: int | None = None
    impostor_pools: Mapping[str, int] = field(default_factory=dict)
    threshold: float | None = None                 # under it: RULER-WEAK
    weak_author: bool = False                      # VOICE is RULER-WEAK
    weak_impostors: tuple[str, ...] = ()           # specificity is RULER-WEAK, naming these

    def to_json(self) -> JSON:
        return {"method": self.method, "words": self.words, "author_auc": self.author_auc,
                "impostor_auc": dict(self.impostor_auc), "training_pools": self.training_pools,
                "background_pools": self.background_pools, "impostor_pools": dict(self.impostor_pools),
                "threshold": self.threshold, "weak_author": self.weak_author,
                "weak_impostors": list(self.weak_impostors)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PoolCheck:
        return cls(method=d.get("method"), words=d.get("words"), author_auc=d.get("author_auc"),
                   impostor_auc=_mapping(d.get("impostor_auc")), training_pools=d.get("training_pools"),
                   background_pools=d.get("background_pools"), impostor_pools=_mapping(d.get("impostor_pools")),
                   threshold=d.get("threshold"), weak_author=bool(d.get("weak_author", False)),
                   weak_impostors=tuple(str(w) for w in d.get("weak_impostors") or ()))


@dataclass(frozen=True, kw_only=True)
class Provenance:
    """What a generated run says about the seat behind the rows scored, handed to scoring whole.

    The integrity verdict and the replicas are judged before scoring (`gate`), from run.json and
    canaries.jsonl; the evidence names those files' hashes in the signature. Empty for imported rows.
    """

    integrity: Integrity | None = None          # the seat-integrity verdict (None: no canaries)
    replicas: tuple[ReplicaShare, ...] = ()     # which replica produced which rows
    evidence: IntegrityEvidence | None = None   # the hashes of the files the verdict was judged from


def detectable_rules(candidates: Sequence[CandidateResult], rules: Sequence[str]) -> list[str]:
    """The rules (in `rules`' order) with a power model that some candidate carries a finite detectable delta
    for (welch-t): the columns and legends that show one, in the terminal table and on the page."""
    def finite(v: float | None) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    return [r for r in rules if any(finite(c.detectable_under(r)) for c in candidates)]


@dataclass(frozen=True, kw_only=True)
class GateResult:
    """One scoring of one gate's generations under one deciding rule (docs/design.md §6)."""

    gate: str                         # the gate's name
    rule: str                         # the deciding floor rule's id
    ships: str | None                 # the candidate the gate recommends (None: none passes)
    control: Control                  # the copying control
    arms: tuple[ArmResult, ...]       # every arm scored, the base included, in the spec's order
    counts: Counts | None = None      # the rows scored (None: older results)
    # view name -> its ruler check; empty when none was computed (older results, test seams).
    ruler: Mapping[str, RulerCheck] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()    # one line each: what weakens the numbers (small pools, a weak ruler, ...)
    # What shaped the numbers (`_signature`); None only for results built without one (test seams).
    signature: Signature | None = None
    signature_text: str | None = None  # the signature's one-line text, as printed and recorded
    # The seat-integrity verdict; None when the generations carry no canaries (imported, or older runs).
    integrity: Integrity | None = None
    # Which replica produced which scored rows; empty when the rows name none (imported, older runs).
    replicas: tuple[ReplicaShare, ...] = ()
    # The specificity axis's impostors; None when the spec registers none.
    impostors: Impostors | None = None

    @property
    def candidates(self) -> tuple[CandidateResult, ...]:
        return tuple(a for a in self.arms if isinstance(a, CandidateResult))

    @property
    def base(self) -> ArmResult | None:
        return next((a for a in self.arms if a.is_base), None)

    def arm(self, name: str) -> ArmResult | None:
        return next((a for a in self.arms if a.name == name), None)

    def candidate(self, name: str) -> CandidateResult | None:
        return next((a for a in self.candidates if a.name == name), None)

    @property
    def generations_sha256(self) -> str | None:
        return None if self.signature is None else self.signature.generations_sha256

    @property
    def spec_sha256(self) -> str | None:
        return None if self.signature is None else self.signature.spec_sha256

    @property
    def version(self) -> str:
        return "" if self.signature is None else self.signature.voicegate or ""

    @property
    def provenance(self) -> Provenance:
        """What the run said about the seat behind these generations (an amendment carries it over)."""
        return Provenance(integrity=self.integrity, replicas=self.replicas,
                          evidence=None if self.signature is None else self.signature.evidence)

    @property
    def replicated(self) -> bool:
        """Whether the rows came from more than one replica of the seat (the record and page then list them)."""
        return len(self.replicas) > 1

    def rule_ids(self) -> list[str]:
        """The deciding rule first, then every other rule the result carries."""
        seen = {r for arm in self.candidates for r in arm.floors}
        return [self.rule] + sorted(seen - {self.rule})

    @property
    def rules(self) -> list[str]:
        """Every rule this result carries, in the registry's order (ids this version does not know last):
        what its tables show. Never the code's list: a result stored before a rule existed has no column
        for it, and one stored by a newer voicegate keeps the columns it has."""
        from voicegate.spec import RULES

        ids = set(self.rule_ids())
        return [r for r in RULES if r in ids] + sorted(ids - set(RULES))

    def to_json(self) -> JSON:
        out: JSON = {"gate": self.gate, "rule": self.rule, "ships": self.ships, "control": self.control.to_json(),
                     "arms": [a.to_json() for a in self.arms]}
        if self.counts is not None:
            out["counts"] = self.counts.to_json()
        if self.integrity is not None:
            out["integrity"] = self.integrity.to_json()
        if self.replicas:
            out["replicas"] = [r.to_json() for r in self.replicas]
        if self.ruler:
            out["ruler"] = {view: check.to_json() for view, check in self.ruler.items()}
        if self.impostors is not None:
            out["impostors"] = self.impostors.to_json()
        out.update({"warnings": list(self.warnings),
                    "signature": {} if self.signature is None else self.signature.to_json(),
                    "signature_text": self.signature_text})
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> GateResult:
        arms = tuple(ArmResult.from_json(a) for a in d.get("arms") or () if isinstance(a, Mapping))
        control = _mapping(d.get("control"))
        base = next((a.name for a in arms if a.is_base), None)
        counts = d.get("counts")
        integrity = d.get("integrity")
        return cls(gate=str(d.get("gate", "")), rule=str(d.get("rule", "")), ships=d.get("ships"),
                   control=Control(arm=control.get("arm", base), overlap=control.get("overlap")), arms=arms,
                   counts=Counts(**{k: int(counts.get(k, 0)) for k in ("voice", "probe", "expected_voice")})
                   if isinstance(counts, Mapping) else None,
                   ruler={str(v): RulerCheck.from_json(str(v), c) for v, c in _mapping(d.get("ruler")).items()
                          if isinstance(c, Mapping)},
                   warnings=tuple(str(w) for w in d.get("warnings") or ()),
                   signature=Signature.from_json(_mapping(d.get("signature"))), signature_text=d.get("signature_text"),
                   integrity=Integrity.from_json(integrity) if isinstance(integrity, Mapping) else None,
                   replicas=tuple(ReplicaShare.from_json(r) for r in d.get("replicas") or ()
                                  if isinstance(r, Mapping)),
                   impostors=Impostors.from_json(imp) if isinstance(imp := d.get("impostors"), Mapping) else None)


def is_result(d: Any) -> bool:
    """Whether stored JSON looks like a score result at all (the report refuses anything else)."""
    return isinstance(d, Mapping) and isinstance(d.get("arms"), list)


def results(items: Sequence[Mapping[str, Any]]) -> list[GateResult]:
    return [GateResult.from_json(i) for i in items]


def result_text(result: GateResult) -> str:
    """The bytes of scores.json and of `score --json`: same result, same bytes."""
    import json

    return json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n"
