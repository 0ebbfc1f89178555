"""The embedding view: centroid cosine distance under a pinned sentence-transformers model.

d(a, s) = 1 - cos(centroid(G(a,s)), centroid(H)), embeddings L2-normalised,
H cut into chunks of the registered expected generation length
(``expected_words`` whitespace-separated words; the trailing partial chunk is
dropped unless it is the only one). The chunk length is fixed by the spec, not
measured from the generations: an arm must not move the ruler.

sentence-transformers (and torch) are imported only when a text is missing from
the embedding cache, so re-scoring and amending never load the model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from voicegate._errors import VoicegateError
from voicegate.scoring._stylometric import cosine_distance
from voicegate.spec import VIEW_SPECS

Encode = Callable[[list[str]], np.ndarray]


def chunk_words(text: str, words: int) -> list[str]:
    parts = text.split()
    if not parts:
        return []
    if len(parts) <= words:
        return [" ".join(parts)]
    return [" ".join(parts[i:i + words]) for i in range(0, len(parts) - words + 1, words)]


def normalize_rows(e: np.ndarray) -> np.ndarray:
    e = np.asarray(e, dtype=np.float64)
    norms = np.linalg.norm(e, axis=-1, keepdims=True)
    out: np.ndarray = e / np.where(norms > 0, norms, 1.0)
    return out


def centroid(e: np.ndarray) -> np.ndarray:
    out: np.ndarray = normalize_rows(e).mean(axis=0)
    return out


def centroid_distance(generations: np.ndarray, target: np.ndarray) -> float:
    """1 - cos(centroid of the L2-normalised generation embeddings, target centroid)."""
    return float(cosine_distance(centroid(generations), target))


def local_model_id(path: Path) -> str:
    """A local model is identified by the content of its files, not by where it sits."""
    digest = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h = hashlib.sha256()
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        digest.update(f"{f.relative_to(path).as_posix()}\0{h.hexdigest()}\n".encode())
    return f"local:sha256:{digest.hexdigest()}"


def model_id(model: str, revision: str | None, root: Path) -> tuple[str, str | None]:
    """(cache/signature id, local directory or None) for the spec's voice.model."""
    local = Path(model).expanduser()
    local = local if local.is_absolute() else root / local
    if local.is_dir():
        return local_model_id(local), str(local)
    return f"hub:{model}@{revision}", None


MISSING = VIEW_SPECS["embedding"].missing  # the one-line refusal, declared with the view (`spec/_views.py`)


def loader(model: str, revision: str | None, local_dir: str | None) -> Encode:
    """An encode function that loads the model on its first call only."""
    state: dict[str, object] = {}

    def encode(texts: list[str]) -> np.ndarray:
        if "model" not in state:
            try:
                from sentence_transformers import SentenceTransformer  # heavy: only when needed
            except ImportError:
                raise VoicegateError(MISSING) from None

            # a local directory never reaches a hub, not even for metadata
            state["model"] = (SentenceTransformer(local_dir, device="cpu", local_files_only=True) if local_dir
                              else SentenceTransformer(model, revision=revision, device="cpu"))
        st = state["model"]
        out = st.encode(list(texts), batch_size=32, convert_to_numpy=True,  # type: ignore[attr-defined]
                        normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(out, dtype=np.float32)

    return encode


def distances(groups: dict[tuple[str, int], Sequence[np.ndarray]], target: np.ndarray) -> dict[tuple[str, int], float]:
    return {k: centroid_distance(np.vstack(v), target) for k, v in groups.items()}
