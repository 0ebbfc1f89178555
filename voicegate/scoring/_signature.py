"""The signature of a score, in the manner of sacrebleu: everything that shapes the numbers.

Two results with the same signature were computed the same way from the same
registered inputs; a reader quoting a number quotes its signature with it.

`Signature.of(spec, ...)` builds it from the spec (every setting is read there,
so none can be passed inconsistently); `.to_json()` is the stored form, key for
key what results have always recorded; `.text()` is the one line printed under a
table. A signature read back from a stored result keeps the mapping it was read
from, so re-serialising an older result (one written before a key existed)
gives back its own bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from voicegate._version import __version__
from voicegate.scoring._bootstrap import BOOTSTRAP_SEED, LEVEL, RESAMPLES
from voicegate.scoring._tokens import TOKENIZER_NAME
from voicegate.spec import CHECKS, HISTORICAL_SIGNATURE_KEYS, RULES, VIEW_SPECS, get_rule

if TYPE_CHECKING:
    from voicegate.scoring._views import View
    from voicegate.spec import GateSpec

SPECIFICITY_METHOD = "margin-floor-per-impostor@1"
BOOTSTRAP = f"paired-prompt-cluster,percentile-recentred,B={RESAMPLES},level={LEVEL},seed={BOOTSTRAP_SEED}"


def installed_version(name: str) -> str | None:
    """A distribution's version without importing it, nor importlib.metadata (~0.05-0.1 s with email).

    Read from the one ``<name>-<version>.dist-info`` directory beside the package; anything less
    plain (no such directory, or several) asks importlib.metadata.
    """
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec(name)
    if spec is None:
        return None
    if spec.origin:
        found = list(Path(spec.origin).parent.parent.glob(f"{name}-*.dist-info"))
        if len(found) == 1:
            return found[0].name[len(name) + 1:-len(".dist-info")]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


@dataclass(frozen=True)
class IntegrityEvidence:
    """sha256 of the files a generated run's integrity verdict stands on.

    In the signature, so editing run.json's integrity block or canaries.jsonl changes it.
    Either is None when that file or block is absent; imported runs have no evidence at all.
    """

    integrity_sha256: str | None
    canaries_sha256: str | None


@dataclass(frozen=True, kw_only=True)
class Signature:
    view: str | None
    # The view's own parameters, by its descriptor's `signature_keys` (`spec/_views.py`). Stored under the
    # same keys: the four historical ones (`mfw`, `chunk`, `embedding_model`, `embedding_revision`) always, at
    # their old places and None where the view has no such parameter; a later view's own keys after them.
    params: Mapping[str, Any]
    n: int | None
    copying_tolerance: float | None
    max_run: int | None
    damage_tolerance: float | None
    truncation_decides: bool | None
    tokenizer: str | None
    rule: str | None                       # the deciding rule's signature, e.g. "pairwise-max-spread@1"
    rules: Mapping[str, str]               # every rule's signature, by id
    bootstrap: str | None
    voicegate: str | None
    numpy: str | None
    scipy: str | None
    spec_sha256: str | None
    generations_sha256: str | None
    corpus_sha256: str | None
    # "impostors,<voice.specificity>,<method>" when the spec registers impostors; else no key at all,
    # so a result without impostors keeps the bytes it always had.
    specificity: str | None = None
    # `floor.smallest_effect` (base-seed SDs) when a computed rule reads it; else no key, so a result without
    # such a rule keeps the bytes it always had.
    smallest_effect: float | None = None
    # Only generated runs have integrity evidence; imported ones keep the bytes they always had.
    evidence: IntegrityEvidence | None = None
    # The dated checks (`spec._checks`) the gate is scored under, as "id@version"; none for a gate registered
    # before any, so its signature keeps its bytes.
    checks: tuple[str, ...] = ()
    # The mapping a stored signature was read from; None for one built here.
    stored: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, spec: GateSpec, *, view: View, rule: str, generations_sha256: str, corpus_sha256: str,
           evidence: IntegrityEvidence | None = None, rules: Iterable[str] | None = None,
           checks: Iterable[str] = ()) -> Signature:
        """The signature of scoring `spec`'s generations (hash given) through `view` under `rule`, with
        `rules` computed beside it (None: every registered rule)."""
        import numpy

        from voicegate.spec import spec_sha256

        own = view.signature()
        if set(own) != set(view.descriptor.signature_keys):
            raise ValueError(f"the {view.name} view's signature gives {sorted(own)}, its descriptor declares "
                             f"{sorted(view.descriptor.signature_keys)}")
        return cls(
            view=view.name, params={**dict.fromkeys(HISTORICAL_SIGNATURE_KEYS), **own}, n=spec.copying.n,
            copying_tolerance=spec.copying.tolerance, max_run=spec.copying.max_run,
            damage_tolerance=spec.damage.tolerance, truncation_decides=spec.damage.truncation_decides,
            tokenizer=TOKENIZER_NAME, rule=get_rule(rule).signature,
            rules={rid: r.signature for rid, r in sorted(RULES.items()) if rules is None or rid in rules},
            bootstrap=BOOTSTRAP,
            voicegate=__version__, numpy=numpy.__version__,
            scipy=installed_version("scipy"),  # environment record; importing scipy costs ~0.3 s
            spec_sha256=spec_sha256(spec), generations_sha256=generations_sha256, corpus_sha256=corpus_sha256,
            specificity=(f"impostors,{spec.voice.specificity},{SPECIFICITY_METHOD}"
                         if spec.corpora.impostors else None),
            smallest_effect=(spec.smallest_effect if any(r.smallest_effect for rid, r in RULES.items()
                                                         if rules is None or rid in rules) else None),
            evidence=evidence, checks=tuple(CHECKS[c].signature for c in CHECKS if c in set(checks)))

    def to_json(self) -> dict[str, Any]:
        if self.stored is not None:
            return dict(self.stored)
        p = self.params
        out: dict[str, Any] = {
            "view": self.view, "mfw": p.get("mfw"), "chunk": p.get("chunk"), "n": self.n,
            "copying_tolerance": self.copying_tolerance, "max_run": self.max_run,
            "damage_tolerance": self.damage_tolerance, "truncation_decides": self.truncation_decides,
            "tokenizer": self.tokenizer, "embedding_model": p.get("embedding_model"),
            "embedding_revision": p.get("embedding_revision"),
            **{k: v for k, v in p.items() if k not in HISTORICAL_SIGNATURE_KEYS},
            "rule": self.rule, "rules": dict(self.rules),
            "bootstrap": self.bootstrap, "voicegate": self.voicegate, "numpy": self.numpy, "scipy": self.scipy,
            "spec_sha256": self.spec_sha256, "generations_sha256": self.generations_sha256,
            "corpus_sha256": self.corpus_sha256,
        }
        if self.specificity is not None:
            out["specificity"] = self.specificity
        if self.smallest_effect is not None:
            out["smallest_effect"] = self.smallest_effect
        if self.evidence is not None:
            out.update(_evidence_json(self.evidence))
        if self.checks:
            out["checks"] = list(self.checks)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Signature | None:
        """A stored signature (None for an empty one: older results and test seams have none)."""
        if not d:
            return None
        rules = d.get("rules")
        evidence = (IntegrityEvidence(_opt_str(d.get("integrity_sha256")), _opt_str(d.get("canaries_sha256")))
                    if "integrity_sha256" in d or "canaries_sha256" in d else None)
        view = _opt_str(d.get("view"))
        own = VIEW_SPECS[view].signature_keys if view is not None and view in VIEW_SPECS else ()
        return cls(
            view=view, params={k: d.get(k) for k in (*HISTORICAL_SIGNATURE_KEYS, *own)}, n=d.get("n"),
            copying_tolerance=d.get("copying_tolerance"), max_run=d.get("max_run"),
            damage_tolerance=d.get("damage_tolerance"), truncation_decides=d.get("truncation_decides"),
            tokenizer=_opt_str(d.get("tokenizer")), rule=_opt_str(d.get("rule")),
            rules={str(k): str(v) for k, v in rules.items()} if isinstance(rules, Mapping) else {},
            bootstrap=_opt_str(d.get("bootstrap")),  # not-a-result: the signature's own key
            voicegate=_opt_str(d.get("voicegate")),
            numpy=_opt_str(d.get("numpy")), scipy=_opt_str(d.get("scipy")),
            spec_sha256=_opt_str(d.get("spec_sha256")), generations_sha256=_opt_str(d.get("generations_sha256")),
            corpus_sha256=_opt_str(d.get("corpus_sha256")), specificity=_opt_str(d.get("specificity")),
            smallest_effect=d.get("smallest_effect"), evidence=evidence,
            checks=tuple(str(c) for c in d.get("checks") or ()), stored=dict(d))

    def text(self) -> str:
        """One line, `key:value|...`, short hashes: the form printed under a table.

        The integrity evidence is in the stored signature, not in this line (it was never printed)."""
        from voicegate.scoring._views import VIEWS

        view = VIEWS[str(self.view)]
        parts = [f"view:{self.view}", *view.signature_parts(self.params)]
        parts += [
            f"n:{self.n}", f"tol:{self.copying_tolerance}", f"maxrun:{self.max_run}",
            f"dmg:{self.damage_tolerance}{'+trunc' if self.truncation_decides else ''}",
            f"tok:{self.tokenizer}", f"rule:{self.rule}", f"rules:{','.join(self.rules.values())}",
            *([f"effect:{self.smallest_effect:g}sd"] if self.smallest_effect is not None else []),
            f"boot:{self.bootstrap}", f"version:{self.voicegate}", f"numpy:{self.numpy}", f"scipy:{self.scipy}",
            f"spec:{_short(self.spec_sha256)}", f"gens:{_short(self.generations_sha256)}",
            f"corpus:{_short(self.corpus_sha256)}",
        ]
        if self.specificity:
            parts.append(f"spec-axis:{self.specificity}")
        if self.checks:
            parts.append(f"checks:{','.join(self.checks)}")
        return "|".join(parts)


def _evidence_json(evidence: IntegrityEvidence) -> dict[str, str | None]:
    return {"integrity_sha256": evidence.integrity_sha256, "canaries_sha256": evidence.canaries_sha256}


def _opt_str(v: Any) -> str | None:
    return None if v is None else str(v)


def _short(digest: str | None) -> str:
    return "None" if digest is None else digest[:12]
