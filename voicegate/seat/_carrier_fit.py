"""Is a carrier fit for adapters? Architecture, LoRA support, and the memory arithmetic.

LoRA support is declared per model *class* in vLLM (``SupportsLoRA``), not per family:
dense ``Qwen3ForCausalLM`` declares it, while a Qwen3 MoE class once refused LoRA
("get_expert_mapping must be implemented"). So the carrier's ``config.json``
``architectures`` are looked up — in vLLM's own registry when vLLM can be imported (in
this process, or through ``--vllm-python`` pointing at a vLLM venv), otherwise in a table
this project keeps. MoE classes are always flagged "check first": even a registry that
says yes describes *this* vLLM, not necessarily the seat's engine.

The memory side is the arithmetic of the seat's compose comment: N voices as adapters
cost carrier + N × adapter; N merged voices cost N × carrier.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voicegate._errors import VoicegateError
from voicegate._figures import gb
from voicegate.seat._registry_cache import cached_registry

# Dense decoder classes vLLM declares SupportsLoRA for (checked against vllm 0.32's registry).
DENSE_LORA = frozenset({
    "Qwen3ForCausalLM", "Qwen2ForCausalLM", "LlamaForCausalLM", "MistralForCausalLM",
    "GemmaForCausalLM", "Gemma2ForCausalLM", "Gemma3ForCausalLM", "Phi3ForCausalLM",
    "Olmo2ForCausalLM", "GraniteForCausalLM", "Starcoder2ForCausalLM", "InternLM2ForCausalLM",
})
# Mixture-of-experts classes: LoRA on experts depends on the engine build; check first.
MOE = frozenset({
    "Qwen3MoeForCausalLM", "Qwen2MoeForCausalLM", "MixtralForCausalLM", "DeepseekV2ForCausalLM",
    "DeepseekV3ForCausalLM", "GptOssForCausalLM", "Qwen3NextForCausalLM", "OlmoeForCausalLM",
    "Qwen3_5MoeForCausalLM", "GraniteMoeForCausalLM", "PhiMoEForCausalLM", "Llama4ForCausalLM",
})
MOE_WARNING = ("check first: a Qwen3 MoE class once refused LoRA (get_expert_mapping must be implemented); "
               "LoRA support is per architecture, so grep the seat's own vLLM for SupportsLoRA on this class "
               "and load one adapter before planning voices on it")
_EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")

_PROBE = r"""
import json, sys
archs = json.loads(sys.argv[1])
import vllm
from vllm.model_executor.models import ModelRegistry
from vllm.model_executor.models.interfaces import supports_lora
out = {}
for a in archs:
    try:
        cls = ModelRegistry._try_load_model_cls(a)
    except Exception as exc:
        cls = None
    out[a] = None if cls is None else bool(supports_lora(cls))
print("VOICEGATE-PROBE " + json.dumps({"version": getattr(vllm, "__version__", "?"), "archs": out}))
"""


@dataclass
class Support:
    architecture: str
    status: str          # supported | check-first | unsupported | unknown
    source: str          # where the answer came from
    moe: bool
    note: str = ""


@dataclass
class CarrierCheck:
    model_dir: Path
    architectures: list[str]
    support: list[Support]
    carrier_bytes: int
    weight_files: list[str]
    adapter_bytes: int | None
    voices: list[int]
    table: list[dict[str, Any]]
    kv: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        order = ["unsupported", "unknown", "check-first", "supported"]
        return min((s.status for s in self.support), key=order.index) if self.support else "unknown"

    def as_json(self) -> dict[str, Any]:
        return {
            "model_dir": str(self.model_dir), "architectures": self.architectures, "status": self.status,
            "support": [s.__dict__ for s in self.support], "carrier_bytes": self.carrier_bytes,
            "weight_files": self.weight_files, "adapter_bytes": self.adapter_bytes, "voices": self.voices,
            "table": self.table, "kv": self.kv, "warnings": self.warnings,
        }


# -- sizes -------------------------------------------------------------------------


def parse_bytes(text: str) -> int:
    """Bytes from '276824064', vLLM's '264M' (binary) / '264m' (decimal), or '264MB' / '252MiB'."""
    t = str(text).strip()
    if re.fullmatch(r"\d+", t):
        return int(t)
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kKmMgGtT])(i?[bB])?", t)
    if not m:
        raise VoicegateError(f"not a byte size: {text!r} (use e.g. 276824064, 264M, 264MB or 252MiB)")
    number, unit, tail = float(m.group(1)), m.group(2), m.group(3)
    power = "kmgt".index(unit.lower()) + 1
    binary = (tail or "").lower() == "ib" or (not tail and unit.isupper())
    if binary and not tail and not number.is_integer():
        raise VoicegateError(f"{text!r}: decimals are not allowed with binary suffixes (vLLM's rule)")
    return int(number * ((1024 if binary else 1000) ** power))


def weight_files(directory: Path) -> list[Path]:
    """The weight files vLLM would load from a directory (safetensors win over .bin)."""
    files = sorted(p for p in directory.iterdir() if p.is_file() and p.name.endswith(_WEIGHT_SUFFIXES))
    safetensors = [p for p in files if p.name.endswith(".safetensors")]
    # A checkpoint dir often carries both formats; vLLM loads the safetensors only.
    return safetensors or files


def dir_weight_bytes(directory: Path) -> tuple[int, list[str]]:
    files = weight_files(directory)
    return sum(p.stat().st_size for p in files), [p.name for p in files]


def memory_table(carrier: int, adapter: int | None, voices: list[int], kv: int | None = None) -> list[dict[str, Any]]:
    rows = []
    for n in voices:
        row: dict[str, Any] = {"voices": n, "merged_bytes": n * carrier}
        if adapter is not None:
            row["lora_bytes"] = carrier + n * adapter
            row["saved_bytes"] = row["merged_bytes"] - row["lora_bytes"]
        if kv is not None and adapter is not None:
            row["lora_plus_kv_bytes"] = row["lora_bytes"] + kv
        rows.append(row)
    return rows


# -- support -------------------------------------------------------------------------


def _is_moe(arch: str, config: dict[str, Any]) -> bool:
    if arch in MOE or re.search(r"moe|mixtral", arch, re.IGNORECASE):
        return True
    cfgs = [config] + [v for v in config.values() if isinstance(v, dict)]   # text_config of multimodal configs
    return any(isinstance(c.get(k), int) and c.get(k, 0) > 1 for c in cfgs for k in _EXPERT_KEYS)


def _registry_in_process(archs: list[str]) -> tuple[str, dict[str, bool | None]] | None:
    if importlib.util.find_spec("vllm") is None:
        return None
    try:
        import vllm
        from vllm.model_executor.models import ModelRegistry
        from vllm.model_executor.models.interfaces import supports_lora
    # Importing vLLM runs its platform and plugin detection, which fails with whatever the host
    # lacks (ImportError, RuntimeError, AssertionError, ...): any failure means "no registry here".
    except Exception:  # noqa: BLE001
        return None
    out: dict[str, bool | None] = {}
    for a in archs:
        try:
            cls = ModelRegistry._try_load_model_cls(a)
        except Exception:  # noqa: BLE001  # a model module that fails to import is an unknown arch, not a crash
            cls = None
        out[a] = None if cls is None else bool(supports_lora(cls))
    return f"vllm {getattr(vllm, '__version__', '?')} registry (this process)", out


def _probe_subprocess(python: Path, archs: list[str]) -> tuple[str, dict[str, bool | None]]:
    """vLLM's version and registry answers, from a child `python` that imports it (seconds: tens on a busy box)."""
    try:
        done = subprocess.run([str(python), "-c", _PROBE, json.dumps(archs)], capture_output=True, text=True,
                              timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise VoicegateError(f"--vllm-python {python}: could not ask its vLLM registry: {exc}") from None
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("VOICEGATE-PROBE "):
            data = json.loads(line.split(" ", 1)[1])
            return str(data["version"]), data["archs"]
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    raise VoicegateError(f"--vllm-python {python}: could not ask its vLLM registry: {tail}")


def _registry_subprocess(python: Path, archs: list[str],
                         warnings: list[str]) -> tuple[str, dict[str, bool | None]]:
    got = cached_registry(python, archs, _PROBE, lambda: _probe_subprocess(python, archs))
    if got.damaged:
        warnings.append(got.damaged)
    cached = f"; cached, probed {got.probed}" if got.cached else ""
    return f"vllm {got.version} registry ({python}{cached})", got.answers


def lora_support(archs: list[str], config: dict[str, Any], *, vllm_python: Path | None = None,
                 warnings: list[str] | None = None) -> list[Support]:
    """Each architecture's LoRA support; what went wrong with a local cache on the way is added to `warnings`."""
    registry = (_registry_subprocess(vllm_python, archs, warnings if warnings is not None else [])
                if vllm_python else _registry_in_process(archs))
    out = []
    for arch in archs:
        moe = _is_moe(arch, config)
        if registry is not None:
            source, answers = registry
            ans = answers.get(arch)
            if ans is None:
                s = Support(arch, "unknown", source, moe, "not in this vLLM's model registry")
            elif ans is False:
                s = Support(arch, "unsupported", source, moe, "the class does not declare SupportsLoRA")
            else:
                s = Support(arch, "supported", source, moe, "declares SupportsLoRA")
        else:
            source = "voicegate's table (vLLM not importable here; --vllm-python asks a vLLM venv)"
            if arch in DENSE_LORA and not moe:
                s = Support(arch, "supported", source, moe, "dense class vLLM declares SupportsLoRA for")
            elif moe:
                s = Support(arch, "check-first", source, moe, "")
            else:
                s = Support(arch, "unknown", source, moe,
                            "not in the table: check that the seat's vLLM declares SupportsLoRA for this class")
        if moe and s.status in ("supported", "unknown"):
            # A registry "yes" describes the vLLM asked, not necessarily the seat's engine build.
            s.status = "check-first"
        if moe:
            s.note = (s.note + "; " if s.note else "") + MOE_WARNING
        out.append(s)
    return out


# -- compose: the KV budget ----------------------------------------------------------


def kv_facts(compose: Path | None, service: str | None) -> tuple[dict[str, Any], list[str]]:
    """What the compose command says about KV residency, and the warnings it earns."""
    if compose is None:
        return {"source": None}, []
    from voicegate.seat._lora_modules import load_services

    services = load_services(compose)
    if service is not None:
        chosen = [s for s in services if s.name == service]
        if not chosen:
            raise VoicegateError(f"{compose}: no service named {service!r}")
    else:
        chosen = [s for s in services if s.flag("--enable-lora") is not None or s.flag("--lora-modules")]
        if len(chosen) != 1:
            chosen = [s for s in services if s.tokens] if len(services) > 1 else services
        if len(chosen) != 1:
            raise VoicegateError(f"{compose}: cannot tell which service is the seat; pick one with --service")
    svc = chosen[0]
    facts: dict[str, Any] = {"source": str(compose), "service": svc.name}
    warnings: list[str] = []
    # argparse accepts the unambiguous prefix --kv-cache-memory for --kv-cache-memory-bytes.
    kv = svc.flag("--kv-cache-memory-bytes", "--kv-cache-memory")
    util = svc.flag("--gpu-memory-utilization")
    facts["gpu_memory_utilization"] = float(util[0]) if util else None
    if kv:
        facts["kv_cache_bytes"] = parse_bytes(kv[0])
        facts["pinned"] = True
        if util:
            warnings.append(f"--gpu-memory-utilization {util[0]} is also set; with --kv-cache-memory pinned vLLM "
                            "ignores it for the KV cache, but it is still a fraction of TOTAL VRAM")
    else:
        facts["kv_cache_bytes"] = None
        facts["pinned"] = False
        frac = util[0] if util else "0.92 (vLLM's default)"
        warnings.append(f"--kv-cache-memory is not pinned in bytes: --gpu-memory-utilization {frac} is a fraction "
                        "of TOTAL VRAM that must already be free when the seat starts, so residency beside "
                        "co-tenants is negotiated, not predictable; pin --kv-cache-memory in bytes")
    rank = svc.flag("--max-lora-rank")
    facts["max_lora_rank"] = int(rank[0]) if rank and rank[0].isdigit() else None
    return facts, warnings


# -- the check -------------------------------------------------------------------------


def check_carrier(model_dir: Path, *, voices: list[int], adapter_bytes: int | None = None,
                  adapter_dir: Path | None = None, compose: Path | None = None, service: str | None = None,
                  vllm_python: Path | None = None) -> CarrierCheck:
    cfg_path = model_dir / "config.json"
    if not cfg_path.is_file():
        raise VoicegateError(f"{model_dir}: no config.json (is this a model directory?)")
    try:
        config = json.loads(cfg_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise VoicegateError(f"{cfg_path}: not valid JSON: {exc}") from None
    archs = config.get("architectures")
    if not isinstance(archs, list) or not archs or not all(isinstance(a, str) for a in archs):
        raise VoicegateError(f"{cfg_path}: no 'architectures' list")
    if not voices or any(n < 1 for n in voices):
        raise VoicegateError("--voices must list positive counts, e.g. 3,6")

    warnings: list[str] = []
    carrier, files = dir_weight_bytes(model_dir)
    if not files:
        warnings.append(f"{model_dir}: no weight files (*.safetensors, *.bin, ...): the carrier size is 0")
    rank = None
    if adapter_dir is not None:
        if not adapter_dir.is_dir():
            raise VoicegateError(f"--adapter {adapter_dir}: not a directory")
        adapter_bytes, afiles = dir_weight_bytes(adapter_dir)
        if not afiles:
            raise VoicegateError(f"--adapter {adapter_dir}: no adapter weights (adapter_model.safetensors)")
        acfg = adapter_dir / "adapter_config.json"
        if acfg.is_file():
            try:
                rank = json.loads(acfg.read_text(encoding="utf-8")).get("r")
            except ValueError:
                rank = None
    support = lora_support(archs, config, vllm_python=vllm_python, warnings=warnings)
    kv, kv_warnings = kv_facts(compose, service)
    warnings += kv_warnings
    if isinstance(rank, int) and kv.get("max_lora_rank") and rank > kv["max_lora_rank"]:
        warnings.append(f"the adapter's rank r={rank} is above the seat's --max-lora-rank {kv['max_lora_rank']}: "
                        "vLLM refuses to load it (500)")
    if adapter_bytes is None:
        warnings.append("adapter size unknown: pass --adapter DIR or --adapter-size BYTES for the LoRA column")
    table = memory_table(carrier, adapter_bytes, voices, kv.get("kv_cache_bytes"))
    return CarrierCheck(model_dir=model_dir, architectures=archs, support=support, carrier_bytes=carrier,
                        weight_files=files, adapter_bytes=adapter_bytes, voices=voices, table=table, kv=kv,
                        warnings=warnings)


def render_carrier(check: CarrierCheck) -> str:
    lines = [f"carrier  {check.model_dir}", f"architecture  {', '.join(check.architectures)}"]
    for s in check.support:
        verdict = {"supported": "LoRA supported", "check-first": "LoRA: CHECK FIRST",
                   "unsupported": "LoRA NOT supported", "unknown": "LoRA support unknown"}[s.status]
        lines.append(f"  {s.architecture}: {verdict}{' (MoE)' if s.moe else ''} — {s.source}")
        if s.note:
            lines.append(f"    {s.note}")
    lines.append(f"carrier weights  {gb(check.carrier_bytes)} ({check.carrier_bytes:,} bytes, "
                 f"{len(check.weight_files)} file{'s' if len(check.weight_files) != 1 else ''})")
    if check.adapter_bytes is not None:
        lines.append(f"adapter  {gb(check.adapter_bytes)} ({check.adapter_bytes:,} bytes)")
    lines.append("")
    a = gb(check.adapter_bytes) if check.adapter_bytes is not None else "?"
    head = f"{'voices':>6}  {'LoRA (carrier + N x adapter)':<36}  {'merged (N x carrier)':<26}  saved"
    lines.append(head)
    for row in check.table:
        n = row["voices"]
        lora = (f"{gb(check.carrier_bytes)} + {n}x{a} = {gb(row['lora_bytes'])}" if "lora_bytes" in row else "?")
        merged = f"{n}x{gb(check.carrier_bytes)} = {gb(row['merged_bytes'])}"
        saved = gb(row["saved_bytes"]) if "saved_bytes" in row else "?"
        lines.append(f"{n:>6}  {lora:<36}  {merged:<26}  {saved}")
    kv = check.kv
    if kv.get("source"):
        lines.append("")
        if kv.get("pinned"):
            b = kv["kv_cache_bytes"]
            lines.append(f"KV budget pinned: --kv-cache-memory {b:,} bytes ({b / 2**30:.2f} GiB), "
                         f"service {kv['service']}")
            for row in check.table:
                if "lora_plus_kv_bytes" in row:
                    lines.append(f"  {row['voices']} voices resident ≈ {gb(row['lora_plus_kv_bytes'])} "
                                 "(carrier + adapters + KV, before activations)")
        else:
            lines.append(f"KV budget: not pinned (service {kv['service']})")
    for w in check.warnings:
        lines.append(f"warning: {w}")
    return "\n".join(lines)
