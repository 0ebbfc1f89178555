"""Voice views: how d(a, s), the distance of an (arm, seed) pool toward one author's text, is measured.

The one seam a view plugs into. `score_gate` never branches on a view's name: it asks the
spec's view (`view_of`) which corpus files it reads, for the distances toward a `Target`
(the gate author's held-out text, or an impostor's text for the specificity axis), for the
ruler check of a target, and for the parameters that go into the signature.

Adding a view is its descriptor in `spec/_views.py` (`ViewSpec`: name, keys, model, requirements,
signature keys; the spec side reads only that) and one class here pointing at it (`descriptor`),
registered in `VIEWS`. Its parameters are spec keys under `voice`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np

from voicegate.scoring import _embedding, _stylometric
from voicegate.scoring._cache import Cache
from voicegate.scoring._cells import Cells
from voicegate.scoring._ruler import PoolNumbers, RulerNumbers
from voicegate.spec import VIEW_SPECS, WIDE_FACTOR, GateSpec, ViewSpec

Distances = dict[str, dict[int, float]]
Pool = Callable[[np.ndarray], np.ndarray]  # prompt weights (B x P) -> B distances
PoolOf = Callable[[str, int, Sequence[str]], Pool]
Encoder = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class Target:
    """What distances are measured toward: an author's text, and the other authors its ruler is z-scored over."""

    author: str
    files: tuple[Path, ...]
    background: tuple[Path, ...]


def gate_target(spec: GateSpec) -> Target:
    return Target(spec.author, spec.corpora.heldout, spec.corpora.background)


def impostor_targets(spec: GateSpec) -> tuple[Target, ...]:
    """One target per registered impostor: its text, z-scored over the background without it plus the
    gate author's held-out text (`Corpora.impostor_background`)."""
    return tuple(Target(imp.author, imp.files, spec.corpora.impostor_background(imp))
                 for imp in spec.corpora.impostors)


class Measured(NamedTuple):
    distances: Distances   # arm -> seed -> d(arm, seed)
    pool: PoolOf           # the same distance for re-weighted pools of prompts (the bootstrap)


class View(ABC):
    descriptor: ClassVar[ViewSpec]   # what the spec side knows of the view (`spec/_views.py`)
    name: ClassVar[str]              # the descriptor's name, set from it
    title: ClassVar[str]             # the descriptor's title unless the class sets its own
    # The words an (arm, seed) pool needs for this view's distance to be reliable (None: no known bound);
    # the descriptor's, so `register` (from the design) and `score` (from the rows) warn at one bound.
    reliable_words: ClassVar[int | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "descriptor" in cls.__dict__:
            cls.name = cls.descriptor.name
            cls.reliable_words = cls.descriptor.reliable_words
            if "title" not in cls.__dict__:
                cls.title = cls.descriptor.title

    def __init__(self, spec: GateSpec, *, encode: Encoder | None = None) -> None:
        self.spec = spec
        self.encode = encode

    @abstractmethod
    def corpus_files(self, targets: Sequence[Target]) -> tuple[Path, ...]:
        """The corpus files this view tokenizes for these targets (training text aside)."""

    @abstractmethod
    def measure(self, cache: Cache, cells: Cells, target: Target) -> Measured:
        """d(a, s) toward `target` for every (arm, seed) of `cells`."""

    def warm(self, cache: Cache, targets: Sequence[Target]) -> None:
        """Fill the cache with what the view derives from the corpora alone (`register` calls it)."""

    def ruler(self, cache: Cache, target: Target) -> RulerNumbers | None:
        """The ruler check of the gate's own target; None when this view has none."""
        return None

    def impostor_ruler(self, cache: Cache, target: Target, gate: Target) -> float | None:
        """Can this view tell an impostor's text from the gate author's? An AUC, or None when it cannot say."""
        return None

    def pool_ruler(self, cache: Cache, gate: Target, impostors: Sequence[Target]) -> PoolNumbers | None:
        """The ruler at a verdict's pool length (`_ruler.pool_check`); None when this view has none."""
        return None

    @abstractmethod
    def signature(self) -> dict[str, Any]:
        """The view's parameters for the signature, under its descriptor's `signature_keys`, exactly those."""

    @staticmethod
    @abstractmethod
    def signature_parts(params: Mapping[str, Any]) -> list[str]:
        """The view's part of the one-line signature text, from the signature's view parameters (`params`)."""


class Stylometric(View):
    """Cosine Delta against a reference fixed by the registered corpora (`_stylometric`)."""

    descriptor = VIEW_SPECS["stylometric"]

    def corpus_files(self, targets: Sequence[Target]) -> tuple[Path, ...]:
        return tuple(dict.fromkeys(p for t in targets for p in (*t.files, *t.background)))

    def _reference(self, cache: Cache, target: Target) -> _stylometric.Reference:
        v = self.spec.voice
        return cache.reference(target.files, target.background, mfw=v.mfw, chunk=v.chunk)

    def measure(self, cache: Cache, cells: Cells, target: Target) -> Measured:
        ref = self._reference(cache, target)
        counts = _stylometric.count_matrix(ref.index(), cells.vocab, cells.ids)
        totals = cells.lengths
        dist: Distances = {}
        for (arm, seed), rows in cells.by_cell.items():
            dist.setdefault(arm, {})[seed] = float(_stylometric.cosine_delta(ref, counts[rows].sum(0),
                                                                             totals[rows].sum()))

        def pool(arm: str, seed: int, prompts: Sequence[str]) -> Pool:
            return _stylometric.pooled_delta(ref, cells.cell_matrix(arm, seed, prompts, counts),
                                             cells.cell_matrix(arm, seed, prompts, totals))

        return Measured(dist, pool)

    def warm(self, cache: Cache, targets: Sequence[Target]) -> None:
        for target in targets:
            self._reference(cache, target)

    def ruler(self, cache: Cache, target: Target) -> RulerNumbers:
        v = self.spec.voice
        return cache.ruler(target.files, target.background, self.spec.corpora.training, mfw=v.mfw, chunk=v.chunk)

    def impostor_ruler(self, cache: Cache, target: Target, gate: Target) -> float | None:
        v = self.spec.voice
        return cache.impostor_ruler(target.files, target.background, gate.files, mfw=v.mfw, chunk=v.chunk)

    def pool_ruler(self, cache: Cache, gate: Target, impostors: Sequence[Target]) -> PoolNumbers:
        v = self.spec.voice
        return cache.pool_ruler(gate.files, gate.background, self.spec.corpora.training,
                                [(t.author, t.files) for t in impostors], mfw=v.mfw, chunk=v.chunk)

    def signature(self) -> dict[str, Any]:
        v = self.spec.voice
        return {"mfw": v.mfw, "chunk": v.chunk}

    @staticmethod
    def signature_parts(params: Mapping[str, Any]) -> list[str]:
        return [f"mfw:{params.get('mfw')}", f"chunk:{params.get('chunk')}"]


class StylometricWide(Stylometric):
    """Cosine Delta against the wide reference: `WIDE_FACTOR` x `voice.mfw` words, personal pronouns dropped, the
    first `voice.mfw` weighted to count as much as the rest (`_stylometric.build_reference`)."""

    descriptor = VIEW_SPECS["stylometric-wide"]

    @property
    def _wide(self) -> int:
        return WIDE_FACTOR * self.spec.voice.mfw

    def _reference(self, cache: Cache, target: Target) -> _stylometric.Reference:
        v = self.spec.voice
        return cache.reference(target.files, target.background, mfw=v.mfw, chunk=v.chunk, wide=self._wide)

    def ruler(self, cache: Cache, target: Target) -> RulerNumbers:
        v = self.spec.voice
        return cache.ruler(target.files, target.background, self.spec.corpora.training, mfw=v.mfw, chunk=v.chunk,
                           wide=self._wide)

    def impostor_ruler(self, cache: Cache, target: Target, gate: Target) -> float | None:
        v = self.spec.voice
        return cache.impostor_ruler(target.files, target.background, gate.files, mfw=v.mfw, chunk=v.chunk,
                                    wide=self._wide)

    def pool_ruler(self, cache: Cache, gate: Target, impostors: Sequence[Target]) -> PoolNumbers:
        v = self.spec.voice
        return cache.pool_ruler(gate.files, gate.background, self.spec.corpora.training,
                                [(t.author, t.files) for t in impostors], mfw=v.mfw, chunk=v.chunk, wide=self._wide)

    def signature(self) -> dict[str, Any]:
        v = self.spec.voice
        return {"wide_mfw": [v.mfw, self._wide], "wide_chunk": v.chunk, "wide_dropped": _stylometric.PRONOUNS_NAME}

    @staticmethod
    def signature_parts(params: Mapping[str, Any]) -> list[str]:
        words = params.get("wide_mfw") or [None, None]
        return [f"mfw:{words[0]}/{words[1]}", f"chunk:{params.get('wide_chunk')}",
                f"dropped:{params.get('wide_dropped')}"]


class Embedding(View):
    """Centroid cosine distance under a pinned sentence-transformers model (`_embedding`)."""

    descriptor = VIEW_SPECS["embedding"]

    @cached_property
    def _model(self) -> tuple[str, str | None]:
        v = self.spec.voice
        return _embedding.model_id(v.model or "", v.revision, self.spec.root)  # a local model's files hashed

    @property
    def model_id(self) -> str:
        return self._model[0]

    def corpus_files(self, targets: Sequence[Target]) -> tuple[Path, ...]:
        return ()  # embeddings read the texts whole; nothing is tokenized for them

    def _encoder(self) -> Encoder:
        if self.encode is None:
            v = self.spec.voice
            self.encode = _embedding.loader(v.model or "", v.revision, self._model[1])
        return self.encode

    def measure(self, cache: Cache, cells: Cells, target: Target) -> Measured:
        encode = self._encoder()
        chunks = [c for p in target.files for c in _embedding.chunk_words(cache.read_text(p), self.spec.expected_words)]
        centre = _embedding.centroid(cache.embeddings(self.model_id, chunks, encode))
        emb = _embedding.normalize_rows(cache.embeddings(self.model_id, [r["text"] for r in cells.rows], encode))
        dist: Distances = {}
        for (arm, seed), rows in cells.by_cell.items():
            dist.setdefault(arm, {})[seed] = _embedding.centroid_distance(emb[rows], centre)

        def pool(arm: str, seed: int, prompts: Sequence[str]) -> Pool:
            x = cells.cell_matrix(arm, seed, prompts, emb)
            return lambda w: np.atleast_1d(_stylometric.cosine_distance(w @ x, centre))

        return Measured(dist, pool)

    def signature(self) -> dict[str, Any]:
        return {"embedding_model": self.model_id, "embedding_revision": self.spec.voice.revision}

    @staticmethod
    def signature_parts(params: Mapping[str, Any]) -> list[str]:
        return [f"emb:{params.get('embedding_model')}", f"rev:{params.get('embedding_revision') or '-'}"]


# The implementations, by their descriptor's name: every name in `spec`'s VIEW_SPECS has one here
# (tests/spec/test_view_descriptor.py), and a test adds a toy one to both with monkeypatch.setitem.
VIEWS: dict[str, type[View]] = {v.name: v for v in (Stylometric, Embedding, StylometricWide)}


def view_of(spec: GateSpec, *, encode: Encoder | None = None) -> View:
    return VIEWS[spec.voice.view](spec, encode=encode)
