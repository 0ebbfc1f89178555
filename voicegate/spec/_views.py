"""Voice views as the spec sees them: one declarative descriptor a view, the one registry of view names.

A descriptor says what the spec side must know of a view, never how it measures: its name
(the `voice.view` choice), whether it needs a background corpus,
whether it measures through a model (`Model`: the key naming it is required, a local directory's
files are hashed at registration and guarded like every input, a hub name must be pinned by
revision), the modules it needs (looked up at registration, not imported) and its parameters'
keys in the score's signature.

`spec` sits below `scoring` and cannot import it, so the descriptors live here and
`scoring/_views.py`'s `View` classes point at theirs (`View.descriptor`). Validation (`_check`),
resolution (`_resolve`), registration and the artifact-path guard ask the spec's descriptor
(`GateSpec.view`), and never a view's name: a view registered in `VIEW_SPECS` gets every one of
those checks without a line of `spec/` changing (`tests/spec/test_view_descriptor.py`).
"""

from __future__ import annotations

import datetime as _dt
import importlib.util
from dataclasses import dataclass

from voicegate.spec._types import Choice


@dataclass(frozen=True)
class Model:
    """A view that measures through a model: the keys that name it and pin it."""

    what: str                          # how messages name it ("the embedding model")
    key: str = "voice.model"           # required: a local directory (files hashed, guarded) or a hub name
    revision: str = "voice.revision"   # a hub name must be pinned by this key


@dataclass(frozen=True)
class ViewSpec:
    """One voice view's declaration: its name, its keys and what registration requires of it."""

    name: str
    signature_keys: tuple[str, ...]     # its parameters in a score's signature, under these keys
    keys: tuple[str, ...] = ()          # the `voice.*` keys it reads: each declared in `_schema` (the registry
                                        # tests hold it), its model's keys among them
    needs_background: bool = False      # `corpora.background` required (z-scores need other authors)
    model: Model | None = None
    requires: tuple[str, ...] = ()      # modules it imports when it measures
    missing: str = ""                   # the one-line refusal when one of them is not installed
    title: str = ""                     # how warnings name what it measures ("Cosine Delta")
    # The words an (arm, seed) pool needs for its distance to be reliable (None: no known bound): `register`
    # warns below it from the design, `score` from the rows.
    reliable_words: int | None = None
    # The day the view's definition was fixed, like a rule's (None: the first views, older than dating). A dated
    # view never changes once it ships: a changed one is a new view, so a record re-scores under the view it
    # names. `register` refuses a view dated after the registration day.
    registered: _dt.date | None = None

    def unavailable(self) -> str | None:
        """Why this view cannot run on this machine (`missing`), or None. Modules are looked up, not imported."""
        for name in self.requires:
            try:
                found = importlib.util.find_spec(name) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                return self.missing or f"the {self.name} view needs {name}, which is not installed"
        return None


# The signature's keys for the two first views' parameters: every signature carries all four (None where
# its view has no such parameter), at the places results have always had them, so old bytes never move.
HISTORICAL_SIGNATURE_KEYS = ("mfw", "chunk", "embedding_model", "embedding_revision")

MIN_WORDS_PER_ARM_SEED = 10_000  # Cosine Delta's reliable pool (`STYLOMETRIC.reliable_words`)

STYLOMETRIC = ViewSpec("stylometric", signature_keys=("mfw", "chunk"), keys=("voice.mfw", "voice.chunk"),
                       needs_background=True, title="Cosine Delta", reliable_words=MIN_WORDS_PER_ARM_SEED)
# Cosine Delta over the 5 x `voice.mfw` most frequent words without the personal pronouns, the first `voice.mfw`
# weighted to count as much as the rest (`scoring/_stylometric.py`; chosen on benchmarks/bench_ruler.py and the
# tiny voices' sweep, docs/validity.md). Its own signature keys: a view's keys are its own.
WIDE_FACTOR = 5
STYLOMETRIC_WIDE = ViewSpec(
    "stylometric-wide", signature_keys=("wide_mfw", "wide_chunk", "wide_dropped"),
    keys=("voice.mfw", "voice.chunk"), needs_background=True, title="Cosine Delta (wide)",
    reliable_words=MIN_WORDS_PER_ARM_SEED, registered=_dt.date(2026, 12, 7))
EMBEDDING = ViewSpec(
    "embedding", signature_keys=("embedding_model", "embedding_revision"), keys=("voice.model", "voice.revision"),
    title="the embedding view",
    model=Model("the embedding model"), requires=("sentence_transformers",),
    missing=("the embedding view needs sentence-transformers, an extra: pip install 'voicegate[embedding]' "
             "(on a CPU-only machine install torch==2.13.0 first, or it pulls a CUDA build)"))

# The one registry of views, by name, in the order the docs list them. Read at call time, so a view
# added here (or by a test, with monkeypatch.setitem) is accepted, checked and guarded at once.
VIEW_SPECS: dict[str, ViewSpec] = {v.name: v for v in (STYLOMETRIC, EMBEDDING, STYLOMETRIC_WIDE)}


def view_spec(name: str) -> ViewSpec:
    return VIEW_SPECS[name]


def views_with(attr: str) -> str:
    """'the embedding view' for the views whose `attr` is set: the docs' "required when" column."""
    names = [v.name for v in VIEW_SPECS.values() if getattr(v, attr)]
    return f"for the {' or '.join(names)} view"


class ViewChoice(Choice):
    """`voice.view`: a name in `VIEW_SPECS`, read when a spec is checked (not frozen at import time)."""

    def __init__(self) -> None:  # no stored options: they are the registry's, whenever asked
        pass

    @property
    def options(self) -> tuple[str, ...]:
        return tuple(VIEW_SPECS)
