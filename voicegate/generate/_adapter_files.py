"""Each adapter held to its own files, where they are readable here, as the base is held to the carrier's.

An answer the same weights gave earlier (`_identity`) holds nothing in a fresh data directory, and
nothing across a vLLM upgrade. What the seat does not control is the adapter's own files: where the
carrier's directory was read for the base (`_carrier_files`) and an adapter arm's directory is readable
here too (its ``adapter_config.json`` and ``adapter_model.safetensors``: the spec's ``adapter_path``,
else the root the seat lists), its greedy answers to the same probes are computed locally — the
carrier's weights with the adapter's LoRA merged in (``W + alpha/r · B·A``, float32, CPU, no library
beyond transformers) — and the seat is asked the same, one arm at a time, before the run. They are
judged as the base's are (`scoring._carrier_agreement`): at most one of six agreeing fails the session, all but
one holds (and then decides an identity a version change left undecided), in between is not decided.

Only a plain LoRA is merged (no DoRA, no per-module rank or alpha, no extra trained modules): any
other adapter is "not checked", and said. Answers are cached as the carrier's are, keyed by the
carrier's and the adapter's bytes; the carrier's size bound counts the adapter's bytes too.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from voicegate._figures import gb
from voicegate._hashing import sha256_file, sha256_text
from voicegate.generate._carrier_files import (
    BOUND_ENV,
    MAX_TOKENS,
    PAD_PROMPTS,
    PROBE_SEED,
    PROBES,
    REBUILT,
    SAMPLING,
    CarrierFiles,
    CarrierProbe,
    answers_cache,
    cached_answers,
    carrier_bound,
    greedy,
    probe_seat,
)
from voicegate.generate._identity import ArmIdentity
from voicegate.scoring import CarrierCheck, judge_carrier
from voicegate.spec import GateSpec

CONFIG = "adapter_config.json"
WEIGHTS = "adapter_model.safetensors"
# What a plain LoRA's config may hold; anything else set means the merge here would not be the seat's adapter.
_EMPTY_OK = ("alpha_pattern", "rank_pattern", "modules_to_save", "layers_to_transform", "target_parameters",
             "trainable_token_indices", "layer_replication")


@dataclass(frozen=True)
class AdapterDir:
    path: Path
    sha256: str = ""     # of the weights file (hashed only once the carrier and the bound allow it)
    digest: str = ""     # of the weights and the config


def adapter_dir(candidates: Sequence[str | Path | None]) -> AdapterDir | None:
    """The first of `candidates` that is an adapter directory readable here (not read yet); None when none is."""
    for c in candidates:
        if not c:
            continue
        path = Path(c)
        try:
            if (path / CONFIG).is_file() and (path / WEIGHTS).is_file():
                return AdapterDir(path)
        except OSError:
            continue
    return None


def _hashed(found: AdapterDir) -> AdapterDir:
    sha = sha256_file(found.path / WEIGHTS)
    return AdapterDir(found.path, sha, sha256_text(f"{sha}\n{sha256_file(found.path / CONFIG)}"))


def why_not_plain(config: Any) -> str | None:
    """Why this adapter config is not a plain LoRA merged here (None: it is)."""
    if not isinstance(config, Mapping):
        return f"{CONFIG} is not a JSON object"
    if config.get("peft_type", "LORA") != "LORA":
        return f"peft_type {config.get('peft_type')!r}, not LORA"
    if not isinstance(config.get("r"), int) or not isinstance(config.get("lora_alpha"), int | float):
        return f"{CONFIG} names no integer r and lora_alpha"
    for key in ("use_dora", "fan_in_fan_out", "lora_bias"):
        if config.get(key):
            return f"{key} is set (only a plain LoRA is merged here)"
    if config.get("bias", "none") != "none":
        return f"bias {config.get('bias')!r} (only a plain LoRA is merged here)"
    for key in _EMPTY_OK:
        if config.get(key):
            return f"{key} is set (only a plain LoRA is merged here)"
    return None


def merged_answers(files: CarrierFiles, adapter: Path, prompts: Sequence[str]) -> list[str]:
    """Greedy answers of the carrier's weights with `adapter`'s LoRA merged in (float32, CPU)."""
    import torch
    from safetensors.torch import load_file

    config = json.loads((adapter / CONFIG).read_text(encoding="utf-8"))
    scale = float(config["lora_alpha"]) / (float(config["r"]) ** 0.5 if config.get("use_rslora") else config["r"])
    lora = load_file(str(adapter / WEIGHTS), device="cpu")

    def merge(model: Any) -> None:
        names = {k[: -len(".lora_A.weight")] for k in lora if k.endswith(".lora_A.weight")}
        if not names:
            raise ValueError(f"{WEIGHTS} holds no lora_A weights")
        with torch.no_grad():
            for name in sorted(names):
                target = name.removeprefix("base_model.model.")
                module = model.get_submodule(target)
                a = lora[f"{name}.lora_A.weight"].to(torch.float32)
                b = lora[f"{name}.lora_B.weight"].to(torch.float32)
                module.weight += scale * (b @ a)
    return greedy(files, prompts, merge)


def _bound_note(carrier: CarrierFiles, adapter: AdapterDir, bound: int) -> str | None:
    try:
        size = carrier.weights_bytes + (adapter.path / WEIGHTS).stat().st_size
    except OSError as exc:
        return f"the adapter's files could not be read ({exc.strerror or exc})"
    if size <= bound:
        return None
    return (f"carrier and adapter weights {gb(size)} on disk, over the {gb(bound)} bound for answering locally: "
            f"{size} > {bound} bytes, a bound ${BOUND_ENV} raises")


async def check_adapters(clients: Mapping[str, Any], arms: Sequence[tuple[str, str, AdapterDir | None]],
                         carrier: CarrierProbe, prompts: Sequence[str], time: str,
                         cache: Path | None = None, bound: int | None = None) -> dict[str, CarrierProbe]:
    """Each adapter arm (arm, model, its directory here or None) against its own files, on every replica, one arm
    at a time; a failing replica decides. The carrier's files must have been read for the base."""
    out: dict[str, CarrierProbe] = {}
    asked = (list(prompts) + [p for p in PAD_PROMPTS if p not in prompts])[:PROBES]
    for arm, model, found in arms:
        files = carrier.files
        if found is None:
            out[arm] = CarrierProbe(CarrierCheck("not-checked", "no adapter directory readable here at its "
                                                                "adapter_path or the root the seat lists", of=""))
            continue
        if files is None or carrier.check.status == "not-checked":
            out[arm] = CarrierProbe(CarrierCheck("not-checked", f"the carrier's files were not read "
                                                                f"({carrier.check.why})", of=""))
            continue
        why = why_not_plain(_config(found.path))
        too_big = _bound_note(files, found, carrier_bound() if bound is None else bound)
        if why is not None or too_big is not None:
            out[arm] = CarrierProbe(CarrierCheck("not-checked", str(why or too_big), of=""))
            continue
        try:    # before a byte of it is read: a carrier out of reach or a pair over the bound is not hashed
            found = await asyncio.to_thread(_hashed, found)
        except OSError as exc:
            out[arm] = CarrierProbe(CarrierCheck("not-checked", f"the adapter's files could not be read "
                                                                f"({exc.strerror or exc})", of=""))
            continue
        keyed = CarrierFiles(files.path, sha256_text(f"{files.digest}\nadapter:{found.digest}"), files.weights_sha256)
        try:
            got = await asyncio.to_thread(cached_answers, cache or answers_cache(), keyed, asked,
                                          functools.partial(_merged, files, found.path))
        except (OSError, ValueError, KeyError, TypeError, RuntimeError, ImportError, AttributeError) as exc:
            out[arm] = CarrierProbe(CarrierCheck(
                "not-checked", f"could not answer from the carrier's and the adapter's files "
                               f"({type(exc).__name__}: {str(exc)[:120]})", of=""))
            continue
        verdicts, rows = [], []
        answers = await asyncio.gather(*(probe_seat(client, model, asked) for client in clients.values()))
        for url, seat in zip(clients, answers, strict=True):
            check = judge_carrier(seat, got.texts, files.weights_sha256, MAX_TOKENS, found.sha256)
            if check.status != "holds" and len(clients) > 1:
                check = CarrierCheck(check.status, f"{check.why} (replica {url})", check.agreements, check.of)
            verdicts.append(check)
            rows += [{"phase": "carrier", "arm": arm, "model": model, "prompt_sha256": sha256_text(p),
                      "seed": PROBE_SEED, "sampling": dict(SAMPLING), "text": t, "carrier_text": x,
                      "weights_sha256": files.weights_sha256, "adapter_sha256": found.sha256, "replica": url,
                      "time": time}
                     for p, t, x in zip(asked, seat, got.texts, strict=True)]
        order = ("failed", "unclear", "holds")
        verdict = min(verdicts, key=lambda c: order.index(c.status))
        if got.damaged:
            verdict = CarrierCheck(verdict.status, f"{verdict.why}; the answers ({got.damaged}) {REBUILT}",
                                   verdict.agreements, verdict.of)
        out[arm] = CarrierProbe(verdict, files, rows)
    return out


def spec_path(spec: GateSpec, adapter_path: str | None) -> Path | None:
    """An arm's adapter_path as the spec names it (relative: to the workspace)."""
    if not adapter_path:
        return None
    path = Path(adapter_path)
    return path if path.is_absolute() else spec.root / path


def files_identity(ident: ArmIdentity, check: CarrierCheck) -> ArmIdentity:
    """An adapter arm's identity once held to its own files: said, and failed when they disagree."""
    said = f"not checked: {check.why}" if check.status == "not-checked" else check.why
    return replace(ident, rests_on=f"{ident.rests_on}; its own files: {said}",
                   problem=ident.problem or check.problem(ident.arm))


def _merged(carrier: CarrierFiles, adapter: Path, _keyed: CarrierFiles, prompts: Sequence[str]) -> list[str]:
    return merged_answers(carrier, adapter, prompts)


def _config(path: Path) -> Any:
    try:
        return json.loads((path / CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
