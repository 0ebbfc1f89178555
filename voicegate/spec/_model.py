"""The typed gate spec: what the rest of voicegate reads (`spec.copying.tolerance`, `spec.run_dir`, ...).

Defaults come from the declarations in `_schema`, never from literals here, so a
default cannot differ between the docs, validation and the loaded spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voicegate._errors import VoicegateError
from voicegate.run import RunDir
from voicegate.spec._artifact_kinds import ARTIFACT_KINDS
from voicegate.spec._rules import SMALLEST_EFFECT, RuleId
from voicegate.spec._schema import SPEC_SCHEMA, Role
from voicegate.spec._views import ViewSpec, view_spec

_d = SPEC_SCHEMA.default


@dataclass(frozen=True)
class Arm:
    name: str
    model: str
    role: Role
    adapter_path: str | None = None
    voice_of: str | None = None  # whose voice a candidate was trained as (a pilot's arms say it)

    @property
    def is_base(self) -> bool:
        return self.role == Role.BASE

    @property
    def is_a_vs_a(self) -> bool:
        """The base's own weights under fresh seeds: generated and stored, never a candidate."""
        return self.role == Role.A_VS_A


@dataclass(frozen=True)
class Prompt:
    id: str
    text: str


@dataclass(frozen=True)
class Probe:
    id: str
    prompt: str
    check: dict[str, Any]


@dataclass(frozen=True)
class Seat:
    url: str
    base_model: str
    api_key_env: str | None = None
    concurrency: int = _d("seat.concurrency")
    timeout: float = _d("seat.timeout")
    replicas: tuple[str, ...] = ()   # empty: `url` is the one replica


@dataclass(frozen=True)
class Sampling:
    temperature: float
    top_p: float
    max_tokens: int

    def as_dict(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens}


@dataclass(frozen=True)
class Impostor:
    """Another author's held-out text: what a SPECIFIC candidate must move toward less than toward the gate author."""

    author: str
    files: tuple[Path, ...]


@dataclass(frozen=True)
class Corpora:
    heldout: tuple[Path, ...]
    training: tuple[Path, ...]
    background: tuple[Path, ...]
    impostors: tuple[Impostor, ...] = ()

    def impostor_background(self, impostor: Impostor) -> tuple[Path, ...]:
        """The z-score reference of an impostor's ruler: the background without that author, plus the gate
        author's held-out text, so every ruler of a gate is z-scored over the same authors."""
        own = set(impostor.files)
        return tuple(dict.fromkeys([*(p for p in self.background if p not in own), *self.heldout]))


@dataclass(frozen=True)
class Voice:
    view: str = _d("voice.view")
    mfw: int = _d("voice.mfw")
    chunk: int = _d("voice.chunk")
    model: str | None = None
    revision: str | None = None
    specificity: str = _d("voice.specificity")


@dataclass(frozen=True)
class Copying:
    n: int = _d("copying.n")
    tolerance: float = _d("copying.tolerance")
    max_run: int = _d("copying.max_run")


@dataclass(frozen=True)
class Damage:
    probes_path: Path | None = None
    probes: tuple[Probe, ...] = ()
    tolerance: float = _d("damage.tolerance")
    truncation_decides: bool = _d("damage.truncation_decides")


@dataclass(frozen=True)
class Artifacts:
    # The artifacts the spec names, by kind (`_artifact_kinds.ARTIFACT_KINDS`), in the table's order.
    paths: Mapping[str, Path]
    outside_workspace: tuple[str, ...] = ()  # the artifacts the spec says are meant to be outside the workspace

    def named(self) -> dict[str, Path]:
        """The artifacts the spec names, by kind, in `ARTIFACT_KINDS`'s order (the record first)."""
        return {k.name: self.paths[k.name] for k in ARTIFACT_KINDS if k.name in self.paths}

    @property
    def record(self) -> Path:
        return self.paths["record"]

    @property
    def readme(self) -> Path | None:
        return self.paths.get("readme")

    @property
    def compose(self) -> Path | None:
        return self.paths.get("compose")


@dataclass(frozen=True)
class GateSpec:
    path: Path
    root: Path
    raw: dict[str, Any]
    gate: str
    author: str
    seat: Seat
    arms: tuple[Arm, ...]
    prompts: tuple[Prompt, ...]
    prompts_path: Path | None
    seeds: tuple[int, ...]
    sampling: Sampling
    corpora: Corpora
    voice: Voice
    copying: Copying
    damage: Damage
    floor_rule: RuleId
    artifacts: Artifacts
    data_dir: Path
    prefer: tuple[str, ...] = ()
    expected_words: int = _d("expected_words")
    order_seed: int = _d("order_seed")
    # The model the view measures through, when it is a local directory (`_views.Model`): its files are
    # hashed at registration, and no artifact may be written inside it.
    model_dir: Path | None = None
    model_files: tuple[Path, ...] = field(default=())
    # Every declared key's checked value by dotted path (defaults filled in), including keys
    # that have no attribute above yet: a key added to the schema is readable here at once.
    values: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def view(self) -> ViewSpec:
        """The descriptor of the spec's voice view: its keys and what registration requires of it."""
        return view_spec(self.voice.view)

    @property
    def base(self) -> Arm:
        return next(a for a in self.arms if a.is_base)

    @property
    def candidates(self) -> tuple[Arm, ...]:
        """The arms that may ship (an A-vs-A arm never does: see `a_vs_a`)."""
        return tuple(a for a in self.arms if a.role == Role.CANDIDATE)

    @property
    def a_vs_a(self) -> tuple[Arm, ...]:
        """The A-vs-A arms: the base's model under fresh request seeds (`role: a-vs-a`)."""
        return tuple(a for a in self.arms if a.is_a_vs_a)

    def arm(self, name: str) -> Arm:
        for a in self.arms:
            if a.name == name:
                return a
        raise VoicegateError(f"{self.gate}: no arm named {name!r} (arms: {', '.join(a.name for a in self.arms)})")

    @property
    def run(self) -> RunDir:
        """The gate's run directory; it names every file voicegate keeps there."""
        return RunDir(self.data_dir / self.gate, self.data_dir)

    @property
    def run_dir(self) -> Path:
        return self.run.path

    @property
    def generations_path(self) -> Path:
        return self.run.generations

    @property
    def registration_path(self) -> Path:
        """The registration record, `preregistrations/<gate>.registration.json` beside the spec."""
        return self.path.with_name(f"{self.gate}.registration.json")

    def referenced_files(self) -> list[Path]:
        """Every file whose bytes the registration hashes, in a stable order."""
        files: list[Path] = []
        if self.prompts_path is not None:
            files.append(self.prompts_path)
        files += [*self.corpora.heldout, *self.corpora.training, *self.corpora.background]
        files += [p for imp in self.corpora.impostors for p in imp.files]
        if self.damage.probes_path is not None:
            files.append(self.damage.probes_path)
        files += list(self.model_files)
        return list(dict.fromkeys(files))

    def words_per_arm_seed(self) -> int:
        return len(self.prompts) * self.expected_words

    @property
    def smallest_effect(self) -> float:
        """`floor.smallest_effect`: the smallest effect that matters, in base-seed standard deviations."""
        return float(self.values.get("floor.smallest_effect", SMALLEST_EFFECT))

    @property
    def looks(self) -> tuple[int, ...] | None:
        """`floor.looks`: a registered sequential design's seeds per arm at each look (None: the fixed design)."""
        looks = self.values.get("floor.looks")
        return None if looks is None else tuple(looks)
