"""Every spec key, declared once: its dotted path, kind (type and bounds), default, whether it is required,
and a line of doc.

Validation (`_check`), the defaults on `GateSpec` and the schema tables in
`docs/reference.md` are all derived from these declarations, so adding a key is
one `Key(...)` line here and cannot be half-done: a key declared here is accepted,
checked, defaulted and documented; a key not declared here is refused.

Regenerate the tables in the reference docs with
`python3 -c 'from voicegate.spec._schema import write_reference; write_reference("docs/reference.md")'`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from voicegate.spec._artifact_kinds import ARTIFACT_KINDS, ArtifactKind
from voicegate.spec._rules import RULES, SMALLEST_EFFECT
from voicegate.spec._types import (
    MAX_SEED,
    AuthorGlobs,
    Choice,
    Flag,
    Globs,
    Ident,
    Integer,
    IntList,
    Kind,
    Line,
    Names,
    Number,
    Pattern,
    ProbeCheck,
    Problem,
    Prompts,
    Records,
    SeatUrl,
    SeatUrls,
    Section,
    Subset,
    Text,
)
from voicegate.spec._views import ViewChoice, views_with

CORPUS_CAP_MB = 32.0  # corpora.max_file_mb's default: ~0.7 GB of memory at the cap



class Role(StrEnum):
    """An arm's role (`arms[].role`). A str enum: it compares equal to, prints as and JSON-encodes as its value."""

    BASE = "base"
    CANDIDATE = "candidate"
    # The base's own weights under fresh request seeds: never ships; `calibrate` reads its VOICE PASS as a
    # false pass (the gate's A-vs-A error rate), `score` only warns about it.
    A_VS_A = "a-vs-a"


ROLES = tuple(r.value for r in Role)


@dataclass(frozen=True)
class RoleChoice(Choice):
    """`arms[].role`: one of ROLES. A bare YAML `null` parses as no value, so it is refused with where to go."""

    def check(self, value: Any) -> str:
        if value is None:
            raise Problem("`null` is not a role (YAML reads a bare null as no value); did you mean a-vs-a? "
                          "(the base's own weights under fresh seeds: `role: a-vs-a`)")
        return super().check(value)
class RuleChoice(Choice):
    """`floor.rule`: a rule id in `RULES`, read when a spec is checked (not frozen at import time)."""

    def __init__(self) -> None:  # no stored options: they are the registry's, whenever asked
        pass

    @property
    def options(self) -> tuple[str, ...]:
        return tuple(sorted(RULES))

    @property
    def problem(self) -> str:
        return "unknown floor rule {value!r} (registered: {options})"


SPECIFICITY = ("decides", "reported")


@dataclass(frozen=True)
class Key:
    """One spec key. `when` replaces "no" in the docs' required column for a key other keys make required."""

    path: str
    kind: Kind
    doc: str
    required: bool = False
    default: Any = None
    when: str = ""
    in_table: bool = True

    @property
    def parent(self) -> str:
        return self.path.rsplit(".", 1)[0] if "." in self.path else ""

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def item_path(self) -> str:
        """Where the keys of one item of a list of mappings are declared: `arms` -> `arms[]`."""
        return f"{self.path}[]"


@dataclass(frozen=True)
class Schema:
    keys: tuple[Key, ...]

    def __post_init__(self) -> None:
        paths = [k.path for k in self.keys]
        if len(set(paths)) != len(paths):
            raise ValueError(f"a spec key is declared twice: {sorted({p for p in paths if paths.count(p) > 1})}")
        containers = {"", *(k.path for k in self.keys if isinstance(k.kind, Section)),
                      *(k.item_path for k in self.keys if isinstance(k.kind, Records))}
        for k in self.keys:
            if k.parent not in containers:
                raise ValueError(f"{k.path}: its parent {k.parent!r} is not declared as a mapping")

    def with_keys(self, *extra: Key) -> Schema:
        """This schema and `extra`: how a test (or a later feature) adds a key."""
        return Schema((*self.keys, *extra))

    def children(self, parent: str) -> tuple[Key, ...]:
        return tuple(k for k in self.keys if k.parent == parent)

    def key(self, path: str) -> Key:
        for k in self.keys:
            if k.path == path:
                return k
        raise KeyError(path)

    def default(self, path: str) -> Any:
        return self.key(path).default

    def sections(self) -> dict[str, dict[str, bool]]:
        """Each mapping's keys and whether each is required: `{"": {...}, "seat": {...}, "arms[]": {...}}`."""
        out: dict[str, dict[str, bool]] = {}
        for k in self.keys:
            out.setdefault(k.parent, {})[k.name] = k.required
        return out


_ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_ARM_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"


def _artifact_keys(kinds: Sequence[ArtifactKind]) -> tuple[Key, ...]:
    """`artifacts.<name>` for each kind, and `artifacts.outside_workspace` naming those that may live outside the
    workspace when the spec says so (the gate record never: it is the workspace's own, in git)."""
    return (*(Key(f"artifacts.{k.name}", Line("path"), k.doc, required=k.required) for k in kinds),
            Key("artifacts.outside_workspace", Subset(tuple(k.name for k in kinds if k.may_be_outside)),
                "the artifacts meant to be outside the workspace (an adapter directory on a mounted volume); any "
                "other artifact that resolves outside it, through a symlink too, is refused", default=()))


SPEC_SCHEMA = Schema((
    Key("gate", Text("name"), "the adapter name that will ship; must match the name pattern", required=True),
    Key("author", Line(), "the author whose voice the adapter imitates", required=True),
    Key("description", Text("text"), "free text"),
    Key("seat", Section(), "where generations come from", required=True),
    Key("seat.url", SeatUrl(), "the seat's OpenAI base URL, e.g. `http://127.0.0.1:8027/v1`",
        required=True),
    Key("seat.replicas", SeatUrls(), "replicas of the same seat (same vLLM, carrier and adapters) to spread the "
        "gate over, every arm of a (seed, prompt) cell on one replica; `generate` then uses these, not `seat.url`"),
    Key("seat.base_model", Line(), "the carrier's served name", required=True),
    Key("seat.api_key_env", Pattern(_ENV_NAME, "must name an environment variable (the key itself never goes "
                                    "in a file)", "variable name"),
        "the NAME of the environment variable holding the API key"),
    Key("seat.concurrency", Integer(1, 1024), "requests in flight (the seat's `--max-num-seqs`)", default=8),
    Key("seat.timeout", Number(0.1, 3600), "seconds one request may take in all, connect to last byte",
        default=120.0),
    Key("generation", Section(), "how `generate` sends the requests"),
    Key("generation.isolate_arms", Flag(), "send the requests one arm at a time, the seat drained only at an "
        "arm switch, so no two arms share the seat (what `generate --isolate-arms` does; for a seat that fails "
        "the integrity check)", default=False),
    Key("arms", Records(), "exactly one base and at least one candidate, unique names and models", required=True),
    Key("arms[].name", Pattern(_ARM_NAME, "{value!r}: use letters, digits, '.', '_' or '-'",
                               "letters, digits, `.`, `_`, `-`"),
        "the arm's name in tables and artifacts", required=True),
    Key("arms[].model", Line(), "the `model` field sent to the seat", required=True),
    Key("arms[].role", RoleChoice(ROLES), "whether the arm is the base, a candidate, or `a-vs-a`: the base's own "
        "model under fresh request seeds (never ships; `calibrate` measures the gate's false-pass rate on it)",
        required=True),
    Key("arms[].adapter_path", Line("path"), "where the seat can load the adapter from, if it does not serve it"),
    Key("arms[].voice_of", Line("author"), "whose voice a candidate was trained as (an author, spelt as `author` is "
        "where it is that gate's): `calibrate` records it, and `register` quotes power only from a pilot's arms of "
        "the gate's own author"),
    Key("prompts", Prompts(), "a `.txt` file (one prompt a line; ids are 0-based indices of non-empty lines), "
        "a `.jsonl` file with `id` and `text`, or an inline list", required=True),
    Key("seeds", IntList(0, MAX_SEED, "seeds"), "the seeds every (arm, prompt) is generated under", required=True),
    Key("sampling", Section(), "sampling settings sent with every request", required=True),
    Key("sampling.temperature", Number(0.0, 2.0), "the sampling temperature", required=True),
    Key("sampling.top_p", Number(1e-9, 1.0, "number in (0, 1]"), "nucleus sampling mass", required=True),
    Key("sampling.max_tokens", Integer(1, 1_000_000), "the longest generation, in tokens", required=True),
    Key("expected_words", Integer(1, 1_000_000), "words per generation, for the 10k-words warning and estimates",
        default=250),
    Key("order_seed", Integer(0, MAX_SEED), "seeds the recorded shuffle of arm order within each block", default=0),
    Key("corpora", Section(), "registered text corpora (lists of globs)", required=True),
    Key("corpora.heldout", Globs(), "the author's text the adapter never saw", required=True),
    Key("corpora.training", Globs(), "what the adapter saw (the copying check's reference)", required=True),
    Key("corpora.background", Globs(), "other authors: the z-score reference", when=views_with("needs_background")),
    Key("corpora.impostors", AuthorGlobs(), "other authors' held-out texts, grouped by author (`{Anne Bronte: "
        "[...], ...}`): a candidate is SPECIFIC only when it moves toward the gate author more than toward each "
        "of them; same period and kind, none trained on by any arm, never the gate author"),
    Key("corpora.max_file_mb", Number(0.001, 1_000_000, "number of MiB > 0"),
        "the largest corpus file accepted, in MiB (2**20 bytes): a bigger one is refused before it is read, since "
        "scoring holds about 20x a corpus's bytes in memory; raise it for a genuinely larger corpus",
        default=CORPUS_CAP_MB),
    Key("voice", Section(), "the voice-distance view"),
    Key("voice.view", ViewChoice(), "how voice distance is measured", default="stylometric"),
    Key("voice.mfw", Integer(10, 100_000), "most frequent words", default=1000),
    Key("voice.chunk", Integer(50, 1_000_000), "reference chunk size in tokens", default=2500),
    Key("voice.model", Line("path or hub name"), "a local sentence-transformers directory (hashed at "
        "registration) or a hub name", when=views_with("model")),
    Key("voice.revision", Line(), "the pinned revision", when="for a hub model"),
    Key("voice.specificity", Choice(SPECIFICITY), "whether SPECIFIC is part of the shipping verdict (`decides`) "
        "or shown beside it (`reported`); without `corpora.impostors` it is not checked", default="decides"),
    Key("copying", Section(), "the copying check"),
    Key("copying.n", Integer(2, 64), "n-gram length", default=8),
    Key("copying.tolerance", Number(0.0, 1.0), "allowed overlap above the control", default=0.005),
    Key("copying.max_run", Integer(2, 1_000_000), "verbatim run length, in tokens, that counts as copying "
        "(at least `copying.n`)", default=50),
    Key("damage", Section(), "the damage check"),
    Key("damage.probes", Line("path"), "a probes YAML file (see below)"),
    Key("damage.tolerance", Number(0.0, 1.0), "allowed drop in pass rate / rise in degeneration", default=0.05),
    Key("damage.truncation_decides", Flag(), "count truncation at `max_tokens` as degeneration", default=False),
    Key("floor", Section(), "the deciding floor rule", required=True),
    Key("floor.rule", RuleChoice(), "the rule whose floor decides the voice verdict", required=True),
    Key("floor.smallest_effect", Number(0.0, 100.0), "the smallest effect that matters, in standard deviations of "
        "the base's per-seed distances toward the gate author: under a rule that states one (`welch-t-min-effect`), "
        "VOICE PASS needs delta_cb and SPECIFIC each margin significantly above it, NOT-SPECIFIC a margin "
        "significantly below minus it", default=SMALLEST_EFFECT),
    Key("floor.looks", IntList(2, MAX_SEED, "looks"), "a registered sequential design: the seeds per arm at "
        "which `score` may decide, ascending, the last every seed of `seeds`; their efficacy and futility "
        "boundaries are fixed at `register` (a t rule only: `welch-t`, `welch-t-min-effect`); a score at any "
        "other number of seeds is refused (none: the fixed design, decided at every seed)"),
    Key("prefer", Names("must list candidate arm names, most preferred first"), "candidate names in order of "
        "preference among those that pass (none: the largest ratio ships)", default=()),
    Key("artifacts", Section(), "where verdicts are appended", required=True),
    *_artifact_keys(ARTIFACT_KINDS),
    Key("data_dir", Line("path"), "where generations and scores go (`$VOICEGATE_DATA_DIR` beats it)",
        default="runs"),
))


def spec_schema() -> Schema:
    """`SPEC_SCHEMA` with the `artifacts.*` keys of the kinds in `ARTIFACT_KINDS` now: the table is read at call
    time, so a kind added after import (a test's) is a key checked, defaulted and documented like the others."""
    schema = SPEC_SCHEMA  # looked up at call time: a test may extend it (`Schema.with_keys`)
    current = _artifact_keys(ARTIFACT_KINDS)
    if tuple(k for k in schema.keys if k.parent == "artifacts") == current:
        return schema
    keys = [k for k in schema.keys if k.parent != "artifacts"]
    at = next(i for i, k in enumerate(keys) if k.path == "artifacts") + 1
    return Schema((*keys[:at], *current, *keys[at:]))


PROBES_SCHEMA = Schema((
    Key("probes", Records("needs a non-empty list of probes"), "the probes (a bare list is read the same)",
        required=True, in_table=False),
    Key("probes[].id", Ident(), "the probe's id (its rows' `prompt_id`)", required=True),
    Key("probes[].prompt", Text(), "the prompt sent to every arm under every seed", required=True),
    Key("probes[].check", ProbeCheck(), "one of `{exact: ANSWER}` (or a list of answers), `{regex: PATTERN}`, "
        "`{refuse: true}`, `{max_words: N}`, `{json: true}` (or a list of keys the object must have)", required=True),
))


# -- the docs' tables -----------------------------------------------------------------------


def _default_text(value: Any) -> str:
    if value is None or value == ():
        return ""
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    return f"`{value:g}`" if isinstance(value, float) else f"`{value}`"


def schema_table_markdown(schema: Schema | None = None) -> str:
    """The markdown table of `schema`'s keys (the spec's by default), as `docs/reference.md` shows it."""
    rows = ["| key | required | type | default | meaning |", "|---|---|---|---|---|"]
    for k in (schema or spec_schema()).keys:
        if k.in_table:
            required = "yes" if k.required else (k.when or "no")
            rows.append(f"| `{k.path}` | {required} | {k.kind.describe()} | {_default_text(k.default)} | {k.doc} |")
    return "\n".join(rows) + "\n"


# Each table follows its heading in docs/reference.md, after one paragraph at most.
REFERENCE_TABLES: tuple[tuple[str, Schema], ...] = (("## Spec keys", SPEC_SCHEMA), ("### Probes file", PROBES_SCHEMA))


def reference_table(text: str, heading: str) -> tuple[int, int]:
    """Where (start, end) the first table after `heading` is in `text`."""
    at = text.index(f"\n{heading}\n")
    start = text.index("\n| key |", at) + 1
    end = text.find("\n\n", start)
    return start, (len(text) if end == -1 else end + 1)


def update_reference(text: str) -> str:
    """`text` (docs/reference.md) with every schema table regenerated."""
    for heading, schema in REFERENCE_TABLES:
        start, end = reference_table(text, heading)
        text = text[:start] + schema_table_markdown(spec_schema() if schema is SPEC_SCHEMA else schema) + text[end:]
    return text


def write_reference(path: str | Path) -> None:
    """Rewrite the schema tables of the reference page at `path` in place."""
    target = Path(path)
    target.write_text(update_reference(target.read_text(encoding="utf-8")), encoding="utf-8")
