"""The on-disk cache of corpus-side work, keyed by content hash (the only file I/O in scoring).

Tokens of each corpus file, the stylometric reference and the n-gram index are
paid once per corpus: each is stored as an ``.npz`` under the cache directory
(``<data dir>/.cache`` for the CLI) with a name derived from the sha256 of the
inputs' bytes and every parameter that shapes it, so a changed corpus or
parameter is a different file, never a stale hit. Embeddings are stored per
model id, keyed by each text's sha256: re-scoring and amending never re-embed.

Writes are atomic (temporary file + rename); two processes racing on the same
entry write the same bytes. A read-only cache (``write=False``, used by
``--dry-run``) computes what is missing and keeps it in memory only.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import numpy as np

from voicegate._hashing import sha256_file
from voicegate.scoring._copying import NgramIndex, build_index
from voicegate.scoring._docs import TokenDoc, doc_from_text, doc_from_tokens
from voicegate.scoring._embedding import Encode
from voicegate.scoring._ruler import (
    POOL_METHOD,
    POOL_WORDS,
    RULER_METHOD,
    Chunks,
    PoolNumbers,
    RulerNumbers,
    pool_check,
    ruler_check,
)
from voicegate.scoring._stylometric import PRONOUNS_NAME, Reference, build_reference, chunk_counts, word_counts
from voicegate.scoring._tokens import TOKENIZER_NAME

FORMAT = 1  # bump when what a cache file holds changes meaning


def _key(*parts: object) -> str:
    return hashlib.sha256(json.dumps([FORMAT, TOKENIZER_NAME, *parts], sort_keys=True).encode()).hexdigest()[:40]


def _wide(wide: int) -> tuple[object, ...]:
    """The wide reference's part of a cache key; none for the plain one, whose keys stay what they were."""
    return ("wide", wide, PRONOUNS_NAME) if wide else ()



def _orphan_watch(parent: int) -> None:
    """A pool worker exits when `score` is killed: `kill -9` runs no shutdown, and a worker
    blocked on its queue would otherwise live on, holding the terminal's pipes open."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="voicegate-orphan-watch", daemon=True).start()


def _doc_of_file(path: str) -> TokenDoc:
    """A pool worker's job: one corpus file, read and tokenized."""
    return doc_from_text(Path(path).read_bytes().decode("utf-8"))


class Cache:
    def __init__(self, root: Path | None, *, write: bool = True):
        self.root = root
        self.write = write and root is not None
        self._memo: dict[str, object] = {}
        self._sha: dict[Path, tuple[float, int, str]] = {}
        self.hits = 0
        self.misses = 0

    # -- plumbing -------------------------------------------------------------

    def _path(self, name: str) -> Path | None:
        return None if self.root is None else self.root / f"{name}.npz"

    def _stored(self, name: str) -> bool:
        path = self._path(name)
        return path is not None and path.exists()

    def _load(self, name: str) -> dict[str, np.ndarray] | None:
        path = self._path(name)
        if path is None or not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as data:
                return {k: data[k] for k in data.files}
        except (OSError, ValueError, EOFError):
            return None  # a damaged entry is recomputed, never trusted

    def _save(self, name: str, **arrays: np.ndarray) -> None:
        path = self._path(name)
        if not self.write or path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **arrays)  # type: ignore[arg-type]  # numpy's stub takes **arrays for its allow_pickle flag
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def sha256(self, path: Path) -> str:
        st = path.stat()
        known = self._sha.get(path)
        if known and known[:2] == (st.st_mtime, st.st_size):
            return known[2]
        digest = sha256_file(path)
        self._sha[path] = (st.st_mtime, st.st_size, digest)
        return digest

    def corpus_sha256(self, paths: Sequence[Path]) -> list[str]:
        return [self.sha256(p) for p in paths]

    # -- corpus-side work -----------------------------------------------------

    def read_text(self, path: Path) -> str:
        return path.read_bytes().decode("utf-8")

    def _doc_name(self, path: Path) -> str:
        return "tokens-" + _key("tokens", self.sha256(path))

    def prefetch_docs(self, paths: Sequence[Path]) -> None:
        """Tokenize the corpus files not cached yet on every core at once.

        A fresh cache spends most of its time here (millions of corpus tokens);
        the files are independent, so they go to a process pool. A later
        `doc(path)` then finds them in memory.
        """
        wanted = list(dict.fromkeys(paths))
        missing = [p for p in wanted if self._doc_name(p) not in self._memo and not self._stored(self._doc_name(p))]
        workers = min(len(missing), os.cpu_count() or 1)
        if workers < 2:
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # biggest first, so the last file to start is a small one
        missing.sort(key=lambda p: p.stat().st_size, reverse=True)
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_orphan_watch,
                                 initargs=(os.getpid(),)) as pool:
            for path, doc in zip(missing, pool.map(_doc_of_file, [str(p) for p in missing]), strict=True):
                self.misses += 1
                self._save(self._doc_name(path), vocab=np.asarray(doc.vocab, dtype=str), ids=doc.ids)
                self._memo[self._doc_name(path)] = doc

    def doc(self, path: Path) -> TokenDoc:
        name = self._doc_name(path)
        if name in self._memo:
            return self._memo[name]  # type: ignore[return-value]
        data = self._load(name)
        if data is not None:
            self.hits += 1
            doc = TokenDoc(tuple(data["vocab"].tolist()), data["ids"])
        else:
            self.misses += 1
            doc = doc_from_text(self.read_text(path))
            self._save(name, vocab=np.asarray(doc.vocab, dtype=str), ids=doc.ids)
        self._memo[name] = doc
        return doc

    def reference(self, heldout: Sequence[Path], background: Sequence[Path], *, mfw: int, chunk: int,
                  wide: int = 0) -> Reference:
        """The plain reference, or with `wide` the wide one (`_stylometric.build_reference`)."""
        name = "reference-" + _key("reference", self.corpus_sha256(heldout), self.corpus_sha256(background), mfw, chunk,
                                   *_wide(wide))
        if name in self._memo:
            return self._memo[name]  # type: ignore[return-value]
        data = self._load(name)
        if data is not None:
            self.hits += 1
            ref = Reference(tuple(data["words"].tolist()), data["mean"], data["sd"], data["target"],
                            int(data["chunks"]), data.get("weights"))
        else:
            self.misses += 1
            ref = build_reference([self.doc(p) for p in heldout], [self.doc(p) for p in background],
                                  mfw=mfw, chunk=chunk, wide=wide)
            weights = {} if ref.weights is None else {"weights": ref.weights}
            self._save(name, words=np.asarray(ref.words, dtype=str), mean=ref.mean, sd=ref.sd,
                       target=ref.target, chunks=np.asarray(ref.chunks), **weights)
        self._memo[name] = ref
        return ref

    def ruler(self, heldout: Sequence[Path], background: Sequence[Path], training: Sequence[Path], *,
              mfw: int, chunk: int, wide: int = 0) -> RulerNumbers:
        """The ruler check of the stylometric reference (`_ruler`), paid once per corpus content."""
        name = "ruler-" + _key("ruler", RULER_METHOD, self.corpus_sha256(heldout), self.corpus_sha256(background),
                               self.corpus_sha256(training), mfw, chunk, *_wide(wide))
        if name in self._memo:
            return self._memo[name]  # type: ignore[return-value]
        data = self._load(name)
        if data is not None:
            self.hits += 1
            nums = data["numbers"].tolist()
            ruler = RulerNumbers(heldout_auc=None if np.isnan(nums[0]) else float(nums[0]),
                                 author_auc=None if np.isnan(nums[1]) else float(nums[1]),
                                 heldout_chunks=int(nums[2]), background_chunks=int(nums[3]),
                                 training_chunks=int(nums[4]))
        else:
            self.misses += 1
            ruler = self._ruler_check(heldout, background, background, training, mfw=mfw, chunk=chunk, wide=wide)
            nan = float("nan")
            self._save(name, numbers=np.asarray([
                nan if ruler.heldout_auc is None else ruler.heldout_auc,
                nan if ruler.author_auc is None else ruler.author_auc,
                ruler.heldout_chunks, ruler.background_chunks, ruler.training_chunks], dtype=float))
        self._memo[name] = ruler
        return ruler

    def _ruler_check(self, target: Sequence[Path], background: Sequence[Path], far: Sequence[Path],
                     training: Sequence[Path], *, mfw: int, chunk: int, wide: int = 0) -> RulerNumbers:
        """`ruler_check` under the reference of (target, background): target chunks against `far` chunks,
        `training` chunks against `far` chunks (`_ruler`)."""
        ref = self.reference(target, background, mfw=mfw, chunk=chunk, wide=wide)
        index = ref.index()
        n_words = len(index)

        def chunks(paths: Sequence[Path]) -> Chunks:
            return Chunks.stack([chunk_counts(self.doc(p), index, chunk) for p in paths], n_words)

        docs = [self.doc(p) for p in target]
        counts = sum((word_counts(index, d) for d in docs), np.zeros(n_words))
        return ruler_check(ref, chunks(target), counts, float(sum(len(d) for d in docs)), chunks(far), chunks(training))

    def impostor_ruler(self, target: Sequence[Path], background: Sequence[Path], gate_heldout: Sequence[Path], *,
                       mfw: int, chunk: int, wide: int = 0) -> float | None:
        """Can an impostor's ruler tell its text from the gate author's? The AUC that an impostor chunk is
        nearer the impostor's profile (itself left out) than a chunk of the gate author's held-out text is."""
        name = "impostor-ruler-" + _key("impostor-ruler", RULER_METHOD, self.corpus_sha256(target),
                                        self.corpus_sha256(background), self.corpus_sha256(gate_heldout), mfw, chunk,
                                        *_wide(wide))
        if name in self._memo:
            return self._memo[name]  # type: ignore[return-value]
        data = self._load(name)
        if data is not None:
            self.hits += 1
            value = float(data["auc"])
            auc = None if np.isnan(value) else value
        else:
            self.misses += 1
            auc = self._ruler_check(target, background, gate_heldout, (), mfw=mfw, chunk=chunk, wide=wide).heldout_auc
            self._save(name, auc=np.asarray(float("nan") if auc is None else auc))
        self._memo[name] = auc
        return auc

    def pool_ruler(self, heldout: Sequence[Path], background: Sequence[Path], training: Sequence[Path],
                   impostors: Sequence[tuple[str, Sequence[Path]]], *, mfw: int, chunk: int,
                   wide: int = 0) -> PoolNumbers:
        """The pool check of the gate's reference (`_ruler.pool_check`): training pools against background
        pools and against each impostor's, paid once per corpus content."""
        name = "pool-ruler-" + _key("pool-ruler", POOL_METHOD, POOL_WORDS, self.corpus_sha256(heldout),
                                    self.corpus_sha256(background), self.corpus_sha256(training),
                                    [[a, self.corpus_sha256(files)] for a, files in impostors], mfw, chunk,
                                    *_wide(wide))
        if name in self._memo:
            return self._memo[name]  # type: ignore[return-value]
        names = [a for a, _ in impostors]
        data = self._load(name)
        if data is not None:
            self.hits += 1
            aucs, counts = data["aucs"].tolist(), data["counts"].tolist()
            value = [None if np.isnan(a) else float(a) for a in aucs]
            nums = PoolNumbers(author_auc=value[0], impostor_auc=dict(zip(names, value[1:], strict=True)),
                               training_pools=int(counts[0]), background_pools=int(counts[1]),
                               impostor_pools=dict(zip(names, map(int, counts[2:]), strict=True)))
        else:
            self.misses += 1
            ref = self.reference(heldout, background, mfw=mfw, chunk=chunk, wide=wide)
            nums = pool_check(ref, [self.doc(p) for p in heldout], [self.doc(p) for p in training],
                              [self.doc(p) for p in background],
                              {a: [self.doc(p) for p in files] for a, files in impostors}, chunk=chunk)
            nan = float("nan")
            self._save(name, aucs=np.asarray([nan if a is None else a for a in
                                              (nums.author_auc, *(nums.impostor_auc[n] for n in names))], dtype=float),
                       counts=np.asarray([nums.training_pools, nums.background_pools,
                                          *(nums.impostor_pools[n] for n in names)], dtype=float))
        self._memo[name] = nums
        return nums

    def index(self, training: Sequence[Path], *, n: int) -> NgramIndex:
        name = "ngrams-" + _key("ngrams", self.corpus_sha256(training), n)
        if name in self._memo:
            return self._memo[name]  # type: ignore[return-value]
        data = self._load(name)
        if data is not None:
            self.hits += 1
            idx = NgramIndex(n, data["hashes"], data["positions"], data["starts"])
        else:
            self.misses += 1
            idx = build_index([self.doc(p) for p in training], n)
            self._save(name, hashes=idx.hashes, positions=idx.positions, starts=idx.starts)
        self._memo[name] = idx
        return idx

    def generation_tokens(self, texts: Sequence[str]) -> tuple[tuple[str, ...], list[np.ndarray]]:
        """Tokens of every generation as id arrays over one shared vocabulary.

        Cached by the texts' hashes, so re-scoring and amending the same
        generations never tokenize them again.
        """
        digest = hashlib.sha256("\n".join(hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts).encode())
        name = "gentokens-" + _key("gentokens", digest.hexdigest())
        data = cast("dict[str, np.ndarray] | None", self._memo.get(name)) or self._load(name)
        if data is not None:
            self.hits += 1
            vocab, flat, offsets = tuple(data["vocab"].tolist()), data["ids"], data["offsets"]
        else:
            from voicegate.scoring._tokens import tokenize

            self.misses += 1
            pieces = [tokenize(t) for t in texts]
            joined = doc_from_tokens([tok for p in pieces for tok in p])
            vocab, flat = joined.vocab, joined.ids
            offsets = np.cumsum([0] + [len(p) for p in pieces]).astype(np.int64)
            data = {"vocab": np.asarray(vocab, dtype=str), "ids": flat, "offsets": offsets}
            self._save(name, **data)
        self._memo[name] = data
        return vocab, [flat[offsets[i]:offsets[i + 1]] for i in range(len(texts))]

    # -- embeddings -----------------------------------------------------------

    def embeddings(self, model: str, texts: Sequence[str], encode: Encode) -> np.ndarray:
        """Embeddings of `texts` (one row each), computing only the ones never seen before."""
        name = "embeddings-" + hashlib.sha256(model.encode()).hexdigest()[:40]
        store: dict[str, np.ndarray] = self._memo.setdefault(name, {})  # type: ignore[assignment]
        if not store:
            data = self._load(name)
            if data is not None:
                store.update(zip(data["keys"].tolist(), data["vecs"], strict=True))
        keys = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in store))
        if missing:
            first = {k: t for k, t in zip(reversed(keys), reversed(list(texts)), strict=True)}
            vecs = encode([first[k] for k in missing])
            store.update(zip(missing, np.asarray(vecs, dtype=np.float32), strict=True))
            ordered = sorted(store)
            self._save(name, keys=np.asarray(ordered, dtype=str), vecs=np.vstack([store[k] for k in ordered]))
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        return np.vstack([store[k] for k in keys])
