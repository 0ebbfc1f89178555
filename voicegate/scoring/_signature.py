"""The signature of a score, in the manner of sacrebleu: everything that shapes the numbers.

Two results with the same signature were computed the same way from the same
registered inputs; a reader quoting a number quotes its signature with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from voicegate._version import __version__
from voicegate.scoring._bootstrap import BOOTSTRAP_SEED, LEVEL, RESAMPLES
from voicegate.scoring._tokens import TOKENIZER_NAME
from voicegate.spec._rules import RULES, get_rule

if TYPE_CHECKING:
    from voicegate.scoring._views import View


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


def signature(*, view: View, n: int, tolerance: float, max_run: int, damage_tolerance: float,
              truncation_decides: bool, rule: str, spec_sha256: str, generations_sha256: str,
              corpus_sha256: str, specificity: str | None = None) -> dict[str, Any]:
    """`specificity`: the registered `voice.specificity` when the spec has impostors (a key only then, so
    a result without impostors keeps the bytes it always had)."""
    import numpy

    params = view.signature()
    sig: dict[str, Any] = {
        "view": view.name,
        "mfw": params["mfw"],
        "chunk": params["chunk"],
        "n": n,
        "copying_tolerance": tolerance,
        "max_run": max_run,
        "damage_tolerance": damage_tolerance,
        "truncation_decides": truncation_decides,
        "tokenizer": TOKENIZER_NAME,
        "embedding_model": params["embedding_model"],
        "embedding_revision": params["embedding_revision"],
        "rule": get_rule(rule).signature,
        "rules": {rid: r.signature for rid, r in sorted(RULES.items())},
        "bootstrap": f"paired-prompt-cluster,percentile-recentred,B={RESAMPLES},level={LEVEL},seed={BOOTSTRAP_SEED}",
        "voicegate": __version__,
        "numpy": numpy.__version__,
        "scipy": installed_version("scipy"),  # environment record; importing scipy costs ~0.3 s
        "spec_sha256": spec_sha256,
        "generations_sha256": generations_sha256,
        "corpus_sha256": corpus_sha256,
    }
    if specificity is not None:
        sig["specificity"] = f"impostors,{specificity},margin-floor-per-impostor@1"
    return sig


def signature_text(sig: dict[str, Any]) -> str:
    """One line, `key:value|...`, short hashes: the form printed under a table."""
    from voicegate.scoring._views import VIEWS

    parts = [f"view:{sig['view']}", *VIEWS[sig["view"]].signature_parts(sig)]
    parts += [
        f"n:{sig['n']}", f"tol:{sig['copying_tolerance']}", f"maxrun:{sig['max_run']}",
        f"dmg:{sig['damage_tolerance']}{'+trunc' if sig['truncation_decides'] else ''}",
        f"tok:{sig['tokenizer']}", f"rule:{sig['rule']}", f"rules:{','.join(sig['rules'].values())}",
        f"boot:{sig['bootstrap']}",  # not-a-result: the signature's own key
        f"version:{sig['voicegate']}", f"numpy:{sig['numpy']}", f"scipy:{sig['scipy']}",
        f"spec:{sig['spec_sha256'][:12]}", f"gens:{sig['generations_sha256'][:12]}",
        f"corpus:{sig['corpus_sha256'][:12]}",
    ]
    if sig.get("specificity"):
        parts.append(f"spec-axis:{sig['specificity']}")
    return "|".join(parts)
