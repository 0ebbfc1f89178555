"""A real vLLM seat for the integration tests: a tiny model, two adapters, one server.

Two halves live in this file because they belong together:

* ``build(out, text)`` runs under the vLLM venv's python (as a subprocess:
  ``<venv>/bin/python tests/vllm_seat.py build OUT TEXT``). It trains a byte-level
  BPE tokenizer on ``text``, writes a random-weight ``Qwen3ForCausalLM`` (the
  dense class vLLM declares ``SupportsLoRA`` for) and two PEFT LoRA adapters
  with non-zero ``lora_B`` (the default zero init would make them no-ops).
  The recipe is the measured one in ``../shared/docs/VLLM-CPU.md``.
* the session-scoped pytest fixture ``vllm_seat`` builds that under a temp dir
  and serves it with voicegate's own starter, ``voicegate.seat._vllm.start_vllm``
  (a loopback port, ``--enable-lora``, runtime LoRA updating on, the /health
  wait); its ``VllmServer`` stops it at the end of the session (SIGTERM, then
  its process group). It starts once per session: the server takes 15-25 s to
  come up.

Nothing here downloads anything: the model is built from text on disk.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SERVED_ADAPTER = "lv-tiny-served"     # listed in --lora-modules: survives a restart
RUNTIME_ADAPTER = "lv-tiny-runtime"   # loaded at run time by voicegate, then unloaded

_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
_CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


# -- the builder (runs under the vLLM venv) ------------------------------------


def build(out: Path, text: str) -> dict[str, str]:
    """Write model/, adapters/<SERVED_ADAPTER>/, adapters/<RUNTIME_ADAPTER>/ under ``out``."""
    import torch
    from peft import LoraConfig, get_peft_model
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    model_dir = out / "model"
    model_dir.mkdir(parents=True, exist_ok=True)

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=2048, special_tokens=_SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    tok.train_from_iterator(lines, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = _CHAT_TEMPLATE
    fast.save_pretrained(model_dir)
    # The chat template must reach vLLM whichever file its loader reads it from.
    (model_dir / "chat_template.jinja").write_text(_CHAT_TEMPLATE, encoding="utf-8")

    eos = tok.token_to_id("<|im_end|>")
    pad = tok.token_to_id("<|endoftext|>")
    config = Qwen3Config(
        vocab_size=2048, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=512,
        tie_word_embeddings=False, torch_dtype="float32", bos_token_id=pad, eos_token_id=eos,
        pad_token_id=pad,
    )
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(config).to(torch.float32)
    with torch.no_grad():
        # Random init gives near-uniform or one-hot logits; these two scales gave varied text.
        model.model.embed_tokens.weight.normal_(0.0, 1.0)
        model.lm_head.weight.normal_(0.0, 0.15)
    model.save_pretrained(model_dir, safe_serialization=True)

    paths = {"model": str(model_dir)}
    for i, name in enumerate((SERVED_ADAPTER, RUNTIME_ADAPTER)):
        torch.manual_seed(100 + i)
        base = Qwen3ForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32)
        peft_model = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules=_TARGETS,
                                                     lora_dropout=0.0, task_type="CAUSAL_LM"))
        with torch.no_grad():
            for pname, p in peft_model.named_parameters():
                if "lora_B" in pname:
                    p.normal_(0.0, 0.5)
        adir = out / "adapters" / name
        peft_model.save_pretrained(adir)
        cfg_path = adir / "adapter_config.json"
        cfg = json.loads(cfg_path.read_text())
        cfg["base_model_name_or_path"] = str(model_dir)
        cfg_path.write_text(json.dumps(cfg, indent=2))
        paths[name] = str(adir)
    return paths


# -- the server ------------------------------------------------------------------
# Started and stopped by voicegate's own starter (`voicegate.seat._vllm`: `start_vllm` and its
# `VllmServer`): one recipe for the venv, the flags, the environment, the /health wait and the
# process-group stop. Imported in the functions, because the builder half above runs under the
# vLLM venv, which has no voicegate.


def venv_python() -> Path:
    """The vLLM venv's python (`voicegate.seat._vllm.venv_dir`: $VOICEGATE_VLLM_VENV or the default)."""
    from voicegate.seat._vllm import venv_dir

    return venv_dir() / "bin" / "python"


def training_text() -> str:
    """A few hundred KB of English: a corpus novel slice if present, else a built-in paragraph."""
    corpus = Path(os.environ.get("VOICEGATE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    novel = corpus / "corpora" / "british-fiction" / "Austen_Emma.txt"
    if novel.is_file():
        return novel.read_text(encoding="utf-8", errors="replace")[:300_000]
    para = ("The morning was grey and the road was long. She walked to the village with her sister, "
            "and they spoke of the letter, of the house by the river, of what her father had said. ")
    return "\n".join(para + f"Chapter {i}." for i in range(2000))


def trained_voices_skip_reason(voices: Path, corpus: Path) -> str | None:
    """Why the tests on the trained tiny voices (a real vLLM serving them) cannot run here; None when they can."""
    from voicegate.seat._vllm import check_voices_dir, vllm_python, why_no_vllm

    if not voices.is_dir():
        return f"tiny-voices fixture folder not found at {voices}"
    missing = check_voices_dir(voices)
    if missing:
        return f"tiny-voices fixture at {voices} is incomplete: {', '.join(missing)}"
    if not corpus.is_dir():
        return f"british-fiction corpus not found at {corpus}"
    if vllm_python() is None:
        return why_no_vllm()
    return None


@dataclass
class VllmSeat:
    """The tiny model and its two adapters, served by a running `VllmServer` (its URL, port and stop)."""

    server: Any                    # voicegate.seat._vllm.VllmServer
    model_dir: Path
    adapters: dict[str, Path]      # name -> directory (SERVED_ADAPTER, RUNTIME_ADAPTER)
    timings: dict[str, float] = field(default_factory=dict)

    served_adapter = SERVED_ADAPTER
    runtime_adapter = RUNTIME_ADAPTER

    @property
    def url(self) -> str:          # the OpenAI base, http://127.0.0.1:P/v1
        return str(self.server.url)

    @property
    def port(self) -> int:
        return int(self.server.port)

    @property
    def base(self) -> str:
        from voicegate.seat._vllm import BASE_NAME  # the name start_vllm serves the carrier under

        return BASE_NAME


def build_seat_files(workdir: Path) -> dict[str, str]:
    text_file = workdir / "tokenizer-text.txt"
    text_file.write_text(training_text(), encoding="utf-8")
    done = subprocess.run([str(venv_python()), str(Path(__file__).resolve()), "build", str(workdir / "seat"),
                           str(text_file)], check=False, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"building the tiny model failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def start_server(workdir: Path, paths: dict[str, str], *, timeout: float = 300.0, max_loras: int = 4) -> VllmSeat:
    """`start_vllm` on the built files: the served adapter in --lora-modules, the runtime one not."""
    # --max-loras 4, not the recipe's 2: measured here, with --max-loras 2 a concurrent batch
    # holding base + both adapters answered one adapter's requests with the BASE model's exact
    # text (2 of 3 prompts), silently. With 4 every adapter request is adapted -- until an
    # adapter is unloaded and another loaded: after that, mixed concurrent batches answered the
    # base's requests with an adapter applied (3 of 3). Sequential requests were always right.
    # Tests that compare texts across arms therefore compare sequential (--concurrency 1) runs.
    from voicegate.seat._vllm import start_vllm

    server = start_vllm(Path(paths["model"]), workdir, lora_modules={SERVED_ADAPTER: Path(paths[SERVED_ADAPTER])},
                        max_loras=max_loras, max_lora_rank=8, timeout=timeout)
    return VllmSeat(server=server, model_dir=Path(paths["model"]),
                    adapters={SERVED_ADAPTER: Path(paths[SERVED_ADAPTER]),
                              RUNTIME_ADAPTER: Path(paths[RUNTIME_ADAPTER])},
                    timings={"server_start_s": server.timings.get("start_s", 0.0)})


# -- pytest fixture --------------------------------------------------------------

try:
    import pytest
except ImportError:  # the builder half runs under the vLLM venv, which need not have pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture(scope="session")
    def vllm_seat(tmp_path_factory):
        if not venv_python().exists():
            from voicegate.seat._vllm import VENV_ENV, venv_dir

            pytest.skip(f"vLLM venv not found at {venv_dir()} (create it with .ci/vllm-venv, "
                        f"or point ${VENV_ENV} at one)")
        workdir = tmp_path_factory.mktemp("vllm-seat")
        t0 = time.monotonic()
        paths = build_seat_files(workdir)
        build_s = round(time.monotonic() - t0, 2)
        seat = start_server(workdir, paths)
        seat.timings["build_s"] = build_s
        with seat.server:              # VllmServer.stop at the end of the session, whatever happened
            yield seat
        seat.timings["stop_s"] = seat.server.timings.get("stop_s", 0.0)
        sys.stderr.write(f"\nvllm seat timings: {json.dumps(seat.timings)}\n")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "build":
        result = build(Path(sys.argv[2]), Path(sys.argv[3]).read_text(encoding="utf-8"))
        print(json.dumps(result))
    else:
        sys.exit("usage: vllm_seat.py build OUT_DIR TEXT_FILE")
